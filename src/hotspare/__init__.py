"""hotspare: name the node that died, swap in a spare, resume.

The public API. Adapters (Parsl, Dask) import only what is listed here.
"""

from __future__ import annotations

from hotspare.checkpoint import Checkpoint, find_latest
from hotspare.classify import Blame, ExitStatus, SchedulerFacts, Verdict, classify
from hotspare.errors import (
    EXIT_INTERRUPTED,
    EXIT_NO_RETRY,
    EXIT_OK,
    EXIT_RETRY_ELSEWHERE,
    EXIT_USAGE,
    AllocationError,
    HostError,
    HotspareError,
    InputError,
    PatternError,
    PreflightError,
)
from hotspare.evidence import Evidence, ScanResult
from hotspare.failures import FailureClass
from hotspare.hosts import Host, expand_hosts, parse_hostfile, read_hostfile
from hotspare.ledger import Ledger
from hotspare.patterns import PatternSet, Role, load_patterns
from hotspare.policy import Action, Budgets, Decision, History, decide
from hotspare.pool import Pool, resolve_allocation
from hotspare.postmortem import Report, build_report
from hotspare.quarantine import Quarantine
from hotspare.scan import Scanner, scan
from hotspare.scheduler import SchedulerQuery
from hotspare.supervisor import RunConfig, Supervisor

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_NO_RETRY",
    "EXIT_OK",
    "EXIT_RETRY_ELSEWHERE",
    "EXIT_USAGE",
    "Action",
    "AllocationError",
    "Blame",
    "Budgets",
    "Checkpoint",
    "Decision",
    "Evidence",
    "ExitStatus",
    "FailureClass",
    "History",
    "Host",
    "HostError",
    "HotspareError",
    "InputError",
    "Ledger",
    "PatternError",
    "PatternSet",
    "Pool",
    "PreflightError",
    "Quarantine",
    "Report",
    "Role",
    "RunConfig",
    "ScanResult",
    "Scanner",
    "SchedulerFacts",
    "SchedulerQuery",
    "Supervisor",
    "Verdict",
    "build_report",
    "classify",
    "decide",
    "expand_hosts",
    "find_latest",
    "load_patterns",
    "parse_hostfile",
    "read_hostfile",
    "resolve_allocation",
    "scan",
]

__version__ = "0.1.0"
