"""hotspare: name the node that died, swap in a spare, resume.

The public API. Adapters (Parsl, Dask) import only what is listed here.

Each name is imported from its module when first used (PEP 562), so a command that needs the scanner
alone (``hotspare scrape``) does not pay for the supervisor, the ledger and the adapters' helpers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for type checkers
    from hotspare.act.checkpoint import Checkpoint, find_latest
    from hotspare.act.gateway import ProcessRunner, Runner
    from hotspare.act.launchers import LauncherKind
    from hotspare.act.life import LOOK_EVERY_S, QuarantineLife
    from hotspare.act.look import LookProbes, look_answers, probe_look
    from hotspare.act.node_states import unhealthy
    from hotspare.act.pbs_probe import PBS_QUICK_PROBE_S, probe_pbs_counted
    from hotspare.act.probe import (
        QUICK_PROBE_GAP_S,
        QUICK_PROBE_S,
        SUSPECT_PROBE_S,
        ProbeResult,
        Readmission,
        probe_hosts,
        probe_in_jobs_slurm,
        probe_suspects_slurm,
        probe_twice,
        readmit_expired_slurm,
    )
    from hotspare.act.runner import StopCause
    from hotspare.act.scheduler import JobFacts, QueryFailure, SchedulerKind, SchedulerQuery, pin_pbs_hosts
    from hotspare.decide.judge import (
        ANSWERED_RELOOK_S,
        RELOOK_S,
        SIGNAL_PROBE,
        SIGNAL_SCHEDULER,
        NodeFinding,
        NodeLook,
        ended_for_the_node,
        judge_look,
        probes_count,
        signals_why,
        two_signals,
        unanswered,
    )
    from hotspare.decide.life import DEFAULT_QUARANTINE_TTL_S
    from hotspare.decide.policy import Action, Budgets, Decision, History, decide
    from hotspare.decide.pool import Pool, resolve_allocation
    from hotspare.errors import (
        EXIT_INTERRUPTED,
        EXIT_NO_RETRY,
        EXIT_OK,
        EXIT_RETRY_ELSEWHERE,
        EXIT_USAGE,
        AllocationError,
        HostError,
        HotspareError,
        InputError,
        PatternError,
        PreflightError,
    )
    from hotspare.evidence.classify import Blame, ExitStatus, SchedulerFacts, Verdict, classify
    from hotspare.evidence.patterns import PatternSet, Role, load_patterns
    from hotspare.evidence.records import Evidence, ScanResult
    from hotspare.evidence.scan import Scanner, scan
    from hotspare.failures import FailureClass, QuarantineReason
    from hotspare.hosts import Host, expand_hosts, parse_hostfile, read_hostfile
    from hotspare.jobs import (
        HOOK_EXIT,
        HOOK_FAILED,
        Fault,
        JobEnd,
        JobJudgement,
        TaskJudgement,
        confirm_by_probe,
        confirm_suspects,
        judge_host_lost,
        judge_job,
        judge_task,
        lead_left,
        read_outputs,
        suspects_to_probe,
    )
    from hotspare.record.files import read_tail, write_atomic
    from hotspare.record.ledger import AttemptRow, DecisionRow, EvidenceRow, Ledger, ObservationRow
    from hotspare.record.postmortem import Goodput, Incident, Report, build_report
    from hotspare.record.quarantine import SNAPSHOT_NAME, Entry, Quarantine, changed_snapshots, read_snapshot
    from hotspare.record.workflow import JobRow, RetryRow, RetryScope, WorkflowRecord
    from hotspare.supervisor import RunConfig, Supervisor

#: Where each public name lives.
_WHERE: dict[str, str] = {
    name: module
    for module, names in (
        ("hotspare.act.checkpoint", "Checkpoint find_latest"),
        ("hotspare.act.gateway", "ProcessRunner Runner"),
        ("hotspare.act.launchers", "LauncherKind"),
        ("hotspare.act.life", "LOOK_EVERY_S QuarantineLife"),
        ("hotspare.decide.life", "DEFAULT_QUARANTINE_TTL_S"),
        (
            "hotspare.act.probe",
            "QUICK_PROBE_GAP_S QUICK_PROBE_S SUSPECT_PROBE_S ProbeResult Readmission probe_hosts "
            "probe_in_jobs_slurm probe_suspects_slurm probe_twice readmit_expired_slurm"
        ),
        ("hotspare.act.runner", "StopCause"),
        ("hotspare.act.node_states", "unhealthy"),
        ("hotspare.act.look", "LookProbes look_answers probe_look"),
        ("hotspare.act.pbs_probe", "PBS_QUICK_PROBE_S probe_pbs_counted"),
        ("hotspare.act.scheduler", "JobFacts QueryFailure SchedulerKind SchedulerQuery pin_pbs_hosts"),
        ("hotspare.decide.judge",
         "ANSWERED_RELOOK_S RELOOK_S SIGNAL_PROBE SIGNAL_SCHEDULER NodeFinding NodeLook ended_for_the_node judge_look "
         "probes_count signals_why two_signals unanswered"),
        ("hotspare.decide.policy", "Action Budgets Decision History decide"),
        ("hotspare.decide.pool", "Pool resolve_allocation"),
        (
            "hotspare.errors",
            "EXIT_INTERRUPTED EXIT_NO_RETRY EXIT_OK EXIT_RETRY_ELSEWHERE EXIT_USAGE AllocationError "
            "HostError HotspareError InputError PatternError PreflightError"
        ),
        ("hotspare.evidence.classify", "Blame ExitStatus SchedulerFacts Verdict classify"),
        ("hotspare.evidence.patterns", "PatternSet Role load_patterns"),
        ("hotspare.evidence.records", "Evidence ScanResult"),
        ("hotspare.evidence.scan", "Scanner scan"),
        ("hotspare.failures", "FailureClass QuarantineReason"),
        ("hotspare.hosts", "Host expand_hosts parse_hostfile read_hostfile"),
        (
            "hotspare.jobs",
            "HOOK_EXIT HOOK_FAILED Fault JobEnd JobJudgement TaskJudgement confirm_by_probe "
            "confirm_suspects judge_host_lost judge_job judge_task lead_left read_outputs "
            "suspects_to_probe"
        ),
        ("hotspare.record.files", "read_tail write_atomic"),
        ("hotspare.record.ledger", "AttemptRow DecisionRow EvidenceRow Ledger ObservationRow"),
        ("hotspare.record.postmortem", "Goodput Incident Report build_report"),
        ("hotspare.record.quarantine", "SNAPSHOT_NAME Entry Quarantine changed_snapshots read_snapshot"),
        ("hotspare.record.workflow", "JobRow RetryRow RetryScope WorkflowRecord"),
        ("hotspare.supervisor", "RunConfig Supervisor"),
    )
    for name in names.split()
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'hotspare' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
    "ANSWERED_RELOOK_S",
    "DEFAULT_QUARANTINE_TTL_S",
    "EXIT_INTERRUPTED",
    "EXIT_NO_RETRY",
    "EXIT_OK",
    "EXIT_RETRY_ELSEWHERE",
    "EXIT_USAGE",
    "HOOK_EXIT",
    "HOOK_FAILED",
    "LOOK_EVERY_S",
    "PBS_QUICK_PROBE_S",
    "QUICK_PROBE_GAP_S",
    "QUICK_PROBE_S",
    "RELOOK_S",
    "SIGNAL_PROBE",
    "SIGNAL_SCHEDULER",
    "SNAPSHOT_NAME",
    "SUSPECT_PROBE_S",
    "Action",
    "AllocationError",
    "AttemptRow",
    "Blame",
    "Budgets",
    "Checkpoint",
    "Decision",
    "DecisionRow",
    "Entry",
    "Evidence",
    "EvidenceRow",
    "ExitStatus",
    "FailureClass",
    "Fault",
    "Goodput",
    "History",
    "Host",
    "HostError",
    "HotspareError",
    "Incident",
    "InputError",
    "JobEnd",
    "JobFacts",
    "JobJudgement",
    "JobRow",
    "LauncherKind",
    "Ledger",
    "LookProbes",
    "NodeFinding",
    "NodeLook",
    "ObservationRow",
    "PatternError",
    "PatternSet",
    "Pool",
    "PreflightError",
    "ProbeResult",
    "ProcessRunner",
    "Quarantine",
    "QuarantineLife",
    "QuarantineReason",
    "QueryFailure",
    "Readmission",
    "Report",
    "RetryRow",
    "RetryScope",
    "Role",
    "RunConfig",
    "Runner",
    "ScanResult",
    "Scanner",
    "SchedulerFacts",
    "SchedulerKind",
    "SchedulerQuery",
    "StopCause",
    "Supervisor",
    "TaskJudgement",
    "Verdict",
    "WorkflowRecord",
    "build_report",
    "changed_snapshots",
    "classify",
    "confirm_by_probe",
    "confirm_suspects",
    "decide",
    "ended_for_the_node",
    "expand_hosts",
    "find_latest",
    "judge_host_lost",
    "judge_job",
    "judge_look",
    "judge_task",
    "lead_left",
    "load_patterns",
    "look_answers",
    "parse_hostfile",
    "pin_pbs_hosts",
    "probe_hosts",
    "probe_in_jobs_slurm",
    "probe_look",
    "probe_pbs_counted",
    "probe_suspects_slurm",
    "probe_twice",
    "probes_count",
    "read_hostfile",
    "read_outputs",
    "read_snapshot",
    "read_tail",
    "readmit_expired_slurm",
    "resolve_allocation",
    "scan",
    "signals_why",
    "suspects_to_probe",
    "two_signals",
    "unanswered",
    "unhealthy",
    "write_atomic",
]

__version__ = "0.1.0"
