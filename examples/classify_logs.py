#!/usr/bin/env python3
"""Classify five real-shaped failed attempts and compare with blind rotation.

Each log in examples/logs/ is one attempt of a multi-node job with its
allocation (``.hosts``) and launcher exit status (``rc.txt``). For each, hotspare
says what happened and which node (if any) to swap out; beside it is what a
blind rotation (evict ``active[0]``, as ezpz did) would have retired.
"""

from __future__ import annotations

from pathlib import Path

from hotspare import classify, read_hostfile, scan

LOGS = Path(__file__).parent / "logs"


def main() -> int:
    rcs = dict(
        line.split() for line in (LOGS / "rc.txt").read_text().splitlines() if line and not line.startswith("#")
    )
    print(f"{'attempt log':<26} {'rc':>4}  {'class':<12} {'retry':<5} {'swap out':<16} {'blind rotation':<16} reason")
    for log in sorted(LOGS.glob("*.log")):
        hosts = read_hostfile(log.with_suffix(".hosts"))
        verdict = classify(scan(log), rc=int(rcs[log.name]), allocation=hosts)
        swap = ", ".join(h.name for h in verdict.exclude_hosts) or "-"
        blind = hosts[0].name
        mark = "" if blind in swap.split(", ") else "  <- would retire a healthy node"
        print(
            f"{log.name:<26} {rcs[log.name]:>4}  {verdict.failure_class.value:<12} "
            f"{'yes' if verdict.retryable else 'no':<5} {swap:<16} {blind:<16} {verdict.reason[:70]}{mark}"
        )
    print("\nFull evidence for one attempt:  .venv/bin/hotspare classify --hostfile "
          "examples/logs/sunspot-node-kill.hosts --rc 143 examples/logs/sunspot-node-kill.log")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
