"""An MPI job from a Dask task: the task runs its command under the hotspare supervisor across its batch job's nodes.

dask-jobqueue runs one worker per batch job, on the job's lead node. A task that must be an MPI job launches MPI
itself (dask-jobqueue #206, #254); :func:`run_mpi` does so under ``hotspare launch``, over the nodes of the job
the task runs in, some active and the rest spares::

    cluster = FailoverSLURMCluster(cores=1, job_cpu=64, memory="200GB", job_nodes=4, run_dir="wf")
    cluster.scale(jobs=2)

    def train(steps):
        return run_mpi(["python", "train.py", "--steps", str(steps)], nhosts=3, checkpoint_dir="ckpt")

    client.submit(train, 1000).result()   # 0, or MPIRunFailed / SparesSpent

* ``job_nodes=4`` reserves 4 nodes per job (SLURM ``--nodes=4 --no-kill``; see :mod:`hotspare_dask.jobs`); the
  task's MPI launch uses ``nhosts`` of them and keeps the rest as spares.
* A node lost while the task runs is swapped for a spare and the command resumes from the newest complete
  checkpoint in ``checkpoint_dir`` (the supervisor); the job, its worker and the task live on, since the lead
  node is not lost. Hosts in the workflow's quarantine (``<run_dir>/quarantine.json``, published by the cluster)
  are never handed to the launch.
* The supervisor writes what it found in the task's own run directory, ``<run_dir>/tasks/<name>/`` (ledger,
  attempt logs, ``quarantine.json``); the cluster folds each task's ``quarantine.json`` into the workflow's
  quarantine (``cluster.fold_task_findings()``, also done before each job's placement), so later jobs are placed
  off those hosts.
* When the job's spares are spent the supervisor exits 93 and :func:`run_mpi` raises :class:`SparesSpent`: the
  task should run again in another job (``client.submit(..., retries=1)`` reruns it on any worker, possibly
  the same job, whose supervisor then fails fast for want of good nodes).

**One MPI task per job at a time**: two tasks in one job would launch on the same active nodes. Give each job's
worker one thread (``cores=1``; reserve the CPUs with ``job_cpu=``/``resource_spec=``), or a worker resource.

**Why not dask-mpi.** dask-mpi (and dask-jobqueue's ``SLURMRunner``) make the MPI world *be* the Dask cluster:
the scheduler and workers are ranks of one ``mpirun``. That serves a workflow whose tasks are plain Python and
which wants one allocation instead of a batch job per worker; it does not make a task an MPI job, and an MPI
world usually aborts as a whole when one of its nodes dies, taking the scheduler (rank 0) with it: there is
nothing left to fail over. Here the Dask cluster stays outside MPI, and each MPI job is a supervised
subprocess of one task, so a node's death costs one relaunch of that task's command.

Paths and host names are data: the supervisor is started with an argument list (never a shell), and host
names are read and validated by hotspare itself from the job's environment (``SLURM_JOB_NODELIST`` or
``PBS_NODEFILE``).
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from collections.abc import MutableMapping, Sequence
from pathlib import Path

from hotspare import (
    EXIT_OK,
    EXIT_RETRY_ELSEWHERE,
    SNAPSHOT_NAME,
    HotspareError,
    LauncherKind,
    ProcessRunner,
    Runner,
)

log = logging.getLogger(__name__)

#: Set on every failover job's worker command line (``HOTSPARE_RUN_DIR=... python -m distributed.cli.dask_worker``):
#: the cluster's ``run_dir``.
RUN_DIR_ENV = "HOTSPARE_RUN_DIR"
#: The tasks' own run directories, under the cluster's ``run_dir``.
TASKS_DIR = "tasks"
#: The launchers a task can run under (the embedded ``local`` one is for runs on one machine).
LAUNCHERS = tuple(k.value for k in LauncherKind if k is not LauncherKind.LOCAL)
#: The supervisor's own output, in the task's run directory.
SUPERVISOR_LOG = "supervisor.log"


class MPIRunFailed(HotspareError):
    """``hotspare launch`` ended without success: ``exit_code`` is its exit status, ``run_dir`` holds its
    ledger and attempt logs (``hotspare postmortem RUN_DIR``)."""

    def __init__(self, exit_code: int, run_dir: Path, last_line: str) -> None:
        said = f": {last_line}" if last_line else ""
        super().__init__(f"hotspare launch exited {exit_code}{said} (evidence: {run_dir})")
        self.exit_code = exit_code
        self.run_dir = run_dir
        self.last_line = last_line

    def __reduce__(self) -> tuple[type[MPIRunFailed], tuple[int, Path, str]]:
        # Raised on a worker, unpickled on the client: rebuilt from the fields, not from the message.
        return type(self), (self.exit_code, self.run_dir, self.last_line)


class SparesSpent(MPIRunFailed):
    """Exit 93: this batch job has no good nodes left for the launch; run the task again in another job."""

    def __init__(self, exit_code: int, run_dir: Path, last_line: str) -> None:
        super().__init__(exit_code, run_dir, last_line)
        self.args = (f"hotspare launch exited {exit_code}: this job's spares are spent; retry the task in another "
                     f"job (evidence: {run_dir})",)


def build_launch_argv(command: Sequence[str], *, nhosts: int, launcher: str, quarantine: Path, run_dir: Path,
                      checkpoint_dir: str | os.PathLike[str] | None = None, options: Sequence[str] = (),
                      python: str = sys.executable) -> list[str]:
    """The supervisor's argument list (pure): ``command`` on ``nhosts`` nodes of the job's allocation, the rest
    spares. Bad arguments raise ValueError naming the fix."""
    words = _words(command, "command")
    if not words:
        raise ValueError("command is empty: give the program and its arguments as a list")
    if isinstance(nhosts, bool) or not isinstance(nhosts, int) or nhosts < 1:
        raise ValueError(f"nhosts={nhosts!r}: give a whole number >= 1 (the nodes the MPI job runs on)")
    if launcher not in LAUNCHERS:
        raise ValueError(f"launcher={launcher!r}: use one of {', '.join(LAUNCHERS)}")
    extra = _words(options, "options")
    argv = [python, "-P", "-m", "hotspare", "launch", "--launcher", launcher, "--nhosts", str(nhosts),
            "--quarantine", str(quarantine), "--run-dir", str(run_dir)]
    if checkpoint_dir is not None:
        argv += ["--checkpoint-dir", os.fspath(checkpoint_dir)]
    return [*argv, *extra, "--", *words]


def _words(given: Sequence[str], what: str) -> list[str]:
    if isinstance(given, str | bytes):
        raise ValueError(f"{what}={given!r}: give a list of words, e.g. {[given]!r} (a string is never split)")
    words = list(given)
    bad = next((w for w in words if not isinstance(w, str | os.PathLike)), None)
    if bad is not None:
        raise ValueError(f"{what}: {bad!r} is not a string; give every word as a string")
    return [os.fspath(w) for w in words]


def workflow_dir(run_dir: str | os.PathLike[str] | None, environ: MutableMapping[str, str] | None = None) -> Path:
    """The cluster's run directory: ``run_dir`` when given, else ``$HOTSPARE_RUN_DIR`` (set by the failover
    clusters' job scripts); ValueError naming the fix when neither is."""
    env = os.environ if environ is None else environ
    chosen = os.fspath(run_dir) if run_dir is not None else env.get(RUN_DIR_ENV, "")
    if not chosen.strip():
        raise ValueError(f"no workflow directory: ${RUN_DIR_ENV} is not set (run inside a FailoverSLURMCluster or "
                         "FailoverPBSCluster job) and run_dir= was not given")
    return Path(chosen)


def new_task_dir(workflow: Path) -> Path:
    """A fresh run directory's path for one task under ``workflow/tasks/`` (not created; the name never repeats)."""
    return workflow / TASKS_DIR / f"task-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:12]}"


def check_exit(rc: int, run_dir: Path, tail: bytes = b"") -> int:
    """0 for a supervisor that succeeded; otherwise :class:`SparesSpent` (93) or :class:`MPIRunFailed`, with
    the exit status, the last line it printed and its run directory."""
    if rc == EXIT_OK:
        return EXIT_OK
    lines = tail.decode(errors="replace").strip().splitlines()
    last = lines[-1].strip() if lines else ""
    if rc == EXIT_RETRY_ELSEWHERE:
        raise SparesSpent(rc, run_dir, last)
    raise MPIRunFailed(rc, run_dir, last)


def run_mpi(command: Sequence[str], *, nhosts: int, launcher: str = "srun",
            checkpoint_dir: str | os.PathLike[str] | None = None, run_dir: str | os.PathLike[str] | None = None,
            options: Sequence[str] = (), runner: Runner | None = None) -> int:
    """Run ``command`` as an MPI job on ``nhosts`` nodes of the batch job this task runs in, under
    ``hotspare launch`` (the job's other nodes are spares); call it inside a Dask task. Returns 0, else raises
    :class:`MPIRunFailed` (:class:`SparesSpent` for exit 93).

    ``checkpoint_dir``: each attempt resumes from the newest complete checkpoint there. ``run_dir``: the
    cluster's run directory (default ``$HOTSPARE_RUN_DIR``, set by the cluster's job scripts). ``options``: more
    ``hotspare launch`` flags, e.g. ``["--launcher-cmd", "mpiexec.mpich", "--idle-timeout", "300"]``.
    ``runner``: the process gateway (tests).
    """
    workflow = workflow_dir(run_dir)
    task_dir = new_task_dir(workflow)
    argv = build_launch_argv(command, nhosts=nhosts, launcher=launcher, quarantine=workflow / SNAPSHOT_NAME,
                             run_dir=task_dir, checkpoint_dir=checkpoint_dir, options=options)
    task_dir.mkdir(parents=True)  # once the arguments are known good: no empty run directories
    log.info("hotspare: MPI task on %d node(s) of this job, evidence in %s", nhosts, task_dir)
    started = (runner or ProcessRunner()).launch(argv, task_dir / SUPERVISOR_LOG, _ignore, env=os.environ)
    outcome = started.finish()
    return check_exit(outcome.rc, task_dir, outcome.tail)


def _ignore(_chunk: bytes) -> None:
    """Output goes to the task's supervisor log only."""
