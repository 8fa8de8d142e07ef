"""MPI tasks as retriable MPI jobs: a bash app's command run under the hotspare supervisor.

With ``MPIExecutor`` (``parsl_resource_specification={'num_nodes': N, 'ranks_per_node': R}``) each
task gets ``$PARSL_MPI_NODELIST``; inside a :class:`~hotspare_parsl.FailoverProvider` block the
block's spares are in ``$HOTSPARE_BLOCK_SPARES`` and the workflow's quarantine in
``$HOTSPARE_QUARANTINE``. :func:`mpi_launch` builds the line a ``@bash_app`` returns::

    @bash_app
    def train(steps, parsl_resource_specification={}):
        return mpi_launch(["python", "train.py", "--steps", str(steps)], checkpoint_dir="ckpt")

A node lost while the task runs is swapped for a block spare in seconds (the supervisor), a node
already quarantined is never handed to the launch (it is replaced by a spare before the first
attempt), and when the spares are spent the command exits 93, which :data:`retry_handler` reads as a
node failure: the task is retried, and the provider's next block excludes the quarantined hosts.

On a PBS system without PALS, ranks start through MPICH Hydra with PBS's own remote shell, which spawns them
as tasks of the block's job on its sister nodes (no ssh)::

    mpi_launch(cmd, launcher="mpiexec", launcher_cmd="mpiexec.hydra", launcher_rsh="pbs_tmrsh")
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence

from hotspare import LauncherKind

#: The launchers a task can run under (the embedded ``local`` one is for runs on one machine).
LAUNCHERS = tuple(k.value for k in LauncherKind if k is not LauncherKind.LOCAL)
#: Inside a PBS block the supervisor gets the job's own node file back (the block narrowed ``PBS_NODEFILE`` for
#: Parsl's scheduler; pbs_tmrsh maps hosts to TM nodes by their lines in it: :mod:`hotspare_parsl.block`).
#: Elsewhere the word expands to nothing and the line starts with the Python.
JOB_NODEFILE = '${HOTSPARE_JOB_NODEFILE:+env PBS_NODEFILE="$HOTSPARE_JOB_NODEFILE"}'


def mpi_launch(
    command: Sequence[str],
    *,
    launcher: str = "srun",
    checkpoint_dir: str | None = None,
    launcher_cmd: str | None = None,
    launcher_rsh: str | None = None,
    launcher_args: Sequence[str] = (),
    options: Sequence[str] = (),
    python: str | None = None,
) -> str:
    """The shell line for a ``@bash_app``: ``command`` on the task's nodes under ``hotspare launch``.

    ``command`` is a list of words (quoted here, never interpolated); node lists come from the
    environment Parsl and the block set, expanded by the shell as single words and validated by
    hotspare as host names before any use. ``launcher_rsh``: MPICH Hydra's remote shell (``pbs_tmrsh``, a
    name found on the node's PATH or a path; ``launcher="mpiexec"`` only). ``options`` are more ``hotspare
    launch`` flags (e.g. ``["--idle-timeout", "300"]``).
    """
    if launcher not in LAUNCHERS:
        raise ValueError(f"launcher {launcher!r}: use one of {', '.join(LAUNCHERS)}")
    rsh = _rsh_words(launcher, launcher_rsh)
    words = list(command)
    if not words:
        raise ValueError("command is empty: give the program and its arguments as a list")
    q = shlex.quote
    parts = [JOB_NODEFILE, q(python or sys.executable), "-P", "-m", "hotspare", "launch",
             '--hosts "$PARSL_MPI_NODELIST"', '--spare-hosts "${HOTSPARE_BLOCK_SPARES:-}"',
             '--ppn "${PARSL_RANKS_PER_NODE:-1}"', '--quarantine "${HOTSPARE_QUARANTINE:-}"',
             '--spare-claims "${HOTSPARE_SPARE_CLAIMS:-}"',
             '--run-dir "${HOTSPARE_RUN_DIR:-.}/tasks/task-$$-$(date +%s%N)"', "--launcher", q(launcher)]
    if launcher_cmd:
        parts += ["--launcher-cmd", q(launcher_cmd)]
    parts += rsh
    parts += [f"--launcher-arg={q(a)}" for a in launcher_args]
    if checkpoint_dir:
        parts += ["--checkpoint-dir", q(checkpoint_dir)]
    parts += [q(o) for o in options]
    return " ".join([*parts, "--", *(q(w) for w in words)])


def _rsh_words(launcher: str, rsh: str | None) -> list[str]:
    """``--launcher-rsh RSH`` for the line, checked here so a bad value fails in the workflow, not on a node."""
    if rsh is None:
        return []
    if launcher != LauncherKind.MPIEXEC:
        raise ValueError(f"launcher_rsh={rsh!r} is for MPICH Hydra: give launcher='mpiexec', not {launcher!r}")
    if not rsh or rsh != rsh.strip():
        raise ValueError(f"launcher_rsh={rsh!r} is empty or padded: give pbs_tmrsh's name or path")
    return ["--launcher-rsh", shlex.quote(rsh)]
