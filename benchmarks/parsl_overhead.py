"""Throughput of no-op tasks through HTEX over LocalProvider vs over FailoverProvider(LocalProvider).

    python benchmarks/parsl_overhead.py [--tasks 2000] [--rounds 3]

Rounds alternate plain / failover in the same process (a fresh DFK each), on 127.0.0.1. Prints each
round, then ``throughput_ratio=<failover/plain>`` (medians; goal >= 0.98).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import parsl
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.providers import LocalProvider

from hotspare_parsl import FailoverProvider


@parsl.python_app
def noop() -> int:
    return 0


def one_round(tasks: int, failover: bool, workdir: Path) -> float:
    provider = LocalProvider(init_blocks=1, min_blocks=1, max_blocks=1)
    if failover:
        provider = FailoverProvider(provider, run_dir=workdir / "hotspare")  # type: ignore[assignment]
    config = Config(executors=[HighThroughputExecutor(label="htex", address="127.0.0.1", loopback_address="127.0.0.1",
                                                      max_workers_per_node=2, provider=provider)],
                    run_dir=str(workdir / "runinfo"), strategy="none")
    with parsl.load(config):
        noop().result(timeout=120)  # the block is up
        start = time.perf_counter()
        futures = [noop() for _ in range(tasks)]
        for f in futures:
            f.result(timeout=300)
        elapsed = time.perf_counter() - start
    return tasks / elapsed


def main() -> int:
    # Parsl starts interchange.py and process_worker_pool.py by name: this environment's bin must be on PATH.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    plain, failover = [], []
    with tempfile.TemporaryDirectory(prefix="hotspare-parsl-bench-") as tmp:
        for r in range(args.rounds):
            for kind in ("plain", "failover") if r % 2 == 0 else ("failover", "plain"):
                rate = one_round(args.tasks, kind == "failover", Path(tmp) / f"{kind}-{r}")
                (failover if kind == "failover" else plain).append(rate)
                print(f"round {r} {kind:9s} {rate:8.1f} tasks/s", flush=True)
    ratio = statistics.median(failover) / statistics.median(plain)
    print(f"plain_median={statistics.median(plain):.1f} failover_median={statistics.median(failover):.1f}")
    print(f"throughput_ratio={ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
