"""Health probes: a trivial command on each host, through the job's own launcher.

A host that does not answer within the timeout (or fails to start the
command) is blamed with reason ``probed``. Probes run in parallel, one per
host, so one hung node costs one timeout, not one per host.
"""

from __future__ import annotations

import sys
import time
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

#: A node suspected dead while its work is silent is probed twice, each probe with this short deadline (seconds)...
QUICK_PROBE_S = 2.0
#: ...the second this long after the first started: two samples of the node, apart (a slow but live node answers
#: one of them).
QUICK_PROBE_GAP_S = 1.0


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
    host_args: Mapping[Host, Sequence[str]] | None = None,
) -> list[ProbeResult]:
    """Probe every host in parallel; results in the order of ``hosts``.

    ``program`` and ``extra_args`` are the job's own launcher executable and
    options (see :class:`LaunchSpec`): a probe must start the way the job does
    (e.g. Hydra's ``-iface``), or it fails on healthy hosts. ``host_args`` adds
    options for one host only (after ``extra_args``): the job that holds it, when
    the hosts probed belong to different jobs. ``env`` is the environment the
    probes start with (default: this process's).
    """
    own = host_args or {}
    workdir.mkdir(parents=True, exist_ok=True)
    if run is None:
        def run(argv: list[str], t: float) -> Completed:
            return capture(argv, timeout_s=t, env=env)

    def one(index_host: tuple[int, Host]) -> ProbeResult:
        index, host = index_host
        hostfile = workdir / f"probe-{index}.hosts"
        spec = LaunchSpec(launcher=launcher, hosts=(host,), ppn=1, command=PROBE_COMMAND, hostfile=hostfile,
                          program=program, extra_args=(*extra_args, *own.get(host, ())))
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


def probe_twice(probe: Callable[[], list[ProbeResult]], *, gap_s: float = QUICK_PROBE_GAP_S,
                sleep: Callable[[float], None] = time.sleep) -> tuple[list[ProbeResult], list[ProbeResult]]:
    """Run one round of ``probe`` now and another ``gap_s`` after the first started (overlapping): the two rounds'
    answers. A node that misses both is silent; a slow but live one answers one of them."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="hotspare-probe2") as ex:
        first = ex.submit(probe)
        sleep(gap_s)
        second = ex.submit(probe)
        return list(first.result()), list(second.result())


def probe_in_jobs_slurm(jobs: Mapping[Host, str], workdir: Path, *, timeout_s: float,
                        run: Callable[[list[str], float], Completed] | None = None) -> list[ProbeResult]:
    """Probe each host inside the SLURM job that holds it (``{host: job id}``): a one-task step,
    ``srun --jobid=J --overlap --nodelist=H``, in parallel; results in the order of ``jobs``.

    For a workflow adapter whose jobs hold the nodes (a Dask worker's job): a probe job of its own would wait
    behind the very job whose node it asks about (an ``--exclusive`` job holds every CPU), while a step of that job
    starts at once on a live node. Only meaningful while the job runs: a step of a job that ended fails on a healthy
    node, so the caller asks the scheduler whether the job still runs before believing a failure.
    """
    hosts = list(jobs)
    return probe_hosts(hosts, LauncherKind.SRUN, workdir, timeout_s=timeout_s, run=run,
                       host_args={h: (f"--jobid={jobs[h]}",) for h in hosts})
