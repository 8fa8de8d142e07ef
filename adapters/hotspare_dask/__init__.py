"""dask-jobqueue adapter for hotspare: ``FailoverSLURMCluster`` and ``FailoverPBSCluster``, and :func:`run_mpi`
for a task that is an MPI job.

Imports only the public API of :mod:`hotspare`. dask-jobqueue comes with the ``dask`` extra
(``pip install 'hotspare[dask]'``); without it, importing this package says so.
"""

from __future__ import annotations

try:
    import dask_jobqueue  # noqa: F401 -- checked here so the error names the extra, not a submodule
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("hotspare_dask needs dask-jobqueue: install the extra with pip install 'hotspare[dask]'") from exc

import hotspare as _core

if getattr(_core, "__file__", None) is None:  # a bare folder named hotspare was found before the package
    _folder = next(iter(getattr(_core, "__path__", [])), "hotspare")
    raise ImportError(f"the folder {_folder} hides the installed hotspare "
                      "package (a directory named hotspare in the working directory or on PYTHONPATH): rename it "
                      "(run directories default to hotspare-parsl / hotspare-dask) or run from elsewhere")

from hotspare_dask.blame import Settled, TaskBlame
from hotspare_dask.cluster import FailoverPBSCluster, FailoverSLURMCluster
from hotspare_dask.jobs import FailoverPBSJob, FailoverSLURMJob
from hotspare_dask.mpi import MPIRunFailed, SparesSpent, run_mpi
from hotspare_dask.placement import Placement, build_slurm_exclude, choose_pin, pin_pbs_header

__all__ = [
    "FailoverPBSCluster",
    "FailoverPBSJob",
    "FailoverSLURMCluster",
    "FailoverSLURMJob",
    "MPIRunFailed",
    "Placement",
    "Settled",
    "SparesSpent",
    "TaskBlame",
    "build_slurm_exclude",
    "choose_pin",
    "pin_pbs_header",
    "run_mpi",
]
