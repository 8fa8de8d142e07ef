#!/usr/bin/env python3
"""Benchmark: blind rounds scored as they were first read, with the labels committed before the classifier ran.

A blind round (tests/data/real/*_heldoutNNN.toml) is committed in two steps: its labels first ("corpus: heldoutNNN
..., N excerpts labelled blind"), then its score and fixes. This reads each round NNN named as its label commit
holds it, with the code of the parent of the round's first label commit (the code the round was collected against,
in a temporary git worktree), and prints what `benchmarks/attribution.py` prints, per round and for all::

    round NNN code ABCDEF12 n=.. class=.. precision=.. recall=.. retry=.. exclude=.. innocent=.. guesses=.. right=..
    all n=.. class=.. ...   (with the words guess)
    all rules n=.. class=.. ...   (--rules-only)

An excerpt dropped at the merge (a repeat of a source another round kept) is left out: only ids the round's file
still holds are read. `benchmarks/attribution.py --corpus` on the rounds' files gives the figures with today's code.

Usage: python benchmarks/blind_start.py NNN [NNN ...] | FIRST-LAST
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from word_guess import OldCodeError, run_at

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "real"

#: Run with the old checkout's code: one JSON line per excerpt kept, read with and without the words guess.
_OLD_CODE = """
import json, sys
from pathlib import Path
tree, corpus, keep = Path(sys.argv[1]), Path(sys.argv[2]), set(sys.argv[3].split(","))
sys.path[:0] = [str(tree / "src"), str(tree / "adapters"), str(tree / "benchmarks")]
import hotspare, attribution
assert Path(hotspare.__file__).resolve().is_relative_to(tree.resolve()), hotspare.__file__
patterns = hotspare.load_patterns()
for e in attribution.load_corpus(corpus):
    if e.id not in keep:
        continue
    for guess in (True, False):
        try:
            o = attribution.judge(e, patterns, guess=guess)
        except TypeError:  # code from before the words guess: its rules alone
            o = attribution.judge(e, patterns)
        print(json.dumps({"id": e.id, "guess": guess, "class_ok": o.class_ok,
                          "blamed": sorted(h.name for h in o.blamed), "origin": sorted(h.name for h in e.origin),
                          "innocent": sorted(h.name for h in e.innocent), "retry_ok": o.retryable == e.retryable,
                          "exclude_ok": o.exclude == e.exclude, "guessed": "a guess from the words" in o.reason}))
"""


@dataclass(frozen=True)
class Row:
    """One excerpt's verdict in one mode (with or without the words guess)."""

    id: str
    guess: bool
    class_ok: bool
    blamed: frozenset[str]
    origin: frozenset[str]
    innocent: frozenset[str]
    retry_ok: bool
    exclude_ok: bool
    guessed: bool

    @classmethod
    def parse(cls, line: str) -> Row:
        raw = json.loads(line)
        return cls(id=str(raw["id"]), guess=bool(raw["guess"]), class_ok=bool(raw["class_ok"]),
                   blamed=frozenset(raw["blamed"]), origin=frozenset(raw["origin"]),
                   innocent=frozenset(raw["innocent"]), retry_ok=bool(raw["retry_ok"]),
                   exclude_ok=bool(raw["exclude_ok"]), guessed=bool(raw["guessed"]))


class BlindError(Exception):
    """A round that cannot be read as it was first labelled (no label commit, a failed worktree or old run)."""


def _git(*args: str) -> str:
    run = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise BlindError(f"git {' '.join(args[:2])} failed: {run.stderr.strip()}")
    return run.stdout


def label_commits(round_no: int) -> list[str]:
    """The commits, oldest first, that committed round ``round_no``'s labels before it was scored."""
    found = []
    for line in _git("log", "--reverse", "--format=%H %s", f"--grep=heldout{round_no}").splitlines():
        commit, _, subject = line.partition(" ")
        if "labelled blind" in subject and re.search(rf"\bheldout{round_no}\b", subject):
            found.append(commit)
    if not found:
        raise BlindError(f"round {round_no}: no commit says its labels were committed blind")
    return found


def read_round(round_no: int) -> tuple[str, list[Row]]:
    """The code commit and the verdicts of round ``round_no`` as first labelled (see the module's docstring)."""
    labels = label_commits(round_no)
    code = _git("rev-parse", f"{labels[0]}^").strip()
    files = sorted({name for commit in labels for name in _git("show", "--name-only", "--format=", commit).split()
                    if re.fullmatch(rf"tests/data/real/[^/]+_heldout{round_no}\.toml", name)})
    if not files:
        raise BlindError(f"round {round_no}: its label commits hold no tests/data/real/*_heldout{round_no}.toml")
    keep = set()
    for name in files:
        now = ROOT / name
        if now.exists():
            keep |= {e["id"] for e in tomllib.loads(now.read_text(encoding="utf-8")).get("excerpt", [])}
    with tempfile.TemporaryDirectory(prefix="hotspare-blind-") as tmp:
        tree, corpus = Path(tmp) / "tree", Path(tmp) / "round"
        corpus.mkdir()
        for name in files:
            (corpus / Path(name).name).write_text(_git("show", f"{labels[-1]}:{name}"), encoding="utf-8")
        try:
            out = run_at(code, tree, _OLD_CODE, [str(corpus), ",".join(sorted(keep))])
        except OldCodeError as exc:
            raise BlindError(f"round {round_no}: {exc}") from None
    return code, [Row.parse(line) for line in out.splitlines()]


def summary(rows: Sequence[Row]) -> str:
    """The attribution figures of ``rows`` (one mode's verdicts)."""
    n = len(rows) or 1
    blamed = sum(len(r.blamed) for r in rows)
    right = sum(len(r.blamed & r.origin) for r in rows)
    origins = sum(len(r.origin) for r in rows)
    innocent = sum(len(r.blamed & r.innocent) for r in rows)
    guessed = [r for r in rows if r.guessed]
    return (f"n={len(rows)} class={sum(r.class_ok for r in rows) / n:.3f} "
            f"precision={right / blamed if blamed else 1.0:.3f} "
            f"recall={right / origins if origins else 1.0:.3f} ({right}/{origins}) "
            f"retry={sum(r.retry_ok for r in rows) / n:.3f} "
            f"exclude={sum(r.exclude_ok for r in rows) / n:.3f} innocent={innocent} "
            f"guesses={len(guessed)} right={sum(r.class_ok for r in guessed)}")


def _rounds(specs: Sequence[str]) -> list[int]:
    out: list[int] = []
    for spec in specs:
        first, _, last = spec.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise BlindError(f"{spec!r}: expected a round number or FIRST-LAST")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", nargs="+", help="round numbers (NNN) or ranges (FIRST-LAST)")
    args = ap.parse_args(argv)
    every: list[Row] = []
    try:
        for round_no in _rounds(args.rounds):
            code, rows = read_round(round_no)
            every.extend(rows)
            print(f"round {round_no} code {code[:8]} {summary([r for r in rows if r.guess])}", flush=True)
    except BlindError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"all {summary([r for r in every if r.guess])}")
    print(f"all rules {summary([r for r in every if not r.guess])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
