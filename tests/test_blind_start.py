"""benchmarks/blind_start.py: blind rounds read with the code and labels they were first scored with."""

from __future__ import annotations

import json

import pytest

from conftest import load_benchmark

bench = load_benchmark("blind_start.py")


def _row(**kw: object) -> str:
    base = {"id": "x", "guess": True, "class_ok": True, "blamed": [], "origin": [], "innocent": [],
            "retry_ok": True, "exclude_ok": True, "guessed": False}
    base.update(kw)
    return json.dumps(base)


def test_the_summary_counts_hosts_classes_and_guesses() -> None:
    rows = [bench.Row.parse(line) for line in (
        _row(id="a", blamed=["n1"], origin=["n1", "n2"]),
        _row(id="b", class_ok=False, retry_ok=False, blamed=["n3"], innocent=["n3"], guessed=True),
        _row(id="c", guessed=True, exclude_ok=False),
        _row(id="d"),
    )]
    said = bench.summary(rows)
    assert said == ("n=4 class=0.750 precision=0.500 recall=0.500 (1/2) retry=0.750 exclude=0.750 innocent=1 "
                    "guesses=2 right=1")
    assert bench.summary([]).startswith("n=0 class=0.000 precision=1.000 recall=1.000 (0/0)")


def test_rounds_are_numbers_or_ranges() -> None:
    assert bench._rounds(["494", "500-502"]) == [494, 500, 501, 502]
    for bad in ("x", "5-y", "-3"):
        with pytest.raises(bench.BlindError, match="expected a round number"):
            bench._rounds([bad])


def test_a_round_with_no_label_commit_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["99999999"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: round 99999999: no commit says its labels were committed blind")
