"""The watch over a FailoverHTEX's blocks: read each manager's heartbeat age and the blocks' node states, look at
each lead's node, and act on a dead one (the decisions are :mod:`hotspare_parsl.silence`'s, pure).

A thread of the workflow process, started by :class:`hotspare_parsl.FailoverHTEX`. Every :data:`WATCH_POLL_S` it
asks the interchange for its managers (``HOTSPARE_MANAGERS``) and, every :data:`NODE_POLL_S`, the batch scheduler
for the blocks' nodes. A lead's node is probed twice inside the block's job (``srun --jobid --overlap``, beside a
control node of another block) while the scheduler is asked, in a thread of its own. A node with two signals:

1. its block's managers are expired at the interchange (``HOTSPARE_EXPIRE``): the interchange's own expiry fails
   each of their tasks with ``ManagerLost`` at once, which the retry handler counts as a free node failure, and
   Parsl runs them again in the other blocks;
2. the provider cancels the block's job, quarantines the node with the look's evidence, and records why
   (:meth:`hotspare_parsl.FailoverProvider.lose_block`);
3. a replacement block is asked for at once (``scale_out_facade``, what Parsl's strategy calls), and the executor's
   next status poll brought forward to the poller's next tick, so the strategy sees the lost block FAILED.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from hotspare import Host, NodeFinding, SchedulerKind, probe_look
from hotspare_parsl.interchange import EXPIRE, MANAGERS
from hotspare_parsl.silence import Lead, NodeEvidence, find_leads, judge_node, parse_managers, pick_control

if TYPE_CHECKING:
    from hotspare_parsl.provider import FailoverProvider

log = logging.getLogger(__name__)

#: Seconds between reads of the managers' heartbeat ages from the interchange.
WATCH_POLL_S = 0.5
#: Seconds between questions to the batch scheduler about the blocks' nodes.
NODE_POLL_S = 2.0
#: The longest a command to the interchange may take (seconds).
COMMAND_S = 10.0
#: Looks at most at once (each is two probes and a scheduler question).
LOOKS = 4


class BlockWatch:
    """Watches ``executor``'s blocks (see the module); :meth:`start` and :meth:`stop` bound its thread."""

    def __init__(self, executor: Any, provider: FailoverProvider, threshold_s: float) -> None:
        self.executor = executor
        self.provider = provider
        self.threshold_s = threshold_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._looking: set[Host] = set()
        self._signals: dict[Host, list[str]] = {}
        self._next_look: dict[Host, float] = {}
        self._handled: set[str] = set()
        self._states: dict[Host, str] = {}
        self._states_due_s = 0.0

    def start(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=LOOKS, thread_name_prefix="hotspare-look")
        self._thread = threading.Thread(target=self._run, name="hotspare-block-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop reading and wait for the looks under way (each bounded by its probes' and commands' timeouts)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=COMMAND_S + 5)
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _run(self) -> None:
        while not self._stop.wait(WATCH_POLL_S):
            try:
                self._tick()
            except Exception:  # the watch must outlive one bad read; it says so
                log.exception("hotspare: the block watch's read failed")

    # -- read --------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        beats = parse_managers(self.executor.command_client.run(MANAGERS, timeout_s=COMMAND_S))
        blocks = {b: str(j) for b, j in dict(self.executor.blocks_to_job_id).items()
                  if str(j) not in self._handled and self.provider.live(j)}
        hosts = self.provider.lead_hosts([*blocks.values()])
        now = time.monotonic()
        if now >= self._states_due_s and hosts:
            self._states_due_s = now + NODE_POLL_S
            self._states = self.provider.node_states(sorted(set(hosts.values())))
        leads = find_leads(beats, self.threshold_s, blocks, hosts, self._states)
        with self._lock:
            for host in [h for h in self._signals if h not in {lead.host for lead in leads}]:
                if host not in self._looking:  # heard from again: the next silence starts afresh
                    self._signals.pop(host, None)
                    self._next_look.pop(host, None)
            due = [lead for lead in leads if lead.host not in self._looking
                   and self._next_look.get(lead.host, 0.0) <= now and lead.job_id not in self._handled]
            self._looking.update(lead.host for lead in due)
        for lead in due:
            assert self._pool is not None
            self._pool.submit(self._look, lead, hosts, blocks, {lead.host for lead in leads})

    # -- look --------------------------------------------------------------------------------------------
    def _look(self, lead: Lead, hosts: dict[str, Host], blocks: dict[str, str], suspects: set[Host]) -> None:
        try:
            self.provider.observe("lead", lead.host, lead.why)
            control = pick_control(lead.host, hosts, [*blocks.values()],
                                   avoid=suspects | set(self.provider.quarantine.hosts()))
            evidence = self._gather(lead, control)
            with self._lock:
                finding = judge_node(evidence, self._signals.get(lead.host, ()))
            self.provider.record_look(evidence, finding)
            if finding.dead and not self._stop.is_set():
                self._evict(lead, finding, evidence)
            else:
                with self._lock:
                    self._signals[lead.host] = list(finding.signals)
                    self._next_look[lead.host] = time.monotonic() + finding.relook_s
        except Exception:  # one look's failure must not stop the others
            log.exception("hotspare: looking at %s failed", lead.host.name)
        finally:
            with self._lock:
                self._looking.discard(lead.host)

    def _gather(self, lead: Lead, control: tuple[Host, str] | None) -> NodeEvidence:
        """Two quick probes of the block's node beside the control (:func:`hotspare.probe_look`: on SLURM a step
        inside the block's job, on PBS a job pinned to the node) and the scheduler's word on the node at once; then
        the job's state (a probe of a job that ended proves nothing)."""
        query = self.provider.query
        jobs = {lead.host: lead.job_id, **({control[0]: control[1]} if control is not None else {})}
        workdir = self.provider.run_dir / "probes" / lead.host.name
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hotspare-ask") as ex:
            asked = ex.submit(query.node_states, [lead.host])
            kind = query.kind if isinstance(query.kind, SchedulerKind) else None  # "local": no probe from here
            probes = probe_look(jobs, kind, workdir, timeout_s=self.provider.probe_timeout_s, run=query.run)
            states = asked.result()
        facts = query.job_facts(lead.job_id) if query.kind else None
        return NodeEvidence(lead, probes.rounds, control[0] if control else None, states.get(lead.host, ""), facts,
                            probes.uncounted)

    # -- act ---------------------------------------------------------------------------------------------
    def _evict(self, lead: Lead, finding: NodeFinding, evidence: NodeEvidence) -> None:
        """Fail the block's tasks over (its managers expired), lose the block, ask for its replacement at once."""
        with self._lock:
            if lead.job_id in self._handled:
                return
            self._handled.add(lead.job_id)
        beats = parse_managers(self.executor.command_client.run(MANAGERS, timeout_s=COMMAND_S))
        for beat in beats:
            if beat.block_id == lead.block_id:
                self.executor.command_client.run([EXPIRE, beat.manager], timeout_s=COMMAND_S)
        state = evidence.job.state if evidence.job is not None else "manager silent"
        self.provider.lose_block(lead.job_id, finding, state=state)
        if self._stop.is_set():
            return
        self.executor.scale_out_facade(1)
        # The strategy reads the block statuses of the last poll (60 s apart for SlurmProvider): make the job status
        # poller's next tick (strategy_period) poll, so it sees the lost block FAILED beside the replacement PENDING.
        # Left to the poller's thread: two threads in the provider's status() at once would race in SlurmProvider.
        self.executor._last_poll_time = 0.0
