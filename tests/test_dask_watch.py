"""The failover cluster's node watch against a real distributed scheduler and real ``dask worker`` processes, the
batch system faked (no bed here: submission, ``srun`` probes and ``scontrol`` answered from tables): a worker whose
process group is stopped falls silent, is found from the heartbeats read through the scheduler comm, its node misses
both probes while the control answers, and it is removed at once, its task run on the other worker with no
``allowed-failures`` count; its job is cancelled and resubmitted with ``--exclude``, its node quarantined. A worker
whose node answers is left alone."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from distributed import Client

from hotspare import Host, QuarantineReason, SchedulerQuery
from hotspare.act.runner import Completed
from hotspare_dask import FailoverSLURMCluster, FailoverSLURMJob
from hotspare_dask.watch import _say_failed_probes

LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
BOUND_S = 60.0


class NoSubmitJob(FailoverSLURMJob):
    """Submits nothing (the test starts the workers): job ids from a counter; scripts and cancels kept."""

    ids = iter(range(8000, 9000))
    scripts: list[str] = []  # noqa: RUF012 -- shared by design: every job of the test's cluster writes here
    cancelled: list[str] = []  # noqa: RUF012

    async def _submit_job(self, script_filename: str) -> str:
        self.scripts.append(Path(script_filename).read_text())
        return f"Submitted batch job {next(self.ids)}"

    @classmethod
    async def _close_job(cls, job_id: str, cancel_command: str) -> None:
        cls.cancelled.append(job_id)


def slurm_where(dead: set[str]) -> Callable[[Sequence[str], float], Completed]:
    """srun probes that time out on the ``dead`` nodes and answer elsewhere; every job RUNNING; every node
    ALLOCATED (the scheduler has not noticed: SlurmdTimeout is minutes at real sites)."""

    def run(argv: Sequence[str], timeout_s: float) -> Completed:
        if argv[0] == "srun":
            host = argv[1].split("=", 1)[1]
            return Completed(tuple(argv), None if host in dead else 0, "", "", host in dead)
        if list(argv[:3]) == ["scontrol", "show", "job"]:
            return Completed(tuple(argv), 0, f"JobId={argv[-1]} JobState=RUNNING ExitCode=0:0\n", "", False)
        nodes = argv[-1].split(",")
        return Completed(tuple(argv), 0, "".join(f"NodeName={n} State=ALLOCATED\n" for n in nodes), "", False)

    return run


class Node:
    """A ``dask worker`` (nanny and worker) in a process group of its own, as a job on ``host`` would run it."""

    def __init__(self, address: str, name: str, host: str, job_id: str, tmp: Path) -> None:
        env = {**os.environ, "SLURMD_NODENAME": host, "SLURM_JOB_ID": job_id}
        self.log = (tmp / f"{name}.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--name", name, "--nthreads", "1",
             "--host", "127.0.0.1", "--no-dashboard", "--nanny", "--death-timeout", "60",
             "--preload", "hotspare_dask.preload"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp, env=env)

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def end(self) -> None:
        self.signal(signal.SIGKILL)  # a stopped process dies of SIGKILL too
        self.proc.wait(timeout=30)
        self.log.close()


def until(check: Callable[[], Any], what: str, timeout_s: float = BOUND_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out after {timeout_s:g} s waiting for {what}"
        time.sleep(0.05)
    return value


def _make_task() -> Callable[[float], str]:
    def nap(seconds: float) -> str:  # sent by value: the workers need not import the tests
        time.sleep(seconds)
        return "done"

    return nap


nap = _make_task()


@pytest.fixture
def world(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[FailoverSLURMCluster, Client,
                                                                             dict[str, Node]]]:
    """A failover cluster with two jobs (faked) and their two workers, on n3 and n2; everything ended after."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    query = SchedulerQuery("slurm", None, run=slurm_where(request.param))
    cluster = FailoverSLURMCluster(cores=1, processes=1, memory="1GB", run_dir=tmp_path / "wf", job_cls=NoSubmitJob,
                                   query=query, scheduler_options=LOOPBACK)
    nodes: dict[str, Node] = {}
    client = None
    try:
        cluster.scale(jobs=2)
        until(lambda: len(cluster.workers) == 2 and all(j.job_id for j in cluster.workers.values()), "two jobs")
        # No reference to a Job is kept: SpecCluster's close() asserts that every Job still alive is closed, and
        # dask-jobqueue's Job.close() cancels the batch job without marking itself closed.
        jobs = sorted((name, str(job.job_id)) for name, job in cluster.workers.items())
        for (name, job_id), host in zip(jobs, ("n3", "n2"), strict=True):
            nodes[host] = Node(cluster.scheduler.address, name, host, job_id, tmp_path)
        client = Client(cluster, timeout=BOUND_S)
        client.wait_for_workers(2, timeout=BOUND_S)
        # Until a few heartbeats were read, a new worker's threshold is the startup one (5 s), not the floor (3 s).
        until(lambda: all(cluster.heartbeats.threshold_s(a) < 5 for a in cluster.scheduler.workers), "cadence")
        yield cluster, client, nodes
    finally:
        for node in nodes.values():
            node.end()
        if client is not None:
            client.close()
        cluster.close()


def _kinds(cluster: FailoverSLURMCluster) -> set[str]:
    """The kinds of observation in the workflow's ledger (read under the cluster's lock: its loop writes)."""
    with cluster._db_lock:
        return {o.kind for o in cluster._ledger.observations()}


def _address(cluster: FailoverSLURMCluster, host: str) -> str:
    return next(a for a, ws in cluster.scheduler.workers.items() if ws.extra.get("hotspare_hostname") == host)


@pytest.mark.parametrize("world", [{"n3"}], indirect=True)
def test_a_silent_worker_whose_node_misses_both_probes_is_removed_and_its_job_replaced(
        world: tuple[FailoverSLURMCluster, Client, dict[str, Node]]) -> None:
    cluster, client, nodes = world
    (name, job_id), _ = sorted((n, str(j.job_id)) for n, j in cluster.workers.items())
    silent = _address(cluster, "n3")
    future = client.submit(nap, 3.0, workers=[silent], allow_other_workers=True, pure=False)
    until(lambda: future.key in {ts.key for ts in cluster.scheduler.workers[silent].processing}, "the task on n3")
    stopped = time.monotonic()
    nodes["n3"].signal(signal.SIGSTOP)
    until(lambda: silent not in cluster.scheduler.workers, "the silent worker removed", 30)
    removed_s = time.monotonic() - stopped
    assert future.result(timeout=BOUND_S) == "done"
    assert 3.0 < removed_s < 15.0, removed_s  # past the 3 s floor; then two probes 1 s apart
    assert cluster.scheduler.tasks[future.key].suspicious == 0  # removed as expected: no allowed-failures count
    until(lambda: len(NoSubmitJob.scripts) == 3, "the replacement")
    assert NoSubmitJob.cancelled == [job_id]
    assert "#SBATCH --exclude=n3\n" in NoSubmitJob.scripts[2] and f"--name {name} " in NoSubmitJob.scripts[2]
    (entry,) = cluster.quarantine.entries()
    assert (entry.host, entry.reason) == (Host("n3"), QuarantineReason.PROBED)
    assert "failed two probes while its worker was silent" in entry.detail
    assert "n2 (control): answered" in entry.detail and f"batch job {job_id}" in entry.detail


@pytest.mark.parametrize("world", [set()], indirect=True)
def test_a_silent_worker_whose_node_answers_is_left_alone(
        world: tuple[FailoverSLURMCluster, Client, dict[str, Node]]) -> None:
    """The same silence, but the node answers both probes (a worker stuck in a task holding its GIL, say)."""
    cluster, _, nodes = world
    silent = _address(cluster, "n3")
    nodes["n3"].signal(signal.SIGSTOP)
    until(lambda: "silence" in _kinds(cluster), "a look at n3", 30)
    nodes["n3"].signal(signal.SIGCONT)
    until(lambda: cluster.heartbeats.silent(time.monotonic()) == [], "n3 heard again", 30)
    assert silent in cluster.scheduler.workers
    assert cluster.quarantine.entries() == [] and NoSubmitJob.cancelled == [] and len(NoSubmitJob.scripts) == 2


def test_probes_a_look_left_running_say_their_failure(caplog: pytest.LogCaptureFixture) -> None:
    """A look that concluded on the scheduler's word leaves its probes to finish alone: if they fail, the log says
    so (a real Future, as the look's executor returns it)."""
    failed: Future[Any] = Future()
    with caplog.at_level(logging.WARNING, logger="hotspare_dask"):
        failed.add_done_callback(_say_failed_probes(Host("n3")))
        failed.set_exception(OSError("qsub: cannot connect to server"))
        fine: Future[Any] = Future()
        fine.add_done_callback(_say_failed_probes(Host("n4")))
        fine.set_result(None)
    (record,) = caplog.records
    assert "probes of n3" in record.getMessage() and "cannot connect to server" in record.getMessage()
