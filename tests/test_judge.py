"""Judging is a pure function of observations; question() says what to observe before a judgement stands."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hotspare import Host, scan
from hotspare.act.probe import ProbeResult
from hotspare.act.runner import StopCause
from hotspare.decide.judge import Ask, Observations, judge, question, unanswered
from hotspare.decide.policy import Action, Budgets, History
from hotspare.decide.pool import Pool
from hotspare.failures import FailureClass

POOL = Pool((Host("n1"), Host("n2"), Host("n3")), (Host("n4"),))
BUDGETS = Budgets(backoff_base_s=0, backoff_max_s=0)
QUIET = scan(b"step=3\n")


def answers(*dead: str) -> tuple[ProbeResult, ...]:
    return tuple(ProbeResult(h, h.name not in dead, "x") for h in POOL.active)


@pytest.mark.parametrize(("obs", "ask"), [
    (Observations(1, None, QUIET), Ask.PROBE),  # no host named: probe before deciding
    (Observations(1, None, QUIET, probes=answers()), None),
    (Observations(-15, StopCause.IDLE, QUIET), Ask.PROBE),  # silent: probe even before a verdict
    (Observations(-15, StopCause.INTERRUPTED, QUIET), None),  # cancelled: nothing to ask
    (Observations(1, None, scan(b"srun: error: n2: task 1: Killed\n")), None),  # named: no probe
    (Observations(143, None, scan(b"slurmstepd-n1: error: *** JOB 9 ON n1 CANCELLED AT 2026-11-29T09:34:47 DUE "
                                  b"TO TIME LIMIT ***\n")), Ask.WALLTIME),
])
def test_question(obs: Observations, ask: Ask | None) -> None:
    """What must be observed next, from the observations and the judgement on them."""
    assert question(judge(obs, POOL, History(), BUDGETS), obs) is ask


def test_judging_a_probe_blames_the_host_that_did_not_answer() -> None:
    """A probe n3 did not answer: node_loss on n3, swapped with reason probed."""
    obs = Observations(1, None, QUIET, probes=answers("n3"), probe_why="failure with no host named")
    judgement = judge(obs, POOL, History(), BUDGETS)
    assert judgement.verdict.failure_class is FailureClass.NODE_LOSS
    assert (judgement.decision.action, judgement.decision.swap_out) == (Action.SWAP, (Host("n3"),))
    assert judgement.decision.quarantine_reason == "probed"


def test_a_probe_nobody_answered_blames_nobody() -> None:
    """Every active host silent: the probe is suspect; nothing is blamed, the failure is retried in place."""
    assert unanswered(answers("n1", "n2", "n3"), POOL.active) == ()
    judgement = judge(Observations(1, None, QUIET, probes=answers("n1", "n2", "n3")), POOL, History(), BUDGETS)
    assert judgement.decision.action is Action.RETRY and not judgement.decision.swap_out


def test_the_schedulers_word_is_a_second_signal_beside_a_missed_probe() -> None:
    """After an attempt that named no host, the scheduler is asked beside the probes. A host that missed its
    probe and is reported down has two signals: kept out even when every probe went unanswered (then the
    probe alone proves nothing); the scheduler calling every host down at once blames nobody; its word on a
    host that answered changes nothing."""
    all_silent = Observations(1, None, QUIET, probes=answers("n1", "n2", "n3"), probe_why="failure with no host named")
    one_down = judge(replace(all_silent, scheduler_down=(Host("n2"),)), POOL, History(), BUDGETS)
    assert (one_down.decision.action, one_down.decision.swap_out) == (Action.SWAP, (Host("n2"),))
    assert one_down.decision.quarantine_reason == "scheduler"
    assert "n2 did not answer a probe" in one_down.verdict.reason and "scheduler reports it down" in one_down.verdict.reason
    every = judge(replace(all_silent, scheduler_down=POOL.active), POOL, History(), BUDGETS)
    assert not every.decision.swap_out
    probed = Observations(1, None, QUIET, probes=answers("n3"), probe_why="failure with no host named",
                          scheduler_down=(Host("n3"), Host("n1")))
    judged = judge(probed, POOL, History(), BUDGETS)
    assert judged.decision.swap_out == (Host("n3"),)  # n1 answered: the scheduler's word alone is one signal
    assert judged.verdict.reason.endswith("; the scheduler reports n3 down")


def test_scheduler_blame_and_cancel() -> None:
    """A scheduler stop blames the hosts that failed their probe; an interrupted attempt is cancelled whatever
    its log says."""
    stalled = Observations(-15, StopCause.SCHEDULER, QUIET, scheduler_blamed=(Host("n1"),))
    assert judge(stalled, POOL, History(), BUDGETS).decision.quarantine_reason == "scheduler"
    cancelled = replace(stalled, stopped_by=StopCause.INTERRUPTED)
    judgement = judge(cancelled, POOL, History(), BUDGETS)
    assert judgement.verdict.failure_class is FailureClass.CANCELLED and judgement.decision.action is Action.STOP


def test_walltime_answers_decide_the_retry() -> None:
    """With the walltime asked: enough time left for the next checkpoint retries, too little stops."""
    text = b"slurmstepd-n1: error: *** JOB 9 ON n1 CANCELLED AT 2026-11-29T09:34:47 DUE TO TIME LIMIT ***\n"
    base = Observations(143, None, scan(text), walltime_asked=True, checkpoint_eta_s=60.0)
    assert judge(replace(base, walltime_left_s=600.0), POOL, History(), BUDGETS).decision.action is Action.RETRY
    assert judge(replace(base, walltime_left_s=5.0), POOL, History(), BUDGETS).decision.action is Action.STOP
