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
#: Set (to "1") on a spare job's worker command; the preload then says so in the worker's identity.
SPARE_ENV = "HOTSPARE_SPARE"
SPARE_KEY = "hotspare_spare"
#: The worker handler the cluster calls when it promotes a spare: the worker's memory pause restored.
PROMOTE_OP = "hotspare_promote"


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
    if os.environ.get(SPARE_ENV) == "1":
        park(worker)


def park(worker: Any) -> None:
    """A spare's worker: its memory pause off until promoted, and the handler that promotes it.

    The scheduler keeps a spare's worker paused (the cluster's scheduler plugin); a worker that paused for memory
    and resumed would tell it ``running``, and the spare would take tasks unasked. An idle spare holds no data, so
    nothing is lost meanwhile."""
    manager = worker.memory_manager
    saved = manager.memory_pause_fraction
    manager.memory_pause_fraction = False
    worker.startup_information[SPARE_KEY] = _constant("1")

    def hotspare_promote() -> str:  # a plain function: distributed logs a handler's __name__
        manager.memory_pause_fraction = saved
        return "promoted"

    worker.handlers[PROMOTE_OP] = hotspare_promote


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
