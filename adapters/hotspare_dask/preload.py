"""Worker preload: tell the scheduler which node and which batch job each worker runs in.

The failover clusters add ``--preload hotspare_dask.preload`` to every worker command. The scheduler knows a
worker only by its address, whose IP does not name the node (several nodes may share one, as on the test bed,
and a node's name is what the scheduler and the quarantine speak). Entries put in
``worker.startup_information`` before the worker registers arrive as identity extras on the scheduler, so
the cluster still has them when the worker is gone.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

#: Keys this preload adds to each worker's identity on the scheduler.
HOSTNAME_KEY = "hotspare_hostname"
JOB_ID_KEY = "hotspare_batch_job_id"


def node_identity(environ: Mapping[str, str], hostname: str) -> dict[str, str]:
    """The node and batch job a worker runs in (pure): SLURM's node name over the kernel's (a SLURM node's
    name in slurm.conf need not be its hostname), and the job id SLURM or PBS set, when set."""
    found = {HOSTNAME_KEY: environ.get("SLURMD_NODENAME") or hostname}
    job_id = environ.get("SLURM_JOB_ID") or environ.get("PBS_JOBID")
    if job_id:
        found[JOB_ID_KEY] = job_id
    return found


def dask_setup(worker: Any) -> None:
    """Called by ``dask worker --preload hotspare_dask.preload`` before the worker registers."""
    # startup_information holds callables of the worker, called once at registration.
    for key, value in node_identity(os.environ, socket.gethostname()).items():
        worker.startup_information[key] = _constant(value)


def _constant(value: str) -> Any:
    return lambda _worker: value
