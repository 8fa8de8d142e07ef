"""Reports from a run's ledger: what each attempt did, every decision, and what each failure cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hotspare.act.observe import SCHEDULER_ERROR
from hotspare.record.ledger import (
    PROGRESS,
    AttemptRow,
    DecisionRow,
    EvidenceRow,
    Ledger,
    ObservationRow,
    TimelineRow,
)


@dataclass(frozen=True, slots=True)
class Incident:
    """A failed attempt and what it cost, on the honest timeline: from the last progress before the fault
    (the fault itself is not seen; its last sign of life is) to the first progress after it.

    Each span is None when its end was never reached (a run that did not recover) or was not recorded.
    """

    attempt: int
    died_of: str
    hosts: int
    #: Work since the last complete checkpoint (or the attempt's start) up to the fault, times the hosts.
    lost_node_s: float
    #: Last progress before the fault, seconds from the run's start (None: the attempt never progressed).
    last_progress_at_s: float | None
    #: Last progress -> the attempt ended (the launcher exited or was stopped).
    detect_s: float | None
    #: Attempt ended -> the decision was recorded (probes, scheduler questions).
    decide_s: float | None
    #: Decision -> the next attempt started (backoff included).
    relaunch_s: float | None
    #: Next attempt started -> its first progress line.
    resume_s: float | None
    #: Last progress before -> first progress after (None: never recovered).
    recover_s: float | None


@dataclass(frozen=True, slots=True)
class Goodput:
    """Where the run's wall time went. The parts add up to ``wall_s``.

    ``productive_s`` is progress that survived (kept by the checkpoint the next attempt resumed from, or by
    the end of the run); time spent writing checkpoints is inside it, as the trainer does not report it.
    """

    wall_s: float
    productive_s: float
    #: Progress made and then thrown away by a failure (since the last kept checkpoint).
    lost_s: float
    #: Last progress -> the attempt ended, summed over failed attempts.
    detect_s: float
    #: Attempt ended -> decision.
    decide_s: float
    #: Decision -> next attempt started.
    relaunch_s: float
    #: Each attempt's start -> its first progress line (launch, loading the checkpoint, the first step).
    startup_s: float
    #: Before the first attempt, after the last one, and attempts with no progress at all.
    other_s: float

    @property
    def ettr(self) -> float:
        """Effective training time ratio: productive time / wall time (0 for an empty run)."""
        return self.productive_s / self.wall_s if self.wall_s > 0 else 0.0

    def to_json(self) -> dict[str, float]:
        parts = {k: round(getattr(self, k), 3) for k in (
            "wall_s", "productive_s", "lost_s", "detect_s", "decide_s", "relaunch_s", "startup_s", "other_s")}
        return {"ettr": round(self.ettr, 4), **parts}


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
    goodput: Goodput
    #: Progress samples and checkpoints, for pictures of the run.
    timeline: tuple[TimelineRow, ...] = ()
    #: The run's allocation (active and spare hosts at the start), from its configuration.
    allocation: tuple[str, ...] = ()
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
            "goodput": self.goodput.to_json(),
            "scheduler_errors": {"count": len(self.scheduler_errors), "first": self.first_scheduler_error},
        }


def build_report(ledger: Ledger) -> Report:
    """Read the whole run."""
    attempts = ledger.attempts()
    state, code = ledger.run_state() or ("unknown", None)
    roots = {a.number: [_show_evidence(e) for e in ledger.evidence(a.number) if e.role == "root"][:3]
             for a in attempts}
    times = ledger.run_times()
    started = times[0] if times else attempts[0].started_s if attempts else 0.0
    errors = tuple(o for o in ledger.observations() if o.kind == SCHEDULER_ERROR)
    decisions = ledger.decisions()
    timeline = tuple(ledger.timeline())
    spans = _spans(attempts, decisions, timeline)
    ended = times[1] if times and times[1] is not None else _last_seen(attempts, decisions, started)
    config = ledger.run_config() or {}
    return Report(state, code, attempts, decisions, roots, _incidents(spans, started), started,
                  _goodput(spans, started, ended), timeline, tuple(str(h) for h in config.get("allocation", ())),
                  scheduler_errors=errors)


def _show_evidence(row: EvidenceRow) -> str:
    more = f" x{row.count}" if row.count > 1 else ""
    return f"{row.pattern}@{row.line}" + (f" {row.host}" if row.host else "") + more


@dataclass(frozen=True, slots=True)
class _Span:
    """One attempt on the run's clock, with what followed it."""

    row: AttemptRow
    last_progress_s: float | None
    #: Until when its progress survived (None: none did).
    kept_until_s: float | None
    decided_s: float | None
    next_row: AttemptRow | None


def _spans(attempts: list[AttemptRow], decisions: list[DecisionRow], timeline: tuple[TimelineRow, ...]) -> list[_Span]:
    last: dict[int, float] = {}
    for mark in timeline:
        if mark.kind == PROGRESS:
            last[mark.attempt] = max(mark.at_s, last.get(mark.attempt, mark.at_s))
    decided: dict[int, float] = {}
    for d in decisions:
        decided.setdefault(d.attempt, d.at_s)
    spans = []
    for index, this in enumerate(attempts):
        nxt = attempts[index + 1] if index + 1 < len(attempts) else None
        # A ledger from before progress was sampled: the attempt's end stands in for its last progress.
        last_progress = last.get(this.number, this.ended_s if this.first_progress_s is not None else None)
        spans.append(_Span(this, last_progress, _kept_until(this, nxt, last_progress), decided.get(this.number), nxt))
    return spans


def _kept_until(this: AttemptRow, nxt: AttemptRow | None, last_progress: float | None) -> float | None:
    """Until when an attempt's progress survived: all of it when it succeeded (or is the last, still running),
    else up to the checkpoint the next attempt resumed from, if this attempt wrote it."""
    if this.first_progress_s is None or last_progress is None:
        return None
    if this.failure_class in (None, "success") or (nxt is None and this.failure_class == "cancelled"):
        return last_progress
    resumed = nxt.resumed_step if nxt is not None else this.checkpoint_step
    if resumed is None or this.checkpoint_s is None or resumed != this.checkpoint_step:
        return None
    if this.checkpoint_s < this.first_progress_s:
        return None
    return min(this.checkpoint_s, last_progress)


def _incidents(spans: list[_Span], started: float) -> list[Incident]:
    found = []
    for span in spans:
        this, nxt = span.row, span.next_row
        if this.failure_class in (None, "success", "cancelled") or this.ended_s is None:
            continue
        fault = span.last_progress_s if span.last_progress_s is not None else this.ended_s
        saved = this.checkpoint_s if this.checkpoint_s is not None and this.checkpoint_s > this.started_s else None
        lost = max(0.0, fault - (saved or this.started_s)) * len(this.hosts)
        first_after = nxt.first_progress_s if nxt is not None else None
        found.append(Incident(
            this.number, this.failure_class, len(this.hosts), round(lost, 3),
            _rel(span.last_progress_s, started),
            _gap(span.last_progress_s, this.ended_s), _gap(this.ended_s, span.decided_s),
            _gap(span.decided_s, nxt.started_s if nxt else None), _gap(nxt.started_s if nxt else None, first_after),
            _gap(span.last_progress_s, first_after)))
    return found


def _goodput(spans: list[_Span], started: float, ended: float) -> Goodput:
    parts = dict.fromkeys(("productive", "lost", "detect", "decide", "relaunch", "startup"), 0.0)
    for span in spans:
        this, nxt = span.row, span.next_row
        end = this.ended_s if this.ended_s is not None else ended
        if this.first_progress_s is None or span.last_progress_s is None:
            continue  # an attempt that never progressed: all of it is "other" (below)
        first, last = this.first_progress_s, span.last_progress_s
        parts["startup"] += max(0.0, first - this.started_s)
        kept = span.kept_until_s if span.kept_until_s is not None else first
        parts["productive"] += max(0.0, kept - first)
        parts["lost"] += max(0.0, last - kept)
        parts["detect"] += max(0.0, end - last)
        if span.decided_s is not None and this.ended_s is not None and this.failure_class != "success":
            parts["decide"] += max(0.0, span.decided_s - this.ended_s)
            if nxt is not None:
                parts["relaunch"] += max(0.0, nxt.started_s - span.decided_s)
    if spans and spans[-1].row.failure_class in (None, "success"):
        parts["detect"] -= _tail(spans[-1], ended)  # a clean end is no failure to detect
    wall = max(0.0, ended - started)
    other = max(0.0, wall - sum(parts.values()))
    return Goodput(wall, parts["productive"], parts["lost"], parts["detect"], parts["decide"], parts["relaunch"],
                   parts["startup"], other)


def _tail(span: _Span, ended: float) -> float:
    end = span.row.ended_s if span.row.ended_s is not None else ended
    return 0.0 if span.last_progress_s is None else max(0.0, end - span.last_progress_s)


def _last_seen(attempts: list[AttemptRow], decisions: list[DecisionRow], started: float) -> float:
    """The latest moment the ledger knows of, for a run that is still going (or was killed)."""
    times = [started, *(d.at_s for d in decisions)]
    for a in attempts:
        times += [t for t in (a.started_s, a.ended_s, a.first_progress_s) if t is not None]
    return max(times)


def _gap(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(b - a, 3)


def _rel(t: float | None, started: float) -> float | None:
    return None if t is None else round(t - started, 3)


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
        lines += ["", "incidents (from the last progress before the fault to the first progress after it):",
                  f"  {'#':>2}  {'died of':<12} {'lost node-s':>11} {'detect':>7} {'decide':>7} {'relaunch':>8} "
                  f"{'resume':>7} {'recovered in':>12}"]
        for i in report.incidents:
            spans = " ".join(f"{_secs(v):>{w}}" for v, w in (
                (i.detect_s, 7), (i.decide_s, 7), (i.relaunch_s, 8), (i.resume_s, 7)))
            recover = "never" if i.recover_s is None else f"{i.recover_s:.2f} s"
            lines.append(f"  {i.attempt:>2}  {i.died_of:<12} {i.lost_node_s:>11.2f} {spans} {recover:>12}")
    g = report.goodput
    if g.wall_s > 0:
        parts = ", ".join(f"{name} {value:.2f} s" for name, value in (
            ("lost work", g.lost_s), ("detection", g.detect_s), ("decision", g.decide_s),
            ("relaunch", g.relaunch_s), ("startup", g.startup_s), ("other", g.other_s)) if value >= 0.005)
        lines += ["", f"goodput: {100 * g.ettr:.1f} % of {g.wall_s:.2f} s wall time made progress that was kept "
                  f"({g.productive_s:.2f} s)" + (f"; the rest: {parts}" if parts else "")]
    if report.scheduler_errors:
        first = report.scheduler_errors[0]
        lines += ["", f"scheduler errors: {len(report.scheduler_errors)} (the scheduler watch was off while they "
                  f"lasted); first, attempt {first.attempt}: {first.detail.splitlines()[0]}"]
    return "\n".join(lines) + "\n"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
