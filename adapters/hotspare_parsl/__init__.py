"""hotspare for Parsl: a failover provider, a retry policy and MPI tasks that survive a lost node.

``pip install hotspare[parsl]``; see the README's Parsl section for the one-line config change.
"""

from hotspare_parsl.mpi import mpi_launch
from hotspare_parsl.provider import FailoverProvider, ResubmissionLimit, pin_pbs_select
from hotspare_parsl.retry import RetryHandler, block_error_handler, retry_handler

__all__ = [
    "FailoverProvider",
    "ResubmissionLimit",
    "RetryHandler",
    "block_error_handler",
    "mpi_launch",
    "pin_pbs_select",
    "retry_handler",
]
