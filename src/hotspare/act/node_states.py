"""What scheduler node states mean, and the schedulers one can name: words only, no commands, so the scanner's
and the classifier's start-up (``hotspare scrape``) does not pay for the process gateway."""

from __future__ import annotations

#: Words in SLURM (DOWN*, IDLE+NOT_RESPONDING, FAIL) and PBS (down, offline, state-unknown) node states that mean
#: the node is not healthy. A trailing '*' is SLURM's "not responding".
_UNHEALTHY = ("DOWN", "NOT_RESPONDING", "NO_RESPOND", "FAIL", "OFFLINE", "UNKNOWN", "STATE-UNKNOWN")

#: What ``--scheduler`` (and the adapters' ``scheduler=``) accept.
SCHEDULER_CHOICES = ("auto", "slurm", "pbs", "none")


def unhealthy(state: str) -> bool:
    """Whether a scheduler node state means the node is down or not responding."""
    upper = state.upper()
    return upper.rstrip().endswith("*") or any(word in upper for word in _UNHEALTHY)
