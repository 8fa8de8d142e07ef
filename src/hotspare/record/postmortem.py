"""Reports from a run's ledger: what each attempt did, every decision, and what each failure cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hotspare.act.observe import SCHEDULER_ERROR
from hotspare.record.ledger import AttemptRow, DecisionRow, EvidenceRow, Ledger, ObservationRow


@dataclass(frozen=True, slots=True)
class Incident:
    """A failed attempt that the run recovered from (or not)."""

    attempt: int
    died_of: str
    hosts: int
    #: Work since the last checkpoint written before the failure, times the hosts it ran on.
    lost_node_s: float
    #: From the failed attempt's end to the next attempt's first progress line (None: never recovered).
    recover_s: float | None


@dataclass(frozen=True, slots=True)
class Report:
    """Everything ``hotspare postmortem`` prints."""

    state: str
    exit_code: int | None
    attempts: list[AttemptRow]
    decisions: list[DecisionRow]
    roots: dict[int, list[str]]
    incidents: list[Incident]
    started_s: float
    #: Scheduler commands that did not answer (each a ``scheduler-error`` observation), in order.
    scheduler_errors: tuple[ObservationRow, ...] = ()

    @property
    def first_scheduler_error(self) -> str | None:
        """The first scheduler error, as recorded (None: the scheduler always answered, or was never asked)."""
        return self.scheduler_errors[0].detail if self.scheduler_errors else None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "exit_code": self.exit_code,
            "attempts": [asdict(a) for a in self.attempts],
            "decisions": [
                {"attempt": d.attempt, "at_s": round(d.at_s - self.started_s, 3), "action": d.action,
                 "hosts": list(d.hosts), "quarantine_reason": d.quarantine_reason, "reason": d.reason,
                 "delay_s": round(d.delay_s, 3)} for d in self.decisions
            ],
            "evidence": {str(k): v for k, v in self.roots.items()},
            "incidents": [asdict(i) for i in self.incidents],
            "scheduler_errors": {"count": len(self.scheduler_errors), "first": self.first_scheduler_error},
        }


def build_report(ledger: Ledger) -> Report:
    """Read the whole run."""
    attempts = ledger.attempts()
    state, code = ledger.run_state() or ("unknown", None)
    roots = {a.number: [_show_evidence(e) for e in ledger.evidence(a.number) if e.role == "root"][:3]
             for a in attempts}
    started = attempts[0].started_s if attempts else 0.0
    errors = tuple(o for o in ledger.observations() if o.kind == SCHEDULER_ERROR)
    return Report(state, code, attempts, ledger.decisions(), roots, _incidents(attempts), started, errors)


def _show_evidence(row: EvidenceRow) -> str:
    more = f" x{row.count}" if row.count > 1 else ""
    return f"{row.pattern}@{row.line}" + (f" {row.host}" if row.host else "") + more


def _incidents(attempts: list[AttemptRow]) -> list[Incident]:
    found = []
    for this, nxt in zip(attempts, [*attempts[1:], None][: len(attempts)], strict=True):
        if this.failure_class in (None, "success", "cancelled") or this.ended_s is None:
            continue
        saved = this.checkpoint_s if this.checkpoint_s is not None and this.checkpoint_s > this.started_s else None
        lost = (this.ended_s - (saved or this.started_s)) * len(this.hosts)
        recover = None
        if nxt is not None and nxt.first_progress_s is not None:
            recover = nxt.first_progress_s - this.ended_s
        found.append(Incident(this.number, this.failure_class, len(this.hosts), round(lost, 3),
                              None if recover is None else round(recover, 3)))
    return found


def render(report: Report) -> str:
    """The report as text tables."""
    lines = [f"run {report.state} (exit {report.exit_code})", "", "attempts:"]
    head = f"  {'#':>2}  {'ran on':<28} {'resumed':>7} {'last':>6}  {'died of':<12} {'rc':>4}  {'evicted':<20} evidence"
    lines.append(head)
    evicted = {d.attempt: f"{','.join(d.hosts)} ({d.quarantine_reason})" for d in report.decisions if d.hosts}
    for a in report.attempts:
        resumed = "-" if a.resumed_step is None else str(a.resumed_step)
        last = "-" if a.last_step is None else str(a.last_step)
        rc = "-" if a.rc is None else str(a.rc)
        evidence = "; ".join(report.roots.get(a.number, [])) or (a.stopped_by or "-")
        lines.append(f"  {a.number:>2}  {','.join(a.hosts)[:28]:<28} {resumed:>7} {last:>6}  "
                     f"{a.failure_class or 'running':<12} {rc:>4}  {evicted.get(a.number, '-')[:20]:<20} {evidence}")
    lines += ["", "decisions:"]
    for d in report.decisions:
        out = f" out: {', '.join(d.hosts)}" if d.hosts else ""
        wait = f" (after {d.delay_s:.1f} s)" if d.delay_s else ""
        lines.append(f"  +{d.at_s - report.started_s:7.2f}s  attempt {d.attempt}: {d.action}{out}: {d.reason}{wait}")
    if report.incidents:
        lines += ["", "incidents:", f"  {'#':>2}  {'died of':<12} {'lost node-s':>11} {'recovered in':>12}"]
        for i in report.incidents:
            recover = "never" if i.recover_s is None else f"{i.recover_s:.2f} s"
            lines.append(f"  {i.attempt:>2}  {i.died_of:<12} {i.lost_node_s:>11.2f} {recover:>12}")
    if report.scheduler_errors:
        first = report.scheduler_errors[0]
        lines += ["", f"scheduler errors: {len(report.scheduler_errors)} (the scheduler watch was off while they "
                  f"lasted); first, attempt {first.attempt}: {first.detail.splitlines()[0]}"]
    return "\n".join(lines) + "\n"
