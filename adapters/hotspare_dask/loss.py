"""A job whose workers left: what is known of it (read), and what to do about it (a pure decision).

The cluster notices a worker leaving (``_update_worker_status("remove", address)``), waits as dask does
(``distributed.deploy.lost-worker-timeout``) for a nanny restart to bring the name back, and only then treats
the job as lost. Retirement (``scale`` down, ``adapt``) is told apart without the scheduler's stimulus: a
retired job's name has already left ``worker_spec`` when its workers go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hotspare import (
    FailureClass,
    Host,
    HostError,
    JobEnd,
    JobJudgement,
    PatternSet,
    judge_host_lost,
    judge_job,
    unhealthy,
)


@dataclass(frozen=True, slots=True)
class LostWorker:
    """A worker the scheduler removed, with what its identity said while it was still there."""

    address: str
    #: The worker's name on the scheduler (``X-0``, or ``X-0-1`` with ``--nworkers``).
    worker_name: str
    #: The job (spec name) it belongs to; None when the cluster never planned it.
    job: str | None
    #: The batch job id (the cluster's record first, else the preload's).
    job_id: str | None
    #: The node, as the preload reported it (None without the preload).
    host: Host | None
    #: Its nanny's address (None for a worker started without one).
    nanny: str | None = None


def identity_host(identity: Mapping[str, object], key: str) -> Host | None:
    """The host named under ``key`` in a worker identity, or None when absent or not a host name."""
    value = identity.get(key)
    if not isinstance(value, str) or not value:
        return None
    try:
        return Host(value)
    except HostError:
        return None


#: Job states (SLURM's, PBS's one-letter ones) in which the scheduler has not yet concluded the job's end.
_UNDECIDED = frozenset({"RUNNING", "PENDING", "CONFIGURING", "COMPLETING", "SUSPENDED", "R", "Q", "E", "H"})


def settled(end: JobEnd) -> bool:
    """Whether the scheduler has said what it will say about a lost job (pure): it reports one of the job's hosts
    down, it ended the job, or it can be asked about neither (nothing more will come). A job still RUNNING on
    healthy nodes is not settled: SLURM marks a crashed node DOWN only after SlurmdTimeout."""
    if any(unhealthy(end.node_states.get(h, "")) for h in end.hosts):
        return True
    if end.facts is not None and end.facts.requeued:
        return True  # SLURM ended the run the workers belonged to and queued the job again
    if end.facts is None:
        # Forgotten (PBS without job history, slurm-wlm-torque's qstat): only the node's state can still speak.
        return not end.node_states
    return end.facts.state.upper() not in _UNDECIDED


def judge_lost(end: JobEnd, patterns: PatternSet) -> JobJudgement:
    """The verdict on a job whose workers left (pure): the core's job judging, and, when that blames nobody,
    the job's hosts the scheduler already reports down (the workers' loss and the scheduler agree).

    The cluster judges at dask's lost-worker timeout (15 s), about when SLURM marks a crashed node DOWN and
    before it may have ended the job NODE_FAIL (the bed: 15-19 s), so a job still RUNNING on a DOWN node is
    common here; the core's judging needs the NODE_FAIL to blame a host without a log line naming it.
    """
    judged = judge_job(end, patterns, state="worker lost")
    if judged.node_lost or judged.hook_failed:
        return judged
    if end.facts is not None and end.facts.requeued and end.hosts:
        # Two signals: the workers' whole process tree vanished (no nanny restart), and SLURM ended that run and
        # queued the job again, which it does for a batch job whose node failed (a node that reboots within the
        # slurmd timeout is never reported DOWN; seen on the bed).
        return judge_host_lost(end.job_id, end.hosts, f"lost the job's workers, and SLURM requeued the job "
                               f"(Restarts={end.facts.restarts}, {end.facts.state})", state=end.facts.state)
    down = tuple(h for h in end.hosts if unhealthy(end.node_states.get(h, "")))
    if not down:
        return judged
    states = ", ".join(f"{end.node_states[h]}" for h in down)
    state = end.facts.state if end.facts is not None else "worker lost"
    return judge_host_lost(end.job_id, down, f"reported {states} by the scheduler after the job's workers were "
                           f"lost", state=state)


def still_lost(lost: LostWorker, planned: Iterable[str], present_names: Iterable[str],
               handled: Iterable[str]) -> bool:
    """Whether ``lost`` is a job to judge now (pure): still planned (not retired), no worker of that name back
    (a nanny restart re-registers the same name), and its batch job not judged already (a job with
    ``--nworkers`` loses several workers at once)."""
    if lost.job is None or lost.job_id is None or lost.job not in set(planned) or lost.job_id in set(handled):
        return False
    return lost.worker_name not in set(present_names)


def within_budget(recent_s: Iterable[float], now_s: float, max_submits: int, window_s: float) -> bool:
    """Whether one more replacement fits: fewer than ``max_submits`` in the last ``window_s`` seconds (pure)."""
    return sum(1 for t in recent_s if now_s - t < window_s) < max_submits


#: Job ends that are the scheduler's doing, not the tasks': the job's tasks are not blamed for its workers' deaths.
_SCHEDULER_ENDS = frozenset({FailureClass.WALLTIME, FailureClass.PREEMPTED, FailureClass.CANCELLED})


def spares_tasks(judgement: JobJudgement) -> bool:
    """Whether the deaths of a lost job's workers are kept off its tasks' ``allowed-failures`` (pure): the job's
    node failed, or the scheduler ended the job (walltime, preemption, cancellation). A user error, an OOM, a job
    whose hook failed or an end nobody can explain counts, as distributed would count it."""
    if judgement.hook_failed:
        return False
    return judgement.node_lost or judgement.verdict.failure_class in _SCHEDULER_ENDS


@dataclass(frozen=True, slots=True)
class Replacement:
    """What to do about one lost job: which hosts to keep out (with the judgement's reasons), whether to
    submit the job again under the same name, and why."""

    job: str
    judgement: JobJudgement
    resubmit: bool
    why: str


def decide_replacement(job: str, judgement: JobJudgement, *, budget_left: bool) -> Replacement:
    """Resubmit a lost job elsewhere unless its own code is to blame or the resubmission budget is spent. ``why``
    says what was done; the verdict's reason is the judgement's (the cluster logs both once)."""
    verdict = judgement.verdict
    if judgement.hook_failed or verdict.failure_class is FailureClass.USER_ERROR:
        return Replacement(job, judgement, False, "not resubmitted: a user error")
    if not budget_left:
        return Replacement(job, judgement, False, "not resubmitted: max_submits replacements in window_s spent")
    where = f"off {', '.join(h.name for h, _ in judgement.keep_out)}" if judgement.keep_out else "as before"
    return Replacement(job, judgement, True, f"resubmitted {where}")
