"""Tasks are not blamed for dead nodes: hotspare_dask.blame.TaskBlame on a real distributed scheduler with real
``dask worker`` processes (each under its nanny, in a process group of its own).

A "node death" here is the whole group killed at once (nanny and worker: the name never comes back, as when a node
crashes); a process death is a task segfaulting its worker (the nanny restarts it under the same name). The cluster's
verdict is given by calling ``settle`` as the failover cluster does after judging a lost job; the bed tests
(tests/test_dask_slurm.py) do the same through real crashed nodes and the cluster's own judging.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, KilledWorker, Scheduler

from hotspare import FailureClass, Host, JobJudgement, QuarantineReason, Verdict
from hotspare_dask.blame import PLUGIN_NAME, Death, Settled, TaskBlame
from hotspare_dask.loss import spares_tasks

BOUND_S = 60.0


def _make_blocker() -> Callable[[str], str]:
    # Sent by value (cloudpickle): the workers cannot import the tests.
    def wait_for_release(flag: str) -> str:
        for _ in range(1200):  # at most 60 s
            if os.path.exists(flag):
                return "released"
            time.sleep(0.05)
        return "timed out"

    return wait_for_release


def _make_crash() -> Callable[[], None]:
    def crash() -> None:
        os.kill(os.getpid(), signal.SIGSEGV)

    return crash


wait_for_release = _make_blocker()
crash = _make_crash()


class Node:
    """One ``dask worker`` (nanny + worker process) in its own process group: a node to kill whole."""

    def __init__(self, address: str, name: str, tmp: Path) -> None:
        self.name = name
        log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115 -- closed in kill()
        self._log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--name", name, "--nthreads", "1",
             "--host", "127.0.0.1", "--no-dashboard", "--nanny", "--death-timeout", "30"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp)

    def kill(self) -> None:
        """The node dies: nanny and worker at once."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._log.close()


async def _until(predicate: Callable[[], bool], what: str, timeout_s: float = BOUND_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        await asyncio.sleep(0.05)


@asynccontextmanager
async def _world(tmp: Path, *, allowed_failures: int, plugin: TaskBlame | None,
                 names: tuple[str, ...]) -> AsyncIterator[tuple[Scheduler, Client, dict[str, Node]]]:
    """A scheduler on loopback (the plugin on it when given), one node per name, and a client; all ended after."""
    nodes: dict[str, Node] = {}
    async with Scheduler(host="127.0.0.1", port=0, dashboard_address="127.0.0.1:0",
                         allowed_failures=allowed_failures) as scheduler:
        if plugin is not None:
            scheduler.add_plugin(plugin, name=PLUGIN_NAME)
            await plugin.start(scheduler)
        try:
            for name in names:
                nodes[name] = Node(scheduler.address, name, tmp)
            async with Client(scheduler.address, asynchronous=True) as client:
                await client.wait_for_workers(len(names), timeout=BOUND_S)
                yield scheduler, client, nodes
        finally:
            for node in nodes.values():
                node.kill()


def _running_on(scheduler: Scheduler, key: Any) -> str | None:
    ts = scheduler.tasks.get(key)
    if ts is None or ts.processing_on is None:
        return None
    return str(ts.processing_on.name)


async def _kill_node_running(scheduler: Scheduler, nodes: dict[str, Node], key: Any, dead: list[str]) -> str:
    """Wait until the task runs on a live node, kill that node whole, and wait until the scheduler removed it."""
    await _until(lambda: _running_on(scheduler, key) not in (None, *dead), "the task running on a live node")
    name = str(_running_on(scheduler, key))
    before = len(scheduler.workers)
    nodes[name].kill()
    await _until(lambda: len(scheduler.workers) < before, f"the scheduler to remove {name}")
    dead.append(name)
    return name


def _run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, timeout=3 * BOUND_S))  # type: ignore[arg-type]


@pytest.mark.parametrize("with_plugin", [True, False])
def test_a_task_whose_nodes_die_twice_is_not_killed_when_the_deaths_are_judged_node_faults(
        tmp_path: Path, with_plugin: bool) -> None:
    """allowed-failures 1: a task whose node dies under it twice. Without the plugin distributed fails it with
    KilledWorker (the control: the test can fail); with it, both deaths judged node faults are forgiven and the
    task completes on the third node, its count back to 0."""
    flag = tmp_path / "release"

    async def main() -> None:
        plugin = TaskBlame(verdict_timeout_s=BOUND_S) if with_plugin else None
        async with _world(tmp_path, allowed_failures=1, plugin=plugin, names=("n1", "n2", "n3")) as (s, c, nodes):
            future = c.submit(wait_for_release, str(flag), pure=False)
            dead: list[str] = []
            first = await _kill_node_running(s, nodes, future.key, dead)
            if plugin is not None:
                assert [d.worker_name for d in plugin.held()] == [first]
                assert s.tasks[future.key].suspicious == 0  # held back, pending the verdict
            await _kill_node_running(s, nodes, future.key, dead)
            if plugin is None:
                with pytest.raises(KilledWorker):
                    await future
                return
            settled = plugin.settle(dead, forgive=True, why="judged a node fault")
            assert [(x.death.worker_name, x.counted) for x in settled] == [(dead[0], False), (dead[1], False)]
            assert all(x.death.keys == (future.key,) for x in settled)
            (last,) = set(nodes) - set(dead)
            await _until(lambda: _running_on(s, future.key) == last, "the task on the last node")
            flag.touch()
            assert await future == "released"
            assert plugin.held() == []

    _run(main())


def test_deaths_judged_no_node_fault_count_and_the_task_gets_killed_worker(tmp_path: Path) -> None:
    """The same two deaths, the first judged no node fault (counted): the second crosses allowed-failures 1 and
    the scheduler fails the task with KilledWorker, exactly as without the plugin."""
    flag = tmp_path / "release"

    async def main() -> None:
        plugin = TaskBlame(verdict_timeout_s=BOUND_S)
        async with _world(tmp_path, allowed_failures=1, plugin=plugin, names=("n1", "n2", "n3")) as (s, c, nodes):
            future = c.submit(wait_for_release, str(flag), pure=False)
            dead: list[str] = []
            await _kill_node_running(s, nodes, future.key, dead)
            (counted,) = plugin.settle(dead, forgive=False, why="judged a user error")
            assert counted.counted and s.tasks[future.key].suspicious == 1
            await _kill_node_running(s, nodes, future.key, dead)
            with pytest.raises(KilledWorker):
                await future

    _run(main())


def test_a_task_that_segfaults_its_worker_still_gets_killed_worker(tmp_path: Path) -> None:
    """A task that kills its own worker process: the nanny brings the name back, the plugin counts each death at
    once (no verdict needed), and the task gets KilledWorker after allowed-failures + 1 deaths, as without us."""

    async def main() -> None:
        recorded: list[Settled] = []
        plugin = TaskBlame(verdict_timeout_s=BOUND_S, on_settled=recorded.append)
        async with _world(tmp_path, allowed_failures=1, plugin=plugin, names=("n1",)) as (_, c, _nodes):
            # The nanny finishes its own start just after its worker registers; a worker killed before that ends
            # the nanny too (distributed: "nanny-start-failed"), which is not the restart this test is about.
            await asyncio.sleep(2)
            with pytest.raises(KilledWorker):
                await c.submit(crash, pure=False)
            await c.wait_for_workers(1, timeout=BOUND_S)  # the second restart re-registers after the failure
            await _until(lambda: len(recorded) >= 1, "the restarted worker's death counted")
            assert all(x.counted and "nanny restarted" in x.why for x in recorded)
            assert plugin.held() == []
            assert await c.submit(sum, [1, 2]) == 3  # the worker still serves other tasks

    _run(main())


def test_a_death_with_no_verdict_counts_and_fails_a_waiting_task_late(tmp_path: Path) -> None:
    """Both nodes die under a task (allowed-failures 1) and no verdict comes: when the verdict timeout passes,
    the held deaths count, the task (waiting for a worker) is failed with KilledWorker by the plugin."""
    flag = tmp_path / "release"

    async def main() -> None:
        recorded: list[Settled] = []
        plugin = TaskBlame(verdict_timeout_s=2.0, on_settled=recorded.append)
        async with _world(tmp_path, allowed_failures=1, plugin=plugin, names=("n1", "n2")) as (s, c, nodes):
            future = c.submit(wait_for_release, str(flag), pure=False)
            dead: list[str] = []
            await _kill_node_running(s, nodes, future.key, dead)
            await _kill_node_running(s, nodes, future.key, dead)
            with pytest.raises(KilledWorker):
                await asyncio.wait_for(future, timeout=BOUND_S)
            assert [x.counted for x in recorded] == [True, True]
            assert recorded[-1].failed == (future.key,)
            assert "no verdict within 2 s" in recorded[-1].describe()

    _run(main())


def test_an_expected_removal_is_never_held(tmp_path: Path) -> None:
    """Retirement (scale down) is expected: nothing is held or counted."""

    async def main() -> None:
        plugin = TaskBlame(verdict_timeout_s=BOUND_S)
        async with _world(tmp_path, allowed_failures=1, plugin=plugin, names=("n1", "n2")) as (s, _c, _):
            await s.retire_workers(names=["n1"], close_workers=True, stimulus_id="test-retire")
            await _until(lambda: len(s.workers) == 1, "n1 retired")
            assert plugin.held() == [] and plugin.settled == []

    _run(main())


def test_settling_unknown_names_does_nothing_and_the_timeout_is_checked() -> None:
    plugin = TaskBlame(verdict_timeout_s=1.0)
    assert plugin.settle(["nobody"], forgive=True, why="x") == []
    with pytest.raises(ValueError, match="verdict_timeout_s"):
        TaskBlame(verdict_timeout_s=0)


def test_settled_deaths_describe_themselves() -> None:
    death = Death("tcp://127.0.0.1:1", "job-0", None, ("square-1",), 0.0)
    assert Settled(death, counted=False, why="node n2 down").describe() == (
        "worker job-0 (tcp://127.0.0.1:1) died under square-1: not counted toward allowed-failures (node n2 down)")


@pytest.mark.parametrize(("failure", "node_lost", "spared"), [
    ("node_loss", True, True), ("walltime", False, True), ("preempted", False, True), ("cancelled", False, True),
    ("user_error", False, False), ("oom", False, False), ("unknown", False, False)])
def test_which_job_ends_spare_their_tasks(failure: str, node_lost: bool, spared: bool) -> None:
    cls = FailureClass.parse(failure)
    verdict = Verdict(cls, (), (), (), cls.retryable, (), "because", ())
    keep_out = ((Host("n1"), QuarantineReason.SCHEDULER),) if node_lost else ()
    assert spares_tasks(JobJudgement("7", verdict, keep_out, (), "X")) is spared
    assert spares_tasks(JobJudgement("7", verdict, keep_out, (), "X", hook_failed=True)) is False
