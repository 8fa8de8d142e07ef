#!/usr/bin/env python3
"""Throughput of tiny Dask tasks: plain dask-jobqueue SLURMCluster vs FailoverSLURMCluster on the SLURM test bed.

    flock /tmp/hotspare-bed.lock .venv/bin/python benchmarks/dask_overhead.py [--tasks 5000] [--pairs 5]
        [--jobs 2] [--cores 1] [--processes 1] [--spare-jobs N] [--json FILE]

One bed (4 nodes, see tests/testbed) for the whole benchmark. Runs alternate plain, failover, plain, failover...
(``--pairs`` of each), each on a freshly started cluster of ``--jobs`` batch jobs of the same shape; timing starts
only once every worker is connected and has run a warm-up task. A run times ``client.map(inc, range(tasks))`` and
the gather of every result (all checked). What the failover side adds on this path: the worker preload (at
start only) and the TaskBlame scheduler plugin, which sees every scheduler event. ``--spare-jobs N`` gives the
failover cluster N hot spares (``spare_jobs=N``): their workers are connected (and warmed up with the others) but
held paused, so the tasks run on the same ``--jobs`` as the plain cluster's, and the figure is what holding the
spares costs the running work (the spare plugin's hooks, the scheduler's larger worker table).

Prints each run's tasks/s, then the medians, and last:

    throughput_ratio=<failover median / plain median>

1.000 means no cost; the goal is >= 0.98. The bed's nodes share this machine's CPUs with the scheduler and the
client (and whatever else runs there), so the spread between runs of one kind (printed) says how much of a
difference is noise; the line before the last gives the median of the per-pair ratios (each failover run over
the plain run just before it), which drift in the machine's load disturbs less.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from dask_bed import KINDS, Bed, bed_root, code_measured, make_cluster, remove_bed, run_in_tmp, write_json
from distributed import Client


def inc(x: int) -> int:
    # Defined in __main__: cloudpickle sends it by value, so the workers need not import this file.
    return x + 1


def one_run(kind: str, bed: Bed, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Start a cluster, wait for its workers and warm them up, then time ``tasks`` tiny tasks; tear down."""
    spares = args.spare_jobs if kind == "failover" else 0
    cluster = make_cluster(kind, bed, work, cores=args.cores, processes=args.processes, exclusive=False,
                           spare_jobs=spares)
    client = None
    try:
        cluster.scale(jobs=args.jobs)
        client = Client(cluster, timeout=60)
        client.wait_for_workers(args.jobs * args.processes, timeout=180)  # running workers: a spare is paused
        deadline = time.monotonic() + 180
        while len(cluster.scheduler_info["workers"]) < (args.jobs + spares) * args.processes:  # the spares' too
            if time.monotonic() > deadline:
                raise TimeoutError("the spares' workers did not connect within 180 s")
            time.sleep(0.1)
        client.gather(client.map(inc, range(-100, 0)))  # the function shipped to every worker once
        start = time.perf_counter()
        results = client.gather(client.map(inc, range(args.tasks)))
        elapsed_s = time.perf_counter() - start
        if results != list(range(1, args.tasks + 1)):
            raise RuntimeError(f"{kind}: wrong results")
        return {"kind": kind, "tasks": args.tasks, "elapsed_s": elapsed_s, "tasks_per_s": args.tasks / elapsed_s,
                "workers": len(cluster.scheduler_info["workers"]), "running": len(cluster.scheduler.running)}
    finally:
        if client is not None:
            client.close()
        cluster.close()


def fresh(bed: Bed | None, root: Path) -> Bed:
    """The bed as new (no job left, every node idle), rebuilt if it is not."""
    if bed is not None and bed.settled(timeout_s=30):
        return bed
    if bed is not None:
        bed.down()
    return Bed.up(root)


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    rates = {kind: [r["tasks_per_s"] for r in runs if r["kind"] == kind] for kind in KINDS}
    out = {f"{kind}_median": statistics.median(rates[kind]) for kind in KINDS}
    out |= {f"{kind}_spread": (max(rates[kind]) - min(rates[kind])) / statistics.median(rates[kind]) for kind in KINDS}
    out["throughput_ratio"] = out["failover_median"] / out["plain_median"]
    # Each failover run against the plain run just before it: drift in the machine's load cancels within a pair.
    out["paired_ratio_median"] = statistics.median(f / p for p, f in zip(rates["plain"], rates["failover"],
                                                                         strict=True))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--pairs", type=int, default=5, help="runs of each kind, alternating (at least 3)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--spare-jobs", type=int, default=0, metavar="N",
                        help="hot spares for the failover cluster (spare_jobs=N); the plain cluster has none")
    parser.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    args = parser.parse_args()
    if args.pairs < 1 or args.tasks < 1 or args.spare_jobs < 0:
        parser.error("--pairs and --tasks must be >= 1, --spare-jobs >= 0")
    json_path = args.json.resolve() if args.json else None
    runs: list[dict[str, Any]] = []
    code = code_measured()
    print(f"code: hotspare_dask from {code['hotspare_dask']} (checkout HEAD {code['head']}, "
          f"{len(code['uncommitted'])} uncommitted path(s) under src/ adapters/)", flush=True)
    bed, root = None, bed_root("overhead")
    with run_in_tmp("hotspare-dask-overhead-") as tmp:
        try:
            for index in range(2 * args.pairs):
                kind = KINDS[index % 2]
                bed = fresh(bed, root)
                run = one_run(kind, bed, tmp / f"{index}-{kind}", args) | {"index": index}
                runs.append(run)
                print(f"run {index:2d} {kind:9s} {run['tasks_per_s']:8.1f} tasks/s  ({run['elapsed_s']:.2f} s, "
                      f"{run['workers']} workers, {run['running']} running)", flush=True)
        finally:
            remove_bed(bed, root)
    figures = summary(runs)
    write_json(json_path, {"benchmark": "dask_overhead", "args": vars(args), "code": code, "runs": runs,
                           "summary": figures})
    print(f"plain_median={figures['plain_median']:.1f} failover_median={figures['failover_median']:.1f} tasks/s "
          f"(spread max-min/median: plain {figures['plain_spread']:.1%}, failover {figures['failover_spread']:.1%})")
    print(f"paired_ratio_median={figures['paired_ratio_median']:.3f} (each failover run / the plain run before it)")
    print(f"throughput_ratio={figures['throughput_ratio']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
