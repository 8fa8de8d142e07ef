"""A failed attempt's signature: what it died of, with what changes between runs masked.

Two attempts of the same deterministic bug print the same exception with other numbers, addresses, paths,
ranks and host names; a node fault, a flaky file system or a race prints something else each time. The
signature keeps what stays: the decisive line's pattern and its text with the rest masked, and the exit
status. When no pattern decided, the last line the program printed that no pattern claimed (launcher
banners are claimed) stands in, so an unrecognised fatal message still tells two failures apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hotspare.evidence.patterns import PatternSet, Role
from hotspare.evidence.records import Evidence
from hotspare.evidence.scan import Scanner
from hotspare.failures import FailureClass

#: Bytes of an attempt's output read from its end for :func:`last_unclaimed`.
TAIL_BYTES = 8 << 10

#: Characters of masked text kept in a signature.
SIGNATURE_CHARS = 200

# Order matters: paths before numbers (a path holds digits), addresses before numbers.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9A-Fa-f]+"), "<addr>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[^\s/'\"():,\]\[]+)+/?"), "<path>"),
    (re.compile(r"\b[0-9a-fA-F]{8,}\b"), "<hex>"),
    (re.compile(r"[0-9]+"), "<n>"),
    (re.compile(r"\s+"), " "),
)

#: Pattern names whose line is the last word of a Python traceback (any exception type).
_EXCEPTION_LINES = frozenset({"python.exception_line"})


def normalise(text: str, hosts: Iterable[str] = ()) -> str:
    """``text`` with host names, addresses, paths and numbers masked, blanks squeezed, at most
    :data:`SIGNATURE_CHARS` characters."""
    out = text
    lowered = text.lower()
    # Only the names the text holds: an allocation of 10,000 hosts must not cost 10,000 substitutions per verdict.
    present = {h for h in hosts if h and h.lower() in lowered}
    for name in sorted(present, key=len, reverse=True):
        out = re.sub(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])", "<host>", out, flags=re.IGNORECASE)
    for regex, mask in _MASKS:
        out = regex.sub(mask, out)
    return out.strip()[:SIGNATURE_CHARS]


def decisive(evidence: Iterable[Evidence], *, crash: bool = False) -> Evidence | None:
    """The line a signature is made of: the first root cause, else the first rank that died of its own signal,
    else the last line of a traceback, else None. With ``crash`` (the verdict came from a crash) the crash first."""
    items = list(evidence)
    kinds = (_died, _root, _raised) if crash else (_root, _died, _raised)
    for wanted in kinds:
        found = next((e for e in items if wanted(e)), None)
        if found is not None:
            return found
    return None


def _root(ev: Evidence) -> bool:
    return ev.role is Role.ROOT and ev.failure_class is not None


def _died(ev: Evidence) -> bool:
    return ev.role is Role.CONTEXT and ev.failure_class is FailureClass.RANK_KILLED


def _raised(ev: Evidence) -> bool:
    return ev.pattern in _EXCEPTION_LINES


def failure_signature(evidence: Iterable[Evidence], status: str | None, *, hosts: Iterable[str] = (),
                      last_line: str | None = None, crash: bool = False) -> str:
    """The signature of a failed attempt: ``<status> | <pattern>: <masked text>``, or with no decisive line,
    ``<status> | <masked last unclaimed output line>``. ``hosts`` (the allocation's names, the log's) are masked."""
    items = list(evidence)
    names = [*hosts, *(e.host_text for e in items if e.host_text)]
    head = status or "no exit status"
    found = decisive(items, crash=crash)
    if found is not None:
        return f"{head} | {found.pattern}: {normalise(found.text, names)}"
    if last_line and last_line.strip():
        return f"{head} | {normalise(last_line, names)}"
    return head


def last_unclaimed(tail: bytes, patterns: PatternSet) -> str | None:
    """The last non-blank line of ``tail`` (the end of an attempt's output) that no pattern claimed, other than
    progress: what the program said last when no pattern knows it (a launcher's banner is claimed)."""
    scanner = Scanner(patterns)
    scanner.feed(tail)
    result = scanner.close()
    claimed = {e.line for e in result.evidence if e.role is not Role.PROGRESS}
    progress = {result.progress.first_line, result.progress.last_line} if result.progress else set()
    lines = tail.decode("latin-1").replace("\r", "\n").split("\n")
    for number in range(len(lines), 0, -1):
        text = lines[number - 1].strip()
        if text and number not in claimed and number not in progress:
            return text[:SIGNATURE_CHARS * 2]
    return None
