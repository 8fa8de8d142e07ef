"""The error tree: one root, subclasses by what the caller can do.

Every error a user can cause carries an ``exit_code`` so the CLI catches the
root once and prints a single ``error:`` line.
"""

from __future__ import annotations

# The exit-code contract for outer schedulers and workflow engines.
#: The job succeeded.
EXIT_OK = 0
#: Bad input: a missing file, a bad pattern pack, a bad host, an impossible allocation.
EXIT_USAGE = 2
#: The job failed and running it again will not help (user error, walltime, retry budget spent).
EXIT_NO_RETRY = 3
#: The job failed for want of healthy nodes here: resubmit it on a new allocation
#: (in the spirit of Arvados' 93, "retry me").
EXIT_RETRY_ELSEWHERE = 93
#: The supervisor was interrupted (SIGINT/SIGTERM); the run is recorded as cancelled.
EXIT_INTERRUPTED = 130


class HotspareError(Exception):
    """Root of every error hotspare raises on purpose."""

    exit_code: int = EXIT_USAGE


class InputError(HotspareError):
    """An input (log, hostfile, pattern directory) cannot be read."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"cannot read {path!r}: {why}")
        self.path = path


class HostError(HotspareError, ValueError):
    """A string is not a usable host name or hostlist expression."""

    def __init__(self, text: str, why: str) -> None:
        shown = text if len(text) <= 80 else text[:77] + "..."
        super().__init__(f"bad host {shown!r}: {why}")
        self.text = text


class PatternError(HotspareError):
    """A pattern pack is malformed, or a named pack does not exist."""

    def __init__(self, source: str, why: str) -> None:
        super().__init__(f"pattern pack {source}: {why}")
        self.source = source


class AllocationError(HotspareError):
    """The hosts given cannot make the requested active set."""


class HostsExhausted(AllocationError):
    """Too few healthy hosts left for the active set, once the quarantine (and spares other runs claimed) are left
    out: node evidence, not bad input, so the run is for another allocation (exit 93)."""

    exit_code = EXIT_RETRY_ELSEWHERE


class PreflightError(HotspareError):
    """A check before launch failed (free space, checkpoint directory)."""


class UsageError(HotspareError):
    """The command line itself is wrong."""
