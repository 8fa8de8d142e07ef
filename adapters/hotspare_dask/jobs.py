"""The Job classes: dask-jobqueue's own, plus this job's placement in its header.

dask-jobqueue builds each job as ``job_cls(scheduler_address, **spec["options"], name=...)``; the failover
clusters put a :class:`~hotspare_dask.placement.Placement` in each job's options. ``placement`` defaults to
None because ``cluster.job_script()`` builds a "dummy" job from the cluster-wide keywords, which carry none.
"""

from __future__ import annotations

from typing import Any

from dask_jobqueue.pbs import PBSJob
from dask_jobqueue.slurm import SLURMJob

from hotspare_dask.placement import Placement, build_slurm_exclude, pin_pbs_header


class FailoverSLURMJob(SLURMJob):
    """A SLURM job kept off the placement's hosts (``#SBATCH --exclude=``; SLURM cannot pin and exclude
    differently per job otherwise)."""

    job_header: str

    def __init__(self, *args: Any, placement: Placement | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]  # dask-jobqueue is untyped
        self.placement = placement
        line = build_slurm_exclude(placement.exclude) if placement is not None else None
        if line is not None:
            # After the user's job_extra_directives: a directive sbatch reads last does not change meaning,
            # and job_directives_skip (which filters generated lines) must never drop the exclusion.
            self.job_header = f"{self.job_header}\n{line}"


class FailoverPBSJob(PBSJob):
    """A PBS job pinned to the placement's host (``select=1:host=H:...``): PBS Pro has no "not on host X"
    select syntax, so the only way to keep a job off a dead node is to name a good one.

    The job id kept is qsub's whole answer (``4711.pbs01``), not dask-jobqueue's leading digits: ``qstat -x -f
    -F json`` keys its jobs by the whole id, and qdel takes it as well.
    """

    job_header: str
    job_id_regexp = r"(?P<job_id>\d+(?:\.[A-Za-z0-9_.-]+)?)"

    def __init__(self, *args: Any, placement: Placement | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]  # dask-jobqueue is untyped
        self.placement = placement
        if placement is not None and placement.pin is not None:
            self.job_header = pin_pbs_header(self.job_header, placement.pin)
