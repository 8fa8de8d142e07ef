"""A Dask workflow on SLURM whose jobs stay off dead nodes: FailoverSLURMCluster (SLURMCluster plus failover).

    python examples/dask_slurm.py --jobs 4 --tasks 200           # on a SLURM login node
    python examples/dask_slurm.py --host 127.0.0.1 --jobs 2      # everything on loopback (the project's test bed)

The only change from a dask-jobqueue script is the cluster's class (and ``run_dir``, the workflow directory).
When a job's node dies, the job is judged from the scheduler and its logs, the node is quarantined with the
evidence and the job is resubmitted with ``#SBATCH --exclude=`` of every quarantined node. At the end the script
prints where each batch job ran and what is quarantined (``hotspare postmortem RUN_DIR`` says the same and more).
For a task that is itself an MPI job, see ``hotspare_dask.run_mpi`` (and ``job_nodes=``).
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

from hotspare_dask import FailoverSLURMCluster


def where(_x: int, task_s: float) -> str:
    """One task: a little work, then the node it ran on."""
    time.sleep(task_s)
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="batch jobs (one Dask worker each)")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--task-s", type=float, default=0.2, help="seconds each task works")
    parser.add_argument("--cores", type=int, default=1, help="cores (worker threads) per job")
    parser.add_argument("--memory", default="1GB", help="memory per job")
    parser.add_argument("--walltime", default="00:30:00")
    parser.add_argument("--queue", help="SLURM partition")
    parser.add_argument("--account", help="SLURM account")
    parser.add_argument("--run-dir", type=Path, default=Path("dask-slurm-demo"), help="the workflow directory")
    parser.add_argument("--host", help="the scheduler's address (127.0.0.1: loopback only)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the workers")
    args = parser.parse_args(argv)
    options = {"host": args.host, "dashboard_address": f"{args.host}:0"} if args.host else {}
    # was: cluster = SLURMCluster(cores=..., processes=1, memory=..., ...)
    cluster = FailoverSLURMCluster(cores=args.cores, processes=1, memory=args.memory, walltime=args.walltime,
                                   queue=args.queue, account=args.account, log_directory=args.run_dir / "logs",
                                   run_dir=args.run_dir, scheduler_options=options)
    try:
        cluster.scale(jobs=args.jobs)
        with Client(cluster, timeout=args.timeout) as client:
            client.wait_for_workers(args.jobs, timeout=args.timeout)
            nodes = client.gather(client.map(where, range(args.tasks), task_s=args.task_s))
        report(cluster, nodes)
    finally:
        cluster.close()
    return 0


def report(cluster: FailoverSLURMCluster, nodes: list[str]) -> None:
    """Where each batch job ran, where the tasks ran, and what is quarantined."""
    for row in cluster.record.jobs():
        print(f"job {row.job_name} (batch job {row.job_id}): {', '.join(row.hosts) or 'node not reported'}"
              + (f"; kept off {', '.join(row.excluded)}" if row.excluded else "")
              + (f"; ended: {row.verdict}" if row.verdict else ""))
    counts = collections.Counter(nodes)
    print(f"tasks: {len(nodes)} done on " + ", ".join(f"{n} ({c})" for n, c in sorted(counts.items())))
    entries = cluster.quarantine.entries()
    print("quarantine: " + ("empty" if not entries else ""))
    for e in entries:
        print(f"  {e.host.raw} ({e.reason}): {e.detail}")


if __name__ == "__main__":
    sys.exit(main())
