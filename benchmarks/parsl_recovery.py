#!/usr/bin/env python3
"""Recovery of a Parsl workflow from a block's node crashed or frozen under load: plain HighThroughputExecutor over
SlurmProvider vs FailoverHTEX over FailoverProvider(SlurmProvider), on the SLURM bed, side by side in one run.

    nice -n 10 flock /tmp/hotspare-pbs-tests.lock flock /tmp/hotspare-bed.lock \
        .venv/bin/python benchmarks/parsl_recovery.py
        [--fault crash|freeze] [--runs 1] [--task-s 0.2] [--timeout-s 300] [--json FILE]

Each run brings up a fresh 4-node bed (tests/testbed) and 3 one-node blocks (``--exclusive``, one worker each: the
fourth node free), Parsl's defaults otherwise (plain: heartbeat_period 30 s, heartbeat_threshold 120 s,
SlurmProvider's 60 s status poll; the failover side: FailoverHTEX's 1 s heartbeats, the same threshold and poll,
hotspare's retry and block error handlers). A stream of short tasks (``--task-s`` each, 4 per block in flight, a
new one as each completes) runs for ``--warmup-s``; then the node of block 0 is faulted: ``crash`` SIGKILLs its
namespace init (the manager's connection closes), ``freeze`` SIGSTOPs every process of it (connections stay open,
nothing answers). Runs alternate plain, failover, ...; ``--runs`` of each.

Each try of a task appends its host and start time to a file of its own, so what a run measures is the workflow's
view, never what Parsl says of itself. From the fault:

* ``rerun_s``: until every task that was running on the faulted node has started again on another node (the last
  of them);
* ``replace_s``: until a block job is RUNNING in SLURM on a node it was not on before the fault (a new block, or
  the lost block's job requeued by SLURM and started again elsewhere under the same id, as plain Parsl's is);
  ``connected_s``: until a manager that was not there before is connected to the interchange;
* the failover side's split, from its ledger: ``detect_s`` (the watch's first lead on the node), ``judge_s``
  (to the finding ``node fault``), and ``submit_s`` (``replace_s`` after that);
* ``done``: every task of the stream finished (none failed), and the hosts quarantined.

The bed's ports are fixed: hold both bed locks (other sessions' SLURM beds take either). Prints each run,
then::

    rerun_s plain=<median> failover=<median> ratio=<plain/failover>; replace_s plain=... failover=... ratio=...
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import parsl
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import SimpleLauncher
from parsl.providers import SlurmProvider

import hotspare_parsl
from hotspare_parsl import FailoverHTEX, FailoverProvider, retry_handler

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from testbed.cluster import Bed  # noqa: E402 -- the test bed lives beside the tests

KINDS = ("plain", "failover")
BLOCKS = 3
#: Seconds between looks at the stream, the tries and the scheduler while recovering.
POLL_S = 0.1


@parsl.python_app
def work(i: int, task_s: float, tries: str) -> int:
    # Defined in __main__: Parsl sends it by value, so the workers need not import this file.
    import socket  # noqa: PLC0415 -- runs on the worker
    import time  # noqa: PLC0415

    with open(f"{tries}/{i}", "a") as out:
        out.write(f"{socket.gethostname()} {time.time()}\n")
    time.sleep(task_s)
    return i


def tries_of(tries: Path, i: int) -> list[tuple[str, float]]:
    path = tries / str(i)
    text = path.read_text() if path.exists() else ""
    return [(w[0], float(w[1])) for w in (line.split() for line in text.splitlines()) if len(w) == 2]


def make_config(kind: str, work_dir: Path) -> tuple[Config, Any]:
    inner = SlurmProvider(nodes_per_block=1, init_blocks=BLOCKS, min_blocks=BLOCKS, max_blocks=BLOCKS,
                          walltime="00:10:00", launcher=SimpleLauncher(), exclusive=True)
    common = {"label": "htex", "address": "127.0.0.1", "loopback_address": "127.0.0.1", "max_workers_per_node": 1}
    if kind == "plain":
        executor: Any = HighThroughputExecutor(provider=inner, **common)
        config = Config(executors=[executor], run_dir=str(work_dir / "runinfo"), retries=1)
    else:
        executor = FailoverHTEX(provider=FailoverProvider(inner, run_dir=work_dir / "wf"), **common)
        config = Config(executors=[executor], run_dir=str(work_dir / "runinfo"), retries=1,
                        retry_handler=retry_handler)
    return config, executor


def running_jobs(bed: Bed) -> dict[str, str]:
    """``{job id: node}`` of the RUNNING jobs."""
    done = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i %N"], capture_output=True, text=True, env=bed.env,
                          timeout=30, check=False)
    return dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)


def ledger_split(executor: Any, victim: str, fault_wall: float) -> dict[str, float | None]:
    """The failover side's lead and finding on ``victim`` (seconds from the fault), from its ledger."""
    provider = getattr(executor, "provider", None)
    if not isinstance(provider, FailoverProvider):
        return {"detect_s": None, "judged_s": None}
    with provider._db_lock:
        rows = [o for o in provider._ledger.observations() if o.host == victim and o.at_s >= fault_wall]
    lead = [o.at_s - fault_wall for o in rows if o.kind == "lead"]
    fault = [o.at_s - fault_wall for o in rows if o.kind == "silence" and o.detail.startswith("node fault")]
    return {"detect_s": min(lead) if lead else None, "judged_s": min(fault) if fault else None}


def stream_and_fault(kind: str, bed: Bed, executor: Any, tries: Path, args: argparse.Namespace) -> dict[str, Any]:
    futures: dict[int, Future[int]] = {}
    depth, submitted = 4 * BLOCKS, 0

    def top_up() -> None:
        nonlocal submitted
        while sum(not f.done() for f in futures.values()) < depth:
            futures[submitted] = work(submitted, args.task_s, str(tries))
            submitted += 1

    end = time.monotonic() + args.warmup_s
    while time.monotonic() < end:
        top_up()
        time.sleep(POLL_S)
    blocks = {str(m["block_id"]): m for m in executor.connected_managers()}
    managers = {str(m["manager"]) for m in blocks.values()}
    victim_block = min(blocks, key=int)
    jobs_before = running_jobs(bed)
    victim_job = str(executor.blocks_to_job_id[victim_block])
    victim = jobs_before[victim_job]
    fault_t, fault_wall = time.monotonic(), time.time()
    bed.crash(victim) if args.fault == "crash" else bed.freeze(victim)
    lost = [i for i, f in futures.items() if not f.done() and (t := tries_of(tries, i)) and t[-1][0] == victim]
    seen: dict[str, float | None] = {"rerun_s": None, "replace_s": None, "connected_s": None}
    try:
        while time.monotonic() < fault_t + args.timeout_s and None in seen.values():
            top_up()
            now = time.monotonic() - fault_t
            if seen["rerun_s"] is None and lost and all(any(h != victim and t >= fault_wall for h, t in
                                                            tries_of(tries, i)) for i in lost):
                seen["rerun_s"] = max(t for i in lost for h, t in tries_of(tries, i) if h != victim) - fault_wall
            # A job running where it did not before: a new block, or (plain) the lost block's job requeued by SLURM
            # and started again under the same id on another node. A manager not there before: its block connected.
            if seen["replace_s"] is None and set(running_jobs(bed).items()) - set(jobs_before.items()):
                seen["replace_s"] = now
            if seen["connected_s"] is None and {str(m["manager"]) for m in executor.connected_managers()} - managers:
                seen["connected_s"] = now
            time.sleep(POLL_S)
        left = [f for f in futures.values() if not f.done()]
        for f in left:
            f.exception(timeout=max(10.0, fault_t + args.timeout_s - time.monotonic()))
    finally:
        if args.fault == "freeze":
            bed.thaw(victim)
    failed = sum(1 for f in futures.values() if f.done() and f.exception() is not None)
    unfinished = sum(1 for f in futures.values() if not f.done())
    provider = getattr(executor, "provider", None)
    quarantined = sorted(h.name for h in provider.quarantine.hosts()) if isinstance(provider, FailoverProvider) else []
    split = ledger_split(executor, victim, fault_wall)
    judged = split["judged_s"]
    return {"kind": kind, "victim": victim, "lost_tasks": len(lost), **seen, **split,
            "judge_s": judged - split["detect_s"] if judged is not None and split["detect_s"] is not None else None,
            "submit_s": seen["replace_s"] - judged if seen["replace_s"] is not None and judged is not None else None,
            "tasks": len(futures), "failed": failed, "unfinished": unfinished, "quarantined": quarantined}


def one_run(kind: str, work_dir: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """A fresh bed and workflow, 3 blocks connected, block 0's node faulted under load; all torn down."""
    bed = Bed.up(root)
    os.environ["SLURM_CONF"] = bed.env["SLURM_CONF"]
    work_dir.mkdir(parents=True)
    tries = work_dir / "tries"
    tries.mkdir()
    config, executor = make_config(kind, work_dir)
    dfk = parsl.load(config)
    try:
        deadline = time.monotonic() + 120
        while len(executor.connected_managers()) < BLOCKS and time.monotonic() < deadline:
            time.sleep(0.2)
        if len(executor.connected_managers()) < BLOCKS:
            return {"kind": kind, "error": "the 3 blocks did not connect within 120 s"}
        return stream_and_fault(kind, bed, executor, tries, args)
    finally:
        dfk.cleanup()
        parsl.clear()
        bed.down()
        shutil.rmtree(root, ignore_errors=True)


def fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.1f}"


def median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def report(runs: list[dict[str, Any]]) -> list[str]:
    lines, medians = [], {}
    for kind in KINDS:
        mine = [r for r in runs if r["kind"] == kind]
        medians[kind] = {k: median(mine, k) for k in ("rerun_s", "replace_s", "connected_s", "detect_s", "judge_s",
                                                      "submit_s")}
        m = medians[kind]
        lines.append(f"{kind:9s} medians over {len(mine)}: rerun_s {fmt(m['rerun_s'])} replace_s {fmt(m['replace_s'])}"
                     f" connected_s {fmt(m['connected_s'])}" + (f" = detect {fmt(m['detect_s'])} + judge "
                     f"{fmt(m['judge_s'])} + submit {fmt(m['submit_s'])}" if kind == "failover" else ""))

    def ratio(key: str) -> str:
        p, f = medians["plain"][key], medians["failover"][key]
        return f"{p / f:.1f}" if p is not None and f else "none"

    p, f = medians["plain"], medians["failover"]
    lines.append(f"rerun_s plain={fmt(p['rerun_s'])} failover={fmt(f['rerun_s'])} ratio={ratio('rerun_s')}; "
                 f"replace_s plain={fmt(p['replace_s'])} failover={fmt(f['replace_s'])} ratio={ratio('replace_s')}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fault", choices=("crash", "freeze"), default="freeze")
    parser.add_argument("--runs", type=int, default=1, help="runs of each kind, alternating")
    parser.add_argument("--task-s", type=float, default=0.2, help="each task's sleep")
    parser.add_argument("--warmup-s", type=float, default=8.0, help="stream time before the fault")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="give up watching a run after this")
    parser.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    args = parser.parse_args()
    if args.runs < 1 or args.task_s <= 0 or args.timeout_s <= 0:
        parser.error("--runs >= 1, --task-s > 0 and --timeout-s > 0")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # process_worker_pool.py
    print(f"fault: {args.fault}; hotspare_parsl from {Path(hotspare_parsl.__file__).parent}", flush=True)
    runs = []
    back = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="hotspare-parsl-recovery-") as tmp:
        os.chdir(tmp)  # sbatch and Parsl write stray files into the working directory
        try:
            for index in range(2 * args.runs):
                kind = KINDS[index % 2]
                root = Path(tempfile.gettempdir()) / f"hotspare-precovery-bed-{os.getpid()}"
                run = one_run(kind, Path(tmp) / f"{index}-{kind}", root, args)
                runs.append(run)
                print(" ".join(f"{k}={fmt(v) if isinstance(v, float) else v}" for k, v in run.items()), flush=True)
        finally:
            os.chdir(back)
    if args.json is not None:
        import json  # noqa: PLC0415 -- only when asked

        tmp_json = args.json.with_name(f".{args.json.name}.tmp")
        tmp_json.write_text(json.dumps({"benchmark": "parsl_recovery", "args": vars(args), "runs": runs},
                                       indent=2, default=str) + "\n")
        tmp_json.replace(args.json)
    print("\n".join(report(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
