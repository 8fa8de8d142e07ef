"""Launcher command lines and hostfiles, built as pure values.

Nothing here starts a process: :func:`build_argv` returns the argv the runner
starts, :func:`render_hostfile` the text it writes with :func:`write_hostfile`.

Sources checked for the flag spellings:

* MPICH Hydra: the wiki "Using the Hydra Process Manager" (hostfile one host a
  line, or ``host:N``) and Hydra's argument matcher, which strips every leading
  dash, so ``--hostfile``/``-f`` and ``--ppn``/``-ppn`` are the same option.
* HPE PALS ``mpiexec`` (ALCF Polaris/Aurora job scripts): ``-n N --ppn P
  --hostfile F``; PALS reads a PBS_NODEFILE-style file, one host a line.
* Open MPI 4.1 ``mpirun(1)``: ``-n``/``-np``, ``--hostfile`` with ``host
  slots=N`` lines, ``--map-by ppr:N:node`` (N processes per node).
* Slurm ``srun(1)``: ``--kill-on-bad-exit`` ends the step when any task exits
  non-zero; ``--no-kill`` keeps the job alive when a node fails, which is the
  outer allocation's choice and is never passed to a step.
"""

from __future__ import annotations

import enum
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hotspare.errors import HostError
from hotspare.hosts import Host, is_raw_host
from hotspare.record.files import write_atomic


class LauncherKind(enum.StrEnum):
    """The launchers hotspare can drive (a StrEnum: ``LauncherKind.SRUN == "srun"``, stored as ``"srun"``)."""

    MPIEXEC = "mpiexec"
    SRUN = "srun"
    MPIRUN = "mpirun"
    LOCAL = "local"


#: The launchers hotspare can drive, and what each is.
LAUNCHERS: dict[LauncherKind, str] = {
    LauncherKind.MPIEXEC: "MPICH Hydra or HPE PALS mpiexec",
    LauncherKind.SRUN: "Slurm srun (one job step)",
    LauncherKind.MPIRUN: "Open MPI mpirun",
    LauncherKind.LOCAL: "hotspare's one-machine launcher (python -m hotspare.sim.local_launcher)",
}


def launcher_kind(launcher: str) -> LauncherKind:
    """``launcher`` as a :class:`LauncherKind`; an unknown name raises with the choices."""
    try:
        return LauncherKind(launcher)
    except ValueError:
        raise ValueError(f"unknown launcher {launcher!r}: choose one of {', '.join(LAUNCHERS)}") from None


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """What to launch where: ``ppn`` ranks of ``command`` on each of ``hosts``.

    ``hostfile`` is where the runner writes :func:`render_hostfile`'s text;
    ``extra_args`` go to the launcher just before the command; ``program`` is
    the launcher's executable when it is not the launcher's own name (e.g.
    ``mpiexec.mpich`` or ``mpirun.openmpi`` where both MPIs are installed, or a
    full path such as PALS' ``/opt/cray/pals/bin/mpiexec``).
    """

    #: Stored as a :class:`LauncherKind`; its plain name is accepted.
    launcher: LauncherKind | str
    hosts: tuple[Host, ...]
    ppn: int
    command: tuple[str, ...]
    hostfile: Path
    extra_args: tuple[str, ...] = ()
    program: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "launcher", launcher_kind(self.launcher))
        if self.program is not None and (not self.program or self.program != self.program.strip()):
            raise ValueError(f"launcher program {self.program!r} is empty or padded: give a command name or path")
        _check_ppn(self.ppn)
        if not self.hosts:
            raise ValueError("hosts is empty: a launch needs at least one host of the allocation")
        if not self.command:
            raise ValueError("command is empty: give the program to run, e.g. ('python', 'train.py')")
        seen: dict[Host, Host] = {}
        for host in self.hosts:
            if host in seen:
                raise ValueError(
                    f"host {host.raw!r} is listed twice (also as {seen[host].raw!r}): "
                    "give each node once and set ppn for the ranks per node"
                )
            seen[host] = host

    @property
    def total_ranks(self) -> int:
        """Ranks in the whole launch: hosts times ranks per host."""
        return len(self.hosts) * self.ppn


def _check_ppn(ppn: int) -> None:
    if isinstance(ppn, bool) or not isinstance(ppn, int) or ppn < 1:
        raise ValueError(f"ppn {ppn!r} is not a positive whole number: give the ranks per host (1 or more)")


def _raw(host: Host) -> str:
    """The host as the allocation wrote it, refused unless it is a valid host.

    ``Host`` already validates on construction; this is defence in depth
    (``raw`` is a plain attribute), so text from a log can never reach a
    hostfile or an argv.
    """
    # The cheap character check, not a full re-canonicalisation: this runs for every host of a
    # 10,000-host hostfile on every relaunch.
    if not is_raw_host(host.raw) or host.raw != host.raw.strip():
        raise HostError(host.raw, "refusing to write it to a hostfile or launcher command line")
    return host.raw


def _plain_lines(hosts: Sequence[Host], ppn: int) -> list[str]:
    # Hydra also reads "host:N", but PALS does not; one host a line works for
    # both, and --ppn sets the ranks per host.
    return [_raw(h) for h in hosts]


def _slots_lines(hosts: Sequence[Host], ppn: int) -> list[str]:
    return [f"{_raw(h)} slots={ppn}" for h in hosts]


_HOSTFILE_LINES: dict[LauncherKind, Callable[[Sequence[Host], int], list[str]]] = {
    LauncherKind.MPIEXEC: _plain_lines,
    LauncherKind.SRUN: _plain_lines,
    LauncherKind.MPIRUN: _slots_lines,
    LauncherKind.LOCAL: _plain_lines,
}


def render_hostfile(hosts: Sequence[Host], launcher: LauncherKind | str, ppn: int) -> str:
    """The hostfile text ``launcher`` reads: one line a host, newline-terminated.

    ``mpiexec``, ``srun`` and ``local``: the host alone; ``mpirun``: ``host
    slots=ppn``. Hosts are written as ``raw`` (the allocation's spelling, which
    the launcher can resolve), never the canonical name.
    """
    kind = launcher_kind(launcher)
    _check_ppn(ppn)
    if not hosts:
        raise ValueError("no hosts to write: a hostfile needs at least one host")
    return "".join(f"{line}\n" for line in _HOSTFILE_LINES[kind](hosts, ppn))


def write_hostfile(path: Path, text: str) -> None:
    """Write a hostfile atomically (see :func:`write_atomic`)."""
    write_atomic(path, text)


def _mpiexec(spec: LaunchSpec) -> list[str]:
    return [
        spec.program or "mpiexec", "--hostfile", str(spec.hostfile), "-n", str(spec.total_ranks),
        "--ppn", str(spec.ppn), *spec.extra_args, *spec.command,
    ]


def _srun(spec: LaunchSpec) -> list[str]:
    # --kill-on-bad-exit: one dead task ends the step, as mpiexec does; without
    # it a step can sit with survivors blocked in a collective until walltime.
    # --overlap: a probe must start while the job's step holds every CPU, and a
    # relaunch must not wait on the failed step, which SLURM keeps until it has
    # marked the dead node DOWN (seen on the test bed: "step creation temporarily
    # disabled ... Requested nodes are busy" for good after the attempt ended).
    return [
        spec.program or "srun", "--nodelist=" + ",".join(_raw(h) for h in spec.hosts), "-N", str(len(spec.hosts)),
        "--ntasks-per-node", str(spec.ppn), "-n", str(spec.total_ranks), "--kill-on-bad-exit=1", "--overlap",
        *spec.extra_args, *spec.command,
    ]


def _mpirun(spec: LaunchSpec) -> list[str]:
    return [
        spec.program or "mpirun", "--hostfile", str(spec.hostfile), "-n", str(spec.total_ranks),
        "--map-by", f"ppr:{spec.ppn}:node", *spec.extra_args, *spec.command,
    ]


def _local(spec: LaunchSpec) -> list[str]:
    return [
        spec.program or sys.executable, "-P", "-m", "hotspare.sim.local_launcher", "--hostfile", str(spec.hostfile),
        "--ppn", str(spec.ppn), *spec.extra_args, "--", *spec.command,
    ]


_BUILDERS: dict[LauncherKind, Callable[[LaunchSpec], list[str]]] = {
    LauncherKind.MPIEXEC: _mpiexec,
    LauncherKind.SRUN: _srun,
    LauncherKind.MPIRUN: _mpirun,
    LauncherKind.LOCAL: _local,
}


def build_argv(spec: LaunchSpec) -> list[str]:
    """The launcher's argv for ``spec`` (a new list; no shell is ever involved)."""
    return _BUILDERS[launcher_kind(spec.launcher)](spec)


#: The file a run writes :func:`render_hydra_rsh` into (its run directory), for Hydra's ``-launcher-exec``.
HYDRA_RSH_NAME = "hydra-rsh"


def render_hydra_rsh(remote_shell: str) -> str:
    """A ``/bin/sh`` script that makes ``remote_shell`` (PBS's ``pbs_tmrsh``) usable as MPICH Hydra's rsh.

    Hydra's rsh launcher calls ``EXEC HOST "/usr/bin/hydra_pmi_proxy" --control-port ...``: one command line for
    the remote side's shell, the proxy's path in double quotes (seen on the PBS bed). pbs_tmrsh hands its
    arguments to ``tm_spawn`` as they are, with no shell, so the sister MOM tried to exec a path with quotes in it
    and failed ("No such file or directory"). The script gives the command line a shell, as rsh's remote side does.
    """
    if not remote_shell or remote_shell != remote_shell.strip():
        raise ValueError(f"remote shell {remote_shell!r} is empty or padded: give pbs_tmrsh's path")
    return ("#!/bin/sh\n# Written by hotspare (--launcher-rsh): Hydra's rsh launcher passes a command line for a "
            "remote shell;\n# this remote shell runs its arguments without one, so one is given here.\n"
            f'host="$1"; shift\nexec {shlex.quote(remote_shell)} "$host" /bin/sh -c "$*"\n')


def write_hydra_rsh(path: Path, remote_shell: str) -> None:
    """Write :func:`render_hydra_rsh`'s script atomically, executable (Hydra execs it)."""
    write_atomic(path, render_hydra_rsh(remote_shell))
    path.chmod(0o755)


def hydra_rsh_args(wrapper: Path) -> tuple[str, ...]:
    """Hydra's options to start its proxies through ``wrapper`` (see :func:`render_hydra_rsh`)."""
    return ("-launcher", "rsh", "-launcher-exec", str(wrapper))
