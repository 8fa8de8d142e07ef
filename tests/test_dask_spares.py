"""Hot spares (``spare_jobs=N``): the pure decisions (which spare takes a lost job's place, how many spares to keep,
the adaptive target without them), the scheduler plugin and the worker preload on a real scheduler and worker
(loopback), and on the real SLURM bed: a crashed node's job replaced by the spare at once, a new spare submitted off
the dead node, and a spare whose own node crashed replaced as a spare."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, Scheduler, Worker
from distributed.core import Status

from conftest import run_cli
from hotspare import Host, Ledger, QuarantineReason, WorkflowRecord
from hotspare_dask import FailoverPBSCluster, FailoverSLURMCluster
from hotspare_dask.preload import HOSTNAME_KEY, SPARE_ENV, SPARE_KEY
from hotspare_dask.settings import PRELOAD
from hotspare_dask.spares import (
    SPARE_KIND,
    Spare,
    SpareChange,
    SparePlugin,
    adapt_target,
    check_spare_jobs,
    choose_spare,
    plan_spares,
    removal_expected,
)

#: The scheduler and its dashboard on loopback: nothing in these tests listens beyond this host.
LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
TASKS = 150
TASK_S = 0.25
#: A bound on the waits, not a goal (benchmarks/dask_recovery.py measures it).
PROMOTED_S = 30.0
#: How long adapt (a tick every 0.2 s) is watched for a change it must not make.
ADAPT_WATCH_S = 3.0

N1, N2, N3 = Host("n1"), Host("n2"), Host("n3")


# -- the pure decisions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spares", "keep_off", "expected"), [
    ([Spare("s0", True, N1), Spare("s1", True, N2)], [], "s0"),  # the oldest ready one
    ([Spare("s0", False, None), Spare("s1", True, N2)], [], "s1"),  # s0 not connected yet
    ([Spare("s0", True, N1), Spare("s1", True, N2)], [N1], "s1"),  # s0's node quarantined or under a look
    ([Spare("s0", True, None)], [], None),  # connected but its node unknown (no preload): not trusted
    ([Spare("s0", False, N1)], [], None),
    ([], [], None),
])
def test_choose_spare(spares: list[Spare], keep_off: list[Host], expected: str | None) -> None:
    """The oldest ready spare on a node not kept off takes the lost job's place; none ready: None (resubmit)."""
    choice = choose_spare("C-3", spares, keep_off)
    assert (choice.spare if choice else None) == expected
    if choice is not None:
        assert choice.replaces == "C-3" and choice.host.name in choice.why


@pytest.mark.parametrize(("spares", "active", "wanted", "budget", "expected"), [
    ([], 2, 1, True, SpareChange(1, ())),  # scale(2) with spare_jobs=1: one spare beside them
    (["s0"], 2, 1, True, SpareChange(0, ())),
    (["s0"], 5, 1, True, SpareChange(0, ())),  # scaling up adds jobs, not spares
    (["s0", "s1"], 3, 1, True, SpareChange(0, ("s1",))),  # the newest retired first
    (["s0"], 0, 1, True, SpareChange(0, ("s0",))),  # scale(0): no spare for nothing
    ([], 0, 2, True, SpareChange(0, ())),
    ([], 2, 2, False, SpareChange(0, ())),  # the replacement budget spent: no spare after spare
    (["s0"], 2, 0, True, SpareChange(0, ("s0",))),
])
def test_plan_spares(spares: list[str], active: int, wanted: int, budget: bool, expected: SpareChange) -> None:
    """spare_jobs stand beside the cluster's own jobs while it has any; scale/adapt's count never includes them."""
    assert plan_spares(spares, active, wanted, budget_left=budget) == expected


@pytest.mark.parametrize(("events", "expected"), [
    ([(1.0, {"action": "add-worker"}), (2.0, {"action": "remove-worker", "expected": True,
                                              "stimulus_id": "retire-workers-2.0"})], True),
    ([(2.0, {"action": "remove-worker", "expected": False, "stimulus_id": "handle-worker-cleanup-2.0"})], False),
    ([(1.0, {"action": "remove-worker", "expected": True}), (3.0, {"action": "add-worker"}),
      (4.0, {"action": "remove-worker", "expected": False})], False),  # the last removal is the one that counts
    ([(1.0, {"action": "add-worker"})], False),
    ([], False),
    ([(1.0, "a free-form event")], False),
])
def test_removal_expected(events: list[tuple[float, Any]], expected: bool) -> None:
    """A retirement (adapt closes the worker before it drops the job) or the watch's own removal is no loss to swap
    a spare in for; a closed connection is."""
    assert removal_expected(events) is expected


@pytest.mark.parametrize(("raw", "workers", "spare_workers", "expected"), [
    (3, 3, 1, 2),  # nothing to close: the scheduler says "all 3", one of them a spare
    (2, 3, 1, 1),  # one active worker closable: 3 - 1 = 2, minus the spare
    (8, 3, 1, 8),  # above its workers: the load's own need
    (1, 1, 1, 0),
    (0, 0, 0, 0),
])
def test_adapt_target(raw: int, workers: int, spare_workers: int, expected: int) -> None:
    """The scheduler's adaptive target counts a spare as a worker to keep; adapt must not."""
    assert adapt_target(raw, workers, spare_workers) == expected


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True, None])
def test_spare_jobs_must_be_a_whole_number(bad: object, tmp_path: Path) -> None:
    """One ValueError naming the fix, before dask starts anything."""
    with pytest.raises(ValueError, match=r"spare_jobs=.*: give a whole number >= 0"):
        check_spare_jobs(bad)
    with pytest.raises(ValueError, match=r"spare_jobs=.*: give a whole number >= 0"):
        FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path, spare_jobs=bad, scheduler_options=LOOPBACK)


def test_a_spares_script_says_so_and_an_active_jobs_does_not(tmp_path: Path) -> None:
    """The spare's worker command carries HOTSPARE_SPARE=1 (the preload reads it); the next ordinary job's does not."""
    cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "wf", spare_jobs=1,
                                   scheduler_options=LOOPBACK)
    try:
        spec = cluster.spare_spec()
        job = spec["cls"]("tcp://127.0.0.1:1", name="C-spare-0", **spec["options"])
        assert f"{SPARE_ENV}=1 HOTSPARE_RUN_DIR=" in job.job_script()
        assert SPARE_ENV not in cluster.job_script()
    finally:
        cluster.close()


def test_postmortem_shows_each_promotion(tmp_path: Path) -> None:
    """``hotspare postmortem`` on a workflow directory lists the promotions the cluster recorded (text and --json)."""
    ledger = Ledger.open(tmp_path)
    try:
        WorkflowRecord(ledger).submitted("101", "C-0", 1000.0, [])
        ledger.observe(0, 1012.5, SPARE_KIND, "n2", "spare C-spare-0 (batch job 102) on n2 took the place of C-0")
    finally:
        ledger.close()
    shown = run_cli("postmortem", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert "spares:\n       12.5s spare C-spare-0 (batch job 102) on n2 took the place of C-0\n" in shown.stdout
    data = json.loads(run_cli("postmortem", "--json", str(tmp_path)).stdout)
    assert [o["detail"] for o in data["spares"]] == ["spare C-spare-0 (batch job 102) on n2 took the place of C-0"]


def test_a_pbs_spare_is_pinned_like_any_job(tmp_path: Path) -> None:
    """FailoverPBSCluster takes spare_jobs too: once a host is quarantined, a spare's script is pinned to a good host
    (select=1:host=H) like the next job's, and says it is a spare."""
    cluster = FailoverPBSCluster(cores=1, memory="1GB", run_dir=tmp_path / "wf", hosts=["n1", "n2"], spare_jobs=1,
                                 scheduler_options=LOOPBACK)
    try:
        cluster.quarantine.add(Host("n1"), QuarantineReason.SCHEDULER, detail="test")
        spec = cluster.spare_spec()
        script = spec["cls"]("tcp://127.0.0.1:1", name="C-spare-0", **spec["options"]).job_script()
        assert "#PBS -l select=1:host=n2:" in script and f"{SPARE_ENV}=1 HOTSPARE_RUN_DIR=" in script
        assert cluster.spare_jobs == 1 and cluster.spares == []  # none until the cluster has jobs of its own
    finally:
        cluster.close()


# -- the plugin and the preload on a real scheduler and worker --------------------------------------------------


def _inc(x: int) -> int:
    return x + 1


def test_a_spare_worker_gets_no_task_until_promoted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker started as a spare (HOTSPARE_SPARE=1, the preload) registers paused on a real scheduler: a stream of
    tasks runs on the other worker only, its memory pause is off; promoted, it is running on the scheduler at once,
    takes tasks, and its memory pause is back."""
    spare_names = {"spare"}
    monkeypatch.setenv(SPARE_ENV, "1")

    async def run() -> None:
        async with Scheduler(host="127.0.0.1", dashboard_address=None) as scheduler:
            plugin = SparePlugin(lambda name: name in spare_names, lambda address: None)
            plugin.attach(scheduler)
            async with Worker(scheduler.address, host="127.0.0.1", name="spare", preload=[PRELOAD[1]],
                              memory_limit="2GB") as spare:
                monkeypatch.delenv(SPARE_ENV)
                async with Worker(scheduler.address, host="127.0.0.1", name="active", nthreads=1), \
                        Client(scheduler.address, asynchronous=True) as client:
                    await _check_paused_then_promoted(scheduler, spare, client, spare_names)

    asyncio.run(asyncio.wait_for(run(), 60))


async def _check_paused_then_promoted(scheduler: Any, spare: Any, client: Any, spare_names: set[str]) -> None:
    ws = scheduler.workers[spare.address]
    assert ws.status is Status.paused and ws not in scheduler.running and ws.extra.get(SPARE_KEY) == "1"
    assert spare.memory_manager.memory_pause_fraction is False
    assert await client.gather(client.map(_inc, range(200))) == list(range(1, 201))
    assert not spare.state.tasks  # not one task reached the spare
    spare_names.clear()
    scheduler.handle_worker_status_change("running", ws, stimulus_id="test-promote")
    assert await client.scheduler.broadcast(msg={"op": "hotspare_promote"}, workers=[spare.address]) == {
        spare.address: "promoted"}
    assert ws in scheduler.running and spare.memory_manager.memory_pause_fraction == pytest.approx(0.8)
    futures = client.map(_inc, range(1000, 1100), workers=[spare.address])
    assert await client.gather(futures) == list(range(1001, 1101))


# -- on the real SLURM bed ----------------------------------------------------------------------------------------


def _make_square() -> Callable[[int], int]:
    # A local function: sent by value (cloudpickle), so the workers need not import the tests.
    def square(x: int) -> int:
        time.sleep(TASK_S)
        return x * x

    return square


square = _make_square()


def _cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bed: Any) -> FailoverSLURMCluster:
    monkeypatch.chdir(tmp_path)  # sbatch's and dask's stray files land here, never in the checkout
    monkeypatch.setenv("SLURM_CONF", bed.env["SLURM_CONF"])
    return FailoverSLURMCluster(cores=1, processes=1, memory="500MB", walltime="00:10:00", spare_jobs=1,
                                job_extra_directives=["--exclusive"], run_dir=tmp_path / "wf",
                                log_directory=tmp_path / "logs", scheduler_options=LOOPBACK)


def _nodes(cluster: FailoverSLURMCluster) -> dict[str, str]:
    """{worker name: node}."""
    return {str(w["name"]): str(w.get(HOSTNAME_KEY)) for w in cluster.scheduler_info["workers"].values()}


def _running(cluster: FailoverSLURMCluster) -> set[str]:
    """The names of the workers the scheduler gives tasks to."""
    return {str(ws.name) for ws in cluster.scheduler.running}


def _started(cluster: FailoverSLURMCluster, bed: Any) -> tuple[Client, dict[str, str]]:
    """2 jobs and 1 spare, one node each, every worker connected: the client and {worker name: node}."""
    cluster.scale(jobs=2)
    client = Client(cluster, timeout=60)
    client.wait_for_workers(2, timeout=120)  # distributed counts running workers only: a spare is paused
    bed.wait_for(lambda: len(_nodes(cluster)) == 3, "the spare's worker", 120)
    nodes = _nodes(cluster)
    assert len(set(nodes.values())) == 3, nodes
    assert len(cluster.spares) == 1 and len(cluster.worker_spec) == 3 and len(cluster.plan) == 2
    assert _running(cluster) == set(nodes) - set(cluster.spares)
    return client, nodes


def _spare_notes(cluster: FailoverSLURMCluster) -> list[str]:
    with cluster._db_lock:
        return [o.detail for o in cluster._ledger.observations() if o.kind == SPARE_KIND]


def test_a_crashed_nodes_job_is_replaced_by_the_spare_at_once(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """2 jobs and a spare under a stream of tasks; the spare's worker got none. One job's node is crashed: as its
    worker leaves, the spare's worker takes its place (running on the scheduler, and given tasks) and the lost job
    becomes the spare; judged a node fault, it is resubmitted as the new spare off the dead node (its worker
    connects paused). The promotion is in the workflow's ledger; every task completes."""
    cluster = _cluster(tmp_path, monkeypatch, slurm_bed)
    client = None
    try:
        client, nodes = _started(cluster, slurm_bed)
        (spare,) = cluster.spares
        futures = client.map(square, range(TASKS))
        slurm_bed.wait_for(lambda: sum(f.done() for f in futures) >= 20, "the stream to start", 60)
        assert not cluster.scheduler.workers[_address(cluster, spare)].processing  # a spare gets no task
        victim_job = min(n for n in nodes if n != spare)
        victim, old_id = nodes[victim_job], str(cluster.workers[victim_job].job_id)
        crashed_at = time.monotonic()
        slurm_bed.crash(victim)
        slurm_bed.wait_for(lambda: spare in _running(cluster), "the spare promoted", PROMOTED_S)
        promoted_s = time.monotonic() - crashed_at
        assert cluster.spares == [victim_job] and len(cluster.plan) == 2
        slurm_bed.wait_for(lambda: _worked(cluster, spare), "a task on the promoted spare", 30)
        assert [f.result(timeout=240) for f in futures] == [x * x for x in range(TASKS)]
        slurm_bed.wait_for(lambda: str(getattr(cluster.workers.get(victim_job), "job_id", old_id)) != old_id,
                           "the new spare job", 60)
        slurm_bed.wait_for(lambda: victim_job in _nodes(cluster), "the new spare's worker", 120)
        print(f"crashed {victim}: spare {spare} running after {promoted_s:.1f} s; new spare on "
              f"{_nodes(cluster)[victim_job]}")
        assert _nodes(cluster)[victim_job] not in (victim, nodes[spare])
        assert victim_job not in _running(cluster) and cluster.spares == [victim_job]
        assert Host(victim) in cluster.quarantine.hosts()
        (note,) = _spare_notes(cluster)
        assert note.startswith(f"spare {spare} (batch job "), note
        assert f"took the place of {victim_job} (batch job {old_id}): its worker left the scheduler" in note
    finally:
        if client is not None:
            client.close()
        cluster.close()


def test_a_spare_whose_node_crashed_is_replaced_by_a_spare(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The spare's own node is crashed: the node is quarantined, the spare job resubmitted as a spare (its worker
    connects paused, on another node); the two jobs' workers stay as they were and nothing is promoted. Then
    scale(jobs=1) keeps the spare beside the one job, and scale(jobs=0) retires it too."""
    cluster = _cluster(tmp_path, monkeypatch, slurm_bed)
    client = None
    try:
        client, nodes = _started(cluster, slurm_bed)
        (spare,) = cluster.spares
        old_id = str(cluster.workers[spare].job_id)
        active = _running(cluster)
        slurm_bed.crash(nodes[spare])
        slurm_bed.wait_for(lambda: Host(nodes[spare]) in cluster.quarantine.hosts(), "the spare's node quarantined",
                           PROMOTED_S)
        slurm_bed.wait_for(lambda: str(getattr(cluster.workers.get(spare), "job_id", old_id)) != old_id,
                           "the spare resubmitted", 60)
        slurm_bed.wait_for(lambda: spare in _nodes(cluster), "the new spare's worker", 120)
        assert cluster.spares == [spare] and _nodes(cluster)[spare] != nodes[spare]
        assert _running(cluster) == active and spare not in _running(cluster)
        assert _spare_notes(cluster) == []
        assert client.submit(square, 7).result(timeout=60) == 49
        # scale() counts the cluster's own jobs: down to 1 keeps the spare; to 0 retires it too.
        cluster.scale(jobs=1)
        slurm_bed.wait_for(lambda: len(cluster.workers) == 2, "one job and the spare", 60)
        assert cluster.spares == [spare] and len(cluster.plan) == 1 and spare in cluster.workers
        cluster.scale(jobs=0)
        slurm_bed.wait_for(lambda: not cluster.workers and not cluster.spares, "no job, no spare", 60)
    finally:
        if client is not None:
            client.close()
        cluster.close()


def test_adapt_counts_the_clusters_own_jobs_and_never_closes_a_spare(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """adapt(minimum_jobs=2, maximum_jobs=2) with spare_jobs=1: 2 jobs and the spare, steady over many adapt ticks
    (the scheduler's target, which counts the spare as a worker to keep, taken without it). Then adapt(minimum_jobs=1)
    with nothing to do: one job is closed, never the spare, and nothing is resubmitted."""
    cluster = _cluster(tmp_path, monkeypatch, slurm_bed)
    client = None
    try:
        cluster.adapt(minimum_jobs=2, maximum_jobs=2, interval="200ms", wait_count=2)
        client = Client(cluster, timeout=60)
        client.wait_for_workers(2, timeout=120)
        slurm_bed.wait_for(lambda: len(_nodes(cluster)) == 3, "the spare's worker", 120)
        (spare,) = cluster.spares
        jobs = {name: str(job.job_id) for name, job in cluster.workers.items()}
        time.sleep(ADAPT_WATCH_S)
        assert {name: str(job.job_id) for name, job in cluster.workers.items()} == jobs
        assert cluster.spares == [spare] and len(cluster.plan) == 2 and len(_running(cluster)) == 2
        cluster.adapt(minimum_jobs=1, maximum_jobs=2, interval="200ms", wait_count=2)
        slurm_bed.wait_for(lambda: len(cluster.workers) == 2, "one job closed", 60)
        time.sleep(ADAPT_WATCH_S)
        assert set(cluster.workers) < set(jobs) and spare in cluster.workers and cluster.spares == [spare]
        assert len(cluster.plan) == 1 and len(_running(cluster)) == 1 and len(_nodes(cluster)) == 2
    finally:
        if client is not None:
            client.close()
        cluster.close()


def _address(cluster: FailoverSLURMCluster, name: str) -> str:
    return next(a for a, ws in cluster.scheduler.workers.items() if ws.name == name)


def _worked(cluster: FailoverSLURMCluster, name: str) -> bool:
    """Whether the worker named ``name`` has run or is running a task (the scheduler's record of it)."""
    ws = next((w for w in cluster.scheduler.workers.values() if w.name == name), None)
    return ws is not None and bool(ws.processing or ws.has_what)
