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

Usage: python benchmarks/word_guess.py [--corpus DIR] [--threshold P] [--show N] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="directory of *.toml excerpt files")
    parser.add_argument("--threshold", type=float, default=wordguess.THRESHOLD, help="the guess's least probability")
    parser.add_argument("--show", type=int, default=0, help="print this many guesses that went wrong")
    parser.add_argument("--write", action="store_true", help="rebuild the shipped counts from the corpus instead")
    args = parser.parse_args(argv)
    excerpts = load_corpus(args.corpus)
    if not excerpts:
        print(f"error: {args.corpus}: no excerpts", file=sys.stderr)
        return 2
    bare = bare_excerpts(excerpts)
    logs, held = wordguess.count((e.label_class, e.text) for e in excerpts)
    shares = Counter(e.label_class for e, _ in bare)
    if args.write:
        data = wordguess.model_data(logs, held, bare=shares)
        wordguess.MODEL_PATH.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"{len(excerpts)} excerpts ({len(bare)} bare), {len(data['words'])} words -> {wordguess.MODEL_PATH}")  # type: ignore[arg-type]
        return 0
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
        g = models[e.file].guess(sample, args.threshold)
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
            if len(wrong) < args.show:
                wrong.append(f"  {e.id}: {got.value} (label {e.label_class})" + (f": {g.reason}" if g else ""))
    n = len(bare)
    labels = shares
    print(f"{len(excerpts)} excerpts; the rules leave {n} bare; leave one file out, threshold {args.threshold}")
    print("labels  " + ", ".join(f"{k} {v}" for k, v in labels.most_common()))
    print("misses  " + ", ".join(f"{a}->{b} {v}" for (a, b), v in confusion.most_common(8)))
    print("\n".join(wrong)) if wrong else None
    d = n or 1
    print(f"bare n={n} of {len(excerpts)}")
    print(f"baseline   class_right={base_class / d:.3f} retry_right={base_retry / d:.3f}")
    print(f"guess      class_right={class_right / d:.3f} retry_right={retry_right / d:.3f} "
          f"right_to_wrong={to_wrong} wrong_to_right={to_right}")
    print(f"ratio      class={class_right / (base_class or 1):.2f}x retry={retry_right / (base_retry or 1):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
