"""The error tree: one root, subclasses by what the caller can do.

Every error a user can cause carries an ``exit_code`` so the CLI catches the
root once and prints a single ``error:`` line.
"""

from __future__ import annotations

#: Exit code for bad input: a missing file, a bad pattern pack, a bad host.
EXIT_USAGE = 2


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
