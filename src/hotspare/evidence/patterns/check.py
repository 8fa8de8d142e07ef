"""Checking a pack against its own embedded examples."""

from __future__ import annotations

from hotspare.evidence.patterns import Example, Pack, Pattern, PatternSet, Role
from hotspare.evidence.scan import Scanner
from hotspare.hosts import Host, expand_hosts


def check_pack(pack: Pack) -> tuple[list[str], int]:
    """Problems found (one line each) and the number of examples checked."""
    problems: list[str] = []
    checked = 0
    for pattern in pack.patterns:
        for example in pattern.examples:
            checked += 1
            problem = _check(pack, pattern, example)
            if problem:
                problems.append(f"{pattern.name}: {problem}: {example.line!r}")
    return problems, checked


def _check(pack: Pack, pattern: Pattern, example: Example) -> str | None:
    scanner = Scanner(PatternSet([pack]))
    scanner.feed(example.line.encode("utf-8") + b"\n")
    result = scanner.close()
    if pattern.role is Role.PROGRESS:
        matched = result.progress is not None and pattern.compiled.search(example.line.encode()) is not None
        return _expect(matched, example.matches)
    hits = [e for e in result.evidence if e.pattern == pattern.qualname]
    problem = _expect(bool(hits), example.matches)
    if problem or not example.matches or (pattern.host_from and not example.hosts):
        return problem
    want = {h for text in example.hosts for h in _expected_hosts(text, pattern.hostlist)}
    got = {e.host for e in hits if e.host is not None}
    if want != got:
        return f"hosts {sorted(h.name for h in got)} != expected {sorted(h.name for h in want)}"
    return None


def _expect(matched: bool, should: bool) -> str | None:
    if matched == should:
        return None
    return "did not match" if should else "matched but must not"


def _expected_hosts(text: str, is_hostlist: bool) -> list[Host]:
    return expand_hosts(text) if is_hostlist else [Host(text)]
