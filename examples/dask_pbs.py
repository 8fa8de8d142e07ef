"""A Dask workflow on PBS whose jobs stay off dead nodes: FailoverPBSCluster (PBSCluster plus failover).

    python examples/dask_pbs.py --jobs 4 --hosts x1001,x1002,x1003,x1004    # PBS Pro: select=1:ncpus=N:mem=M
    python examples/dask_pbs.py --torque --host 127.0.0.1 --jobs 2          # Torque-style qsub: nodes=1:ppn=N

The only change from a dask-jobqueue script is the cluster's class (and ``run_dir``; ``hosts`` optionally). PBS
cannot exclude a node, so once a node is quarantined each new job is pinned to one host known good and free:
among ``--hosts`` and the nodes earlier workers reported (``select=1:host=H:…``, Torque ``nodes=H:…``). With
``--torque`` the resource request is Torque's ``nodes=1:ppn=N`` (slurm-wlm-torque's qsub, as on the project's
test bed, honours it). At the end the script prints where each batch job ran and what is quarantined.
"""

from __future__ import annotations

import argparse
import collections
import os
import socket
import sys
import time
from pathlib import Path

from distributed import Client

from hotspare_dask import FailoverPBSCluster


def where(_x: int, task_s: float) -> str:
    """One task: a little work, then the node it ran on."""
    time.sleep(task_s)
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--torque", action="store_true", help="Torque's nodes=1:ppn=N (e.g. slurm-wlm-torque)")
    parser.add_argument("--jobs", type=int, default=2, help="batch jobs (one Dask worker each)")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--task-s", type=float, default=0.2, help="seconds each task works")
    parser.add_argument("--cores", type=int, default=1, help="cores (worker threads) per job")
    parser.add_argument("--memory", default="1GB", help="memory per job")
    parser.add_argument("--walltime", default="00:30:00")
    parser.add_argument("--queue", help="PBS queue (e.g. debug on Polaris)")
    parser.add_argument("--account", help="PBS project/account")
    parser.add_argument("--hosts", default="", help="comma-separated nodes jobs may be pinned to after a fault")
    parser.add_argument("--run-dir", type=Path, default=Path("dask-pbs-demo"), help="the workflow directory")
    parser.add_argument("--host", help="the scheduler's address (127.0.0.1: loopback only)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the workers")
    args = parser.parse_args(argv)
    options = {"host": args.host, "dashboard_address": f"{args.host}:0"} if args.host else {}
    # PBS Pro: dask-jobqueue's own select=1:ncpus=N:mem=M (resource_spec None).
    spec = f"nodes=1:ppn={args.cores}" if args.torque else None
    # was: cluster = PBSCluster(cores=..., processes=1, memory=..., ...)
    cluster = FailoverPBSCluster(cores=args.cores, processes=1, memory=args.memory, walltime=args.walltime,
                                 resource_spec=spec, queue=args.queue, account=args.account,
                                 hosts=[h for h in args.hosts.split(",") if h], run_dir=args.run_dir,
                                 scheduler_options=options)
    try:
        cluster.scale(jobs=args.jobs)
        with Client(cluster, timeout=args.timeout) as client:
            client.wait_for_workers(args.jobs, timeout=args.timeout)
            nodes = client.gather(client.map(where, range(args.tasks), task_s=args.task_s))
        report(cluster, nodes)
    finally:
        cluster.close()
    return 0


def report(cluster: FailoverPBSCluster, nodes: list[str]) -> None:
    """Where each batch job ran, where the tasks ran, and what is quarantined."""
    for row in cluster.record.jobs():
        print(f"job {row.job_name} (batch job {row.job_id}): {', '.join(row.hosts) or 'node not reported'}"
              + (f"; ended: {row.verdict}" if row.verdict else ""))
    counts = collections.Counter(nodes)
    print(f"tasks: {len(nodes)} done on " + ", ".join(f"{n} ({c})" for n, c in sorted(counts.items())))
    entries = cluster.quarantine.entries()
    print("quarantine: " + ("empty" if not entries else ""))
    for e in entries:
        print(f"  {e.host.raw} ({e.reason}): {e.detail}")


if __name__ == "__main__":
    sys.exit(main())
