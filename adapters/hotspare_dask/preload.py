"""Worker preload: tell the scheduler which node and which batch job each worker runs in.

The failover clusters add ``--preload hotspare_dask.preload`` to every worker command. The scheduler knows a
worker only by its address, whose IP does not name the node (several nodes may share one, as on the test bed,
and a node's name is what the scheduler and the quarantine speak). Entries put in
``worker.startup_information`` before the worker registers arrive as identity extras on the scheduler, so
the cluster still has them when the worker is gone.

The clusters name this file by its path: it imports nothing of hotspare's at its own import, so a folder named
``hotspare`` or ``hotspare_dask`` in the worker's working directory cannot stand in for the package. It then
imports the installed adapter on the worker's main thread, with the working directory left off ``sys.path``
meanwhile: a task calling :func:`hotspare_dask.run_mpi` imports it from its own thread, and dask-jobqueue,
which the adapter imports, sets a signal handler at import (main thread only).
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
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
    """Called by ``dask worker --preload .../hotspare_dask/preload.py`` before the worker registers."""
    import_installed_adapter()
    # startup_information holds callables of the worker, called once at registration.
    for key, value in node_identity(os.environ, socket.gethostname()).items():
        worker.startup_information[key] = _constant(value)


def _constant(value: str) -> Any:
    return lambda _worker: value


def import_installed_adapter() -> None:
    """Import :mod:`hotspare_dask` now, from the installed packages (see the module docstring)."""
    if getattr(sys.modules.get("hotspare_dask"), "__file__", None):
        return  # imported already (this module loaded by its module name)
    saved = list(sys.path)
    here = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", here)]
    try:
        importlib.import_module("hotspare_dask")
    finally:
        sys.path[:] = saved
