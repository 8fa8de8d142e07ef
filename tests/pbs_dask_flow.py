"""A FailoverPBSCluster workflow run INSIDE the PBS bed's network namespace (``Bed.argv``), driven by
tests/test_dask_pbs.py: real qsub, the scheduler on the server host's address, workers on the bed's MOMs.

``python pbs_dask_flow.py WORK ADDRESS NODES``: scales to 3 one-node jobs, writes ``WORK/victim.json`` (the
first job's node) once 20 tasks of a stream are done, waits for ``WORK/crashed`` (the test crashes the node
with ``Bed.crash``), then waits for the node's quarantine and the job's replacement and writes what it saw to
``WORK/result.json``. Every wait is bounded; the cluster is closed (its jobs qdel'ed) whatever happens.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dask.config
from distributed import Client

from hotspare import Host
from hotspare_dask import FailoverPBSCluster
from hotspare_dask.preload import HOSTNAME_KEY
from hotspare_dask.spares import SPARE_KIND
from polling import wait_for

TASKS = 150
TASK_S = 0.25


def square(x: int) -> int:  # defined in __main__: distributed sends it by value
    time.sleep(TASK_S)
    return x * x




def worker_hosts(cluster: FailoverPBSCluster) -> dict[str, str]:
    return {w["name"]: w.get(HOSTNAME_KEY, "") for w in cluster.scheduler_info["workers"].values()}


def qstat(job_id: str) -> dict[str, Any]:
    done = subprocess.run(["qstat", "-x", "-f", "-F", "json", job_id], capture_output=True, text=True, timeout=30,
                          check=False)
    return dict(json.loads(done.stdout)["Jobs"][job_id]) if done.returncode == 0 else {}


def crash_under_load(cluster: FailoverPBSCluster, client: Client, work: Path) -> dict[str, Any]:
    before = worker_hosts(cluster)
    futures = client.map(square, range(TASKS))
    wait_for("20 tasks done", lambda: sum(f.done() for f in futures) >= 20, 60)
    victim_job = sorted(cluster.workers)[0]
    victim = next(h for name, h in before.items() if name.startswith(victim_job))
    old_id = str(cluster.workers[victim_job].job_id)
    old_ids = {str(j.job_id) for j in cluster.workers.values()}
    (work / "victim.json").write_text(json.dumps({"victim": victim, "job": old_id}))
    wait_for("the test to crash the node", (work / "crashed").exists, 60)
    crashed = time.monotonic()
    wait_for("the crashed node quarantined", lambda: Host(victim) in cluster.quarantine.hosts(), 90)
    quarantined = time.monotonic()
    # The standby submitted as the worker left (its nanny died with the MOM) takes the lost job's place.
    wait_for("the replacement job", lambda: replacement(cluster, victim_job, old_ids), 60)
    resubmitted = time.monotonic()
    new_id = str(replacement(cluster, victim_job, old_ids))
    results = [f.result(timeout=120) for f in futures]
    client.wait_for_workers(3, timeout=90)
    back = time.monotonic()
    entry = cluster.quarantine.entries()
    rows = {r.job_id: r for r in cluster.record.jobs()}
    return {"before": before, "victim": victim, "victim_job": victim_job, "old_id": old_id, "new_id": new_id,
            "results_ok": results == [x * x for x in range(TASKS)], "after": worker_hosts(cluster),
            "quarantine": [[e.host.name, e.reason.value, e.detail] for e in entry],
            "old_row_hosts": list(rows[old_id].hosts), "new_row_excluded": list(rows[new_id].excluded),
            "new_job": qstat(new_id), "old_job": qstat(old_id),
            "spared": [[x.death.worker_name, bool(x.death.keys), x.counted] for x in cluster.task_blame.settled],
            "quarantine_s": quarantined - crashed, "resubmit_s": resubmitted - crashed, "back_s": back - crashed}


def replacement(cluster: FailoverPBSCluster, lost_job: str, old_ids: set[str]) -> str | None:
    """The batch job id of the one job that replaced ``lost_job``, if any: a standby (the lost job has left the
    cluster's plan) or, when the node was judged before a standby was asked for, the lost job resubmitted."""
    new = [str(j.job_id) for j in list(cluster.workers.values()) if j.job_id is not None and str(j.job_id) not in old_ids]
    return new[0] if len(new) == 1 and len(cluster.worker_spec) == len(old_ids) and not cluster.spares else None


def _address(cluster: FailoverPBSCluster, name: str) -> str:
    return next(a for a, w in cluster.scheduler_info["workers"].items() if w["name"] == name)


def _running(cluster: FailoverPBSCluster) -> set[str]:
    """The names of the workers the scheduler gives tasks to (a spare's is held paused)."""
    return {str(ws.name) for ws in cluster.scheduler.running}


def spare_takes_over(cluster: FailoverPBSCluster, client: Client, work: Path) -> dict[str, Any]:
    """2 jobs and a spare (spare_jobs=1) under a stream; an active job's MOM is crashed: the spare's worker is
    promoted as the lost one leaves, and the lost job comes back as the new spare, pinned off the dead node."""
    wait_for("the spare's worker", lambda: len(worker_hosts(cluster)) == 3, 120)
    before = worker_hosts(cluster)
    (spare,) = cluster.spares
    futures = client.map(square, range(TASKS))
    wait_for("20 tasks done", lambda: sum(f.done() for f in futures) >= 20, 60)
    spare_idle = not cluster.scheduler.workers[_address(cluster, spare)].processing
    victim_job = min(n for n in before if n != spare)
    victim, old_id = before[victim_job], str(cluster.workers[victim_job].job_id)
    (work / "victim.json").write_text(json.dumps({"victim": victim, "job": old_id}))
    wait_for("the test to crash the node", (work / "crashed").exists, 60)
    crashed = time.monotonic()
    wait_for("the spare promoted", lambda: spare in _running(cluster), 60)
    promoted = time.monotonic()
    results = [f.result(timeout=120) for f in futures]
    wait_for("the new spare job", lambda: str(getattr(cluster.workers.get(victim_job), "job_id", old_id)) != old_id,
             90)
    new_id = str(cluster.workers[victim_job].job_id)
    wait_for("the new spare's worker", lambda: victim_job in worker_hosts(cluster), 120)
    with cluster._db_lock:
        notes = [o.detail for o in cluster._ledger.observations() if o.kind == SPARE_KIND]
    return {"before": before, "spare": spare, "spare_idle": spare_idle,
            "victim": victim, "victim_job": victim_job, "old_id": old_id, "new_id": new_id,
            "results_ok": results == [x * x for x in range(TASKS)], "after": worker_hosts(cluster),
            "running": sorted(_running(cluster)), "spares": list(cluster.spares),
            "quarantine": [e.host.name for e in cluster.quarantine.entries()], "notes": notes,
            "new_job": qstat(new_id), "promoted_s": promoted - crashed,
            "spared": [[x.death.worker_name, bool(x.death.keys), x.counted] for x in cluster.task_blame.settled]}


def sister_dies(cluster: FailoverPBSCluster, client: Client, work: Path, hold_s: float) -> dict[str, Any]:
    """One job_nodes=3 job: its first sister node is crashed; the job and its worker are watched for ``hold_s``."""
    (job,) = cluster.workers.values()
    job_id = str(job.job_id)
    record = wait_for("the job's record", lambda: qstat(job_id).get("exec_host"), 30)
    hosts = [part.split("/")[0] for part in str(record).split("+")]
    lead = next(iter(worker_hosts(cluster).values()))
    victim = next(h for h in hosts if h != lead)
    (work / "victim.json").write_text(json.dumps({"victim": victim, "job": job_id}))
    wait_for("the test to crash the node", (work / "crashed").exists, 60)
    crashed = time.monotonic()
    seen: list[tuple[float, str, int]] = []
    while time.monotonic() - crashed < hold_s:
        seen.append((time.monotonic() - crashed, str(qstat(job_id).get("job_state")), len(worker_hosts(cluster))))
        time.sleep(2)
    answer = client.submit(square, 7, pure=False).result(timeout=30)
    return {"job": job_id, "hosts": hosts, "lead": lead, "victim": victim, "seen": seen, "answer": answer,
            "record": qstat(job_id), "quarantine": [e.host.name for e in cluster.quarantine.entries()],
            "job_ids": [str(j.job_id) for j in cluster.workers.values()]}


def freeze_under_load(cluster: FailoverPBSCluster, client: Client, work: Path) -> dict[str, Any]:
    """3 one-cpu jobs under a stream; a node holding exactly one of them (room left for a probe job beside it) is
    frozen: PBS never marks it down, so only the look's pinned probe jobs, placed there and never run, can give
    the two signals."""
    before = worker_hosts(cluster)
    futures = client.map(square, range(TASKS))
    wait_for("20 tasks done", lambda: sum(f.done() for f in futures) >= 20, 60)
    counts = {h: list(before.values()).count(h) for h in before.values()}
    victim_worker = min(name for name, h in before.items() if counts[h] == 1)
    victim = before[victim_worker]
    victim_job = next(name for name in cluster.workers if victim_worker.startswith(name))
    old_id = str(cluster.workers[victim_job].job_id)
    (work / "victim.json").write_text(json.dumps({"victim": victim, "job": old_id}))
    wait_for("the test to freeze the node", (work / "crashed").exists, 60)
    frozen = time.monotonic()
    print(f"froze {victim} ({victim_worker}, job {old_id})", flush=True)
    wait_for("the frozen worker removed", lambda: victim_worker not in worker_hosts(cluster), 90)
    removed = time.monotonic()
    print(f"worker removed at {removed - frozen:.1f} s", flush=True)
    wait_for("the frozen node quarantined", lambda: Host(victim) in cluster.quarantine.hosts(), 60)
    quarantined = time.monotonic()
    print(f"quarantined at {quarantined - frozen:.1f} s", flush=True)
    results = [f.result(timeout=120) for f in futures]
    print(f"results at {time.monotonic() - frozen:.1f} s", flush=True)
    wait_for("the replacement job", lambda: str(getattr(cluster.workers.get(victim_job), "job_id", old_id)) != old_id,
             60)
    new_id = str(cluster.workers[victim_job].job_id)
    with cluster._db_lock:
        observed = [[o.kind, o.host, o.detail] for o in cluster._ledger.observations()
                    if o.kind in ("probe", "silence", "lead")]
    return {"before": before, "victim": victim, "victim_job": victim_job, "old_id": old_id, "new_id": new_id,
            "results_ok": results == [x * x for x in range(TASKS)], "observed": observed,
            "quarantine": [[e.host.name, e.reason.value, e.detail] for e in cluster.quarantine.entries()],
            "new_job": qstat(new_id), "removed_s": removed - frozen, "quarantined_s": quarantined - frozen,
            "spared": [[x.death.worker_name, bool(x.death.keys), x.counted] for x in cluster.task_blame.settled]}


MPI_STEPS = 30


def make_train(ckpt: str, rsh: str) -> Any:
    def train() -> int:  # sent by value; run_mpi is imported on the worker
        from hotspare_dask import run_mpi  # noqa: PLC0415

        # Hydra starts its proxies through pbs_tmrsh (PBS's TM API: no ssh), as a user would ask for it.
        hydra = ["--launcher-cmd", "mpiexec.hydra", "--launcher-rsh", rsh]
        return run_mpi([sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(MPI_STEPS), "--ckpt-every", "3",
                        "--ckpt-dir", ckpt, "--step-s", "0.1", "--sync"], nhosts=2, launcher="mpiexec",
                       checkpoint_dir=ckpt, options=[*hydra, "--backoff", "0.2", "--probe-timeout", "3"])

    return train


def mpi_spare(cluster: FailoverPBSCluster, client: Client, work: Path) -> dict[str, Any]:
    """One job_nodes=3 job; its task runs the trainer on 2 nodes under the supervisor, the third a spare; the
    non-lead active node is crashed mid-run."""
    (job,) = cluster.workers.values()
    job_id = str(job.job_id)
    prefix = Path(subprocess.run(["which", "qsub"], capture_output=True, text=True, check=True).stdout).parent
    rsh = prefix / "pbs_tmrsh"
    future = client.submit(make_train(str(work / "ckpt"), str(rsh)), pure=False)
    log = wait_for("the task's first attempt", lambda: next((work / "wf").glob("tasks/*/attempt-1.log"), None), 60)
    wait_for("the trainer to progress", lambda: b"step=6 " in log.read_bytes(), 60)
    hosts = [part.split("/")[0] for part in str(qstat(job_id).get("exec_host")).split("+")]
    lead = next(iter(worker_hosts(cluster).values()))
    victim = next(h for h in hosts[:2] if h != lead)
    (work / "victim.json").write_text(json.dumps({"victim": victim, "job": job_id}))
    wait_for("the test to crash the node", (work / "crashed").exists, 60)
    crashed = time.monotonic()
    rc = future.result(timeout=120)
    done = time.monotonic()
    from hotspare import Ledger  # noqa: PLC0415

    ledger = Ledger.open(log.parent)
    try:
        attempts = [{"hosts": list(a.hosts), "log": a.log_path} for a in ledger.attempts()]
    finally:
        ledger.close()
    last_log = Path(attempts[-1]["log"]).read_text() if attempts else ""
    return {"job": job_id, "hosts": hosts, "lead": lead, "victim": victim, "rc": rc, "attempts": attempts,
            "last_log": last_log[-2000:], "done_s": done - crashed, "record": qstat(job_id),
            "folded": [e.host.name for e in cluster.fold_task_findings()],
            "quarantine": [e.host.name for e in cluster.quarantine.entries()],
            "job_ids": [str(j.job_id) for j in cluster.workers.values()]}


def main(work: Path, address: str, nodes: list[str], mode: str = "crash") -> int:
    # dask's lost-worker timeout short: a crashed node's workers never come back; PBS says "down" within 1 s.
    dask.config.set({"distributed.deploy.lost-worker-timeout": "3s"})
    multi: dict[str, Any] = {"job_nodes": 3} if mode.startswith(("sister", "mpi")) else {}
    spares: dict[str, Any] = {"spare_jobs": 1} if mode == "spare" else {}
    # A frozen node is looked at with pinned probe jobs, which need room beside the job: one-cpu jobs then.
    cores = 1 if mode == "freeze" else 2
    cluster = FailoverPBSCluster(cores=cores, processes=1, memory="500MB", walltime="00:10:00", hosts=nodes, **multi,
                                 **spares,
                                 run_dir=work / "wf", log_directory=str(work / "logs"),
                                 # -V: the job gets this environment (PYTHONPATH, PBS_CONF_FILE); a PBS job's
                                 # login shell would otherwise start without them.
                                 job_extra_directives=["-V"],
                                 scheduler_options={"host": address, "dashboard_address": f"{address}:0"})
    client = None
    try:
        jobs = 1 if multi else 2 if spares else 3
        cluster.scale(jobs=jobs)
        client = Client(cluster, timeout=60)
        client.wait_for_workers(jobs, timeout=90)  # running workers only: a spare's is paused
        if spares:
            result = spare_takes_over(cluster, client, work)
        elif mode == "mpi":
            result = mpi_spare(cluster, client, work)
        elif multi:
            result = sister_dies(cluster, client, work, float(mode.partition(":")[2] or 50))
        elif mode == "freeze":
            result = freeze_under_load(cluster, client, work)
        else:
            result = crash_under_load(cluster, client, work)
        (work / "result.json").write_text(json.dumps(result, default=str))
        return 0
    finally:
        if client is not None:
            client.close()
        cluster.close()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), *sys.argv[4:5]))
