"""hotspare: name the node that died, swap in a spare, resume.

The public API. Adapters (Parsl, Dask) import only what is listed here.
"""

from __future__ import annotations

from hotspare.classify import Blame, ExitStatus, SchedulerFacts, Verdict, classify
from hotspare.errors import HostError, HotspareError, InputError, PatternError
from hotspare.evidence import Evidence, ScanResult
from hotspare.failures import FailureClass
from hotspare.hosts import Host, expand_hosts, parse_hostfile, read_hostfile
from hotspare.patterns import PatternSet, Role, load_patterns
from hotspare.scan import Scanner, scan

__all__ = [
    "Blame",
    "Evidence",
    "ExitStatus",
    "FailureClass",
    "Host",
    "HostError",
    "HotspareError",
    "InputError",
    "PatternError",
    "PatternSet",
    "Role",
    "ScanResult",
    "Scanner",
    "SchedulerFacts",
    "Verdict",
    "classify",
    "expand_hosts",
    "load_patterns",
    "parse_hostfile",
    "read_hostfile",
    "scan",
]

__version__ = "0.1.0"
