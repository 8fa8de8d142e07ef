#!/usr/bin/env python3
"""Benchmark: the scan of many small logs, as ``hotspare classify`` meets them one by one.

Most logs a supervisor reads are small (a failed attempt's tail, a pasted excerpt): what counts there is the cost
per log, not the bytes per second of a big one. Every text of the real corpus (tests/data/real, a few lines to a
few hundred) is scanned as a paste (wrapped lines rejoined, ``wrap_width="auto"``) with the default engine
(Hyperscan) and, side by side, with the same word keys in RE2 (``words``: what runs where Hyperscan has no wheel)
and with the RE2 engine (one prefilter over every pattern, then the RE2 set of every pattern on each candidate
line: the baseline). Each is run ``--rounds`` times after one warm-up pass (which builds
the lazily compiled parts and the RE2 sets of combinations asked for often); the best round is kept.

    engine      logs   ms/log   logs/s   cpu s      (one row per engine, then the ratios to hyperscan)

Usage: python benchmarks/small_logs.py [--every K] [--rounds N]
Run it alone: the figures are CPU time of one process, but two cores shared with a test run are noise.
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

from hotspare import load_patterns, scan

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "real"


def texts(every: int) -> list[bytes]:
    """Every ``every``-th excerpt's text of the real corpus, as bytes."""
    found = [excerpt["text"].encode("utf-8") for path in sorted(CORPUS.glob("*.toml"))
             for excerpt in tomllib.loads(path.read_text(encoding="utf-8")).get("excerpt", [])]
    return found[::every]


def best_round(logs: list[bytes], engine: str, rounds: int) -> float:
    """The least CPU seconds one pass over ``logs`` took, of ``rounds`` passes after a warm-up one."""
    patterns = load_patterns()
    for data in logs:
        scan(data, patterns, wrap_width="auto", engine=engine)  # type: ignore[arg-type]  # checked by the choices
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for data in logs:
            scan(data, patterns, wrap_width="auto", engine=engine)  # type: ignore[arg-type]
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1, help="scan every K-th excerpt (default: all)")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes per engine; the best is kept")
    args = parser.parse_args(argv)
    if args.every < 1 or args.rounds < 1:
        parser.error("--every and --rounds are at least 1")
    logs = texts(args.every)
    if not logs:
        print(f"error: no corpus texts under {CORPUS}", file=sys.stderr)
        return 2
    print(f"{'engine':<11} {'logs':>5} {'ms/log':>8} {'logs/s':>8} {'cpu s':>8}")
    seconds = {}
    for engine in ("hyperscan", "words", "re2"):
        seconds[engine] = cpu = best_round(logs, engine, args.rounds)
        print(f"{engine:<11} {len(logs):>5} {cpu / len(logs) * 1000:>8.2f} {len(logs) / cpu:>8.0f} {cpu:>8.1f}")
    print(f"ratio (re2 / hyperscan): {seconds['re2'] / seconds['hyperscan']:.1f}")
    print(f"ratio (words / hyperscan): {seconds['words'] / seconds['hyperscan']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
