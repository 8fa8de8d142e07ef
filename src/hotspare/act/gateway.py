"""The runner a :class:`~hotspare.supervisor.Supervisor` is given: the one door to processes.

Everything the supervisor does that starts a process goes through a :class:`Runner`: launching an attempt,
probing hosts, asking the scheduler. :class:`ProcessRunner` is the real one (it uses :mod:`hotspare.act.runner`,
the module that starts processes, and :mod:`hotspare.act.probe`); tests give a fake one and run the whole loop
without a process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hotspare.act.launchers import LauncherKind
from hotspare.act.probe import ProbeResult, probe_hosts
from hotspare.act.runner import Completed, Launch, Outcome, StopCause, capture
from hotspare.hosts import Host


class Running(Protocol):
    """A started attempt (what :class:`hotspare.act.runner.Launch` offers once started)."""

    @property
    def pid(self) -> int:
        """The launcher's process group (recorded so a resumed supervisor can end it)."""
        ...

    def poll(self, timeout_s: float) -> int | None:
        """Pass on output for up to ``timeout_s``; the rc once the launcher has exited."""
        ...

    def stop(self, why: StopCause, grace_s: float) -> None:
        """End the attempt: SIGTERM, SIGKILL after ``grace_s``."""
        ...

    def finish(self) -> Outcome:
        """Wait for the end and report it."""
        ...


@dataclass(frozen=True, slots=True)
class ProbeHow:
    """How this run's probes start: the job's own launcher, options and environment."""

    launcher: LauncherKind | str
    workdir: Path
    timeout_s: float
    program: str | None = None
    extra_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


class Runner(Protocol):
    """What the supervisor asks of processes."""

    def launch(self, argv: Sequence[str], log_path: Path, on_output: Callable[[bytes], None], *,
               env: Mapping[str, str]) -> Running:
        """Start an attempt: output appended to ``log_path`` and passed to ``on_output``."""
        ...

    def probe(self, hosts: Sequence[Host], how: ProbeHow) -> list[ProbeResult]:
        """Ask each of ``hosts`` to run a trivial command; results in the order of ``hosts``."""
        ...

    def capture(self, argv: Sequence[str], timeout_s: float) -> Completed:
        """Run a short command (a scheduler query) and collect its output."""
        ...


@dataclass(frozen=True, slots=True)
class ProcessRunner:
    """The real runner: real launchers, real probes, real scheduler commands."""

    clock: Callable[[], float] = time.monotonic

    def launch(self, argv: Sequence[str], log_path: Path, on_output: Callable[[bytes], None], *,
               env: Mapping[str, str]) -> Running:
        launch = Launch(argv, log_path, on_output, env=env, clock=self.clock)
        launch.start()
        return launch

    def probe(self, hosts: Sequence[Host], how: ProbeHow) -> list[ProbeResult]:
        return probe_hosts(hosts, how.launcher, how.workdir, timeout_s=how.timeout_s, program=how.program,
                           extra_args=how.extra_args, env=how.env)

    def capture(self, argv: Sequence[str], timeout_s: float) -> Completed:
        return capture(argv, timeout_s=timeout_s)
