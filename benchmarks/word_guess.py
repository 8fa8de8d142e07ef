#!/usr/bin/env python3
"""Benchmark: the words guess (hotspare.evidence.wordguess) on logs it did not learn from.

The guess reads a log only when the rules left it bare: no exit status known and no line that shows a failure or
a success (the verdict was ``unknown``). This takes every real excerpt (tests/data/real) the rules leave bare,
builds the word counts without the excerpt's own file (leave one file out: a file is one round or one source's
excerpts, so none of the excerpt's siblings is learnt from either) and compares the guess with the label, beside
the baseline of the verdict before the guess (``unknown`` for all)::

    bare n=.. labels ..
    baseline   class_right=.. retry_right=..
    guess      class_right=.. retry_right=.. right_to_wrong=.. wrong_to_right=..
    ratio      class=..x retry=..x

The prior is the class shares among the bare excerpts of the other files. The shipped counts learnt every excerpt,
so `benchmarks/attribution.py` on the corpus reads them in sample; these figures do not.

``--write`` rebuilds the shipped counts (src/hotspare/evidence/wordguess.json) from the corpus instead: every
excerpt's words, and the classes of the bare ones for the prior.

``--sessions`` measures it as it would have done on each session's blind rounds instead: for COMMIT:FIRST:LAST, the
rounds heldoutFIRST..LAST read with the code of COMMIT (the session's start, in a temporary git worktree), and the
bare ones guessed with counts of the corpus's excerpts from before round FIRST (the prior is the shipped one)::

    session COMMIT rounds FIRST-LAST n=.. class .. -> .. retry .. -> ..
    sessions n=.. class .. -> .. retry .. -> ..

Usage: python benchmarks/word_guess.py [--corpus DIR] [--threshold P] [--show N] [--write] [--sessions [SPEC ...]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attribution import CORPUS, Excerpt, load_corpus

from hotspare import FailureClass, classify, load_patterns, scan
from hotspare.evidence import wordguess

#: The reason of a verdict the rules left bare (see hotspare.evidence.classify._without_status).
BARE = "no exit status given and no line shows a failure or a success"


def bare_excerpts(excerpts: Sequence[Excerpt]) -> list[tuple[Excerpt, bytes]]:
    """The excerpts the rules leave bare and to their words, each with the sample the guess would read."""
    patterns = load_patterns()
    found = []
    for e in excerpts:
        result = scan(e.text.encode("utf-8"), patterns)
        verdict = classify(replace(result, sample=b""), rc=e.rc, allocation=e.allocation)
        if (verdict.failure_class is FailureClass.UNKNOWN and verdict.reason.endswith(BARE)
                and wordguess.left_to_words(result.evidence)):
            found.append((e, result.sample))
    return found


def without(logs: Counter[str], held: dict[str, Counter[str]], gone: Sequence[Excerpt]
            ) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """The counts with ``gone``'s excerpts taken out (the words they hold are copied, the rest shared)."""
    out_logs = logs.copy()
    out_held = dict(held)
    for e in gone:
        out_logs[e.label_class] -= 1
        for w in wordguess.words(e.text.encode("utf-8")):
            row = out_held[w] = out_held[w].copy() if out_held[w] is held[w] else out_held[w]
            row[e.label_class] -= 1
    return out_logs, out_held


#: The blind rounds of eight sessions and the code each started from (docs/benchmarks.md, the attribution section).
SESSIONS = ("469cf6d:319:345", "bf25c7b:346:375", "ca40345:376:396", "6dbd075:397:428", "6118a49:429:459",
            "6e05da72:460:483", "05114681:484:493", "a45751fe:494:518")
ROOT = Path(__file__).resolve().parent.parent

#: Run with an old checkout's code: each excerpt's verdict and what its scan read, one JSON line each.
_OLD_CODE = """
import json, sys
from pathlib import Path
tree, corpus = Path(sys.argv[1]), Path(sys.argv[2])
sys.path[:0] = [str(tree / "src"), str(tree / "adapters"), str(tree / "benchmarks")]
import hotspare, attribution
assert Path(hotspare.__file__).resolve().is_relative_to(tree.resolve()), hotspare.__file__
patterns = hotspare.load_patterns()
for e in attribution.load_corpus(corpus):
    o = attribution.judge(e, patterns)
    read = [(x.pattern, x.failure_class is not None) for x in hotspare.scan(e.text.encode(), patterns).evidence]
    print(json.dumps({"id": e.id, "got": o.got_class, "reason": o.reason, "retryable": o.retryable, "read": read}))
"""


def _round(file: str) -> int:
    """The held-out round number of an excerpt file (0 for the files before the rounds)."""
    match = re.search(r"_heldout([0-9]+)[a-z]?\.toml$", file)
    return int(match.group(1)) if match else 0


class OldCodeError(Exception):
    """An old commit's code could not be run (no worktree, or the run failed): the message says which."""


def run_at(commit: str, tree: Path, code: str, args: Sequence[str]) -> str:
    """The output of ``python -c code tree *args`` run with the checkout of ``commit`` (a temporary git worktree at
    ``tree``, removed after; PYTHONPATH dropped so the old tree's own modules load)."""
    added = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), commit],
                           capture_output=True, text=True, check=False)
    if added.returncode != 0:
        raise OldCodeError(f"git worktree add failed: {added.stderr.strip()}")
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        run = subprocess.run([sys.executable, "-c", code, str(tree), *args], check=False,
                             capture_output=True, text=True, env=env)
    finally:
        removed = subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                                 capture_output=True, text=True, check=False)
        if removed.returncode != 0:
            print(f"warning: git worktree remove {tree}: {removed.stderr.strip()}", file=sys.stderr)
    if run.returncode != 0:
        tail = run.stderr.strip().splitlines()[-1:] or ["no output"]
        raise OldCodeError(f"the code of {commit} failed: {tail[0]}")
    return run.stdout


def _read_with(commit: str, spec: str, files: Sequence[str], corpus: Path) -> str | None:
    """What the code of ``commit`` says of the excerpts of ``files`` (:data:`_OLD_CODE`'s lines), None after
    saying why it could not be run."""
    with tempfile.TemporaryDirectory(prefix="hotspare-wordguess-") as tmp:
        rounds = Path(tmp) / "rounds"
        rounds.mkdir()
        for name in files:
            shutil.copy(corpus / name, rounds / name)
        try:
            return run_at(commit, Path(tmp) / "tree", _OLD_CODE, [str(rounds)])
        except OldCodeError as exc:
            print(f"error: {spec!r}: {exc}", file=sys.stderr)
            return None


def sessions(specs: Sequence[str], corpus: Path, threshold: float) -> int:
    """Each session's blind rounds read with its start's code, the bare ones guessed with earlier counts."""
    excerpts = load_corpus(corpus)
    shipped = json.loads(wordguess.MODEL_PATH.read_text(encoding="utf-8"))
    prior = {c: int(n) - 1 for c, n in zip(shipped["classes"], shipped["prior"], strict=True)}
    totals: Counter[str] = Counter()
    for spec in specs:
        try:
            commit, first_s, last_s = spec.split(":")
            first, last = int(first_s), int(last_s)
        except ValueError:
            print(f"error: {spec!r}: expected COMMIT:FIRST:LAST", file=sys.stderr)
            return 2
        blind = [e for e in excerpts if first <= _round(e.file) <= last]
        model = wordguess.WordModel(wordguess.build(
            ((e.label_class, e.text) for e in excerpts if _round(e.file) < first), bare=prior))
        out = _read_with(commit, spec, sorted({e.file for e in blind}), corpus)
        if out is None:
            return 2
        said = {row["id"]: row for row in map(json.loads, out.splitlines())}
        n = class0 = class1 = retry0 = retry1 = 0
        for e in blind:
            row = said[e.id]
            got, retryable = row["got"], row["retryable"]
            class0 += got == e.label_class
            retry0 += retryable == e.retryable
            if (got == FailureClass.UNKNOWN.value and row["reason"].endswith(BARE)
                    and wordguess.only_context(map(tuple, row["read"]))):
                text = e.text.encode("utf-8")
                sample = text if len(text) <= 32 << 10 else text[:8 << 10] + text[-(24 << 10):]
                g = model.guess(sample, threshold)
                if g is not None:
                    got, retryable = g.failure_class.value, g.failure_class.retryable
            class1 += got == e.label_class
            retry1 += retryable == e.retryable
            n += 1
        d = n or 1
        print(f"session {commit} rounds {first}-{last} n={n} class {class0 / d:.3f} -> {class1 / d:.3f} "
              f"retry {retry0 / d:.3f} -> {retry1 / d:.3f}", flush=True)
        totals.update(n=n, class0=class0, class1=class1, retry0=retry0, retry1=retry1)
    d = totals["n"] or 1
    print(f"sessions n={totals['n']} class {totals['class0'] / d:.3f} -> {totals['class1'] / d:.3f} "
          f"retry {totals['retry0'] / d:.3f} -> {totals['retry1'] / d:.3f}")
    return 0


def leave_one_file_out(excerpts: Sequence[Excerpt], bare: Sequence[tuple[Excerpt, bytes]], threshold: float,
                       show: int) -> None:
    """Each bare excerpt guessed with counts (and prior) of every other file; the figures against the baseline."""
    logs, held = wordguess.count((e.label_class, e.text) for e in excerpts)
    shares = Counter(e.label_class for e, _ in bare)
    by_file: dict[str, list[Excerpt]] = defaultdict(list)
    for e in excerpts:
        by_file[e.file].append(e)
    base_class = base_retry = class_right = retry_right = to_wrong = to_right = 0
    confusion: Counter[tuple[str, str]] = Counter()
    wrong: list[str] = []
    models: dict[str, wordguess.WordModel] = {}
    for e, sample in bare:
        if e.file not in models:
            rest = shares - Counter(b.label_class for b, _ in bare if b.file == e.file)
            models[e.file] = wordguess.WordModel(wordguess.model_data(*without(logs, held, by_file[e.file]), bare=rest))
        g = models[e.file].guess(sample, threshold)
        got = g.failure_class if g is not None else FailureClass.UNKNOWN
        was_right = e.label_class == FailureClass.UNKNOWN.value
        right = got.value == e.label_class
        base_class += was_right
        base_retry += FailureClass.UNKNOWN.retryable == e.retryable
        class_right += right
        retry_right += got.retryable == e.retryable
        to_wrong += was_right and not right
        to_right += right and not was_right
        if not right:
            confusion[(e.label_class, got.value)] += 1
            if len(wrong) < show:
                wrong.append(f"  {e.id}: {got.value} (label {e.label_class})" + (f": {g.reason}" if g else ""))
    n = len(bare)
    labels = shares
    print(f"{len(excerpts)} excerpts; the rules leave {n} bare; leave one file out, threshold {threshold}")
    print("labels  " + ", ".join(f"{k} {v}" for k, v in labels.most_common()))
    print("misses  " + ", ".join(f"{a}->{b} {v}" for (a, b), v in confusion.most_common(8)))
    if wrong:
        print("\n".join(wrong))
    d = n or 1
    print(f"bare n={n} of {len(excerpts)}")
    print(f"baseline   class_right={base_class / d:.3f} retry_right={base_retry / d:.3f}")
    print(f"guess      class_right={class_right / d:.3f} retry_right={retry_right / d:.3f} "
          f"right_to_wrong={to_wrong} wrong_to_right={to_right}")
    print(f"ratio      class={class_right / (base_class or 1):.2f}x retry={retry_right / (base_retry or 1):.2f}x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="directory of *.toml excerpt files")
    parser.add_argument("--threshold", type=float, default=wordguess.THRESHOLD, help="the guess's least probability")
    parser.add_argument("--show", type=int, default=0, help="print this many guesses that went wrong")
    parser.add_argument("--write", action="store_true", help="rebuild the shipped counts from the corpus instead")
    parser.add_argument("--output", type=Path, default=wordguess.MODEL_PATH, help="where --write writes")
    parser.add_argument("--sessions", nargs="*", metavar="COMMIT:FIRST:LAST",
                        help=f"each session's blind rounds with its start's code (default: {' '.join(SESSIONS)})")
    args = parser.parse_args(argv)
    if args.sessions is not None:
        return sessions(args.sessions or SESSIONS, args.corpus, args.threshold)
    excerpts = load_corpus(args.corpus)
    if not excerpts:
        print(f"error: {args.corpus}: no excerpts", file=sys.stderr)
        return 2
    bare = bare_excerpts(excerpts)
    if args.write:
        logs, held = wordguess.count((e.label_class, e.text) for e in excerpts)
        data = wordguess.model_data(logs, held, bare=Counter(e.label_class for e, _ in bare))
        args.output.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"{len(excerpts)} excerpts ({len(bare)} bare), {len(data['words'])} words -> {args.output}")  # type: ignore[arg-type]
        return 0
    leave_one_file_out(excerpts, bare, args.threshold, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
