"""Every labelled corpus line, and golden verdicts from captures of the real SLURM test bed."""

from __future__ import annotations

import tomllib

import pytest

from corpus import DATA, Case, load
from hotspare import FailureClass, PatternSet, classify, expand_hosts, scan

EZPZ = load("ezpz-lines.txt", line_field=3)
ARVADOS = load("arvados-lines.txt", line_field=0)


@pytest.mark.parametrize("case", EZPZ + ARVADOS, ids=lambda c: c.line[:60])
def test_labelled_line(patterns: PatternSet, case: Case) -> None:
    """Inside a failed attempt's log, each labelled line yields its expected class and blame."""
    verdict = classify(scan(case.line.encode(), patterns), rc=1)
    assert verdict.failure_class.value == case.expect_class
    assert tuple(h.name for h in verdict.blamed_hosts) == case.expect_blamed


def test_corpus_labels_agree_with_expectations() -> None:
    """Lines the ezpz corpus marks as naming an innocent host (NO-WRONG) or no host never expect a blame."""
    innocent = [c for c in EZPZ if c.names_failed_host in ("NO-WRONG", "NO", "IP", "RANK")]
    assert len(innocent) > 20
    assert all(not c.expect_blamed for c in innocent)


def test_corpus_victims_are_named() -> None:
    """Every launcher line the corpus marks YES that is launcher output (not an artifact) is blamed."""
    launcher_yes = [c for c in EZPZ if c.names_failed_host == "YES" and ("died from signal 9" in c.line or "Killed" in c.line)]
    assert len(launcher_yes) >= 5
    assert all(c.expect_blamed for c in launcher_yes)


GOLDEN = tomllib.loads((DATA / "golden.toml").read_text())["case"]


@pytest.mark.parametrize("case", GOLDEN, ids=lambda c: c["name"])
def test_testbed_capture(patterns: PatternSet, case: dict) -> None:  # type: ignore[type-arg]
    """Real SLURM/MPI output from the test bed: the victim is named, survivors never are."""
    lines = (DATA / case["file"]).read_bytes().splitlines(keepends=True)
    first, last = case.get("lines", [1, len(lines)])
    verdict = classify(
        scan(b"".join(lines[first - 1 : last]), patterns), rc=case["rc"], allocation=expand_hosts(case["hosts"])
    )
    blamed = [h.name for h in verdict.blamed_hosts]
    assert verdict.failure_class is FailureClass(case["class"]), verdict.reason
    assert blamed == case["blamed"], verdict.reason
    assert not set(blamed) & set(case["never"])
    assert [h.name for h in verdict.suspect_hosts] == case.get("suspect", []), verdict.reason
