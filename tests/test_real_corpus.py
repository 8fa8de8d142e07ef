"""Every real-world excerpt in tests/data/real (public failure logs, hand-labelled): class, blame, innocents,
retry and exclude, as a new user would classify it (no exit status unless the excerpt shows one).

An excerpt the classifier is known to get wrong says so in its entry (``known_miss = "why"``) and is a strict
xfail: it fails the suite the day it starts passing, so the label is looked at again.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from hotspare import PatternSet, load_patterns

_BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "attribution.py"
_spec = importlib.util.spec_from_file_location("attribution_bench", _BENCH)
assert _spec is not None and _spec.loader is not None
attribution = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = attribution  # dataclasses look their module up while the class is made
_spec.loader.exec_module(attribution)

EXCERPTS = attribution.load_corpus()
_SOURCE = re.compile(r"(?:https?://\S+|testbed:\S+)")


@pytest.fixture(scope="module")
def patterns() -> PatternSet:
    return load_patterns()


def test_corpus_is_big_and_half_new() -> None:
    """At least 200 excerpts, every one citing where it came from; half from families the old packs missed."""
    assert len(EXCERPTS) >= 200, len(EXCERPTS)
    assert all(_SOURCE.fullmatch(e.source) for e in EXCERPTS), [e.id for e in EXCERPTS if not _SOURCE.fullmatch(e.source)]
    uncovered = sum(1 for e in EXCERPTS if not e.covered)
    assert uncovered * 2 >= len(EXCERPTS), (uncovered, len(EXCERPTS))
    assert all(e.exclude <= e.origin for e in EXCERPTS), [e.id for e in EXCERPTS if not e.exclude <= e.origin]
    assert all(not (e.origin & e.innocent) for e in EXCERPTS)


def _param(e):  # type: ignore[no-untyped-def]
    marks = [pytest.mark.xfail(reason=e.known_miss, strict=True)] if e.known_miss else []
    return pytest.param(e, id=e.id, marks=marks)


@pytest.mark.parametrize("excerpt", [_param(e) for e in EXCERPTS])
def test_excerpt(excerpt, patterns: PatternSet) -> None:  # type: ignore[no-untyped-def]
    got = attribution.judge(excerpt, patterns)
    names = lambda hosts: sorted(h.name for h in hosts)  # noqa: E731
    assert not got.innocents, f"blamed innocent {names(got.innocents)}: {got.reason}"
    assert got.got_class == excerpt.label_class, got.reason
    assert names(got.blamed) == names(excerpt.origin), got.reason
    assert names(got.exclude) == names(excerpt.exclude), got.reason
    assert got.retryable == excerpt.retryable, got.reason
