"""Health probes: a trivial command on each host, through the job's own launcher.

A host that does not answer within the timeout (or fails to start the
command) is blamed with reason ``probed``. Probes run in parallel, one per
host, so one hung node costs one timeout, not one per host.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hotspare.act.launchers import LauncherKind, LaunchSpec, build_argv, render_hostfile, write_hostfile
from hotspare.act.runner import Completed, capture
from hotspare.hosts import Host

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
