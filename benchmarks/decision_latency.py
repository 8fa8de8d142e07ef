#!/usr/bin/env python3
"""Benchmark: decision latency at 10,000 hosts (launcher exit -> next launch started, backoff excluded).

`hotspare launch --launcher mpiexec` runs against a stand-in `mpiexec` (put
first on PATH) that records its start and exit times, prints a PALS line
naming one active host as SIGKILLed, and exits 137. Each attempt the
supervisor scans, classifies against 10,000 hosts, decides, records in the
ledger, quarantines, swaps in a spare, rewrites the 10,000-line hostfile and
relaunches. The baseline is the same stand-in relaunched by a loop that does
nothing else. Prints both medians and, last:

    decision_ms=<median hotspare gap> baseline_ms=<median loop gap> ratio=<hotspare / baseline>

Usage: python benchmarks/decision_latency.py [--hosts 10000] [--swaps 10]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

STUB = """#!{python}
import sys, time
start = time.time()
args = sys.argv[1:]
hostfile = args[args.index("--hostfile") + 1]
with open(hostfile) as f:
    hosts = [line.split()[0] for line in f if line.strip()]
victim = hosts[len(hosts) // 2]
print(f"{{victim}}: rank 12 died from signal 9", flush=True)
with open({times!r}, "a") as out:
    out.write(f"{{start}} {{time.time()}}\\n")
sys.exit(137)
"""


def gaps(times_file: Path) -> list[float]:
    """Milliseconds from each stand-in's exit to the next one's start."""
    rows = [tuple(map(float, line.split())) for line in times_file.read_text().splitlines()]
    return [(nxt[0] - prev[1]) * 1000 for prev, nxt in itertools.pairwise(rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--swaps", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hotspare-latency-") as tmp:
        root = Path(tmp)
        bindir = root / "bin"
        bindir.mkdir()
        times = root / "hotspare.times"
        stub = bindir / "mpiexec"
        stub.write_text(STUB.format(python=sys.executable, times=str(times)))
        stub.chmod(0o755)
        hostfile = root / "hosts"
        hostfile.write_text("".join(f"x{1000 + i // 64}c{i // 8 % 8}s{i % 8}b0n0\n" for i in range(args.hosts)))
        env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
        hotspare = str(Path(sys.executable).with_name("hotspare"))
        cmd = [hotspare, "launch", "--hostfile", str(hostfile), "--nhosts", str(args.hosts - args.swaps),
               "--launcher", "mpiexec", "--max-attempts", str(args.swaps + 1), "--run-dir", str(root / "run"),
               "--backoff", "0", "--", "true"]  # backoff is excluded from the figure
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode not in (0, 93, 3):
            print(f"error: hotspare launch failed ({done.returncode}): {done.stderr[-300:]}", file=sys.stderr)
            return 1
        ours = gaps(times)
        base_times = root / "baseline.times"
        stub.write_text(STUB.format(python=sys.executable, times=str(base_times)))
        for _ in range(len(ours) + 1):
            subprocess.run([str(stub), "--hostfile", str(hostfile), "-n", "1", "true"], capture_output=True, check=False)
        base = gaps(base_times)
    ms, base_ms = statistics.median(ours), statistics.median(base)
    print(f"hosts={args.hosts} relaunches={len(ours)}")
    print(f"{'loop':<10} {'median ms':>10} {'max ms':>8}")
    print(f"{'hotspare':<10} {ms:>10.1f} {max(ours):>8.1f}")
    print(f"{'baseline':<10} {base_ms:>10.1f} {max(base):>8.1f}")
    print(f"decision_ms={ms:.1f} baseline_ms={base_ms:.1f} ratio={ms / base_ms:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
