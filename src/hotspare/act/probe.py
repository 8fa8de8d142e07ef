"""Health probes: a trivial command on each host, through the job's own launcher.

A host that does not answer within the timeout (or fails to start the
command) is blamed with reason ``probed``. Probes run in parallel, one per
host, so one hung node costs one timeout, not one per host.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from hotspare.act.launchers import LauncherKind, LaunchSpec, build_argv, render_hostfile, write_hostfile
from hotspare.act.runner import Completed, capture
from hotspare.hosts import Host
from hotspare.record.quarantine import Quarantine

#: The longest a probe of hosts a log named only as suspects may take (seconds; shorter if the probe timeout is).
SUSPECT_PROBE_S = 10.0

#: What the probe runs on each host: the job's Python, doing nothing.
PROBE_COMMAND = (sys.executable, "-c", "pass")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One host's answer."""

    host: Host
    ok: bool
    detail: str


def probe_hosts(
    hosts: Sequence[Host],
    launcher: LauncherKind | str,
    workdir: Path,
    *,
    timeout_s: float,
    program: str | None = None,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    run: Callable[[list[str], float], Completed] | None = None,
) -> list[ProbeResult]:
    """Probe every host in parallel; results in the order of ``hosts``.

    ``program`` and ``extra_args`` are the job's own launcher executable and
    options (see :class:`LaunchSpec`): a probe must start the way the job does
    (e.g. Hydra's ``-iface``), or it fails on healthy hosts. ``env`` is the
    environment the probes start with (default: this process's).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    if run is None:
        def run(argv: list[str], t: float) -> Completed:
            return capture(argv, timeout_s=t, env=env)

    def one(index_host: tuple[int, Host]) -> ProbeResult:
        index, host = index_host
        hostfile = workdir / f"probe-{index}.hosts"
        spec = LaunchSpec(launcher=launcher, hosts=(host,), ppn=1, command=PROBE_COMMAND, hostfile=hostfile,
                          program=program, extra_args=tuple(extra_args))
        write_hostfile(hostfile, render_hostfile(spec.hosts, launcher, 1))
        done = run(build_argv(spec), timeout_s)
        if done.timed_out:
            return ProbeResult(host, False, f"no answer within {timeout_s:g} s")
        if done.rc != 0:
            last = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
            return ProbeResult(host, False, f"probe exited {done.rc}: {last[0][:160]}")
        return ProbeResult(host, True, "answered")

    with ThreadPoolExecutor(max_workers=min(32, max(1, len(hosts))), thread_name_prefix="hotspare-probe") as pool:
        return list(pool.map(one, enumerate(hosts)))


@dataclass(frozen=True, slots=True)
class Readmission:
    """An expired quarantine entry's probe, and whether the host was let back in."""

    probe: ProbeResult
    readmitted: bool


def readmit_expired_slurm(quarantine: Quarantine, workdir: Path, *, timeout_s: float,
                          run: Callable[[list[str], float], Completed] | None = None,
                          lock: AbstractContextManager[object] | None = None) -> list[Readmission]:
    """Probe this owner's expired quarantine entries (SLURM: a one-task ``srun --immediate`` on each, its own tiny
    job, in parallel) and readmit the hosts that answer; a host that does not stays out, its entry kept.

    ``--immediate``: a node that cannot be had now (down, drained, busy) fails the probe at once rather than
    queueing. ``lock`` guards the quarantine's database (held to read and to readmit, never while probing). Used
    by the workflow-level owners (the Parsl provider, the Dask clusters).
    """
    guard = lock if lock is not None else nullcontext()
    with guard:
        due = quarantine.due()
    if not due:
        return []
    immediate = f"--immediate={max(1, int(timeout_s / 2))}"
    results = probe_hosts([e.host for e in due], LauncherKind.SRUN, workdir, timeout_s=timeout_s,
                          extra_args=(immediate,), run=run)
    with guard:
        return [Readmission(r, quarantine.readmit(r.host, probe_passed=r.ok)) for r in results]


def probe_suspects_slurm(suspects: Sequence[Host], control: Host | None, workdir: Path, *, timeout_s: float,
                         run: Callable[[list[str], float], Completed] | None = None) -> list[ProbeResult]:
    """Probe hosts a job's output named only as suspects, and ``control`` (a host of the same job nothing
    accused) beside them: a one-task ``srun --immediate`` on each, its own tiny job, in parallel (SLURM).

    For the workflow adapters, which judge a job after it ended: see :func:`hotspare.confirm_suspects`.
    """
    hosts = [*suspects, *([control] if control is not None and control not in suspects else [])]
    if not hosts:
        return []
    immediate = f"--immediate={max(1, int(timeout_s / 2))}"
    return probe_hosts(hosts, LauncherKind.SRUN, workdir, timeout_s=timeout_s, extra_args=(immediate,), run=run)
