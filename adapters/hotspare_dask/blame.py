"""Tasks are not blamed for dead nodes: a scheduler plugin that holds each worker death's count back until the
death is judged.

``distributed`` counts every unexpected worker death against each task the worker was running
(``TaskState.suspicious``) and fails a task with ``KilledWorker`` once that count exceeds
``distributed.scheduler.allowed-failures``. A node that dies under an innocent task counts the same as a task
that segfaults its worker, so a long task on a flaky machine is failed for the machine's sake.

:class:`TaskBlame` keeps distributed's rule and changes only *what counts*:

* when a worker is removed unexpectedly, the scheduler has already counted the death and, if that death crossed
  the limit, failed the task (the check is inside ``Scheduler.remove_worker``, before any plugin runs); the
  plugin then takes the death back off each surviving task's count and holds it, pending a verdict;
* the death is **counted** again when the worker's own nanny brings it back under the same name (the process
  died, the node did not), when the cluster judges the lost job anything but the node's or the scheduler's doing,
  or when no verdict arrives within ``verdict_timeout_s`` (as distributed would have counted it);
* the death is **forgiven** (never counted) when the cluster judges it a node fault or the scheduler's end of the
  job (walltime, preemption, cancellation): :meth:`TaskBlame.settle` with ``forgive=True``.

So ``KilledWorker`` is raised for a task that kills workers, after the same number of deaths as without the plugin,
and not for a task whose workers' nodes died. The death being judged is itself checked by distributed against the
counted deaths plus one: with ``allowed-failures`` 0 every death fails its tasks at once, and the plugin cannot
change that.

The plugin reads the scheduler's ``remove-worker`` event (it names the tasks the worker was processing and whether
the removal was expected) and its ``add_worker`` hook (a nanny restart keeps the nanny's address); it never
touches a task's count outside those two moments. Every settled death is reported to ``on_settled`` (the cluster
writes it to the workflow's ledger).
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.scheduler import KilledWorker

log = logging.getLogger(__name__)

#: The name the plugin is registered under on the scheduler.
PLUGIN_NAME = "hotspare-task-blame"

#: Task states in which a held-back death no longer matters: the task finished, failed or was released by its
#: client.
_DONE = frozenset({"memory", "erred", "forgotten"})
#: Task states a death counted late can fail at once (the task waits for a worker; no worker runs it).
_WAITING_FOR_A_WORKER = frozenset({"queued", "no-worker"})


@dataclass(frozen=True, slots=True)
class Death:
    """One unexpected worker removal whose count toward its tasks' ``allowed-failures`` is held back."""

    address: str
    #: The worker's name (a job's name, or ``job-N`` with several processes per job).
    worker_name: str
    #: The worker's nanny (None without one): a nanny restart re-registers the name under the same nanny.
    nanny: str | None
    #: The tasks it was processing whose count was held back (tasks it failed at once are not here).
    keys: tuple[Any, ...]
    #: ``time.monotonic()`` when it was held.
    at_s: float
    #: The scheduler's snapshot of the worker (``WorkerState.clean()``), for a late ``KilledWorker``.
    last_worker: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Settled:
    """How a held death ended: counted toward its tasks' ``allowed-failures`` or forgiven, and why."""

    death: Death
    counted: bool
    why: str
    #: The tasks failed with ``KilledWorker`` when the death was counted late.
    failed: tuple[Any, ...] = ()

    def describe(self) -> str:
        """One line for the ledger."""
        verb = "counted toward" if self.counted else "not counted toward"
        keys = ", ".join(str(k) for k in self.death.keys) or "no task"
        failed = f"; failed with KilledWorker: {', '.join(map(str, self.failed))}" if self.failed else ""
        return (f"worker {self.death.worker_name} ({self.death.address}) died under {keys}: {verb} allowed-failures "
                f"({self.why}){failed}")


class TaskBlame(SchedulerPlugin):
    """Hold each unexpected worker death back from its tasks' ``allowed-failures`` until it is judged."""

    name = PLUGIN_NAME

    def __init__(self, *, verdict_timeout_s: float, on_settled: Callable[[Settled], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if verdict_timeout_s <= 0:
            raise ValueError(f"verdict_timeout_s={verdict_timeout_s!r}: give a positive number of seconds")
        self.verdict_timeout_s = verdict_timeout_s
        self._on_settled = on_settled
        self._clock = clock
        self.scheduler: Any = None
        #: Live workers: address -> the scheduler's WorkerState (kept until the remove event has been read).
        self._workers: dict[str, Any] = {}
        #: Held deaths by worker name, oldest first.
        self._held: dict[str, list[Death]] = {}
        #: Every settled death, in order (a bounded run's worth: one entry per worker death).
        self.settled: list[Settled] = []

    # -- the scheduler's hooks ---------------------------------------------------------------------------
    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self._workers.update(scheduler.workers)

    def add_worker(self, scheduler: Any, worker: str) -> None:
        ws = scheduler.workers.get(worker)
        if ws is None:
            return
        self._workers[worker] = ws
        name = str(ws.name)
        held = self._held.get(name)
        if not held or ws.nanny is None:
            return
        # The same nanny brought the name back: the worker process died and the node lives.
        restarted = [d for d in held if d.nanny == ws.nanny]
        for death in restarted:
            held.remove(death)
            self._count(death, "its nanny restarted the worker on the same node: the process died, not the node")
        if not held:
            del self._held[name]

    def remove_worker(self, scheduler: Any, worker: str, *, stimulus_id: str, **kwargs: Any) -> None:
        self._workers.pop(worker, None)  # the remove event (published before this hook) has been read

    def log_event(self, topic: str, msg: Any) -> None:
        if topic != "all" or not isinstance(msg, dict) or msg.get("action") != "remove-worker":
            return
        if msg.get("expected"):
            return  # retirement and lifetime ends never count
        address = str(msg.get("worker", ""))
        ws = self._workers.get(address)
        if ws is None or self.scheduler is None:
            return
        held = tuple(k for k in msg.get("processing-tasks", ()) if self._hold(k))
        death = Death(address, str(ws.name), ws.nanny, held, self._clock(), ws.clean())
        self._held.setdefault(death.worker_name, []).append(death)
        asyncio.get_running_loop().call_later(self.verdict_timeout_s, self._expire, death)

    # -- the verdicts ------------------------------------------------------------------------------------
    def settle(self, worker_names: Iterable[str], *, forgive: bool, why: str) -> list[Settled]:
        """The verdict on the held deaths of these workers (a lost job's): forgiven (never counted) or counted."""
        done: list[Settled] = []
        for name in worker_names:
            for death in self._held.pop(name, []):
                done.append(self._forgive(death, why) if forgive else self._count(death, why))
        return done

    def held(self) -> list[Death]:
        """The deaths still waiting for a verdict."""
        return [d for deaths in self._held.values() for d in deaths]

    def _expire(self, death: Death) -> None:
        held = self._held.get(death.worker_name, [])
        if death not in held:
            return
        held.remove(death)
        if not held:
            del self._held[death.worker_name]
        self._count(death, f"no verdict within {self.verdict_timeout_s:g} s")

    # -- a task's count ------------------------------------------------------------------------------------
    def _hold(self, key: Any) -> bool:
        ts = self.scheduler.tasks.get(key)
        if ts is None or ts.state in _DONE or ts.suspicious <= 0:
            return False
        ts.suspicious -= 1
        ts.prefix.suspicious -= 1
        return True

    def _forgive(self, death: Death, why: str) -> Settled:
        return self._report(Settled(death, counted=False, why=why))

    def _count(self, death: Death, why: str) -> Settled:
        failed: list[Any] = []
        for key in death.keys:
            ts = self.scheduler.tasks.get(key)
            if ts is None or ts.state in _DONE:
                continue  # finished or failed meanwhile: the count no longer matters
            ts.suspicious += 1
            ts.prefix.suspicious += 1
            if ts.suspicious > self.scheduler.allowed_failures and ts.state in _WAITING_FOR_A_WORKER:
                self._fail(key, death)
                failed.append(key)
            # A task already running elsewhere keeps the count: its next worker death fails it, as without us.
        return self._report(Settled(death, counted=True, why=why, failed=tuple(failed)))

    def _fail(self, key: Any, death: Death) -> None:
        """Fail a waiting task whose late-counted deaths exceed the limit, as the scheduler would have."""
        error = KilledWorker(task=key, last_worker=death.last_worker, allowed_failures=self.scheduler.allowed_failures)
        stimulus = f"hotspare-task-blame-{time.time()}"
        recommendations = self.scheduler.transition(key, "erred", exception=pickle.dumps(error), cause=key,
                                                    stimulus_id=stimulus)
        self.scheduler.transitions(recommendations, stimulus_id=stimulus)
        log.error("hotspare: task %s failed: %d workers died while running it (counted late)", key,
                  self.scheduler.tasks[key].suspicious)

    def _report(self, settled: Settled) -> Settled:
        self.settled.append(settled)
        if self._on_settled is not None:
            try:
                self._on_settled(settled)
            except Exception:  # the scheduler must go on whatever the recorder does
                log.exception("hotspare: recording a settled worker death failed")
        return settled
