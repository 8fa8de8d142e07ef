"""Hot spares (``spare_jobs=N``): jobs kept running beside the cluster's own, their workers connected but given no
tasks, one of which takes a lost job's place at once.

**How a spare gets no tasks.** The scheduler gives new tasks only to workers whose status is ``running`` (its
``running`` set; queued root tasks go to ``idle`` ones, and work stealing picks thieves among them too). When a
spare's worker registers, :class:`SparePlugin` (a scheduler plugin; dask-jobqueue's scheduler runs in the cluster's
process) marks it ``paused`` before the scheduler hands out anything: ``Scheduler.add_worker`` calls its plugins
before it schedules tasks for the newcomer. The worker itself stays ``running`` and idle. Its job's worker command
carries ``HOTSPARE_SPARE=1``, from which the preload (:mod:`hotspare_dask.preload`) turns the worker's memory
pause off: a worker that paused for memory and resumed would tell the scheduler ``running``, and the spare would
take tasks unasked.

**Promotion, at once.** When a worker of one of the cluster's jobs leaves the scheduler (its connection closed:
its tasks are already back in the queue) and a spare is ready (every worker connected, on another node, not
quarantined nor under a look), the two swap roles before anything is judged: the spare becomes an ordinary job
(the scheduler is told its workers are ``running``, so tasks flow at once, in this process, and each worker is
asked to restore its memory pause: ``hotspare_promote``, the preload's handler), and the lost job becomes a spare.
Its judging then goes on as before: a node fault quarantines the node and resubmits the job, now as a spare,
placed off it (the "new spare"); a worker that comes back (its nanny restarted it: no node fault) registers as a
spare and is paused. A node found dead by silence (its connections stay open) is judged first; its jobs are then
replaced by a ready spare in the act step (the lost job leaves ``worker_spec``, a new spare is planned). A spare
whose own node dies is judged and replaced like any job, as a spare.

**A standby when no spare is ready** (``spare_jobs=0``, or every spare still starting): the job that will take a
lost job's place is submitted the moment its worker leaves the scheduler (a *standby*: a spare kept off the lost
worker's node), not once the node has been judged. A crashed node's two probes take ~3 s and a new job's start about
as long again: judged first, the replacement ran ~7 s after the crash; with the standby, about the start alone.
When the lost job is judged, the standby takes its place (at once if its workers are connected, else as they
connect); a judgement that replaces nothing (the job is not resubmitted) cancels it, and so does the lost worker
coming back. A standby counts against ``max_submits`` only when it takes a place; none is submitted once that
budget is spent.

**Counting.** ``scale(n)`` and ``adapt()`` count only the cluster's own jobs: :meth:`SparePool.scale` sets the spares
aside while dask-jobqueue edits ``worker_spec``; ``plan``/``requested`` leave them out; :class:`SparePlugin` keeps the
scheduler from choosing a spare to close on scale-down, and :class:`SpareAdaptive` takes the spares back out of the
scheduler's target, which otherwise counts them as workers to keep.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from distributed.comm.core import CommClosedError
from distributed.core import rpc
from distributed.deploy.adaptive import Adaptive
from distributed.diagnostics.plugin import SchedulerPlugin

from hotspare import Host, Ledger, Quarantine
from hotspare_dask.loss import LostWorker, identity_host, within_budget
from hotspare_dask.preload import HOSTNAME_KEY, PROMOTE_OP, SPARE_ENV, SPARE_KEY

log = logging.getLogger(__name__)

#: The workflow ledger's observation kind for a promotion (``hotspare postmortem`` lists these under "spares").
SPARE_KIND = "spare"
#: The longest a worker's promotion message may take (seconds); the scheduler side is changed at once regardless.
PROMOTE_CALL_S = 10.0


#: How long a lost worker's nanny may take to answer before its node is taken for gone (seconds): a nanny restarting
#: its worker answers at once; a crashed node's address answers nothing, or its dying nanny never replies.
NANNY_CALL_S = 1.0


async def nanny_answers(address: str | None, timeout_s: float, connection_args: dict[str, Any]) -> bool:
    """Whether the nanny at ``address`` answers an ``identity`` call within ``timeout_s`` (a reply, not a connection
    alone: the kernel still accepts a connection on the listening socket of a nanny being killed with its node);
    False for no address (a worker started without a nanny)."""
    if not address:
        return False
    try:
        async with rpc(address, timeout=timeout_s, connection_args=connection_args) as nanny:  # type: ignore[no-untyped-call]
            await asyncio.wait_for(nanny.identity(), timeout_s)
    except (OSError, TimeoutError, CommClosedError, ValueError):
        return False
    return True


def check_spare_jobs(spare_jobs: object) -> int:
    """``spare_jobs`` checked: a whole number >= 0 (ValueError naming the fix)."""
    if isinstance(spare_jobs, bool) or not isinstance(spare_jobs, int) or spare_jobs < 0:
        raise ValueError(f"spare_jobs={spare_jobs!r}: give a whole number >= 0 (jobs kept running idle, each ready "
                         "to take a lost job's place; 0: none)")
    return spare_jobs


@dataclass(frozen=True, slots=True)
class Spare:
    """One spare job as the cluster sees it now."""

    name: str
    #: Submitted and every one of its workers connected to the scheduler.
    ready: bool
    #: Its node, as its workers' preload reported it (None until they connected).
    host: Host | None


@dataclass(frozen=True, slots=True)
class Promotion:
    """A spare chosen to take a lost job's place, and why that one."""

    spare: str
    host: Host
    replaces: str
    why: str


def choose_spare(lost_job: str, spares: Sequence[Spare], keep_off: Iterable[Host]) -> Promotion | None:
    """The spare that takes ``lost_job``'s place (pure): the oldest ready one whose node is known and not in
    ``keep_off`` (quarantined, or under a look); None when none is ready (the lost job is then resubmitted)."""
    out = set(keep_off)
    for spare in spares:
        if spare.ready and spare.host is not None and spare.host not in out:
            return Promotion(spare.name, spare.host, lost_job, f"ready on {spare.host.name}")
    return None


@dataclass(frozen=True, slots=True)
class SpareChange:
    """How many spares to add, and which to retire, to reach the number wanted."""

    add: int
    retire: tuple[str, ...]


def plan_spares(spares: Sequence[str], active_jobs: int, spare_jobs: int, *, budget_left: bool) -> SpareChange:
    """The spares to add or retire (pure). ``spare_jobs`` are kept while the cluster has jobs of its own, none
    when it has none (a spare for nothing would hold a node idle); the newest go first. None is added once the
    replacement budget (``max_submits`` per ``window_s``) is spent: a node that kills every job would otherwise
    take spare after spare."""
    want = spare_jobs if active_jobs > 0 else 0
    if len(spares) > want:
        return SpareChange(0, tuple(spares[want:]))
    return SpareChange(want - len(spares) if budget_left else 0, ())


def removal_expected(events: Iterable[tuple[float, Any]]) -> bool:
    """Whether the scheduler's last removal of a worker, in its events on the worker's address, was expected (pure):
    a retirement (``adapt`` closes a worker before it drops the job from ``worker_spec``), a graceful exit, or the
    watch's own removal of a dead node's workers (acted on by its act step). Unknown: not expected."""
    removals = [msg for _, msg in events if isinstance(msg, dict) and msg.get("action") == "remove-worker"]
    return bool(removals and removals[-1].get("expected"))


def adapt_target(raw: int, workers: int, spare_workers: int) -> int:
    """The scheduler's adaptive target without the spares (pure). At or below its worker count the scheduler
    answers "keep every worker it cannot close", spares included (they are never closeable); above it, the answer is
    the load's need alone."""
    return max(0, raw - spare_workers) if raw <= workers else raw


class SparePlugin(SchedulerPlugin):
    """On the scheduler: a spare's worker is paused as it registers and stays so whatever it says, and is never
    chosen to close on scale-down; a promoted job's worker that registers again (a nanny restart, its job's
    environment still saying spare) gets its memory pause back."""

    name = "hotspare-spares"

    def __init__(self, is_spare: Callable[[str], bool], promote: Callable[[str], None]) -> None:
        self.is_spare, self.promote = is_spare, promote

    def attach(self, scheduler: Any) -> None:
        """Add this plugin to ``scheduler`` (in this process) and hold its spares paused.

        A worker tells the scheduler ``running`` just after it registers (``Worker._register_with_scheduler`` sets
        its own status, and the setter always reports it), which would undo the pause of :meth:`add_worker` at
        once; so the scheduler's handler of that message ignores ``running`` from a spare. Promotion changes the
        scheduler's side directly (:meth:`SparePool._wake`), not through this message."""
        scheduler.add_plugin(self, name=self.name)
        original = scheduler.stream_handlers["worker-status-change"]

        def status_change(status: Any, worker: Any, stimulus_id: str, **kwargs: Any) -> None:
            ws = scheduler.workers.get(worker) if isinstance(worker, str) else worker
            if ws is not None and self.is_spare(str(ws.name)) and str(getattr(status, "name", status)) == "running":
                return  # a spare stays paused until promoted
            original(status=status, worker=worker, stimulus_id=stimulus_id, **kwargs)

        scheduler.stream_handlers["worker-status-change"] = status_change

    def add_worker(self, scheduler: Any, worker: str) -> None:
        ws = scheduler.workers.get(worker)
        if ws is None:
            return
        if self.is_spare(str(ws.name)):
            # Before add_worker hands out tasks: a spare must never get one until promoted.
            scheduler.handle_worker_status_change("paused", ws, stimulus_id=f"hotspare-spare-{time.time()}")
        elif (ws.extra or {}).get(SPARE_KEY):
            self.promote(worker)

    def valid_workers_downscaling(self, scheduler: Any, workers: list[Any]) -> list[Any]:
        return [ws for ws in workers if not self.is_spare(str(ws.name))]


class SpareAdaptive(Adaptive):
    """distributed's ``Adaptive``, counting without the cluster's spares: its target (:func:`adapt_target`), and the
    workers it asks the scheduler to pick for closing (the scheduler picks ``len(its workers) - target``, spares
    counted, from the workers it may close, spares not: asked as it was, it would close one job too many)."""

    async def target(self) -> int:
        raw = int(await super().target())  # type: ignore[no-untyped-call]
        cluster: Any = self.cluster
        return adapt_target(raw, len(cluster.scheduler_info.get("workers", {})), cluster.spare_worker_count())

    async def workers_to_close(self, target: int) -> list[str]:
        cluster: Any = self.cluster
        return list(await super().workers_to_close(target + cluster.spare_worker_count()))


class SparePool:
    """Mixed into the failover clusters (before dask-jobqueue's class): the spares kept, counted apart, promoted."""

    # The cluster's own (set by _Failover or SpecCluster); declared so this mixin is checked.
    scheduler: Any
    scheduler_comm: Any
    security: Any
    scheduler_info: dict[str, Any]
    worker_spec: dict[str, dict[str, Any]]
    workers: dict[str, Any]
    quarantine: Quarantine
    max_submits: int
    window_s: float
    _name: str
    _ledger: Ledger
    _db_lock: threading.Lock
    _hosts_seen: dict[str, Host]
    _looking: set[Host]
    _replacements: Any
    _futures: set[Any]
    _closing: bool
    _correct_state: Callable[[], Any]

    def _init_spares(self, spare_jobs: object) -> None:
        """The pool's state (the constructor's part: nothing runs yet)."""
        self.spare_jobs = check_spare_jobs(spare_jobs)
        #: The spare jobs' names (in ``worker_spec`` like any job), oldest first.
        self.spares: list[str] = []
        self._spare_count = 0
        #: Standbys (spares submitted for one lost job, see the module): name -> (that job, the node it is kept off).
        self._standby: dict[str, tuple[str, Host | None]] = {}

    # -- the cluster's, used here --------------------------------------------------------------------------
    def fresh_spec(self, avoid: Host | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def _within_budget(self) -> bool:
        """Whether one more replacement fits ``max_submits`` per ``window_s`` (a new spare counts as one)."""
        return within_budget(self._replacements, time.monotonic(), self.max_submits, self.window_s)

    # -- counting: scale() and adapt() see only the cluster's own jobs --------------------------------------
    def scale(self, *args: Any, **kwargs: Any) -> Any:
        """dask-jobqueue's ``scale`` (``n``, ``jobs``, ``memory``, ``cores``), counting the cluster's own jobs only.

        The spares are set aside while it edits ``worker_spec`` and put back afterwards; the state correction it
        schedules runs later, on the loop, and finds them back."""
        aside = {name: self.worker_spec.pop(name) for name in self.spares if name in self.worker_spec}
        try:
            return super().scale(*args, **kwargs)  # type: ignore[misc]
        finally:
            self.worker_spec.update(aside)

    def adapt(self, *args: Any, **kwargs: Any) -> Any:
        """dask-jobqueue's ``adapt``, its target taken without the spares (:class:`SpareAdaptive`)."""
        kwargs.setdefault("Adaptive", SpareAdaptive)
        return super().adapt(*args, **kwargs)  # type: ignore[misc]

    @property
    def plan(self) -> set[str]:
        """SpecCluster's ``plan`` (worker names planned), spares left out: what ``adapt`` compares its target to."""
        return set(super().plan) - self._spare_worker_names()  # type: ignore[misc]

    @property
    def requested(self) -> set[str]:
        """SpecCluster's ``requested``, spares left out."""
        return set(super().requested) - self._spare_worker_names()  # type: ignore[misc]

    def _spare_worker_names(self) -> set[str]:
        return {w for name in self.spares for w in self._worker_names(name)}

    def spare_worker_count(self) -> int:
        """How many of the scheduler's workers are spares' now."""
        names = self._spare_worker_names()
        return sum(1 for w in self.scheduler_info.get("workers", {}).values() if str(w.get("name")) in names)

    def _worker_names(self, job: str) -> list[str]:
        raise NotImplementedError

    # -- keeping spare_jobs of them -----------------------------------------------------------------------
    def spare_spec(self, name: str | None = None) -> dict[str, Any]:
        """A spec for one spare: the next job's, its worker command prefixed by ``HOTSPARE_SPARE=1``; a standby's
        (``name``) kept off the node of the worker it stands in for as well (SLURM may still think that node up)."""
        spec = self.fresh_spec(self._standby[name][1] if name in self._standby else None)
        options = spec["options"]
        spec["options"] = {**options, "python": f"{SPARE_ENV}=1 {options['python']}"}
        return spec

    def _keep_spares(self) -> None:
        """Add or retire spares so that ``spare_jobs`` stand beside the cluster's own jobs (at a state correction:
        dask-jobqueue then submits the added ones and cancels the retired)."""
        self.spares = [n for n in self.spares if n in self.worker_spec]  # a spare dropped by its act step
        for name, (job, _) in list(self._standby.items()):
            if name not in self.spares:
                self._drop_standby(name, "")
            elif job not in self.worker_spec:
                self._drop_standby(name, f"{job} is no longer planned")
            elif self._loss_healed(job):
                self._drop_standby(name, f"{job} is back")
        active = len(self.worker_spec) - len(self.spares)
        regular = [n for n in self.spares if n not in self._standby]  # standbys come and go with their losses
        change = plan_spares(regular, active, self.spare_jobs, budget_left=self._within_budget())
        for name in change.retire:
            self.spares.remove(name)
            self.worker_spec.pop(name, None)
        for _ in range(change.add):
            name = f"{self._name}-spare-{self._spare_count}"
            self._spare_count += 1
            self.spares.append(name)
            self.worker_spec[name] = self.spare_spec()

    # -- promotion ----------------------------------------------------------------------------------------
    def _spare_views(self) -> list[Spare]:
        connected = {str(w.get("name")): w for w in self.scheduler_info.get("workers", {}).values()}
        views = []
        for name in self.spares:
            names = self._worker_names(name)
            identities = [connected[w] for w in names if w in connected]
            host = identity_host(identities[0], HOSTNAME_KEY) if identities else None
            job_id = getattr(self.workers.get(name), "job_id", None)
            views.append(Spare(name, job_id is not None and len(identities) == len(names), host))
        return views

    def _ready_spare(self, job: str, host: Host | None) -> Promotion | None:
        if not self.spares:
            return None
        with self._db_lock:
            keep_off = set(self.quarantine.hosts()) | set(self._looking) | ({host} if host is not None else set())
        return choose_spare(job, self._spare_views(), keep_off)

    def _swap_for_lost(self, lost: LostWorker) -> None:
        """A worker of ``lost.job`` left the scheduler unexpectedly: a ready spare becomes an ordinary job now and
        the lost job a spare (judged as before; replaced, if its node died, as a spare). Nothing when the job is
        retired, a spare itself, the removal was expected (see :func:`removal_expected`), or no spare is ready. On
        the cluster's loop."""
        job = lost.job
        if job is None or job not in self.worker_spec or job in self.spares or self._closing:
            return
        if removal_expected(self.scheduler.get_events(lost.address)):
            return
        choice = self._ready_spare(job, lost.host)
        if choice is None:
            self._spawn_standby_check(job, lost)
            return
        self._standby.pop(choice.spare, None)  # a standby for another loss serves this one: that one is judged alone
        self.spares[self.spares.index(choice.spare)] = job
        self._set_status(job, "paused")  # its other workers (--nworkers), if any are left, take no new task
        self._wake(choice.spare)
        self._record_promotion(choice, getattr(self.workers.get(job), "job_id", None), "its worker left the scheduler")

    def _promote_for(self, job: str, job_id: str, host: Host | None) -> bool:
        """A ready spare takes ``job``'s place (``job`` leaves ``worker_spec``; a new spare is planned); False when
        none is ready. Called by the act step, on the cluster's loop, after the lost job (batch job ``job_id``, on
        ``host``) was cancelled."""
        standby = next((name for name, (for_job, _) in self._standby.items() if for_job == job), None)
        if standby is not None:
            return self._take_standby(standby, job, job_id)
        choice = self._ready_spare(job, host)
        if choice is None:
            return False
        self._standby.pop(choice.spare, None)
        self.spares.remove(choice.spare)
        self.worker_spec.pop(job, None)
        self._wake(choice.spare)
        self._record_promotion(choice, job_id, "its node judged dead")
        self._keep_spares()
        return True

    # -- standbys -------------------------------------------------------------------------------------------
    def _spawn_standby_check(self, job: str, lost: LostWorker) -> None:
        """A standby for ``job`` unless its worker's nanny still answers (it is restarting the worker: a task
        that killed its worker costs no job); in a task of its own, on the cluster's loop."""
        if self._closing or job in (for_job for for_job, _ in self._standby.values()) or not self._within_budget():
            return

        connection_args = self.security.get_connection_args("client")

        async def check() -> None:
            if not await nanny_answers(lost.nanny, NANNY_CALL_S, connection_args):
                self._start_standby(job, lost.host, lost.job_id)

        task = asyncio.ensure_future(check())
        self._futures.add(task)
        task.add_done_callback(self._futures.discard)

    def _start_standby(self, job: str, host: Host | None, job_id: str | None) -> None:
        """Submit a standby for ``job`` (batch job ``job_id``: its worker, on ``host``, just left the scheduler, no
        spare is ready and its nanny is gone): see the module. None while one stands for it already, once the
        replacement budget is spent, or once the job was judged (it left ``worker_spec``, or was replaced already: a
        dead node's look can conclude before the nanny's call times out)."""
        current = getattr(self.workers.get(job), "job_id", None)
        if (self._closing or job not in self.worker_spec or job in self.spares or current is None
                or str(current) != str(job_id) or job in (for_job for for_job, _ in self._standby.values())
                or not self._within_budget()):
            return
        name = f"{self._name}-spare-{self._spare_count}"
        self._spare_count += 1
        self._standby[name] = (job, host)
        self.spares.append(name)
        self.worker_spec[name] = self.spare_spec(name)
        detail = (f"standby {name} submitted for {job}: its worker left the scheduler and no spare was ready"
                  + (f"; kept off {host.name}" if host is not None else ""))
        with self._db_lock:
            self._ledger.observe(0, time.time(), SPARE_KIND, host.name if host is not None else "", detail)
        log.warning("hotspare: %s", detail)
        self._correct_state()

    def _take_standby(self, standby: str, job: str, job_id: str) -> bool:
        """The standby takes ``job``'s place (``job`` leaves ``worker_spec``): its workers connected so far are woken
        now, all of them or some (a job of two worker processes half started: the one already in was paused as a
        spare and would stay so); the rest register as the job they now are (:class:`SparePlugin` restores their
        memory pause)."""
        ready = next((v for v in self._spare_views() if v.name == standby), None)
        del self._standby[standby]
        self.spares.remove(standby)
        self.worker_spec.pop(job, None)
        self._wake(standby)
        spare_id = getattr(self.workers.get(standby), "job_id", None)
        where = ready.host.name if ready is not None and ready.host is not None else "its node once it starts"
        detail = (f"standby {standby} (batch job {spare_id}) on {where} took the place of {job} (batch job "
                  f"{job_id}): " + ("ready" if ready is not None and ready.ready else "still starting"))
        with self._db_lock:
            self._ledger.observe(0, time.time(), SPARE_KIND, ready.host.name if ready and ready.host else "", detail)
        log.warning("hotspare: %s", detail)
        self._keep_spares()
        return True

    def _drop_standby(self, name: str, why: str) -> None:
        """Cancel a standby no longer needed (``why`` said on the log, when given)."""
        job, _ = self._standby.pop(name)
        if name in self.spares:
            self.spares.remove(name)
            self.worker_spec.pop(name, None)  # dask-jobqueue cancels it at the next state correction
        if why:
            log.warning("hotspare: standby %s for %s cancelled: %s", name, job, why)

    def _drop_standby_for(self, job: str, why: str) -> None:
        """Cancel the standby of ``job``, if any: the judgement replaces nothing."""
        for name, (for_job, _) in list(self._standby.items()):
            if for_job == job:
                self._drop_standby(name, why)
                self._correct_state()

    def _loss_healed(self, job: str) -> bool:
        """Whether every worker of ``job`` is connected again (a nanny restarted it): its standby is not needed."""
        names = self._worker_names(job)
        connected = {str(w.get("name")) for w in self.scheduler_info.get("workers", {}).values()}
        return bool(names) and all(n in connected for n in names)

    def _wake(self, spare: str) -> None:
        """The spare's workers ``running`` on the scheduler now (tasks go to them at once), and each worker asked
        to restore its memory pause (a worker started as a spare: one that became a spare after starting as a job
        never turned it off)."""
        for address in self._set_status(spare, "running"):
            if (self.scheduler.workers[address].extra or {}).get(SPARE_KEY):
                self._promote_worker(address)

    def _set_status(self, job: str, status: str) -> list[str]:
        """The scheduler's status of ``job``'s workers set (in this process); their addresses."""
        names = set(self._worker_names(job))
        stimulus = f"hotspare-spare-{status}-{time.time()}"
        found = [(a, ws) for a, ws in list(self.scheduler.workers.items()) if str(ws.name) in names]
        for _, ws in found:
            self.scheduler.handle_worker_status_change(status, ws, stimulus_id=stimulus)
        return [a for a, _ in found]

    def _promote_worker(self, address: str) -> None:
        """Ask one worker to restore its memory pause (in a task of its own; a failure is logged)."""

        async def call() -> None:
            try:
                await asyncio.wait_for(self.scheduler_comm.broadcast(msg={"op": PROMOTE_OP}, workers=[address]),
                                       PROMOTE_CALL_S)
            except Exception as exc:  # the worker may be gone; it gets no tasks through this path anyway
                log.warning("hotspare: could not restore the memory pause of promoted worker %s: %r", address, exc)

        task = asyncio.ensure_future(call())
        self._futures.add(task)
        task.add_done_callback(self._futures.discard)

    def _record_promotion(self, choice: Promotion, lost_id: str | None, when: str) -> None:
        spare_id = getattr(self.workers.get(choice.spare), "job_id", None)
        detail = (f"spare {choice.spare} (batch job {spare_id}) on {choice.host.name} took the place of "
                  f"{choice.replaces} (batch job {lost_id}): {when}")
        with self._db_lock:
            self._ledger.observe(0, time.time(), SPARE_KIND, choice.host.name, detail)
        log.warning("hotspare: %s", detail)

    def _spares_plugin(self) -> SparePlugin:
        spare_names = self._spare_worker_names
        return SparePlugin(lambda name: name in spare_names(), self._promote_worker)

