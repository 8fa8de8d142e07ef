"""decide(): every failure class against budget states, from tables; backoff is pure maths."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hotspare import FailureClass, Host
from hotspare.decide.policy import Action, Budgets, History, backoff_s, decide
from hotspare.decide.pool import Pool
from hotspare.errors import EXIT_INTERRUPTED, EXIT_NO_RETRY, EXIT_OK, EXIT_RETRY_ELSEWHERE
from hotspare.evidence.classify import Blame, Verdict

H = [Host(f"n{i}") for i in range(1, 6)]
POOL = Pool(tuple(H[:3]), tuple(H[3:]))
NO_SPARES = Pool(tuple(H[:3]), ())
B = Budgets(backoff_base_s=1.0, backoff_max_s=8.0, jitter=0.0)


def verdict(fclass: FailureClass, blamed: tuple[Host, ...] = (), reason: str = "scraped") -> Verdict:
    exclude = blamed if fclass.excludes_hosts else ()
    return Verdict(fclass, tuple(Blame(h, reason, ()) for h in blamed), (), (), fclass.retryable, exclude,
                   f"{fclass.value}: test", ())


CASES = [
    # (class, blamed, pool, history, expected action, exit code, swapped out)
    (FailureClass.SUCCESS, (), POOL, History(), Action.STOP, EXIT_OK, ()),
    (FailureClass.CANCELLED, (), POOL, History(), Action.STOP, EXIT_INTERRUPTED, ()),
    (FailureClass.USER_ERROR, (), POOL, History(), Action.STOP, EXIT_NO_RETRY, ()),
    (FailureClass.OOM, (), POOL, History(), Action.STOP, EXIT_NO_RETRY, ()),
    (FailureClass.WALLTIME, (), POOL, History(), Action.STOP, EXIT_NO_RETRY, ()),
    (FailureClass.NODE_LOSS, (H[1],), POOL, History(), Action.SWAP, None, (H[1],)),
    (FailureClass.RANK_KILLED, (H[2],), POOL, History(), Action.SWAP, None, (H[2],)),
    (FailureClass.GPU_HW, (H[0],), POOL, History(), Action.SWAP, None, (H[0],)),
    (FailureClass.NODE_LOSS, (H[1],), NO_SPARES, History(), Action.STOP, EXIT_RETRY_ELSEWHERE, (H[1],)),
    (FailureClass.NODE_LOSS, (H[0], H[1], H[2]), POOL, History(), Action.STOP, EXIT_RETRY_ELSEWHERE, (H[0], H[1], H[2])),
    # A blamed host that is not active (already swapped out) spends nothing: the active ones are probed.
    (FailureClass.NODE_LOSS, (H[4],), POOL, History(), Action.PROBE, None, ()),
    (FailureClass.TRANSIENT_IO, (), POOL, History(), Action.RETRY, None, ()),
    (FailureClass.TRANSIENT_IO, (), POOL, History(in_place={FailureClass.TRANSIENT_IO: 2}), Action.STOP, EXIT_NO_RETRY, ()),
    (FailureClass.NETWORK, (), POOL, History(in_place={FailureClass.NETWORK: 2}), Action.STOP, EXIT_RETRY_ELSEWHERE, ()),
    (FailureClass.PREEMPTED, (), POOL, History(), Action.RETRY, None, ()),
    # Unattributed: probe first; every host answered → retry in place; again → (no blind rotation) in place
    # within budget.
    (FailureClass.UNKNOWN, (), POOL, History(), Action.PROBE, None, ()),
    (FailureClass.UNKNOWN, (), POOL, History(probed=True), Action.RETRY, None, ()),
    (FailureClass.UNKNOWN, (), POOL, History(attempts=1, unattributed=1), Action.PROBE, None, ()),
    (FailureClass.UNKNOWN, (), POOL, History(attempts=1, unattributed=1, probed=True), Action.RETRY, None, ()),
    (FailureClass.NODE_LOSS, (), POOL, History(attempts=1, unattributed=1), Action.PROBE, None, ()),
    # The attempt limit stops everything retryable.
    (FailureClass.NODE_LOSS, (H[1],), POOL, History(attempts=10), Action.STOP, EXIT_NO_RETRY, ()),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].value}-{c[4].value}")
def test_decision_table(case: tuple) -> None:  # type: ignore[type-arg]
    """Each class in each budget state gets the documented action, exit code and swap."""
    fclass, blamed, pool, history, action, code, out = case
    d = decide(verdict(fclass, blamed), pool, history, B)
    assert (d.action, d.exit_code, d.swap_out) == (action, code, out), d.reason
    assert d.reason


def test_unattributed_failure_never_spends_a_spare_first() -> None:
    """However the unattributed failure looks, the first one is probed, then (every host answered) retried in
    place, spares untouched even with blind rotation allowed."""
    for fclass in (FailureClass.UNKNOWN, FailureClass.NODE_LOSS, FailureClass.RANK_KILLED):
        d = decide(verdict(fclass), POOL, History(), Budgets(blind_rotation=True))
        assert d.action is Action.PROBE and d.swap_out == ()
        d = decide(verdict(fclass), POOL, History(probed=True), Budgets(blind_rotation=True))
        assert d.action is Action.RETRY and d.swap_out == ()


def test_blind_rotation_only_when_enabled_and_recorded_blind() -> None:
    """After a fruitless probe, a blind swap happens only with blind_rotation, with reason 'blind'."""
    h = History(attempts=2, unattributed=2, probed=True)
    assert decide(verdict(FailureClass.UNKNOWN), POOL, h, B).action is Action.RETRY
    d = decide(verdict(FailureClass.UNKNOWN), POOL, h, Budgets(blind_rotation=True))
    assert d.action is Action.SWAP and d.quarantine_reason == "blind"


def test_probe_and_scheduler_reasons_carry_into_quarantine() -> None:
    """A swap keeps the blame's reason (probed, scheduler) for the quarantine record."""
    for why in ("probed", "scheduler"):
        d = decide(verdict(FailureClass.NODE_LOSS, (H[1],), reason=why), POOL, History(), B)
        assert d.quarantine_reason == why


def test_strikes_quarantine_a_host_its_peers_do_not_share() -> None:
    """A host at the strike limit, when the others are not, is swapped out with reason 'strikes'."""
    h = History(attempts=3, unattributed=1, strikes={H[0]: 2, H[1]: 0, H[2]: 1})
    d = decide(verdict(FailureClass.UNKNOWN), POOL, h, Budgets(strikes=3))
    assert d.action is Action.SWAP and d.swap_out == (H[0],) and d.quarantine_reason == "strikes"
    everyone = History(attempts=3, unattributed=1, strikes={H[0]: 2, H[1]: 2, H[2]: 2})
    assert decide(verdict(FailureClass.UNKNOWN), POOL, everyone, Budgets(strikes=3)).action is not Action.SWAP


def test_walltime_retries_only_when_time_reaches_the_next_checkpoint() -> None:
    """Walltime stops unless the scheduler's remaining time covers the next checkpoint."""
    v = verdict(FailureClass.WALLTIME)
    assert decide(v, POOL, History(), B, walltime_left_s=900, checkpoint_eta_s=300).action is Action.RETRY
    assert decide(v, POOL, History(), B, walltime_left_s=100, checkpoint_eta_s=300).action is Action.STOP
    # Time left does not exempt a retry from the attempt limit (it once looped forever).
    limited = decide(v, POOL, History(attempts=9), B, walltime_left_s=900, checkpoint_eta_s=300)
    assert limited.action is Action.STOP and limited.exit_code == EXIT_NO_RETRY


@pytest.mark.parametrize(("retry", "unit", "expected"), [(1, 0, 1.0), (2, 0, 2.0), (3, 0, 4.0), (4, 0, 8.0), (9, 0, 8.0)])
def test_backoff_doubles_and_caps(retry: int, unit: float, expected: float) -> None:
    """Backoff is base * 2^(n-1), capped at the maximum."""
    assert backoff_s(retry, B, unit) == expected


def test_backoff_jitter_is_bounded() -> None:
    """Jitter moves the delay by at most the jitter fraction either way."""
    b = Budgets(backoff_base_s=10, backoff_max_s=10, jitter=0.2)
    assert backoff_s(1, b, -1.0) == pytest.approx(8.0) and backoff_s(1, b, 1.0) == pytest.approx(12.0)


@pytest.mark.parametrize("bad", [{"max_attempts": 0}, {"strikes": 0}, {"jitter": 1.5}, {"backoff_base_s": 100, "backoff_max_s": 1}])
def test_bad_budgets_name_the_fix(bad: dict) -> None:  # type: ignore[type-arg]
    """Impossible settings are refused at construction."""
    with pytest.raises(ValueError):
        Budgets(**bad)


def test_pool_swap_keeps_positions_and_order() -> None:
    """A swap puts the next spare in the failed host's position."""
    assert POOL.swap({H[1]}) == Pool((H[0], H[3], H[2]), (H[4],))


@pytest.mark.parametrize("fclass", [FailureClass.NODE_LOSS, FailureClass.RANK_KILLED, FailureClass.UNKNOWN])
def test_unattributed_failures_spend_one_budget_and_stop_with_93(fclass: FailureClass) -> None:
    """A failure naming no host, repeated, is retried in place at most ``in_place_retries`` times whatever its
    class, then stops with 93 (no healthy node to be found here: resubmit elsewhere), well before the attempt
    limit. The budget decide() checks is the one History.after() spends (issue 9, defect 1)."""
    budgets = Budgets(max_attempts=10, in_place_retries=2, backoff_base_s=0.0, jitter=0.0)
    history, decisions = History(), []
    for _ in range(10):
        v = verdict(fclass)
        d = decide(v, POOL, history, budgets)
        if d.action is Action.PROBE:  # every host answered the probe
            history = replace(history, probed=True)
            d = decide(v, POOL, history, budgets)
        decisions.append(d)
        if d.action is Action.STOP:
            break
        history = history.after(v, d, POOL)
    assert [d.action for d in decisions] == [Action.RETRY, Action.RETRY, Action.STOP], decisions
    assert decisions[-1].exit_code == EXIT_RETRY_ELSEWHERE, decisions[-1].reason


def test_an_origin_that_is_not_a_node_fault_is_never_swapped() -> None:
    """A segfault on n2 blames n2 as the origin but excludes nobody: the supervisor retries, it spends no spare."""
    v = replace(verdict(FailureClass.UNKNOWN, (Host("n2"),)), exclude_hosts=())
    assert v.blamed_hosts == (Host("n2"),)
    d = decide(v, POOL, History(probed=True), Budgets())
    assert d.action is not Action.SWAP and d.swap_out == ()


def test_suspects_are_probed_before_anything_is_decided() -> None:
    """A host named only by a lost connection is a lead: probe first; once every host answered, no swap."""
    v = replace(verdict(FailureClass.NETWORK), suspect_hosts=(Host("n2"),))
    assert decide(v, POOL, History(), Budgets()).action is Action.PROBE
    after = decide(v, POOL, History(probed=True), Budgets())
    assert after.action is Action.RETRY and after.swap_out == ()


def test_where_an_unknown_failure_happened_is_probed_first_and_the_same_failure_then_stops() -> None:
    """A worker that died with no cause shown names its host as a suspect: probed first with a control, never
    swapped on the log's word; with every probed host answering, the same failure again stops (3)."""
    v = replace(verdict(FailureClass.UNKNOWN), suspect_hosts=(H[1],), signature="worker died")
    first = decide(v, POOL, History(), B)
    assert first.action is Action.PROBE and first.probe == (H[1], H[0]) and first.swap_out == ()
    again = decide(v, POOL, History(attempts=2, probed=True, answered=True, retried=("worker died", 1)), B)
    assert again.action is Action.STOP and again.exit_code == EXIT_NO_RETRY


def test_a_swap_onto_a_spare_starts_at_once_retries_back_off() -> None:
    """Backoff is for retries on the same hosts; a swap (whatever attempt it is) waits for nothing (issue 14)."""
    swap = decide(verdict(FailureClass.NODE_LOSS, (H[1],)), POOL, History(attempts=3), B)
    assert swap.action is Action.SWAP and swap.delay_s == 0.0
    retry = decide(verdict(FailureClass.TRANSIENT_IO), POOL, History(attempts=3), B)
    assert retry.action is Action.RETRY and retry.delay_s == backoff_s(3, B, 0.0) > 0


def test_suspect_probe_names_the_suspects_and_a_control() -> None:
    """Only the suspects and one host nothing accuses are probed; with every active host accused, a spare."""
    v = replace(verdict(FailureClass.NETWORK), suspect_hosts=(H[1],))
    d = decide(v, POOL, History(), B)
    assert d.probe == (H[1], H[0]) and d.probe_control == H[0]
    every = replace(verdict(FailureClass.NETWORK), suspect_hosts=tuple(H[:3]))
    d = decide(every, POOL, History(), B)
    assert d.probe == (*H[:3], H[3]) and d.probe_control == H[3]
