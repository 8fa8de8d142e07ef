"""Judging an ended attempt: a pure function of what was observed.

The supervisor gathers :class:`Observations` (the launcher's rc and stop cause, the log's scan, probe
answers, the scheduler's answers), then :func:`judge` returns the verdict and the decision; no probe, no
ledger write, no process in here. When the judgement needs more, :func:`question` names what to observe
next (probe the hosts, ask the remaining walltime) and the supervisor judges again with the answer.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hotspare.act.node_states import unhealthy
from hotspare.act.probe import ProbeResult
from hotspare.act.runner import StopCause
from hotspare.act.scheduler import JobFacts
from hotspare.decide.policy import Action, Budgets, Decision, History, decide
from hotspare.decide.pool import Pool
from hotspare.evidence.classify import Blame, Verdict, classify
from hotspare.evidence.records import ScanResult
from hotspare.failures import FailureClass, QuarantineReason
from hotspare.hosts import Host

#: Why the active hosts are probed after an attempt that named none.
PROBE_WHY_UNNAMED = "failure with no host named"
#: Why hosts are probed that the log named only as suspects.
PROBE_WHY_SUSPECT = "named as a suspect by the log"

#: The signals of a node's death counted by :func:`two_signals`: a probe it missed, and the scheduler calling it
#: unhealthy (NOT_RESPONDING, DOWN, down).
SIGNAL_PROBE = "probe"
SIGNAL_SCHEDULER = "scheduler"
#: A workflow's worker on the node lost its connection (a crash closes them; a frozen node keeps them open): a
#: signal only beside the scheduler's report (a worker process that died alone closes its connection too).
SIGNAL_CLOSED = "closed"


class Ask(enum.Enum):
    """What to observe before judging again."""

    #: Probe every active host (the attempt went silent, or failed naming no host).
    PROBE = "probe"
    #: Ask the scheduler how much walltime is left, and see how often checkpoints come.
    WALLTIME = "walltime"


@dataclass(frozen=True, slots=True)
class Observations:
    """Everything gathered about one ended attempt, before it is judged."""

    rc: int
    stopped_by: StopCause | None
    scan: ScanResult
    #: The probe answers of the active hosts, once probed (None: not probed).
    probes: tuple[ProbeResult, ...] | None = None
    #: Why they were probed (goes into the verdict's reason).
    probe_why: str = ""
    #: The probed host nothing accused (see :attr:`Decision.probe_control`): if it failed too, nobody is blamed.
    probe_control: Host | None = None
    #: Active hosts the scheduler reported unhealthy when asked beside the probes after the attempt ended.
    scheduler_down: tuple[Host, ...] = ()
    #: Hosts that gave two independent signals of death while output stalled (two failed probes, or a failed
    #: probe and the scheduler's report), how they did, and the quarantine reason.
    scheduler_blamed: tuple[Host, ...] = ()
    stall_why: str = ""
    stall_reason: QuarantineReason = QuarantineReason.SCHEDULER
    #: Whether the walltime question was asked; its answers (None: unknown).
    walltime_asked: bool = False
    walltime_left_s: float | None = None
    checkpoint_eta_s: float | None = None
    #: The newest valid checkpoint when the attempt ended: (step, modification time), for the record.
    checkpoint: tuple[int, float] | None = None
    #: When (wall clock) the launcher exited: the attempt's end, before any probe or decision.
    ended_s: float | None = None
    #: The last line the attempt printed that no pattern claimed (for the failure's signature).
    last_line: str | None = None


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on an attempt and what to do about it."""

    verdict: Verdict
    decision: Decision


def judge(obs: Observations, pool: Pool, history: History, budgets: Budgets, *, unit: float = 0.0) -> Judgement:
    """The verdict on the attempt ``obs`` describes (``pool`` active) and the decision. Pure."""
    verdict = _verdict(obs, pool)
    answered = obs.probes is not None and all(r.ok for r in obs.probes)
    decision = decide(verdict, pool, replace(history, probed=obs.probes is not None, answered=answered), budgets,
                      unit=unit,
                      walltime_left_s=obs.walltime_left_s, checkpoint_eta_s=obs.checkpoint_eta_s)
    return Judgement(verdict, decision)


def question(judgement: Judgement, obs: Observations) -> Ask | None:
    """What must be observed before ``judgement`` can stand (None: it stands). Pure."""
    if obs.stopped_by is StopCause.INTERRUPTED:
        return None
    wants_probe = obs.stopped_by is StopCause.IDLE or judgement.decision.action is Action.PROBE
    if wants_probe and obs.probes is None:
        return Ask.PROBE
    if judgement.verdict.failure_class is FailureClass.WALLTIME and not obs.walltime_asked:
        return Ask.WALLTIME
    return None


def probe_why(obs: Observations) -> str:
    """The reason a probe is asked for after this attempt."""
    return StopCause.IDLE.value if obs.stopped_by is StopCause.IDLE else PROBE_WHY_UNNAMED


def unanswered(results: Sequence[ProbeResult], active: Sequence[Host], *,
               control: Host | None = None) -> tuple[Host, ...]:
    """The probed hosts that did not answer, unless no active host at all did, or the ``control`` did not.

    When several hosts are asked and none answers, the probe itself is suspect (a launcher option it
    lacks, a broken launcher, the controller gone), not every node at once: nobody is blamed. With a
    ``control`` (a host nothing accused, probed beside the accused ones) its answer settles that instead:
    if it answered, every silent host is dead, however many; if it did not, nobody is blamed. Retiring a
    whole allocation of healthy nodes on such evidence is the worst outcome.
    """
    dead = tuple(r.host for r in results if not r.ok)
    if control is not None:  # the control answered: the probe path works, so each silent host is dead
        return () if control in dead else dead
    return () if no_host_answered(dead, active) else dead


def no_host_answered(dead: Sequence[Host], active: Sequence[Host]) -> bool:
    """Whether ``dead`` is every one of several active hosts (then the probe is suspect, see :func:`unanswered`)."""
    return len(active) > 1 and set(dead) >= set(active)


def two_signals(seen: Sequence[str]) -> bool:
    """Whether a node whose work went silent is dead (pure): two missed probes, or a missed probe and the scheduler's
    report (:data:`SIGNAL_PROBE`, :data:`SIGNAL_SCHEDULER`), or the scheduler's report on a node whose worker's
    connection closed (:data:`SIGNAL_CLOSED`: PBS marks a crashed MOM down within a second, and no probe job can be
    placed on a down node to give a second signal). The silence is what made someone look, not a signal;
    one signal never evicts: a slow node misses one probe, and SLURM calls a node NOT_RESPONDING while its tasks
    still run. The scheduler's word alone: never."""
    probes = list(seen).count(SIGNAL_PROBE)
    return probes >= 2 or (SIGNAL_SCHEDULER in seen and (probes >= 1 or SIGNAL_CLOSED in seen))


def signals_why(seen: Sequence[str], when: str) -> str:
    """How a node's two signals read in a verdict (``when``: while output stalled, while its worker was silent)."""
    if SIGNAL_SCHEDULER in seen and SIGNAL_PROBE not in seen:
        return f"was reported unhealthy by the scheduler {when}"
    if SIGNAL_SCHEDULER in seen:
        return f"failed a probe {when}, and the scheduler reports it unhealthy"
    return f"failed two probes {when}"


def blame(verdict: Verdict, hosts: tuple[Host, ...], reason: QuarantineReason, why: str) -> Verdict:
    """The verdict with ``hosts`` blamed for a node loss found outside the log (a probe, the scheduler, a job
    that lost its lead node); ``why`` reads after the host names."""
    names = ", ".join(h.name for h in hosts)
    return replace(
        verdict, failure_class=FailureClass.NODE_LOSS, retryable=True, exclude_hosts=hosts, crash=False,
        blamed=tuple(Blame(h, reason, ()) for h in hosts), reason=f"node_loss: {names} {why}",
    )


def _verdict(obs: Observations, pool: Pool) -> Verdict:
    verdict = classify(obs.scan, rc=obs.rc, allocation=pool.active, last_line=obs.last_line)
    if obs.stopped_by is StopCause.INTERRUPTED:
        return replace(verdict, failure_class=FailureClass.CANCELLED, retryable=False, blamed=(),
                       exclude_hosts=(), reason="cancelled: the supervisor was asked to stop")
    if obs.stopped_by is StopCause.SCHEDULER and obs.scheduler_blamed:
        verdict = blame(verdict, obs.scheduler_blamed, obs.stall_reason, "gave two signals while output stalled")
        if obs.stall_why:  # already names each host and its signals
            verdict = replace(verdict, reason=f"node_loss: {obs.stall_why}")
    if obs.probes is None:
        return verdict
    dead = unanswered(obs.probes, pool.active, control=obs.probe_control)
    silent = {r.host for r in obs.probes if not r.ok}
    # The scheduler's word on a host that missed its probe is a second, independent signal.
    down = tuple(h for h in pool.active if h in set(obs.scheduler_down) and h in silent)
    if dead:
        said = "; the scheduler reports " + ", ".join(h.name for h in down) + " down" if down else ""
        verdict = blame(verdict, dead, QuarantineReason.PROBED, f"did not answer a probe ({obs.probe_why}){said}")
    elif down and len(down) < len(pool.active):
        # Every host missed its probe (the probe is suspect, see unanswered), but the scheduler names some of
        # them: those have two signals. Not all of them: a scheduler calling the whole allocation down at once
        # is its own trouble as likely as theirs.
        verdict = blame(verdict, down, QuarantineReason.SCHEDULER,
                        f"did not answer a probe ({obs.probe_why}) and the scheduler reports it down")
    return verdict


#: When a node that gave one signal is looked at again (seconds), while a probe can still give the second.
RELOOK_S = 1.0
#: When a node that answered, or one no probe can reach, is looked at again (seconds).
ANSWERED_RELOOK_S = 10.0


@dataclass(frozen=True, slots=True)
class NodeLook:
    """One look at a workflow's node under suspicion (a Dask worker's or a Parsl block's): why it was looked at,
    each probe round's answers (the node's, and a control's beside it when there was one), the scheduler's state
    of the node and its word on the job holding it (None: it could not be asked)."""

    host: Host
    job_id: str
    #: What made someone look, for the record.
    why: str
    #: How the verdict names the moment ("while its worker was silent").
    when: str
    rounds: tuple[tuple[ProbeResult, ...], ...]
    control: Host | None
    node_state: str
    job: JobFacts | None
    #: How the finding names the job in words ("its job", "its block's job").
    job_words: str = "its job"
    #: Whether the look came because a worker's connection on the node closed (:data:`SIGNAL_CLOSED`).
    closed: bool = False


@dataclass(frozen=True, slots=True)
class NodeFinding:
    """What a look concluded about a node: dead or not, on which signals, and why in words."""

    host: Host
    dead: bool
    signals: tuple[str, ...]
    why: str
    reason: QuarantineReason
    #: When a node found alive is looked at again: soon while it has one signal and a probe can still give the
    #: second, later otherwise.
    relook_s: float = ANSWERED_RELOOK_S


def probes_count(job: JobFacts | None) -> bool:
    """Whether a missed probe says anything about the node (pure): on SLURM the probe is a step of the node's job,
    which fails on a healthy node once the job has ended; on PBS a job pinned to the node, which a node whose job
    ended may take for other work. So only a job the scheduler still calls running counts: SLURM's RUNNING, PBS's
    ``R``."""
    if job is None:
        return False
    state = job.state.strip().upper()
    return state.startswith("RUNNING") or state == "R"


def ended_for_the_node(look: NodeLook) -> bool:
    """Whether the scheduler has already concluded (pure): it ended the node's job for a node failure (SLURM's
    NODE_FAIL, or the job put back in the queue) and reports the node unhealthy. A probe of that ended job could
    add nothing."""
    job = look.job
    return job is not None and (job.node_failed or job.requeued) and unhealthy(look.node_state)


def judge_look(look: NodeLook, earlier: Sequence[str] = ()) -> NodeFinding:
    """The two-signal rule on one look (pure), for the workflow adapters: each probe round the node missed
    (counted only while its job runs, and not when the control missed it too) and the scheduler calling it
    unhealthy are signals, and so is a closed connection beside that report (:func:`two_signals`), added to those
    ``earlier`` looks at the same silence found. A node whose job the
    scheduler already ended for a node failure (:func:`ended_for_the_node`) is dead on that verdict."""
    seen = list(earlier)
    counts = probes_count(look.job)
    for answers in look.rounds if counts else ():
        if look.host in unanswered(answers, [r.host for r in answers], control=look.control):
            seen.append(SIGNAL_PROBE)
    if unhealthy(look.node_state) and SIGNAL_SCHEDULER not in seen:
        seen.append(SIGNAL_SCHEDULER)
    if look.closed and SIGNAL_CLOSED not in seen:
        seen.append(SIGNAL_CLOSED)
    ended = ended_for_the_node(look)
    reason = QuarantineReason.SCHEDULER if SIGNAL_SCHEDULER in seen else QuarantineReason.PROBED
    relook_s = RELOOK_S if seen and counts and look.rounds else ANSWERED_RELOOK_S
    return NodeFinding(look.host, two_signals(seen) or ended, tuple(seen), _look_why(look, seen, ended), reason,
                       relook_s)


def _look_why(look: NodeLook, seen: Sequence[str], ended: bool) -> str:
    """The finding in words, with its evidence: the lead, every probe answer, the scheduler's word."""
    if two_signals(seen):
        found = signals_why(seen, look.when)
    elif ended:
        found = (f"was reported unhealthy by the scheduler, which ended {look.job_words} for a node failure, "
                 f"{look.when}")
    else:
        found = f"gave {len(seen)} signal(s) {look.when}"
    answers = "; ".join(", ".join(f"{r.host.name}{' (control)' if r.host == look.control else ''}: {r.detail}"
                                  for r in answers) for answers in look.rounds) or "none (no probe from here)"
    job = look.job.state if look.job is not None else "unknown"
    state = look.node_state or "unknown"
    return f"{found} ({look.why}; probes: {answers}; scheduler: node {state}, job {look.job_id} {job})"
