"""Required literals: what every match of a regex must contain, for a small fast prefilter.

A prefilter that is the alternation of every pattern grows with the packs: each ``.*`` and optional group
multiplies the states RE2's DFA must track, and past its memory budget the DFA falls back to a scan a
hundred times slower. Every match of ``srun: error: Node failure on (?P<host>\\S+)`` contains the text
``srun: error: Node failure on``, so the prefilter only needs that literal: an alternation of literals is a
compact automaton whose cost does not grow with how the patterns are written. Candidate lines are then
matched exactly (:meth:`hotspare.evidence.scan.Scanner._match_line`), so a prefilter may over-match, never
under-match. A regex with no literal long enough (a bare ``(?P<host>\\S+): (?:A|B)``) keeps its whole
relaxed form in the prefilter.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

with warnings.catch_warnings():  # Python 3.11 keeps the parser as re._parser; these names are its public aliases
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants as C
    import sre_parse

#: Shortest literal worth prefiltering on; shorter ones make most lines candidates.
MIN_LITERAL = 6

Alternatives = tuple[str, ...]


def required_literals(regex: str) -> tuple[Alternatives, bool] | None:
    """Literals of which every match of ``regex`` holds at least one, and whether they ignore case;
    None when no choice of literals at least :data:`MIN_LITERAL` long exists (or the regex is not one
    Python's parser reads the same way as RE2)."""
    try:
        tree = sre_parse.parse(regex)
    except (re.error, OverflowError, RecursionError):
        return None
    scoped: list[bool] = []
    best = _sequence(tree.data, scoped)
    ignore_case = bool(tree.state.flags & re.IGNORECASE) or any(scoped)
    return (best, ignore_case) if best is not None else None


def _score(alts: Alternatives) -> int:
    return min(len(a) for a in alts)


def _better(a: Alternatives | None, b: Alternatives | None) -> Alternatives | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if (_score(a), -len(a)) >= (_score(b), -len(b)) else b


def _sequence(items: list[Any], scoped: list[bool]) -> Alternatives | None:
    """The best requirement of a concatenation: its longest literal run, or its best required part."""
    best: Alternatives | None = None
    run: list[str] = []

    def close() -> None:
        nonlocal best
        if len(run) >= MIN_LITERAL:
            best = _better(best, ("".join(run),))
        run.clear()

    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        if op is C.AT:
            continue  # anchors take no text
        if op is C.SUBPATTERN:
            inner = list(av[3])
            if not av[1] and not av[2] and all(o is C.LITERAL for o, _ in inner):
                run.extend(chr(v) for _, v in inner)
                continue
            if av[1]:  # a scoped flag group, (?i:...): its literals ignore case
                scoped.append(True)
            close()
            best = _better(best, _sequence(inner, scoped))
            continue
        close()
        if op is C.BRANCH:
            best = _better(best, _branch(av[1], scoped))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
            best = _better(best, _sequence(list(av[2]), scoped))
    close()
    return best


def _branch(branches: list[Any], scoped: list[bool]) -> Alternatives | None:
    """An alternation requires one of its branches' requirements: None if any branch requires nothing."""
    found: list[str] = []
    for branch in branches:
        alts = _sequence(list(branch), scoped)
        if alts is None:
            return None
        found.extend(alts)
    return tuple(dict.fromkeys(found))
