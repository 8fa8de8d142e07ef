"""Dead nodes found in seconds by the failover clusters, on the real SLURM bed: a frozen node (its connections stay
open, nothing answers) is found from its worker's silence and two missed probes, its tasks run elsewhere and its job
is replaced; a crashed node is judged from two missed probes before SLURM marks it DOWN; a worker stuck in a task
that holds the GIL misses its heartbeats but its node answers, and nothing is evicted."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from distributed import Client

import hotspare_dask.preload
from hotspare import Host, QuarantineReason, read_snapshot
from hotspare_dask import FailoverSLURMCluster
from hotspare_dask.preload import HOSTNAME_KEY

#: 3 jobs of one worker each, one job per node (--exclusive): the fourth node is free for the replacement.
JOBS = 3
TASKS = 200
TASK_S = 0.25
#: The scheduler and its dashboard on loopback: the bed's nodes share this host's network.
LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
#: Bounds on the waits (not goals: the figures are benchmarks/dask_recovery.py's). Before this change a frozen
#: node's worker stayed for distributed's worker-ttl (5 min) and more.
FOUND_S = 30.0
#: How long the busy worker's task holds the GIL: well past the silence threshold (3 s) and one look at its node.
HOLD_S = 9


def _make_square() -> Callable[[int], int]:
    # Local functions: sent by value (cloudpickle), so the workers need not import the tests.
    def square(x: int) -> int:
        time.sleep(TASK_S)
        return x * x

    return square


def _make_hold() -> Callable[[int], str]:
    def hold_the_gil(seconds: int) -> str:
        import ctypes  # noqa: PLC0415 -- runs on the worker

        # A PyDLL call keeps the GIL for its whole length: the worker's event loop, and so its heartbeats, stop.
        ctypes.PyDLL(None).sleep(seconds)
        return "held"

    return hold_the_gil


def _make_origin() -> Callable[[], str]:
    def preload_origin() -> str:
        from hotspare_dask import preload  # noqa: PLC0415 -- runs on the worker

        return str(preload.__file__)

    return preload_origin


square, hold_the_gil, preload_origin = _make_square(), _make_hold(), _make_origin()


def _cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bed: Any) -> FailoverSLURMCluster:
    monkeypatch.chdir(tmp_path)  # sbatch's and dask's stray files land here, never in the checkout
    monkeypatch.setenv("SLURM_CONF", bed.env["SLURM_CONF"])
    return FailoverSLURMCluster(cores=1, processes=1, memory="500MB", walltime="00:10:00",
                                job_extra_directives=["--exclusive"], run_dir=tmp_path / "wf",
                                log_directory=tmp_path / "logs", scheduler_options=LOOPBACK)


def _started(cluster: FailoverSLURMCluster, jobs: int) -> tuple[Client, dict[str, str]]:
    """``jobs`` jobs running, their workers connected (importing this checkout's code): the client and
    {worker address: node}."""
    cluster.scale(jobs=jobs)
    client = Client(cluster, timeout=60)
    client.wait_for_workers(jobs, timeout=120)
    assert set(client.run(preload_origin).values()) == {hotspare_dask.preload.__file__}
    return client, {a: str(w.get(HOSTNAME_KEY)) for a, w in cluster.scheduler_info["workers"].items()}


def _node_state(bed: Any, node: str) -> str:
    return bed.scontrol("show", "node", node).split("State=", 1)[1].split()[0]


def _job_node(bed: Any, job_id: str) -> str:
    fields = dict(f.split("=", 1) for f in bed.scontrol("show", "job", "-o", job_id).split() if "=" in f)
    return fields.get("NodeList", "")


def _spare_notes(cluster: FailoverSLURMCluster) -> list[str]:
    with cluster._db_lock:
        return [o.detail for o in cluster._ledger.observations() if o.kind == "spare"]


def _job_field_exclude(bed: Any, job_id: str) -> str:
    fields = dict(f.split("=", 1) for f in bed.scontrol("show", "job", "-o", job_id).split() if "=" in f)
    return fields.get("ExcNodeList", "")


def _observations(cluster: FailoverSLURMCluster, kind: str, host: str) -> list[str]:
    """What the workflow's ledger noted of ``kind`` about ``host`` (read under the cluster's lock: its loop writes)."""
    with cluster._db_lock:
        return [o.detail for o in cluster._ledger.observations() if o.kind == kind and o.host == host]


def _story(cluster: FailoverSLURMCluster) -> str:
    """The watch's notes, in order (for a failure's message)."""
    with cluster._db_lock:
        return "\n".join(f"{o.at_s:.1f} {o.kind} {o.host}: {o.detail}" for o in cluster._ledger.observations())


def test_a_frozen_nodes_tasks_run_elsewhere_and_its_job_is_replaced(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream of tasks on 3 nodes; one node frozen (every process SIGSTOPped: its worker's connection stays open).
    Its worker falls silent, its node misses two probes (the control answers): the worker is removed from the
    scheduler, so its tasks run elsewhere, counted against nothing; the node is quarantined with the probes as
    evidence, and the job cancelled and resubmitted onto the free node. Every task completes."""
    cluster = _cluster(tmp_path, monkeypatch, slurm_bed)
    client, frozen = None, ""
    try:
        client, nodes = _started(cluster, JOBS)
        futures = client.map(square, range(TASKS))
        slurm_bed.wait_for(lambda: sum(f.done() for f in futures) >= 20, "the stream to start", 60)
        victim_address = min(nodes)
        frozen, victim_job = nodes[victim_address], str(cluster.scheduler.workers[victim_address].name)
        old_id = str(cluster.workers[victim_job].job_id)
        # A worker frozen before a few heartbeats were read has the startup threshold (5 s), not the floor (3 s).
        slurm_bed.wait_for(lambda: cluster.heartbeats.threshold_s(victim_address) < 5, "the heartbeat cadence", 30)
        frozen_at = time.monotonic()
        slurm_bed.freeze(frozen)
        slurm_bed.wait_for(lambda: victim_address not in cluster.scheduler.workers, "the silent worker removed",
                           FOUND_S)
        removed_s = time.monotonic() - frozen_at
        slurm_bed.wait_for(lambda: str(getattr(cluster.workers.get(victim_job), "job_id", old_id)) != old_id,
                           "the replacement job", FOUND_S)
        new_id = str(cluster.workers[victim_job].job_id)
        client.wait_for_workers(JOBS, timeout=120)
        replaced_s = time.monotonic() - frozen_at
        assert [f.result(timeout=240) for f in futures] == [x * x for x in range(TASKS)]
        print(f"frozen {frozen}: worker removed after {removed_s:.1f} s, replacement connected after "
              f"{replaced_s:.1f} s, SLURM said {_node_state(slurm_bed, frozen)}")
        assert _job_node(slurm_bed, new_id) not in ("", frozen)
        assert frozen not in {str(w.get(HOSTNAME_KEY)) for w in cluster.scheduler_info["workers"].values()}
        (entry,) = cluster.quarantine.entries()
        assert entry.host == Host(frozen) and f"batch job {old_id}" in entry.detail
        assert "while its worker was silent" in entry.detail and "(control): answered" in entry.detail, _story(cluster)
        assert entry.reason in (QuarantineReason.PROBED, QuarantineReason.SCHEDULER)  # SLURM may have spoken too
        assert [e.host for e in read_snapshot(tmp_path / "wf" / "quarantine.json")] == [Host(frozen)]
        # Removed as a node fault: no task counted this death toward its allowed-failures.
        assert not any(x.counted for x in cluster.task_blame.settled), cluster.task_blame.settled
        assert len([d for d in _observations(cluster, "probe", frozen) if "no answer" in d]) >= 2
        rows = {r.job_id: r for r in cluster.record.jobs()}
        assert rows[old_id].hosts == (frozen,) and rows[new_id].excluded == (frozen,)
    finally:
        if frozen:
            slurm_bed.thaw(frozen)
        if client is not None:
            client.close()
        cluster.close()


def test_a_crashed_node_is_judged_before_slurm_marks_it_down(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A node crashed under a stream of tasks: its worker's connection closes, its node misses two probes at once,
    and that is enough: the node is quarantined (reason ``probed``) while SLURM still calls the node up; SLURM's
    DOWN comes later. No spare is kept, and the worker's nanny is gone with its node, so a standby job was submitted
    as the worker left (kept off the node), and it takes the lost job's place. The tasks' deaths are forgiven; every
    task completes."""
    cluster = _cluster(tmp_path, monkeypatch, slurm_bed)
    client = None
    try:
        client, nodes = _started(cluster, JOBS)
        before = dict(cluster.scheduler_info["workers"])
        futures = client.map(square, range(TASKS))
        slurm_bed.wait_for(lambda: sum(f.done() for f in futures) >= 20, "the stream to start", 60)
        victim_address = min(nodes)
        victim, victim_job = nodes[victim_address], str(cluster.scheduler.workers[victim_address].name)
        old_id = str(cluster.workers[victim_job].job_id)
        crashed_at = time.monotonic()
        slurm_bed.crash(victim)
        slurm_bed.wait_for(lambda: Host(victim) in cluster.quarantine.hosts(), "the crashed node quarantined",
                           FOUND_S)
        judged_s, state_then = time.monotonic() - crashed_at, _node_state(slurm_bed, victim)
        slurm_bed.wait_for(lambda: "DOWN" in _node_state(slurm_bed, victim), "SLURM to mark the node DOWN", 60)
        down_s = time.monotonic() - crashed_at
        print(f"crashed {victim}: judged after {judged_s:.1f} s (SLURM then: {state_then}), DOWN after {down_s:.1f} s")
        assert "DOWN" not in state_then and judged_s < down_s
        assert victim_job not in cluster.worker_spec and len(cluster.worker_spec) == JOBS and not cluster.spares
        (standby,) = set(cluster.worker_spec) - {str(w["name"]) for w in before.values()}
        new_id = str(cluster.workers[standby].job_id)
        assert new_id != old_id
        submitted, took = _spare_notes(cluster)
        assert submitted == (f"standby {standby} submitted for {victim_job}: its worker left the scheduler and no "
                             f"spare was ready; kept off {victim}"), _story(cluster)
        assert took.startswith(f"standby {standby} (batch job {new_id}) on ") and f" took the place of {victim_job} (" \
            f"batch job {old_id}): " in took and took.rsplit(": ", 1)[1] in ("ready", "still starting"), took
        assert [f.result(timeout=240) for f in futures] == [x * x for x in range(TASKS)]
        client.wait_for_workers(JOBS, timeout=120)
        assert _job_node(slurm_bed, new_id) not in ("", victim)
        assert _job_field_exclude(slurm_bed, new_id) == victim
        (entry,) = cluster.quarantine.entries()
        assert entry.reason is QuarantineReason.PROBED and "after its worker's connection closed" in entry.detail
        spared = [x for x in cluster.task_blame.settled if x.death.worker_name == victim_job]
        assert spared and not any(x.counted for x in cluster.task_blame.settled), cluster.task_blame.settled
    finally:
        if client is not None:
            client.close()
        cluster.close()


def test_a_busy_worker_that_misses_its_heartbeats_is_not_evicted(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A task holds its worker's GIL for 9 s: the worker misses its heartbeats (a lead), but its node answers both
    probes, so nothing happens: the same worker finishes the task, no node is quarantined, no job replaced."""
    cluster = _cluster(tmp_path, monkeypatch, slurm_bed)
    client = None
    try:
        client, nodes = _started(cluster, 2)
        (address, node), _ = sorted(nodes.items())
        name = cluster.scheduler.workers[address].name
        job_ids = sorted(str(j.job_id) for j in cluster.workers.values())
        # Until a few heartbeats were read, a new worker's threshold is the startup one (5 s), not the floor (3 s).
        slurm_bed.wait_for(lambda: cluster.heartbeats.threshold_s(address) < 5, "the heartbeat cadence", 30)
        held = client.submit(hold_the_gil, HOLD_S, workers=[address], pure=False)
        slurm_bed.wait_for(lambda: _observations(cluster, "silence", node), "a look at the busy worker's node",
                           HOLD_S + 5)
        assert held.result(timeout=60) == "held"
        assert cluster.scheduler.workers[address].name == name  # the same worker, never removed
        assert _observations(cluster, "lead", node)[0].startswith(f"its worker {name} silent for ")
        (found, *_) = _observations(cluster, "silence", node)
        assert found.startswith("not evicted: gave 0 signal(s)"), found
        answered = _observations(cluster, "probe", node)
        assert len(answered) >= 2 and all(d.endswith("answered") for d in answered), answered
        assert cluster.quarantine.entries() == []
        assert sorted(str(j.job_id) for j in cluster.workers.values()) == job_ids
        assert all(_node_state(slurm_bed, n) == "ALLOCATED" for n in nodes.values())
    finally:
        if client is not None:
            client.close()
        cluster.close()
