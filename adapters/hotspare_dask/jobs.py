"""The Job classes: dask-jobqueue's own, plus this job's placement and node count in its header.

dask-jobqueue builds each job as ``job_cls(scheduler_address, **spec["options"], name=...)``; the failover
clusters put a :class:`~hotspare_dask.placement.Placement` in each job's options. ``placement`` defaults to
None because ``cluster.job_script()`` builds a "dummy" job from the cluster-wide keywords, which carry none.
``job_nodes`` (default 1) is a cluster-wide keyword that dask-jobqueue hands to every job unchanged.

**Multi-node jobs** (``job_nodes=N``, for MPI launched from a task: :mod:`hotspare_dask.mpi`). The batch
script, and so the one worker, runs once on the job's lead node whatever the node count: the other nodes are
only reserved, for the task's MPI launch and its spares.

* SLURM: dask-jobqueue's ``-n 1`` becomes ``--nodes=N`` and ``--ntasks-per-node=1`` (sbatch shrinks
  ``--nodes=4 -n 1`` to one node: "can't run 1 processes on 4 nodes", seen on the bed), so
  ``--cpus-per-task`` is reserved on every node; ``--no-kill`` keeps the job (and its worker) alive when a
  node other than the lead dies.
* PBS: the one-chunk ``select=1:…`` becomes ``select=N:…`` plus ``-W tolerate_node_failures=all`` (PBS Pro's
  equivalent of ``--no-kill``); Torque's ``nodes=1:…`` becomes ``nodes=N:…`` (Torque has no such attribute;
  slurm-wlm-torque's qsub honours ``nodes=``). A multi-node PBS job is **placed by PBS, never pinned**: the
  correct pinned form exists (``select=1:host=A:…+1:host=B:…``, :func:`hotspare.pin_pbs_hosts`), but it needs
  N free known-good hosts, and a job pinned to a busy one queues behind it. Quarantined hosts a PBS job
  still gets are kept out of the task's MPI launch by its supervisor (``--quarantine``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import dask.config
from dask_jobqueue.pbs import PBSJob
from dask_jobqueue.slurm import SLURMJob

from hotspare_dask.mpi import RUN_DIR_ENV
from hotspare_dask.placement import Placement, build_slurm_exclude, pin_pbs_header

log = logging.getLogger(__name__)

#: The longest a job's cancel command may take (seconds). PBS's ``qdel`` of a job whose mother superior MOM is
#: frozen never returns (seen on the bed; the MOM takes the connection and never answers): unbounded, it held the
#: cluster's close for ever.
CANCEL_S = 20.0


def check_job_nodes(job_nodes: object) -> int:
    """``job_nodes`` checked: a whole number >= 1 (ValueError naming the fix)."""
    if isinstance(job_nodes, bool) or not isinstance(job_nodes, int) or job_nodes < 1:
        raise ValueError(f"job_nodes={job_nodes!r}: give a whole number >= 1 (nodes each batch job reserves)")
    return job_nodes


_SLURM_ONE_TASK = re.compile(r"^#SBATCH -n 1$", re.MULTILINE)
_SLURM_NODES = re.compile(r"^#SBATCH +(?:-N\b|--nodes\b)", re.MULTILINE)


def build_slurm_nodes_header(header: str, job_nodes: int) -> str:
    """``header`` reserving ``job_nodes`` nodes, the worker still run once on the lead (pure; 1: unchanged).

    A header that already asks for a node count (a ``-N``/``--nodes`` job_extra_directive) raises ValueError:
    two counts would leave sbatch to pick one.
    """
    if check_job_nodes(job_nodes) == 1:
        return header
    if _SLURM_NODES.search(header):
        raise ValueError(f"job_nodes={job_nodes} and a --nodes/-N directive: give the node count once, as job_nodes")
    lines = f"#SBATCH --nodes={job_nodes}\n#SBATCH --ntasks-per-node=1\n#SBATCH --no-kill"
    if _SLURM_ONE_TASK.search(header):
        return _SLURM_ONE_TASK.sub(lines, header, count=1)
    return f"{header}\n{lines}" if header else lines  # job_directives_skip dropped "-n 1"


_PBS_ONE_CHUNK = re.compile(r"^(#PBS -l )(select|nodes)=1(?=:|\s|$)(.*)$", re.MULTILINE)


def build_pbs_nodes_header(header: str, job_nodes: int) -> str:
    """``header`` asking PBS for ``job_nodes`` chunks (``select=N:…`` and ``-W tolerate_node_failures=all``,
    or Torque's ``nodes=N:…``) (pure; 1: unchanged). A header without a one-chunk resource line raises
    ValueError naming the fix."""
    if check_job_nodes(job_nodes) == 1:
        return header
    match = _PBS_ONE_CHUNK.search(header)
    if match is None:
        raise ValueError(f"job_nodes={job_nodes}: the PBS header has no '#PBS -l select=1...' or '#PBS -l nodes=1...'"
                         " line; give resource_spec='select=1:ncpus=N:mem=M' (one node's share) or leave it unset")
    line = f"{match.group(1)}{match.group(2)}={job_nodes}{match.group(3)}"
    if match.group(2) == "select":
        # PBS Pro ends a job when a sister node fails unless the job tolerates it (the lead's loss still ends it).
        line += "\n#PBS -W tolerate_node_failures=all"
    return header[: match.start()] + line + header[match.end():]


_PBS_RERUN = re.compile(r"^#PBS +-r\b", re.MULTILINE)


def build_pbs_no_rerun(header: str) -> str:
    """``header`` with ``#PBS -r n`` (pure): the job is not rerunnable. The cluster replaces a job lost to a node
    itself; PBS's own requeue would run the same job again later under the same worker names, beside its
    replacement (seen on the bed: ``qdel`` of a job whose MOM is down fails, "Delete failed 15070", the job stays
    R, and ``node_fail_requeue`` later reran it on a free node, run_count 2). A header that already says ``-r``
    is the user's choice and is kept. slurm-wlm-torque's sbatch ignores ``#PBS`` lines."""
    return header if _PBS_RERUN.search(header) else f"{header}\n#PBS -r n"


def run_dir_on_worker(kwargs: dict[str, Any], config_name: str, run_dir: Path) -> dict[str, Any]:
    """The job keywords with the worker command prefixed by ``HOTSPARE_RUN_DIR=<run_dir>`` (a new dict): how a
    task's :func:`~hotspare_dask.mpi.run_mpi` finds the workflow's quarantine and its own run directory.

    The assignment goes on the worker's command line (``HOTSPARE_RUN_DIR=/wf /usr/bin/python -m
    distributed.cli.dask_worker ...``), not into ``job_script_prologue``, so a script is dask-jobqueue's own plus
    that one word (and the placement): the user's prologue stays exactly as given. The ``python`` the user (or the
    config) named is kept after it; the path is shell-quoted.
    """
    out = dict(kwargs)
    python = out.get("python") or dask.config.get(f"jobqueue.{config_name}.python", None) or sys.executable
    out["python"] = f"{RUN_DIR_ENV}={shlex.quote(str(run_dir))} {python}"
    return out


class _BoundedCancel:
    """A job whose cancel cannot hang the cluster: dask-jobqueue runs the cancel command and waits for it with no
    bound. Here it gets :data:`CANCEL_S`; then it is killed, :attr:`force_cancel` is tried the same way (PBS:
    ``qdel -W force``, which deletes without the MOM's word), and what is left is said on the log."""

    #: A second cancel command, for a job whose first one did not return (None: none).
    force_cancel: ClassVar[tuple[str, ...] | None] = None

    @classmethod
    async def _close_job(cls, job_id: str, cancel_command: str) -> None:
        if not job_id:
            return
        argv = [*shlex.split(cancel_command), job_id]
        if await _bounded(argv) or cls.force_cancel is None:
            return
        if await _bounded([*cls.force_cancel, job_id]):
            log.warning("hotspare: %s did not return within %.0f s (the job's node is not answering); %s deleted it",
                        " ".join(argv), CANCEL_S, " ".join(cls.force_cancel))
            return
        log.warning("hotspare: neither %s nor %s returned within %.0f s: batch job %s may remain, delete it by hand",
                    " ".join(argv), " ".join(cls.force_cancel), CANCEL_S, job_id)


async def _bounded(argv: list[str]) -> bool:
    """Run a cancel command for at most :data:`CANCEL_S`: whether it returned. Killed at the deadline. A non-zero
    status is said on the log at info level (a job already gone makes qdel/scancel fail, as dask-jobqueue lets it;
    PBS's "Delete failed" of a job whose MOM is down does too)."""
    # Its own session, so the kill reaches whatever it started; no pipes, which a child could hold open.
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
                                                start_new_session=True)
    try:
        rc = await asyncio.wait_for(proc.wait(), CANCEL_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return False
    if rc != 0:
        log.info("hotspare: %s exited %d (the job may have ended already)", " ".join(argv), rc)
    return True


class FailoverSLURMJob(_BoundedCancel, SLURMJob):
    """A SLURM job kept off the placement's hosts (``#SBATCH --exclude=``; SLURM cannot pin and exclude
    differently per job otherwise), on ``job_nodes`` nodes."""

    job_header: str

    def __init__(self, *args: Any, placement: Placement | None = None, job_nodes: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]  # dask-jobqueue is untyped
        self.placement = placement
        self.job_nodes = check_job_nodes(job_nodes)
        self.job_header = build_slurm_nodes_header(self.job_header, self.job_nodes)
        line = build_slurm_exclude(placement.exclude) if placement is not None else None
        if line is not None:
            # After the user's job_extra_directives: a directive sbatch reads last does not change meaning,
            # and job_directives_skip (which filters generated lines) must never drop the exclusion.
            self.job_header = f"{self.job_header}\n{line}"


class FailoverPBSJob(_BoundedCancel, PBSJob):
    """A PBS job pinned to the placement's host (``select=1:host=H:...``): PBS Pro has no "not on host X"
    select syntax, so the only way to keep a job off a dead node is to name a good one. A job of
    ``job_nodes`` > 1 is placed by PBS (see the module's docstring). Every job is ``#PBS -r n``
    (:func:`build_pbs_no_rerun`): replacing a lost job is the cluster's work, not PBS's requeue.

    The job id kept is qsub's whole answer (``4711.pbs01``), not dask-jobqueue's leading digits: ``qstat -x -f
    -F json`` keys its jobs by the whole id, and qdel takes it as well.
    """

    job_header: str
    job_id_regexp = r"(?P<job_id>\d+(?:\.[A-Za-z0-9_.-]+)?)"
    force_cancel: ClassVar[tuple[str, ...] | None] = ("qdel", "-W", "force")

    def __init__(self, *args: Any, placement: Placement | None = None, job_nodes: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]  # dask-jobqueue is untyped
        self.job_nodes = check_job_nodes(job_nodes)
        if placement is not None and self.job_nodes > 1:
            placement = replace(placement, pin=None)  # recorded as it was submitted: unpinned
        self.placement = placement
        if placement is not None and placement.pin is not None:
            self.job_header = pin_pbs_header(self.job_header, placement.pin)
        self.job_header = build_pbs_no_rerun(build_pbs_nodes_header(self.job_header, self.job_nodes))
