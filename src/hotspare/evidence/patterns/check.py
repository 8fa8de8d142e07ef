"""Checking a pack against its own embedded examples."""

from __future__ import annotations

from hotspare.evidence.patterns import Example, Pack, Pattern, PatternSet, Role
from hotspare.evidence.scan import Scanner, scan
from hotspare.hosts import Host, expand_hosts


def check_pack(pack: Pack) -> tuple[list[str], int]:
    """Problems found (one line each) and the number of examples checked."""
    problems: list[str] = []
    checked = 0
    patterns = PatternSet([pack])
    for pattern in pack.patterns:
        for example in pattern.examples:
            checked += 1
            problem = _check(patterns, pattern, example)
            if problem:
                problems.append(f"{pattern.name}: {problem}: {example.line!r}")
    return problems, checked


def _check(patterns: PatternSet, pattern: Pattern, example: Example) -> str | None:
    scanner = Scanner(patterns)
    scanner.feed(example.line.encode("utf-8") + b"\n")
    result = scanner.close()
    if pattern.role is Role.PROGRESS:
        matched = result.progress is not None and pattern.compiled.search(example.line.encode()) is not None
        return _expect(matched, example.matches)
    hits = [e for e in result.evidence if e.pattern == pattern.qualname]
    problem = _expect(bool(hits), example.matches)
    if not problem and example.matches:
        problem = _missed_far_into_a_line(patterns, pattern, example)
    if problem or not example.matches or (pattern.host_from and not example.hosts):
        return problem
    want = {h for text in example.hosts for h in _expected_hosts(text, pattern.hostlist)}
    got = {e.host for e in hits if e.host is not None}
    if want != got:
        return f"hosts {sorted(h.name for h in got)} != expected {sorted(h.name for h in want)}"
    return None


#: Text before an example on its own line, for a pattern that need not start the line.
_FILLER = b"lorem ipsum dolor sit amet, consectetur "


def _missed_far_into_a_line(patterns: PatternSet, pattern: Pattern, example: Example) -> str | None:
    """The example behind other text on its line, where RE2 still finds it: the default engine must too. Hyperscan
    has missed a regex with a long literal when its match began some 20 bytes into a line."""
    line = _FILLER + example.line.encode("utf-8") + b"\n"
    found = [any(e.pattern == pattern.qualname for e in scan(line, patterns, engine=engine).evidence)
             for engine in ("re2", None)]
    if found[0] and not found[1]:
        return f"the default engine misses it {len(_FILLER)} bytes into a line, where RE2 finds it (shorten a literal)"
    return None


def _expect(matched: bool, should: bool) -> str | None:
    if matched == should:
        return None
    return "did not match" if should else "matched but must not"


def _expected_hosts(text: str, is_hostlist: bool) -> list[Host]:
    return expand_hosts(text) if is_hostlist else [Host(text)]
