"""A node found dead in seconds: its worker's silence is a lead, two signals of its own make a node fault (pure).

The failover clusters watch each worker's heartbeats as the scheduler receives them (``WorkerState.last_seen``).
A worker silent past a threshold (learned from its heartbeat cadence, never below a floor), a worker whose
connection closed, or a node the scheduler calls unhealthy is a :class:`Lead`: its node is probed twice, inside the
job that holds it, and the scheduler asked about it, in parallel (the cluster does that). :func:`judge_node` reads
what came back with the core's two-signal rule (:func:`hotspare.two_signals`): two missed probes, or a missed probe
and the scheduler's NOT_RESPONDING/DOWN, make the node dead. The lead itself is never a signal: a worker stuck in a
task that holds the GIL misses its heartbeats while its node answers every probe, and is left alone.

Heartbeats are read on the scheduler's clock and timed on this process's: a value of ``last_seen`` is silent from
the moment it was first read here, so a scheduler in another process (another clock) is watched the same way.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The look's rule lives in the core, shared with hotspare_parsl.silence; these names are kept here for callers.
from hotspare import ANSWERED_RELOOK_S as ANSWERED_RELOOK_S  # noqa: PLC0414
from hotspare import RELOOK_S as RELOOK_S  # noqa: PLC0414
from hotspare import (
    Host,
    JobFacts,
    NodeFinding,
    NodeLook,
    ProbeResult,
    judge_look,
)
from hotspare import ended_for_the_node as core_ended
from hotspare import probes_count as probes_count  # noqa: PLC0414

#: A learned silence threshold is never below this (seconds): heartbeats come every 0.5-2 s, and an event loop
#: busy for a second or two (a large message deserialised) is no lead worth two probes.
SILENCE_FLOOR_S = 3.0
#: A learned threshold is this many times the median gap between a worker's heartbeats...
SILENCE_FACTOR = 5.0
#: ...once that many gaps were seen; until then (a worker just registered) the threshold is this (seconds): five
#: times a new worker's own heartbeat interval (distributed's default, 1 s, until the scheduler sets it). On the bed
#: a stream of tasks had one worker frozen 2 s after it registered, with two gaps read: a 10 s startup threshold
#: let SLURM's NOT_RESPONDING lead first.
SILENCE_STARTUP_GAPS = 3
SILENCE_STARTUP_S = 5.0
#: Heartbeat gaps kept per worker (the most recent).
HEARTBEAT_GAPS = 32
#: A read this much later than the poll interval (the event loop or the scheduler was busy) may show heartbeats
#: the scheduler has not yet taken in: every worker's silence starts again from that read.
LATE_FACTOR = 3.0


@dataclass(frozen=True, slots=True)
class Silence:
    """A worker heard from last ``silent_s`` seconds ago, past its ``threshold_s``."""

    address: str
    silent_s: float
    threshold_s: float


@dataclass(slots=True)
class Heartbeats:
    """Each worker's heartbeats as last read from the scheduler: when each was last heard, and its cadence."""

    floor_s: float = SILENCE_FLOOR_S
    #: A fixed threshold (seconds) instead of the learned one.
    fixed_s: float | None = None
    _last: dict[str, float] = field(default_factory=dict)  # address -> last_seen (scheduler clock)
    _since: dict[str, float] = field(default_factory=dict)  # address -> when that value was first read (ours)
    _gaps: dict[str, deque[float]] = field(default_factory=dict)
    _read_s: float | None = None

    def read(self, last_seen: Mapping[str, float], now_s: float, poll_s: float) -> None:
        """Take in the scheduler's ``last_seen`` of every worker it has, read at ``now_s`` (polled every ``poll_s``)."""
        late = self._read_s is not None and now_s - self._read_s > LATE_FACTOR * poll_s
        self._read_s = now_s
        for gone in set(self._last) - set(last_seen):
            del self._last[gone], self._since[gone], self._gaps[gone]
        for address, value in last_seen.items():
            before = self._last.get(address)
            if before is None or value != before:
                if before is not None and value > before:
                    self._gaps.setdefault(address, deque(maxlen=HEARTBEAT_GAPS)).append(value - before)
                self._last[address], self._since[address] = value, now_s
            self._gaps.setdefault(address, deque(maxlen=HEARTBEAT_GAPS))
            if late:
                self._since[address] = now_s

    def threshold_s(self, address: str) -> float:
        """How long ``address`` may be silent before it is a lead: fixed, else learned from its cadence."""
        if self.fixed_s is not None:
            return self.fixed_s
        gaps = self._gaps.get(address, ())
        if len(gaps) < SILENCE_STARTUP_GAPS:
            return max(self.floor_s, SILENCE_STARTUP_S)
        return max(self.floor_s, SILENCE_FACTOR * statistics.median(gaps))

    def silent(self, now_s: float) -> list[Silence]:
        """The workers silent past their threshold at ``now_s``, longest silent first."""
        found = [Silence(a, now_s - since, self.threshold_s(a)) for a, since in self._since.items()]
        return sorted((s for s in found if s.silent_s > s.threshold_s), key=lambda s: -s.silent_s)


@dataclass(frozen=True, slots=True)
class Lead:
    """A reason to look at one node: what was seen, and the batch job of this cluster that holds the node."""

    host: Host
    job_id: str
    #: What made someone look, for the record ("its worker X silent for 4.1 s (threshold 3.0 s)").
    why: str
    #: How the verdict names the moment ("while its worker was silent", "after its worker's connection closed").
    when: str
    #: Whether a worker's connection closed (not a silence): see :data:`hotspare.decide.judge.SIGNAL_CLOSED`.
    closed: bool = False


@dataclass(frozen=True, slots=True)
class NodeEvidence:
    """What a look at a lead's node brought back."""

    lead: Lead
    #: Each probe round's answers: the lead's host, and the control beside it when there was one.
    rounds: tuple[tuple[ProbeResult, ...], ...]
    #: A host of another of the cluster's jobs, probed beside the lead's (None: there was none).
    control: Host | None
    #: The scheduler's state of the lead's host ("" when it could not be asked).
    node_state: str
    #: The scheduler's word on the lead's job, asked after the probes (None: it could not be asked).
    job: JobFacts | None
    #: Probes that said nothing of their node (on PBS: a pinned probe job never placed, the node being full or
    #: the queue busy): recorded, never counted.
    uncounted: tuple[ProbeResult, ...] = ()


def look_of(evidence: NodeEvidence) -> NodeLook:
    """The core's view of a look at a lead's node."""
    lead = evidence.lead
    return NodeLook(lead.host, lead.job_id, lead.why, lead.when, evidence.rounds, evidence.control,
                    evidence.node_state, evidence.job, closed=lead.closed)


def ended_for_the_node(evidence: NodeEvidence) -> bool:
    """Whether the scheduler has already concluded (pure; the cluster's job judging reads it the same way,
    :func:`hotspare_dask.loss.judge_lost`): see :func:`hotspare.decide.judge.ended_for_the_node`."""
    return core_ended(look_of(evidence))


def judge_node(evidence: NodeEvidence, earlier: Sequence[str] = ()) -> NodeFinding:
    """The core's two-signal rule on one look (:func:`hotspare.judge_look`), added to what ``earlier`` looks at the
    same silence found."""
    return judge_look(look_of(evidence), earlier)


def jobs_on(host: Host, hosts_by_job: Mapping[str, Host], live: Mapping[str, str],
            handled: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """The cluster's jobs on ``host`` still to act on (pure): ``{job name: batch job id}`` of the ``live`` ones
    (``{job name: batch job id}``) whose node is ``host`` (``hosts_by_job``: batch job id -> node) and not yet
    handled."""
    return {name: job_id for name, job_id in live.items()
            if hosts_by_job.get(job_id) == host and job_id not in handled}


def pick_control(suspect: Host, hosts_by_job: Mapping[str, Host], live: Mapping[str, str],
                 avoid: set[Host] | frozenset[Host] = frozenset()) -> tuple[Host, str] | None:
    """A host of another live job to probe beside ``suspect`` (pure): its answer tells a dead node from a broken
    probe path. The first, in host order, that is not the suspect nor in ``avoid`` (quarantined, silent, looked
    at); None when there is none."""
    found = sorted((host, job_id) for job_id, host in hosts_by_job.items()
                   if job_id in set(live.values()) and host != suspect and host not in avoid)
    return found[0] if found else None
