"""What to do after an attempt: a pure function of the verdict, the pool and the history.

``decide()`` returns a frozen :class:`Decision`; the supervisor carries it out
and records it. Rules (from the seeds):

* node faults with named hosts: swap exactly those hosts for spares; none
  left means "retry me elsewhere" (exit 93);
* an unattributed failure is probed first (a probe spends no spare, and a node
  that does not answer is evidence); if every host answers, the first such
  failure is retried in place; only with ``blind_rotation`` enabled may a
  host be swapped without evidence, and that is recorded as ``blind``;
* the same failure twice on healthy hosts is the program's: when a retry in
  place, made after every host answered its probe, fails with the same
  signature, stop (exit 3); when the in-place budget is spent with every host
  answering, stop with 3 too: 93 ("retry elsewhere") needs node evidence
  (hosts at fault and no spares left, or probes that could not reach the hosts);
* a host present in ``strikes`` unattributed failures that its peers were
  not all part of is quarantined (``strikes``);
* storage and network trouble retries in place, a bounded number of times;
* user errors, OOM and walltime (unless the remaining walltime reaches the
  next checkpoint) stop; so does the global attempt limit.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from hotspare.decide.pool import Pool
from hotspare.errors import EXIT_INTERRUPTED, EXIT_NO_RETRY, EXIT_OK, EXIT_RETRY_ELSEWHERE
from hotspare.evidence.classify import Verdict
from hotspare.failures import FailureClass, QuarantineReason
from hotspare.hosts import Host


class Action(enum.Enum):
    """What the supervisor does next."""

    STOP = "stop"
    RETRY = "retry"  # same hosts
    SWAP = "swap"  # named hosts out, spares in, relaunch
    PROBE = "probe"  # ask every active host before deciding again


@dataclass(frozen=True, slots=True)
class Budgets:
    """Limits and timings. Bad settings raise with the fix in the message."""

    max_attempts: int = 10
    in_place_retries: int = 2
    strikes: int = 3
    backoff_base_s: float = 5.0
    backoff_max_s: float = 60.0
    jitter: float = 0.1
    blind_rotation: bool = False

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts={self.max_attempts}: allow at least one attempt")
        if self.in_place_retries < 0 or self.strikes < 1:
            raise ValueError("in_place_retries must be >= 0 and strikes >= 1")
        if not 0 <= self.backoff_base_s <= self.backoff_max_s:
            raise ValueError("backoff_base_s must be between 0 and backoff_max_s")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter={self.jitter}: use a fraction in [0, 1)")


@dataclass(frozen=True, slots=True)
class History:
    """What earlier attempts of this run spent."""

    attempts: int = 0
    in_place: Mapping[FailureClass, int] = field(default_factory=dict)
    #: Consecutive failures that named no host.
    unattributed: int = 0
    #: Whether this attempt's failure was already probed and every host answered.
    probed: bool = False
    #: Unattributed failures each host was active in.
    strikes: Mapping[Host, int] = field(default_factory=dict)
    #: Whether this attempt's hosts were probed and every one answered (set with ``probed``).
    answered: bool = False
    #: The previous attempt's failure signature and number, when it was retried in place after every host
    #: answered its probe: the same signature now means the failure is the program's.
    retried: tuple[str, int] | None = None

    def after(self, verdict: Verdict, decision: Decision, pool: Pool) -> History:
        """What has been spent once ``decision`` (taken on ``verdict`` with ``pool`` active) is carried out.

        An in-place retry spends the budget the decision names (:attr:`Decision.budget`), the very key
        :func:`decide` checks next time, so an unattributed node fault cannot retry under one key while the
        limit is read under another.
        """
        fclass = verdict.failure_class
        in_place = dict(self.in_place)
        if decision.action is Action.RETRY and decision.budget is not None:
            in_place[decision.budget] = in_place.get(decision.budget, 0) + 1
        unattributed = fclass not in (FailureClass.SUCCESS, FailureClass.CANCELLED) and not verdict.exclude_hosts
        strikes = dict(self.strikes)
        if unattributed:
            for host in pool.active:
                strikes[host] = strikes.get(host, 0) + 1
        retried = ((verdict.signature, self.attempts + 1)
                   if decision.action is Action.RETRY and decision.healthy and verdict.signature else None)
        return History(attempts=self.attempts + 1, in_place=in_place,
                       unattributed=self.unattributed + 1 if unattributed else 0, probed=False, strikes=strikes,
                       retried=retried)


@dataclass(frozen=True, slots=True)
class Decision:
    """The supervisor's next step, with its reason and the exit code if it stops."""

    action: Action
    reason: str
    swap_out: tuple[Host, ...] = ()
    #: Why the swapped hosts are kept out: scraped, probed, scheduler, strikes, blind.
    quarantine_reason: QuarantineReason | None = None
    delay_s: float = 0.0
    exit_code: int | None = None
    #: For a PROBE: the hosts to probe (empty: every active host), and the one among them that nothing
    #: accuses (a control: if it fails too, the probe path itself is in doubt and nobody is blamed on it).
    probe: tuple[Host, ...] = ()
    probe_control: Host | None = None
    #: The in-place budget an in-place retry spends: its own class for storage/network/preemption, ``UNKNOWN``
    #: for every failure that named no host (whatever its class).
    budget: FailureClass | None = None
    #: A retry in place made after every active host answered its probe (the next failure is compared with this one).
    healthy: bool = False


def backoff_s(retry: int, budgets: Budgets, unit: float) -> float:
    """Delay before retry number ``retry`` (1-based): doubling, capped, with jitter; ``unit`` in [-1, 1]."""
    base = min(budgets.backoff_max_s, budgets.backoff_base_s * 2.0 ** max(0, retry - 1))
    return max(0.0, base * (1 + budgets.jitter * unit))


def decide(
    verdict: Verdict,
    pool: Pool,
    history: History,
    budgets: Budgets,
    *,
    unit: float = 0.0,
    walltime_left_s: float | None = None,
    checkpoint_eta_s: float | None = None,
) -> Decision:
    """The next step after an attempt that ended with ``verdict``. Pure."""
    fclass = verdict.failure_class
    final = _final(fclass, verdict, walltime_left_s, checkpoint_eta_s)
    if final is not None and final.action is Action.STOP:
        return final
    # Every retry, the walltime one included, counts against the limit: a job that keeps
    # failing must not retry forever (Arvados: count attempts).
    if history.attempts + 1 >= budgets.max_attempts:
        return Decision(Action.STOP, f"attempt limit {budgets.max_attempts} reached ({fclass.value})",
                        exit_code=EXIT_NO_RETRY)
    if final is not None:
        return final
    delay = backoff_s(history.attempts, budgets, unit)
    named = tuple(h for h in verdict.exclude_hosts if h in pool.active)
    if named:
        return _swap(named, _blame_reason(verdict, named), pool)
    return _probe_suspects(verdict, pool, history) or (
        _in_place(fclass, history, budgets, delay, label=_answered(verdict, pool, history)) if fclass in _IN_PLACE
        else _unattributed(verdict, pool, history, budgets, delay)
    )


def _answered(verdict: Verdict, pool: Pool, history: History) -> str | None:
    """How an in-place retry reads when the log's suspects were probed and answered (None: the plain class)."""
    suspects = [h.name for h in pool.active if h in set(verdict.suspect_hosts)]
    if not suspects or not history.probed:
        return None
    return (f"{verdict.failure_class.value}: {', '.join(suspects)} (named as suspect) answered a probe: launch or "
            "control-plane trouble, not a node")


def _probe_suspects(verdict: Verdict, pool: Pool, history: History) -> Decision | None:
    """Hosts named only by a lost connection or a failed launch are leads, not evidence: probe them at once
    (with one host nothing accuses beside them, as a control). A suspect that fails its probe is dead; when
    every suspect answers, the failure is the launch or control plane's (in place, then 93)."""
    suspects = tuple(h for h in pool.active if h in set(verdict.suspect_hosts))
    if not suspects or history.probed:
        return None
    # The control: an active host nothing accuses, else a spare (every active host accused: a rack lost together).
    control = next((h for h in (*pool.active, *pool.spare) if h not in suspects), None)
    names = ", ".join(h.name for h in suspects)
    also = f" (and {control.name} as a control)" if control else ""
    return Decision(Action.PROBE, f"{names} named only as suspect(s) by the log: probe{also}",
                    probe=(*suspects, *([control] if control else [])), probe_control=control)


_IN_PLACE = frozenset({FailureClass.TRANSIENT_IO, FailureClass.NETWORK, FailureClass.PREEMPTED})


def _final(
    fclass: FailureClass, verdict: Verdict, left_s: float | None, eta_s: float | None
) -> Decision | None:
    if fclass is FailureClass.SUCCESS:
        return Decision(Action.STOP, "success", exit_code=EXIT_OK)
    if fclass is FailureClass.CANCELLED:
        return Decision(Action.STOP, f"cancelled: {verdict.reason}", exit_code=EXIT_INTERRUPTED)
    if fclass is FailureClass.WALLTIME:
        if left_s is not None and eta_s is not None and left_s > eta_s:
            return Decision(Action.RETRY, f"walltime, but {left_s:.0f} s left reaches the next checkpoint "
                            f"({eta_s:.0f} s)")
        return Decision(Action.STOP, f"walltime: {verdict.reason}", exit_code=EXIT_NO_RETRY)
    if fclass in (FailureClass.USER_ERROR, FailureClass.OOM):
        return Decision(Action.STOP, f"not retryable: {verdict.reason}", exit_code=EXIT_NO_RETRY)
    return None


def _blame_reason(verdict: Verdict, named: tuple[Host, ...]) -> QuarantineReason:
    reasons = {b.reason for b in verdict.blamed if b.host in named}
    if QuarantineReason.SCRAPED in reasons or not reasons:
        return QuarantineReason.SCRAPED
    return sorted(reasons)[0]


def _swap(bad: tuple[Host, ...], why: QuarantineReason, pool: Pool) -> Decision:
    """Swap ``bad`` for spares at once: backoff is for retries on the same hosts (a spare is a different host,
    and the job's allocation is idle while it waits)."""
    names = ", ".join(h.name for h in bad)
    if len(bad) > len(pool.spare):
        return Decision(Action.STOP, f"{names} failed ({why}) and only {len(pool.spare)} spare(s) left",
                        swap_out=bad, quarantine_reason=why, exit_code=EXIT_RETRY_ELSEWHERE)
    return Decision(Action.SWAP, f"{names} out ({why})", swap_out=bad, quarantine_reason=why)


def _in_place(fclass: FailureClass, history: History, budgets: Budgets, delay: float, *,
              label: str | None = None, spent: int | None = None) -> Decision:
    """Retry on the same hosts while ``fclass``'s in-place budget lasts; ``label`` names the failure in reasons,
    ``spent`` is the exit code once the budget is spent (default: 3 for storage, else 93)."""
    used = history.in_place.get(fclass, 0)
    what = label or fclass.value
    if used >= budgets.in_place_retries:
        code = spent if spent is not None else (
            EXIT_NO_RETRY if fclass is FailureClass.TRANSIENT_IO else EXIT_RETRY_ELSEWHERE)
        return Decision(Action.STOP, f"{what}: persisted after {used} retries in place", exit_code=code)
    return Decision(Action.RETRY, f"{what}: retry in place ({used + 1}/{budgets.in_place_retries})",
                    delay_s=delay, budget=fclass)


def _unattributed(
    verdict: Verdict, pool: Pool, history: History, budgets: Budgets, delay: float
) -> Decision:
    fclass = verdict.failure_class
    if not history.probed:
        return _struck_out(pool, history, budgets) or Decision(
            Action.PROBE, f"{fclass.value} with no host named: probe the active hosts")
    if history.answered and history.retried is not None and history.retried[0] == verdict.signature:
        # The Arvados lesson: a job that kills itself the same way on healthy nodes would retry for ever.
        return Decision(Action.STOP, f"{fclass.value}: same failure on healthy hosts (attempts {history.retried[1]} "
                        f"and {history.attempts + 1}): {verdict.signature}", exit_code=EXIT_NO_RETRY)
    struck = _struck_out(pool, history, budgets)
    if struck is not None:
        return struck
    if history.unattributed > 0 and budgets.blind_rotation and pool.spare:
        return Decision(Action.SWAP, f"{pool.active[0].name} out blindly (no evidence; --blind-rotation)",
                        swap_out=(pool.active[0],), quarantine_reason=QuarantineReason.BLIND, delay_s=delay)
    # Every failure that named no host, node faults included, spends the one UNKNOWN budget. Once it is spent:
    # with every host answering its probe there is no node evidence, so the job stops (3); when the probes could
    # not reach the hosts (every one silent, or the control too) this allocation is in doubt: resubmit (93).
    # A host the log named only as a suspect (where a worker died of no cause shown) was probed like the rest: say
    # so, rather than that no host was named.
    unnamed = (f"{fclass.value} naming {', '.join(h.name for h in verdict.suspect_hosts)} only as a suspect"
               if verdict.suspect_hosts else f"{fclass.value} with no host named")
    if history.answered:
        label = f"{unnamed} (every host answered its probe)"
        return replace(_in_place(FailureClass.UNKNOWN, history, budgets, delay, label=label, spent=EXIT_NO_RETRY),
                       healthy=True)
    return _in_place(FailureClass.UNKNOWN, history, budgets, delay,
                     label=f"{unnamed} (the probes could not reach the hosts)")


def _struck_out(pool: Pool, history: History, budgets: Budgets) -> Decision | None:
    struck = _struck(pool, history, budgets)
    return _swap(struck, QuarantineReason.STRIKES, pool) if struck else None


def _struck(pool: Pool, history: History, budgets: Budgets) -> tuple[Host, ...]:
    """Active hosts at the strike limit, when not every active host is (then the hosts are not the cause)."""
    counts = {h: history.strikes.get(h, 0) + 1 for h in pool.active}
    over = tuple(h for h, n in counts.items() if n >= budgets.strikes)
    return over if over and len(over) < len(pool.active) else ()
