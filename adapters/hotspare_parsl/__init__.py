"""hotspare for Parsl: a failover provider, a retry policy and MPI tasks that survive a lost node.

``pip install hotspare[parsl]``; see the README's Parsl section for the one-line config change.
"""

try:
    import parsl  # noqa: F401 -- only to say which extra is missing
except ImportError as exc:  # pragma: no cover - exercised in a venv without Parsl
    raise ImportError("hotspare_parsl needs Parsl: pip install 'hotspare[parsl]'") from exc

import hotspare as _core

if getattr(_core, "__file__", None) is None:  # a bare folder named hotspare was found before the package
    _folder = next(iter(getattr(_core, "__path__", [])), "hotspare")
    raise ImportError(f"the folder {_folder} hides the installed hotspare "
                      "package (a directory named hotspare in the working directory or on PYTHONPATH): rename it "
                      "(run directories default to hotspare-parsl / hotspare-dask) or run from elsewhere")

from hotspare_parsl.executor import FailoverHTEX
from hotspare_parsl.interchange import INTERCHANGE_CMD
from hotspare_parsl.layout import block_prologue
from hotspare_parsl.mpi import mpi_launch
from hotspare_parsl.pbs import pin_pbs_select
from hotspare_parsl.provider import FailoverProvider, ResubmissionLimit
from hotspare_parsl.retry import RetryHandler, block_error_handler, retry_handler

__all__ = [
    "INTERCHANGE_CMD",
    "FailoverHTEX",
    "FailoverProvider",
    "ResubmissionLimit",
    "RetryHandler",
    "block_error_handler",
    "block_prologue",
    "mpi_launch",
    "pin_pbs_select",
    "retry_handler",
]
