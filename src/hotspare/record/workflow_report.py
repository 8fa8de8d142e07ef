"""``hotspare postmortem WORKFLOW_DIR``: what a workflow's adapter recorded — each batch job and how it ended, each
failed try of a task, the hosts the workflow keeps out (until when), each readmission probe, each job the quarantine
left without room, the spares that took a lost job's place, and scheduler commands that did not answer."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hotspare.decide.life import utc_clock
from hotspare.record.ledger import Ledger, ObservationRow
from hotspare.record.quarantine import Entry, Quarantine
from hotspare.record.workflow import JobRow, RetryRow, WorkflowRecord

_SCHEDULER_ERROR = "scheduler-error"
#: The quarantine's life as :mod:`hotspare.act.life` records it: readmission probes, and jobs left without room.
_LIFE = ("readmit", "no-room")
#: What the Dask clusters record when a spare job takes a lost job's place (hotspare_dask.spares.SPARE_KIND).
_SPARE = "spare"


@dataclass(frozen=True, slots=True)
class WorkflowReport:
    """A workflow directory's record, for people and for ``--json``."""

    jobs: list[JobRow]
    retries: list[RetryRow]
    quarantine: list[Entry]
    scheduler_errors: tuple[ObservationRow, ...]
    #: Readmission probes and "no room" findings, in order.
    life: tuple[ObservationRow, ...] = ()
    #: Each promotion of a spare job, as recorded ("spare X (batch job N) on H took the place of Y").
    spares: tuple[ObservationRow, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "jobs": [asdict(j) for j in self.jobs],
            "retries": [{**asdict(r), "scope": r.scope.value, "fault": r.fault.value} for r in self.retries],
            "quarantine": [{"host": e.host.raw, "reason": e.reason.value, "since_s": e.since_s,
                            "expires_s": e.expires_s, "detail": e.detail} for e in self.quarantine],
            "life": [asdict(o) for o in self.life],
            "spares": [{"at_s": o.at_s, "host": o.host, "detail": o.detail} for o in self.spares],
            "scheduler_errors": {"count": len(self.scheduler_errors),
                                 "first": self.scheduler_errors[0].detail if self.scheduler_errors else None},
        }


def build_workflow_report(ledger: Ledger) -> WorkflowReport | None:
    """The workflow's record, or None when the ledger holds no workflow (a single run's ledger)."""
    record = WorkflowRecord(ledger)
    jobs, retries = record.jobs(), record.retries()
    if not jobs and not retries:
        return None
    seen = ledger.observations()
    errors = tuple(o for o in seen if o.kind == _SCHEDULER_ERROR)
    life = tuple(o for o in seen if o.kind in _LIFE)
    spares = tuple(o for o in seen if o.kind == _SPARE)
    return WorkflowReport(jobs, retries, Quarantine.attach(ledger.connection).entries(), errors, life, spares)


def render_workflow(report: WorkflowReport) -> str:
    """The report as text tables."""
    start = min(j.submitted_s for j in report.jobs) if report.jobs else 0.0
    lines = ["jobs:", f"  {'job':<12} {'+submitted':>10} {'hosts':<24} {'state':<12} {'class':<12} verdict"]
    for j in report.jobs:
        lines.append(f"  {j.job_id[:12]:<12} {j.submitted_s - start:>9.1f}s {','.join(j.hosts)[:24]:<24} "
                     f"{(j.scheduler_state or '-')[:12]:<12} {(j.failure_class or 'running'):<12} {j.verdict or '-'}")
    if report.retries:
        lines += ["", "failed tries:",
                  f"  {'task':>5} {'try':>4} {'scope':<10} {'fault':<6} {'cost':>5} {'try_s':>7}  why"]
        for r in report.retries:
            task, tried = ("-" if v is None else str(v) for v in (r.task_id, r.try_id))
            try_s = "-" if r.try_s is None else f"{r.try_s:.1f}"
            lines.append(f"  {task:>5} {tried:>4} {r.scope.value:<10} {r.fault.value:<6} {r.cost:>5g} {try_s:>7}  "
                         f"{r.reason}")
    lines += ["", "kept out:" if report.quarantine else "kept out: nobody"]
    lines += [f"  {e.host.raw} ({e.reason.value}): {e.detail}; kept out {_until(e)}" for e in report.quarantine]
    if report.life:
        lines += ["", "quarantine:"]
        lines += [f"  {o.at_s - start:>9.1f}s {o.kind:<8} {o.host or '-'}: {o.detail}" for o in report.life]
    if report.spares:
        lines += ["", "spares:"] + [f"  {o.at_s - start:>9.1f}s {o.detail}" for o in report.spares]
    if report.scheduler_errors:
        lines += ["", f"scheduler errors: {len(report.scheduler_errors)}; first: "
                  f"{report.scheduler_errors[0].detail.splitlines()[0]}"]
    return "\n".join(lines) + "\n"


def _until(entry: Entry) -> str:
    if entry.expires_s is None:
        return "until readmitted by hand"
    return f"until {utc_clock(entry.expires_s)}"
