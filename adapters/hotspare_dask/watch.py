"""The failover clusters' watch over their nodes: read heartbeats and node states, look at each lead's node, and act
on a dead one (the decisions are :mod:`hotspare_dask.silence`'s, pure).

Everything the scheduler is asked or told goes through the cluster's scheduler comm (``identity`` for each worker's
``last_seen``, ``unregister`` to remove a worker), so the watch works the same whether the scheduler runs in this
process (dask-jobqueue's default) or elsewhere. Probes and scheduler commands are subprocesses: they run in threads,
never on the event loop, each bounded by its timeout.

A dead node's workers are removed from the scheduler at once, as an *expected* removal: their tasks go back to
the queue without the death counting toward ``allowed-failures`` (a node fault is not the tasks' doing). Then each
of the cluster's jobs on the node is judged a node loss (:func:`hotspare.judge_host_lost`) with the look's evidence
and handed to the cluster's act step: the node quarantined, the job cancelled and resubmitted elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tornado.ioloop import PeriodicCallback

from hotspare import (
    Host,
    Ledger,
    LookProbes,
    NodeFinding,
    Quarantine,
    SchedulerKind,
    SchedulerQuery,
    judge_host_lost,
    look_answers,
    probe_look,
    unhealthy,
)
from hotspare_dask.loss import LostWorker, Replacement, decide_replacement, identity_host, within_budget
from hotspare_dask.preload import HOSTNAME_KEY
from hotspare_dask.silence import (
    Heartbeats,
    Lead,
    NodeEvidence,
    jobs_on,
    judge_node,
    pick_control,
)

log = logging.getLogger(__name__)


def _say_failed_probes(host: Host) -> Callable[[Future[LookProbes]], None]:
    """For the probes a look concluded without: their failure is said on the log (nobody waits for them)."""
    def said(done: Future[LookProbes]) -> None:
        problem = done.exception()
        if problem is not None:
            log.warning("hotspare: the probes of %s, left running once the scheduler called it down, failed: %r",
                        host.name, problem)
    return said


#: Seconds between reads of the workers' heartbeats from the scheduler.
WATCH_POLL_S = 0.5
#: The longest a read of the heartbeats, or a worker's removal, may take (seconds): the scheduler is busy.
SCHEDULER_CALL_S = 10.0
#: Seconds between questions to the batch scheduler about the nodes of the cluster's jobs.
NODE_POLL_S = 5.0
#: Seconds between questions to the batch scheduler about a node whose worker's connection closed, while its look's
#: probes run.
CLOSED_ASK_S = 0.5
#: The moment a verdict names for each kind of lead.
WHEN_SILENT = "while its worker was silent"
WHEN_CLOSED = "after its worker's connection closed"
WHEN_REPORTED = "while the scheduler reported it unhealthy"


class SilenceWatch:
    """Mixed into the failover clusters (before dask-jobqueue's class): the node watch and what it does."""

    # The cluster's own (set by _Failover or SpecCluster); declared so this mixin is checked.
    scheduler_comm: Any
    scheduler_info: dict[str, Any]
    scheduler_kind: SchedulerKind
    worker_spec: dict[str, dict[str, Any]]
    workers: dict[str, Any]
    periodic_callbacks: dict[str, Any]
    quarantine: Quarantine
    run_dir: Path
    probe_timeout_s: float
    max_submits: int
    window_s: float
    _query: SchedulerQuery
    _ledger: Ledger
    _db_lock: threading.Lock
    _handled: set[str]
    _hosts_seen: dict[str, Host]
    _replacements: Any
    _closing: bool
    _clock: Callable[[], float]
    _sleep: Callable[[float], None]
    _futures: set[Any]

    def _init_watch(self, silence_s: float | None, silence_floor_s: float) -> None:
        """The watch's state (the constructor's part: nothing runs yet)."""
        self.heartbeats = Heartbeats(floor_s=silence_floor_s, fixed_s=silence_s)
        #: Nodes being looked at now; signals found by earlier looks during the current silence; when to look again.
        self._looking: set[Host] = set()
        self._signals: dict[Host, list[str]] = {}
        self._next_look: dict[Host, float] = {}
        #: The nodes of the cluster's jobs the scheduler last reported on, and when to ask again.
        self._node_states: dict[Host, str] = {}
        self._nodes_due_s = 0.0
        self._silent_hosts: set[Host] = set()

    def _start_watch(self) -> None:
        """Start reading heartbeats (on the cluster's event loop, once the scheduler comm is up)."""
        watch = PeriodicCallback(self._watch_tick, WATCH_POLL_S * 1000)
        self.periodic_callbacks["hotspare-watch"] = watch
        watch.start()

    # -- the cluster's, used here --------------------------------------------------------------------------
    def _job_of(self, worker_name: str) -> str | None:
        raise NotImplementedError

    def _job_id(self, job: str | None, identity: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def _act(self, step: Replacement) -> None:
        raise NotImplementedError

    # -- read --------------------------------------------------------------------------------------------
    async def _watch_tick(self) -> None:
        """One look at the heartbeats (a poll only reads; each lead's look runs as a task of its own)."""
        if self._closing or not self.scheduler_comm:
            return
        try:
            # Every worker: identity's default (distributed 2026's n_workers=-1; older ones have no limit at all).
            identity = await asyncio.wait_for(self.scheduler_comm.identity(), SCHEDULER_CALL_S)
        except (OSError, TimeoutError):
            return  # the scheduler did not answer in time: nothing learnt this time
        workers: dict[str, Any] = dict(identity.get("workers", {}))
        now = self._clock()
        self.heartbeats.read({a: float(w.get("last_seen", 0.0)) for a, w in workers.items()}, now, WATCH_POLL_S)
        self._ask_nodes(now)
        for lead in self._leads(workers, now):
            self._spawn(self._look(lead))

    def _placed(self, identity: Mapping[str, Any]) -> tuple[str, str, Host] | None:
        """A registered worker's job (still planned), batch job id and node; None when one of them is unknown."""
        job = self._job_of(str(identity.get("name", "")))
        if job is None or job not in self.worker_spec:
            return None
        job_id = self._job_id(job, dict(identity))
        host = identity_host(identity, HOSTNAME_KEY)
        return (job, job_id, host) if job_id is not None and host is not None else None

    def _live_jobs(self) -> dict[str, str]:
        """``{job name: batch job id}`` of the cluster's submitted jobs."""
        return {name: str(job.job_id) for name, job in self.workers.items() if getattr(job, "job_id", None)}

    def _leads(self, workers: Mapping[str, Any], now: float) -> list[Lead]:
        """The nodes to look at now: a silent worker's, or one the scheduler calls unhealthy (one lead per node)."""
        found: dict[Host, tuple[str, str, str]] = {}
        for silence in self.heartbeats.silent(now):
            placed = self._placed(workers.get(silence.address, {}))
            if placed is not None:
                name = workers[silence.address].get("name")
                found.setdefault(placed[2], (placed[1], f"its worker {name} silent for {silence.silent_s:.1f} s "
                                             f"(threshold {silence.threshold_s:.1f} s)", WHEN_SILENT))
        self._silent_hosts = set(found)
        live = self._live_jobs()
        for job_id, host in self._hosts_seen.items():
            state = self._node_states.get(host, "")
            if job_id in live.values() and unhealthy(state) and host not in found:
                found[host] = (job_id, f"the scheduler reports it {state}", WHEN_REPORTED)
        for host in [h for h in self._signals if h not in found and h not in self._looking]:
            del self._signals[host]  # heard from again: the next silence starts afresh
            self._next_look.pop(host, None)
        return [Lead(host, job_id, why, when) for host, (job_id, why, when) in sorted(found.items())
                if host not in self._looking and self._next_look.get(host, 0.0) <= now and job_id not in self._handled]

    def _ask_nodes(self, now: float) -> None:
        """Every :data:`NODE_POLL_S`, ask the batch scheduler about the nodes of the live jobs (in a thread)."""
        if now < self._nodes_due_s:
            return
        live = set(self._live_jobs().values())
        hosts = sorted({h for job_id, h in self._hosts_seen.items() if job_id in live})
        if not hosts:
            return
        self._nodes_due_s = now + NODE_POLL_S

        async def ask() -> None:
            self._node_states = await asyncio.to_thread(self._query.node_states, hosts)

        self._spawn(ask())

    def _look_at_lost(self, lost: LostWorker) -> None:
        """A worker's connection closed: look at its node at once, so a crashed node is judged without waiting for
        the scheduler to mark it down; a node that answers leaves the loss to be judged as before, after the
        lost-worker timeout (the worker died on its own, or its nanny is restarting it)."""
        if (self._closing or lost.host is None or lost.job_id is None or lost.job not in self.worker_spec
                or lost.job_id in self._handled or lost.host in self._looking):
            return
        why = f"its worker {lost.worker_name}'s connection to the scheduler closed"
        self._spawn(self._look(Lead(lost.host, lost.job_id, why, WHEN_CLOSED, closed=True)))

    # -- look --------------------------------------------------------------------------------------------
    async def _look(self, lead: Lead) -> None:
        """Probe the lead's node twice and ask the scheduler (in threads); judge; act on a dead node."""
        self._looking.add(lead.host)
        try:
            with self._db_lock:  # when the lead came, for the record (the look's answers follow it)
                self._ledger.observe(0, time.time(), "lead", lead.host.name, lead.why)
            evidence = await asyncio.to_thread(self._gather, lead, self._control(lead.host))
            finding = judge_node(evidence, self._signals.get(lead.host, ()))
            self._record_look(evidence, finding)
            if finding.dead and not self._closing:
                await self._evict(finding, evidence)
            else:
                self._signals[lead.host] = list(finding.signals)
                self._next_look[lead.host] = self._clock() + finding.relook_s
        except Exception:  # a look must never take the cluster's loop down with it
            log.exception("hotspare: looking at %s failed", lead.host.name)
        finally:
            self._looking.discard(lead.host)

    def _control(self, suspect: Host) -> tuple[Host, str] | None:
        with self._db_lock:
            bad = set(self.quarantine.hosts())
        return pick_control(suspect, self._hosts_seen, self._live_jobs(),
                            avoid=bad | self._silent_hosts | self._looking)

    def _gather(self, lead: Lead, control: tuple[Host, str] | None) -> NodeEvidence:
        """Two quick probes of the lead's node beside the control (:func:`hotspare.probe_look`: on SLURM a step
        inside its job, on PBS a job pinned to it) and the scheduler's word on the node, at once (for a closed
        connection, asked again while the probes run, and enough without them once it calls the node down); then the
        job's state (a probe of a job that ended proves nothing). Runs in a thread."""
        jobs = {lead.host: lead.job_id, **({control[0]: control[1]} if control is not None else {})}
        workdir = self.run_dir / "probes" / lead.host.name
        ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hotspare-look")
        try:
            looked = ex.submit(probe_look, jobs, self.scheduler_kind, workdir, timeout_s=self.probe_timeout_s,
                               run=self._query.run, sleep=self._sleep)
            state = self._query.node_states([lead.host]).get(lead.host, "")
            # A closed connection and the scheduler calling the node down are two signals: the look need not wait
            # for its probes (PBS's pinned ones cannot be placed on a down node and take their whole deadline).
            # Asked again while the probes run: PBS marks a crashed MOM down about a second after the crash.
            for _ in range(int(self.probe_timeout_s / CLOSED_ASK_S) + 1 if lead.closed else 0):
                if unhealthy(state) or looked.done() or self._closing:
                    break
                time.sleep(CLOSED_ASK_S)  # real time: the scheduler is what changes
                state = self._query.node_states([lead.host]).get(lead.host, "") or state
            if lead.closed and unhealthy(state) and not looked.done():
                probes = LookProbes(())  # left to finish in their thread: each cleans up after itself
                looked.add_done_callback(_say_failed_probes(lead.host))
            else:
                probes = looked.result()
                if not unhealthy(state):  # the state the probes' time may have changed
                    state = self._query.node_states([lead.host]).get(lead.host, "") or state
        finally:
            ex.shutdown(wait=False)
        facts = self._query.job_facts(lead.job_id)
        return NodeEvidence(lead, probes.rounds, control[0] if control else None, state, facts, probes.uncounted)

    def _record_look(self, evidence: NodeEvidence, finding: NodeFinding) -> None:
        """Each answer in the workflow's ledger as it came, and the finding; said on the log when it evicts."""
        now = time.time()
        with self._db_lock:
            for host, words in look_answers(LookProbes(evidence.rounds, evidence.uncounted), evidence.control,
                                            evidence.lead.why):
                self._ledger.observe(0, now, "probe", host.name, words)
            if unhealthy(evidence.node_state):
                self._ledger.observe(0, now, "scheduler", finding.host.name, f"reported {evidence.node_state} "
                                     f"{evidence.lead.when}")
            self._ledger.observe(0, now, "silence", finding.host.name,
                                 f"{'node fault' if finding.dead else 'not evicted'}: {finding.why}")
        if not finding.dead:
            log.info("hotspare: %s not evicted: %s", finding.host.name, finding.why)

    # -- act ---------------------------------------------------------------------------------------------
    async def _evict(self, finding: NodeFinding, evidence: NodeEvidence) -> None:
        """A dead node: its workers off the scheduler at once (tasks requeued, not counted against them), then each
        of the cluster's jobs on it judged a node loss and handed to the act step (quarantine, cancel, resubmit)."""
        jobs = jobs_on(finding.host, self._hosts_seen, self._live_jobs(), self._handled)
        if not jobs:
            return
        self._handled.update(jobs.values())
        await self._unregister([a for a, w in self.scheduler_info.get("workers", {}).items()
                                if self._job_of(str(w.get("name", ""))) in jobs])
        state = evidence.job.state if evidence.job is not None else "worker lost"
        for name, job_id in sorted(jobs.items()):
            judgement = judge_host_lost(job_id, (finding.host,), finding.why, state=state, reason=finding.reason)
            budget = within_budget(self._replacements, time.monotonic(), self.max_submits, self.window_s)
            self._act(decide_replacement(name, judgement, budget_left=budget))

    async def _unregister(self, addresses: list[str]) -> None:
        """Remove these workers from the scheduler as an expected removal (no ``allowed-failures`` count)."""
        stimulus = f"hotspare-node-fault-{time.time()}"
        for address in addresses:
            try:
                await asyncio.wait_for(self.scheduler_comm.unregister(address=address, stimulus_id=stimulus,
                                                                      expected=True), SCHEDULER_CALL_S)
            except (OSError, TimeoutError) as exc:
                log.warning("hotspare: could not remove worker %s from the scheduler: %r", address, exc)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` on the loop; the cluster's close awaits it (bounded: every step in it has a timeout)."""
        task = asyncio.ensure_future(coro)
        self._futures.add(task)
        task.add_done_callback(self._futures.discard)
