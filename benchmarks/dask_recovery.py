#!/usr/bin/env python3
"""Recovery from a node crash or freeze under load: plain dask-jobqueue SLURMCluster vs FailoverSLURMCluster on the
SLURM bed.

    flock /tmp/hotspare-bed.lock .venv/bin/python benchmarks/dask_recovery.py [--fault crash|freeze] [--runs 3]
        [--spare-jobs N] [--reboot-after S] [--task-s 0.05] [--window-s 2] [--json FILE]

Each run brings up a fresh 4-node bed (tests/testbed) and starts 3 batch jobs, one worker each (cores=1,
processes=1, ``--exclusive``: one job per node, the fourth node free). The plain cluster keeps its 3 jobs with
``adapt(minimum_jobs=3, maximum_jobs=3)`` (dask-jobqueue replaces a lost job only through adapt); the failover
cluster is given ``scale(jobs=3)`` (it judges and resubmits a lost job itself, without adapt). A stream of
short tasks (``--task-s`` of sleep each, ``4 x jobs`` in flight, a new one submitted as each completes) runs
for ``--warmup-s``; then the node of the first job (by name) is faulted: ``--fault crash`` SIGKILLs its namespace
init (slurmd, the worker and its tasks die at once; their connections close), ``--fault freeze`` SIGSTOPs every
process of the node (its connections stay open and nothing answers: a hung node, a network partition). Runs
alternate plain, failover, plain...; ``--runs`` of each.

``--spare-jobs N`` gives the failover cluster N hot spares (``spare_jobs=N``: jobs whose workers are connected but
get no tasks; with the default 3 jobs, one spare fills the bed's fourth node). Its replacement is then the spare's
worker promoted, not a new job: ``replace_s`` runs until a worker the scheduler gives tasks to (its ``running``
set) that was not among those before the fault, so a spare counts from its promotion, not from its connection. The
plain cluster has no spares; it runs as before in the same invocation.

Per run, from the fault:

* ``gone_s``: until the scheduler no longer has the faulted node's worker (its tasks go back to the queue then);
* ``judged_s``: until the faulted node's batch job has left the cluster's jobs (dask cancels it after its
  lost-worker timeout; the failover cluster once it judged the node);
* ``replace_s``: until a worker that was not running before the fault runs tasks (a new job's worker connected,
  or a spare's promoted);
* the split: ``detect_s`` (plain: ``gone_s``; failover: when its watch raised the lead, from the workflow's ledger),
  ``judge_s`` (``judged_s - detect_s``), ``submit_s`` (``replace_s - judged_s``: sbatch, start, connect);
* ``restore_s``: until the stream's completion rate over the last ``--window-s`` (a window wholly after the
  crash) is back to >= 90 % of its rate over the ``--baseline-s`` before the crash. With one worker of three
  lost the rate drops to ~2/3, so ``restore_s`` is ``replace_s`` plus the new worker's start-up plus ~0.7 of a
  window (the window must fill with the restored rate);
* where the replacement worker runs (the node's hostname, asked of the worker itself) and ``dead_node_reused``:
  whether that is the crashed node; SLURM's NodeList, state and Restarts of the crashed and the replacement
  batch jobs; the hosts the failover cluster quarantined; futures that came back other than finished, by status
  (``lost``: a finished task whose result only the crashed worker held; dask recomputes it).

``--reboot-after S`` restarts the crashed node's slurmd S seconds after the crash: the node comes back
healthy-looking but is the bad node. SLURM marks a silent node DOWN only ~15-18 s after a crash, so without a
reboot it rarely hands that node out again; a node that reboots quickly is the case where it does.

Prints each run, the medians, and last:

    replace_s_plain=<median> replace_s_failover=<median> dead_node_reused_plain=<k>/<n> dead_node_reused_failover=<k>/<n>

Read the workers from the cluster (``cluster.scheduler_info``, fed by the scheduler's own stream), never from a
synchronous ``Client.scheduler_info()``: distributed 2026.8's client refreshes that cache every 2 s with no worker
list, racing the call's own fetch, so the call sometimes returns no workers at all (seen: 7 of 500 calls with the
refresh at 20 ms).

Medians are over the runs that got a replacement within ``--timeout-s`` (the count is printed when some did not).
"""

from __future__ import annotations

import argparse
import bisect
import math
import re
import socket
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dask_bed import KINDS, Bed, bed_root, code_measured, job_node, make_cluster, remove_bed, run_in_tmp, write_json
from distributed import Client, Future, as_completed

#: Seconds between looks at the stream and the scheduler while recovering.
POLL_S = 0.05
#: Fraction of the pre-crash completion rate that counts as restored.
RESTORED = 0.9


def work(x: int, task_s: float) -> int:
    # Defined in __main__: cloudpickle sends it by value, so the workers need not import this file.
    time.sleep(task_s)
    return x + 1


@dataclass
class Stream:
    """A stream of short tasks kept ``depth`` deep: each completion (time recorded) submits the next task."""

    client: Client
    task_s: float
    depth: int
    done_at: list[float] = field(default_factory=list)
    #: Futures that came back other than finished, by status ("lost": its result was on the crashed node).
    errors: Counter[str] = field(default_factory=Counter)
    _next: int = 0
    _running: set[Future[int]] = field(default_factory=set)
    _ac: as_completed | None = None

    def start(self) -> None:
        self._ac = as_completed([self._submit() for _ in range(self.depth)])

    def _submit(self) -> Future[int]:
        future = self.client.submit(work, self._next, self.task_s, pure=False)
        self._next += 1
        self._running.add(future)
        return future

    def pump(self) -> None:
        """Record what completed since the last call and top the stream up (never blocks)."""
        assert self._ac is not None
        for future in self._ac.next_batch(block=False):
            now = time.monotonic()
            self._running.discard(future)
            if future.status == "finished":
                self.done_at.append(now)
            else:
                self.errors[str(future.status)] += 1
            self._ac.add(self._submit())

    def rate(self, start: float, end: float) -> float:
        """Completions per second in (start, end]."""
        n = bisect.bisect_right(self.done_at, end) - bisect.bisect_right(self.done_at, start)
        return n / (end - start)

    def stop(self) -> None:
        if self._ac is not None:
            self._ac.clear()
        self.client.cancel(list(self._running))
        self._running.clear()


@dataclass
class Recovery:
    """What the watch after the fault saw (seconds from the fault)."""

    gone_s: float | None = None
    judged_s: float | None = None
    replace_s: float | None = None
    restore_s: float | None = None
    replacement: str | None = None
    replacement_name: str | None = None
    rebooted_s: float | None = None
    min_rate_ratio: float = math.inf


def pump_for(stream: Stream, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        stream.pump()
        time.sleep(POLL_S)


def watch(cluster: Any, bed: Bed, stream: Stream, *, victim: str, crash_t: float, pre_rate: float,
          before: set[str], args: argparse.Namespace, victim_addr: str, victim_job: str) -> Recovery:
    """Pump the stream until a new worker is connected and the rate is restored (or ``timeout_s``); reboot the
    crashed node on the way when asked."""
    seen = Recovery()
    while time.monotonic() < crash_t + args.timeout_s and (seen.replace_s is None or seen.restore_s is None):
        time.sleep(POLL_S)
        stream.pump()
        now = time.monotonic()
        if seen.gone_s is None and victim_addr not in cluster.scheduler_info["workers"]:
            seen.gone_s = now - crash_t
        if seen.judged_s is None and victim_job not in {str(j.job_id) for j in list(cluster.workers.values())}:
            seen.judged_s = now - crash_t
        if args.reboot_after is not None and seen.rebooted_s is None and now >= crash_t + args.reboot_after:
            bed.start(victim)
            seen.rebooted_s = now - crash_t
        workers = dict(cluster.scheduler_info["workers"])
        new = sorted(running(cluster) & set(workers) - before)
        if seen.replace_s is None and new:
            seen.replace_s, seen.replacement = now - crash_t, new[0]
            seen.replacement_name = str(workers[new[0]].get("name"))
        if now >= crash_t + args.window_s:  # a window wholly after the crash
            ratio = stream.rate(now - args.window_s, now) / pre_rate
            seen.min_rate_ratio = min(seen.min_rate_ratio, ratio)
            if seen.restore_s is None and ratio >= RESTORED:
                seen.restore_s = now - crash_t
    return seen


def wait_connected(cluster: Any, n: int, timeout_s: float) -> None:
    """Until ``n`` workers, spares' included, are connected (``Client.wait_for_workers`` counts running ones)."""
    deadline = time.monotonic() + timeout_s
    while len(cluster.scheduler_info["workers"]) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{n} workers not connected within {timeout_s:g} s")
        time.sleep(POLL_S)


def running(cluster: Any) -> set[str]:
    """The addresses of the workers the scheduler gives tasks to (a spare's only once promoted)."""
    return {ws.address for ws in list(cluster.scheduler.running)}


def node_of(client: Client, address: str) -> str:
    """The node a worker runs on, asked of the worker (each bed node has its own UTS namespace)."""
    try:
        return str(client.run(socket.gethostname, workers=[address])[address])
    except Exception as exc:  # the worker left meanwhile: say so in the figures
        return f"? ({type(exc).__name__})"


def ctld_lines(bed: Bed, job_id: str, limit: int = 20) -> list[str]:
    """What slurmctld logged about one batch job (its requeues, node failures, cancels): the first ``limit`` lines."""
    path = bed.root / "log" / "slurmctld.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return [line for line in text.splitlines() if re.search(rf"JobId={job_id}\b", line)][:limit]


def lead_s(cluster: Any, kind: str, victim: str, fault_wall: float) -> float | None:
    """When the failover cluster's watch raised its first lead on ``victim`` after the fault (from its ledger)."""
    if kind != "failover":
        return None
    with cluster._db_lock:
        leads = [o.at_s for o in cluster._ledger.observations() if o.kind == "lead" and o.host == victim]
    after = [t - fault_wall for t in leads if t >= fault_wall]
    return min(after) if after else None


def split(run: dict[str, Any]) -> dict[str, float | None]:
    """The recovery split into detect (the fault noticed), judge (the job judged lost), submit (the new worker)."""
    detect = run["lead_s"] if run["kind"] == "failover" else run["gone_s"]
    judged, replaced = run["judged_s"], run["replace_s"]
    return {"detect_s": detect,
            "judge_s": judged - detect if judged is not None and detect is not None else None,
            "submit_s": replaced - judged if replaced is not None and judged is not None else None}


def fault_under_load(kind: str, bed: Bed, cluster: Any, client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """Stream, fault the first job's node, watch the recovery; the run's figures."""
    active = running(cluster)
    nodes = {a: str(n) for a, n in client.run(socket.gethostname).items() if a in active}
    names = {a: str(w["name"]) for a, w in cluster.scheduler_info["workers"].items() if a in active}
    victim_addr = min(names, key=lambda a: names[a])
    victim, victim_job = nodes[victim_addr], str(cluster.workers[names[victim_addr]].job_id)
    stream = Stream(client, args.task_s, depth=4 * args.jobs)
    try:
        stream.start()
        pump_for(stream, args.warmup_s)
        crash_t, fault_wall = time.monotonic(), time.time()
        pre_rate = stream.rate(crash_t - args.baseline_s, crash_t)
        if args.fault == "crash":
            bed.crash(victim)
        else:
            bed.freeze(victim)
        seen = watch(cluster, bed, stream, victim=victim, crash_t=crash_t, pre_rate=pre_rate, before=active,
                     args=args, victim_addr=victim_addr, victim_job=victim_job)
    finally:
        stream.stop()
        if args.fault == "freeze":
            bed.thaw(victim)
    new_node = node_of(client, seen.replacement) if seen.replacement else None
    new_name = seen.replacement_name
    new_job = getattr(cluster.workers.get(new_name), "job_id", None) if new_name is not None else None
    quarantined = sorted(h.name for h in cluster.quarantine.hosts()) if kind == "failover" else []
    return {"kind": kind, "nodes_before": sorted(nodes.values()), "victim": victim, "victim_job": victim_job,
            "victim_job_after": job_node(bed, victim_job),
            "victim_job_ctld_log": ctld_lines(bed, victim_job), "pre_rate_per_s": pre_rate,
            "gone_s": seen.gone_s, "judged_s": seen.judged_s, "lead_s": lead_s(cluster, kind, victim, fault_wall),
            "replace_s": seen.replace_s, "restore_s": seen.restore_s, "min_rate_ratio": seen.min_rate_ratio,
            "rebooted_s": seen.rebooted_s, "replacement_worker": new_name, "replacement_node": new_node,
            "replacement_job": new_job, "replacement_job_slurm": job_node(bed, str(new_job)) if new_job else None,
            "dead_node_reused": new_node == victim if new_node is not None else None,
            "quarantined": quarantined, "task_errors": dict(stream.errors), "tasks_done": len(stream.done_at),
            "spare_jobs": args.spare_jobs if kind == "failover" else 0}


def one_run(kind: str, work_dir: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """A fresh bed and cluster, 3 workers connected, one node crashed under load; everything torn down."""
    bed = Bed.up(root)
    cluster, client = None, None
    try:
        spares = args.spare_jobs if kind == "failover" else 0
        cluster = make_cluster(kind, bed, work_dir, cores=1, processes=1, exclusive=True, spare_jobs=spares)
        if kind == "plain":
            cluster.adapt(minimum_jobs=args.jobs, maximum_jobs=args.jobs)
        else:
            cluster.scale(jobs=args.jobs)
        client = Client(cluster, timeout=60)
        client.wait_for_workers(args.jobs, timeout=180)  # running workers: a spare is paused
        wait_connected(cluster, args.jobs + spares, 180)
        run = fault_under_load(kind, bed, cluster, client, args)
        return run | split(run)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        remove_bed(bed, root)


def describe(index: int, run: dict[str, Any]) -> str:
    def secs(value: float | None) -> str:
        return "none" if value is None else f"{value:5.1f}"

    reused = {True: "yes", False: "no", None: "?"}[run["dead_node_reused"]]
    errors = ",".join(f"{status}:{n}" for status, n in sorted(run["task_errors"].items())) or "0"
    return (f"run {index:2d} {run['kind']:9s} faulted={run['victim']} gone_s={secs(run['gone_s'])} "
            f"judged_s={secs(run['judged_s'])} replace_s={secs(run['replace_s'])} "
            f"(detect {secs(run['detect_s'])} + judge {secs(run['judge_s'])} + submit {secs(run['submit_s'])}) "
            f"restore_s={secs(run['restore_s'])} replacement_node={run['replacement_node']} dead_node_reused={reused}"
            f" pre_rate={run['pre_rate_per_s']:.1f}/s min_rate={run['min_rate_ratio']:.0%} not_finished={errors}")


def median_of(runs: list[dict[str, Any]], kind: str, key: str) -> float | None:
    values = [r[key] for r in runs if r["kind"] == kind and r[key] is not None]
    return statistics.median(values) if values else None


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        mine = [r for r in runs if r["kind"] == kind]
        out[kind] = {"runs": len(mine), "replaced": sum(r["replace_s"] is not None for r in mine),
                     "restored": sum(r["restore_s"] is not None for r in mine),
                     **{f"{key}_median": median_of(runs, kind, key)
                        for key in ("gone_s", "judged_s", "replace_s", "restore_s", "detect_s", "judge_s", "submit_s")},
                     "dead_node_reused": sum(bool(r["dead_node_reused"]) for r in mine)}
    return out


def report(figures: dict[str, Any]) -> list[str]:
    def fmt(value: float | None) -> str:
        return "none" if value is None else f"{value:.1f}"

    lines = []
    for kind in KINDS:
        f = figures[kind]
        lines.append(f"{kind:9s} replaced {f['replaced']}/{f['runs']} restored {f['restored']}/{f['runs']} medians: "
                     f"gone_s {fmt(f['gone_s_median'])} judged_s {fmt(f['judged_s_median'])} "
                     f"replace_s {fmt(f['replace_s_median'])} = detect {fmt(f['detect_s_median'])} + judge "
                     f"{fmt(f['judge_s_median'])} + submit {fmt(f['submit_s_median'])}; "
                     f"restore_s {fmt(f['restore_s_median'])}")
    p, fo = figures["plain"], figures["failover"]
    lines.append(f"replace_s_plain={fmt(p['replace_s_median'])} replace_s_failover={fmt(fo['replace_s_median'])} "
                 f"dead_node_reused_plain={p['dead_node_reused']}/{p['runs']} "
                 f"dead_node_reused_failover={fo['dead_node_reused']}/{fo['runs']}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fault", choices=("crash", "freeze"), default="crash",
                        help="crash: the node powered off (connections close); freeze: every process stopped "
                             "(connections stay open, nothing answers)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind, alternating")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--spare-jobs", type=int, default=0, metavar="N",
                        help="hot spares for the failover cluster (spare_jobs=N); the plain cluster has none")
    parser.add_argument("--task-s", type=float, default=0.05, help="each task's sleep")
    parser.add_argument("--warmup-s", type=float, default=10.0, help="stream time before the crash")
    parser.add_argument("--baseline-s", type=float, default=5.0, help="the pre-crash rate is measured over this")
    parser.add_argument("--window-s", type=float, default=2.0, help="sliding window for the restored rate")
    parser.add_argument("--timeout-s", type=float, default=180.0, help="give up watching a run after this")
    parser.add_argument("--reboot-after", type=float, default=None, metavar="S",
                        help="restart the crashed node's slurmd S seconds after the crash")
    parser.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    args = parser.parse_args()
    if args.runs < 1 or not 0 < args.baseline_s <= args.warmup_s or args.window_s <= 0 or args.spare_jobs < 0:
        parser.error("--runs >= 1, 0 < --baseline-s <= --warmup-s, --window-s > 0 and --spare-jobs >= 0")
    json_path = args.json.resolve() if args.json else None
    code = code_measured()
    if args.fault == "freeze" and args.reboot_after is not None:
        parser.error("--reboot-after restarts a crashed node's slurmd: give it with --fault crash")
    scenario = args.fault if args.reboot_after is None else f"crash, node rebooted after {args.reboot_after:g} s"
    scenario += f", failover with {args.spare_jobs} spare job(s)" if args.spare_jobs else ""
    print(f"scenario: {scenario}; code: hotspare_dask from {code['hotspare_dask']} (checkout HEAD {code['head']}, "
          f"{len(code['uncommitted'])} uncommitted path(s) under src/ adapters/)", flush=True)
    runs: list[dict[str, Any]] = []
    with run_in_tmp("hotspare-dask-recovery-") as tmp:
        for index in range(2 * args.runs):
            kind = KINDS[index % 2]
            run = one_run(kind, tmp / f"{index}-{kind}", bed_root("recovery"), args) | {"index": index}
            runs.append(run)
            print(describe(index, run), flush=True)
    figures = summary(runs)
    write_json(json_path, {"benchmark": "dask_recovery", "scenario": scenario, "args": vars(args), "code": code,
                           "runs": runs, "summary": figures})
    print("\n".join(report(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
