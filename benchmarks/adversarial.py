#!/usr/bin/env python3
"""Benchmark: scanning time on adversarial input, hotspare (RE2) against Python's `re`.

Log lines are untrusted: a line holding a pattern's prefix thousands of times
(``gloo gloo gloo ...``) makes a backtracking engine retry ``.*`` from every
occurrence (quadratic time). hotspare matches with RE2 (linear). This script
scans the same adversarial lines at 1x, 2x and 4x length with hotspare and
with the same patterns compiled by Python's `re` (searched line by line, as a
naive scraper would), each in a subprocess with a time limit. Last line:

    hotspare_4x_over_1x=<time ratio> re_4x_over_1x=<time ratio> ratio=<re seconds / hotspare seconds at 4x>

Linear time shows as a 4x/1x ratio near 4; quadratic near 16.
Usage: python benchmarks/adversarial.py [--base-kb 64] [--timeout 120]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Each line repeats the start of a shipped pattern that never completes.
NEAR_MISSES = [b"gloo ", b"NCCL WARN ", b"srun: error: ", b"rank 1 died from ", b"x1921c7s1b0n0-hsn0."]

RE_SCANNER = """
import re, sys
from hotspare import load_patterns
pats = [re.compile(p.regex.encode()) for p in load_patterns().patterns]
with open(sys.argv[1], 'rb') as f:
    for line in f:
        for p in pats:
            p.search(line)
"""
HOTSPARE_SCANNER = """
import sys
from hotspare import load_patterns, scan
patterns = load_patterns()
for _ in range(int(sys.argv[2])):
    scan(sys.argv[1], patterns)
"""


ENGINES = {"hotspare": HOTSPARE_SCANNER, "re": RE_SCANNER}
# hotspare is too quick to time once on these inputs: it scans each file this many times.
REPEAT = {"hotspare": 100, "re": 1}


def write_input(path: Path, line_bytes: int, copies: int) -> None:
    with path.open("wb") as out:
        for _ in range(copies):
            for seed in NEAR_MISSES:
                out.write((seed * (line_bytes // len(seed) + 1))[:line_bytes] + b"\n")


def timed(code: str, path: Path, timeout: float, repeat: int = 1) -> float | None:
    start = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-c", code, str(path), str(repeat)], check=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start


def show(seconds: float | None, timeout: float) -> str:
    return f"{seconds:9.4f}" if seconds is not None else f"   >{timeout:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-kb", type=int, default=15, help="line length at 1x, in KiB (4x stays under the 64 KiB head limit)")
    parser.add_argument("--copies", type=int, default=4, help="how many times the set of lines repeats")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    results: dict[str, dict[int, float | None]] = {"hotspare": {}, "re": {}}
    with tempfile.TemporaryDirectory(prefix="hotspare-adv-") as tmp:
        empty = Path(tmp) / "empty.log"
        empty.write_bytes(b"")
        # Start-up (imports, pattern compilation) is measured on an empty file and subtracted.
        startup = {name: timed(code, empty, args.timeout) or 0.0 for name, code in ENGINES.items()}
        for factor in (1, 2, 4):
            path = Path(tmp) / f"adv-{factor}.log"
            write_input(path, args.base_kb * 1024 * factor, args.copies)
            for name, code in ENGINES.items():
                seconds = timed(code, path, args.timeout, REPEAT[name])
                results[name][factor] = None if seconds is None else (seconds - startup[name]) / REPEAT[name]
    print(f"seconds per scan of {len(NEAR_MISSES) * args.copies} adversarial lines of {args.base_kb}/{2 * args.base_kb}/{4 * args.base_kb} KiB")
    print(f"{'engine':<10} {'1x':>9} {'2x':>9} {'4x':>9}")
    for name, row in results.items():
        print(f"{name:<10} " + " ".join(show(row[f], args.timeout) for f in (1, 2, 4)))
    hs, rx = results["hotspare"], results["re"]
    scale = {n: (r[4] / r[1] if r[4] and r[1] else float("inf")) for n, r in results.items()}
    ratio = (rx[4] or args.timeout) / (hs[4] or float("inf"))
    print(f"hotspare_4x_over_1x={scale['hotspare']:.2f} re_4x_over_1x={scale['re']:.2f} ratio={ratio:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
