"""Judging a batch job that ended (a Parsl block, a Dask job) or a task that failed in one.

The adapters gather what there is to know — the scheduler's record of the job, the states of its
nodes, the tail of its output, its exit status — into a :class:`JobEnd`; :func:`judge_job` (pure)
turns it into a :class:`JobJudgement`: the verdict, the hosts to keep out with the reason for each,
and the evidence rendered for the record. :func:`judge_task` does the same for one failed task's
output. Neither runs a command nor writes anything: the adapter acts on the judgement in one step.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from hotspare.act.node_states import unhealthy
from hotspare.act.probe import SUSPECT_PROBE_S, ProbeResult, probe_suspects_slurm
from hotspare.act.scheduler import JobFacts
from hotspare.decide.judge import blame, unanswered
from hotspare.errors import EXIT_NO_RETRY, EXIT_RETRY_ELSEWHERE
from hotspare.evidence.classify import SchedulerFacts, Verdict, classify
from hotspare.evidence.patterns import PatternSet
from hotspare.evidence.records import Evidence
from hotspare.evidence.scan import scan
from hotspare.failures import FailureClass, QuarantineReason
from hotspare.hosts import Host
from hotspare.record.files import read_tail

#: The line a job's hotspare hook prints on stderr when it fails, before the job exits: the job must not
#: run on nodes nobody checked. Adapters put it in their prologue; :func:`judge_job` looks for it.
HOOK_FAILED = "hotspare: job hook failed"
#: The exit status a job whose hook failed ends with.
HOOK_EXIT = 86


@dataclass(frozen=True, slots=True)
class JobEnd:
    """What is known of a job that ended: gathered by an adapter, judged by :func:`judge_job`."""

    job_id: str
    #: The job's hosts, lead (batch) node first; empty when nobody could tell.
    hosts: tuple[Host, ...] = ()
    #: The scheduler's record of the job (None: it could not be asked, or forgot the job).
    facts: JobFacts | None = None
    #: The scheduler's state of each host now (``DOWN*``, ``IDLE+NOT_RESPONDING``, ``down``).
    node_states: Mapping[Host, str] = field(default_factory=dict)
    #: The end of the job's stdout and stderr.
    output: bytes = b""
    #: The exit status the framework reports, when the scheduler has none.
    rc: int | None = None
    #: What could not be read (output files, records), said in the verdict's reason.
    unread: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JobJudgement:
    """How a job ended and which of its hosts to keep out, each with the reason."""

    job_id: str
    verdict: Verdict
    keep_out: tuple[tuple[Host, QuarantineReason], ...]
    #: The evidence, one line each, for the job's record.
    evidence: tuple[str, ...]
    #: The scheduler's word for the job's end (``NODE_FAIL``, ``COMPLETED``, ``F``), or the framework's.
    state: str
    #: The job's exit status as the scheduler (else the framework) reports it.
    exit_code: int | None = None
    #: The job's hotspare hook failed: the job stopped before any work (a setup error to show the user).
    hook_failed: bool = False

    @property
    def node_lost(self) -> bool:
        """The job ended because one of its nodes failed (its hosts are in :attr:`keep_out`)."""
        return bool(self.keep_out)


def judge_job(end: JobEnd, patterns: PatternSet, *, state: str = "") -> JobJudgement:
    """The verdict on an ended job (pure): its output through the classifier, the scheduler's record and node
    states as corroboration. A ``NODE_FAIL`` job with no host named in its output blames the hosts the
    scheduler reports down; a job whose hotspare hook failed is a setup error, never a node fault."""
    result = scan(end.output, patterns)
    said = end.facts.state if end.facts else state
    rc = _exit_status(end)
    hook = _hook_failure(end.output)
    if hook is not None:
        verdict = _failed(FailureClass.USER_ERROR, f"the job's hotspare hook failed, so the job stopped rather "
                          f"than run on nodes nobody checked: {hook}", result.evidence)
        return JobJudgement(end.job_id, verdict, (), render_evidence(result.evidence), said, rc, hook_failed=True)
    facts = SchedulerFacts(job_state=end.facts.state if end.facts else None, node_states=dict(end.node_states))
    verdict = classify(result, rc=rc, allocation=end.hosts or None, facts=facts)
    if end.facts is not None and end.facts.node_failed and not verdict.exclude_hosts:
        down = tuple(h for h in end.hosts if unhealthy(end.node_states.get(h, "")))
        if down:
            verdict = blame(verdict, down, QuarantineReason.SCHEDULER,
                            "reported down by the scheduler, which ended the job for a node failure")
    if end.unread:
        verdict = replace(verdict, reason=f"{verdict.reason} (could not read: {'; '.join(end.unread)})")
    return JobJudgement(end.job_id, verdict, keep_out(verdict), render_evidence(result.evidence), said, rc)


def suspects_to_probe(judgement: JobJudgement, hosts: Sequence[Host]) -> tuple[tuple[Host, ...], Host | None]:
    """The job's ``hosts`` its output named only as suspects (not already kept out), and a control: another of
    them nothing accused (None if there is none). Probe them before believing the lead."""
    out = {h for h, _ in judgement.keep_out}
    suspects = tuple(h for h in judgement.verdict.suspect_hosts if h not in out and h in hosts)
    accused = set(suspects) | out | set(judgement.verdict.blamed_hosts)
    return suspects, next((h for h in hosts if h not in accused), None)


def confirm_suspects(judgement: JobJudgement, probes: Sequence[ProbeResult], control: Host | None) -> JobJudgement:
    """The judgement once its suspects were probed: a suspect that did not answer is kept out (reason ``probed``:
    the lead and the failed probe are two signals); one that answered is left alone. If the ``control`` failed too,
    the probe path is in doubt and nobody is blamed on it."""
    suspects = set(judgement.verdict.suspect_hosts)
    probed = [r for r in probes if r.host in suspects or r.host == control]
    dead = tuple(h for h in unanswered(probed, [r.host for r in probed], control=control) if h in suspects)
    if not dead:
        return judgement
    kept = judgement.verdict.exclude_hosts
    verdict = blame(judgement.verdict, dead, QuarantineReason.PROBED,
                    "named as a suspect by the job's output, and did not answer a probe")
    if kept:
        verdict = replace(verdict, exclude_hosts=(*kept, *dead), blamed=(*judgement.verdict.blamed, *verdict.blamed))
    return replace(judgement, verdict=verdict, keep_out=keep_out(verdict))


def confirm_by_probe(judged: JobJudgement, hosts: Sequence[Host], workdir: Path, *,
                     timeout_s: float) -> tuple[JobJudgement, tuple[str, ...]]:
    """For a workflow adapter on SLURM: probe the suspects of an ended job (``srun --immediate``, beside a control
    host of the job, at most :data:`~hotspare.act.probe.SUSPECT_PROBE_S`) and keep out only those that fail. Returns
    the judgement and one line per probe answer, for the adapter's log."""
    suspects, control = suspects_to_probe(judged, hosts)
    if not suspects:
        return judged, ()
    probes = probe_suspects_slurm(suspects, control, workdir, timeout_s=min(timeout_s, SUSPECT_PROBE_S))
    notes = tuple(f"{r.host.name} named as a suspect{' (control)' if r.host == control else ''}; probe: {r.detail}"
                  for r in probes)
    return confirm_suspects(judged, probes, control), notes


def judge_host_lost(job_id: str, hosts: Sequence[Host], why: str, *, state: str,
                    reason: QuarantineReason = QuarantineReason.SCHEDULER) -> JobJudgement:
    """A job lost with ``hosts`` on a signal from outside its output (the scheduler dropped its lead node, a
    simulated host powered off): a node loss blaming exactly those hosts; ``why`` reads after their names."""
    verdict = blame(_failed(FailureClass.UNKNOWN, why, ()), tuple(hosts), reason, why)
    return JobJudgement(job_id, verdict, keep_out(verdict), (), state)


def lead_left(hosts: Sequence[Host], facts: JobFacts | None) -> str | None:
    """Why a job still RUNNING is dead: SLURM keeps a ``--no-kill`` job running on its other nodes when
    the lead (batch) node dies, with no batch script left (seen on the test bed), holding the nodes until
    the walltime. None while the lead is still one of the job's nodes, or when nobody can tell."""
    if not hosts or facts is None or facts.state != "RUNNING" or not facts.hosts or hosts[0] in facts.hosts:
        return None
    return (f"(the job's lead node, where its batch script ran) left the job: the scheduler kept it running on "
            f"{', '.join(h.name for h in facts.hosts)} only")


def keep_out(verdict: Verdict) -> tuple[tuple[Host, QuarantineReason], ...]:
    """The verdict's hosts to keep out, each with the quarantine reason its blame carries."""
    reasons = {b.host: b.reason for b in verdict.blamed}
    return tuple((host, reasons.get(host, QuarantineReason.SCRAPED)) for host in verdict.exclude_hosts)


def render_evidence(evidence: Iterable[Evidence], limit: int = 20) -> tuple[str, ...]:
    """One line per piece of evidence: ``pattern@line host: text`` (text cut at 300 characters)."""
    return tuple(f"{e.pattern}@{e.line} {e.host_text or ''}: {e.text[:300]}" for e in list(evidence)[:limit])


def read_outputs(paths: Iterable[str | Path | None]) -> tuple[bytes, tuple[str, ...]]:
    """The tails of a job's output files, joined, and a note for each that could not be read."""
    data, unread = b"", []
    for path in paths:
        if not path:
            continue
        try:
            data += read_tail(path)[0] + b"\n"
        except OSError as exc:
            unread.append(f"{path} ({exc.strerror})")
    return data, tuple(unread)


class Fault(enum.Enum):
    """What a failed task's try costs the workflow."""

    #: A node failed under it: retry elsewhere at no cost to the task.
    NODE = "node"
    #: The task itself is broken: retrying will fail the same way.
    USER = "user"
    #: Anything else: an ordinary retry.
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class TaskJudgement:
    """How one try of a task failed."""

    fault: Fault
    keep_out: tuple[tuple[Host, QuarantineReason], ...]
    reason: str


#: A task run under ``hotspare launch`` already judged its failure; its exit code says how. Exit 3 is an ordinary
#: retry, not a user error: the supervisor stops with 3 for a user error, but also for the same failure twice on
#: healthy hosts or a time/attempt limit, and the exit code does not tell them apart. So the workflow's own
#: ``retries`` decide, as for any failure; never free, since the supervisor found no node at fault.
_SUPERVISOR_SAYS: Mapping[int, TaskJudgement] = {
    EXIT_NO_RETRY: TaskJudgement(Fault.OTHER, (), "the task's supervisor stopped with exit 3 (a user error, the same "
                                 "failure on healthy hosts, or a time/attempt limit): an ordinary retry, never free"),
    EXIT_RETRY_ELSEWHERE: TaskJudgement(Fault.NODE, (), "the task's supervisor asked to be retried on other nodes "
                                        "(exit 93); the hosts it found are in its own quarantine snapshot"),
}


def judge_task(output: bytes, rc: int | None, patterns: PatternSet) -> TaskJudgement:
    """The judgement on one failed try of a task from what it printed since its last try and its exit status."""
    said = _SUPERVISOR_SAYS.get(rc) if rc is not None else None
    if said is not None:
        return said
    if not output:
        return TaskJudgement(Fault.OTHER, (), f"exit {rc}, no output to judge" if rc is not None else "no output")
    verdict = classify(scan(output, patterns), rc=rc)
    if verdict.node_fault:
        return TaskJudgement(Fault.NODE, keep_out(verdict), verdict.reason)
    if verdict.failure_class is FailureClass.USER_ERROR:
        return TaskJudgement(Fault.USER, (), verdict.reason)
    return TaskJudgement(Fault.OTHER, (), verdict.reason)


#: Scheduler job states that say the job did not run to its end, whatever exit code the record shows: SLURM
#: reports a NODE_FAIL job's ExitCode as 0:0 (seen on the bed), which must not read as success.
_CUT_SHORT = frozenset({"NODE_FAIL", "BOOT_FAIL", "TIMEOUT", "DEADLINE", "PREEMPTED", "CANCELLED", "OUT_OF_MEMORY"})


def _exit_status(end: JobEnd) -> int | None:
    """The job's exit status as evidence: the scheduler's (else the framework's); an exit 0 of a job the
    scheduler cut short says nothing (then the output and the job state decide)."""
    if end.facts is not None and end.facts.exit_code is not None and end.facts.exit_code < 0:
        # PBS's own JOB_EXEC code (Exit_status -20: the mother superior went down), never the job's: read as an
        # exit status, -20 became "SIGTSTP (rc 148)" on the bed. JobFacts.node_failed reads what it says.
        return None
    rc = end.facts.exit_code if end.facts and end.facts.exit_code is not None else end.rc
    state = end.facts.state.upper().split()[0] if end.facts and end.facts.state.strip() else ""
    return None if rc == 0 and state in _CUT_SHORT else rc


def _hook_failure(output: bytes) -> str | None:
    at = output.rfind(HOOK_FAILED.encode())
    if at < 0:
        return None
    return output[at:].split(b"\n", 1)[0].decode("utf-8", "replace")[:300]


def _failed(fclass: FailureClass, why: str, evidence: tuple[Evidence, ...]) -> Verdict:
    return Verdict(fclass, (), (), (), fclass.retryable, (), f"{fclass.value}: {why}", evidence)
