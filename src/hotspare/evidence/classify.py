"""Evidence, exit status and scheduler facts to one verdict (the termination matrix).

The rules, in order (each from the seeds):

1. Hosts outside the allocation are ``foreign``: reported, never blamed.
2. Root evidence of a node fault (``node_loss``, ``rank_killed``, ``gpu_hw``)
   that names an allocation host decides the class, and those hosts are
   blamed. Cascade lines (``rank N died from signal 15``, a survivor's
   ``CANCELLED ... DUE TO NODE FAILURE``) never blame anyone. OOM evidence
   explains SIGKILLed ranks (the kernel killed them, not a node fault). When
   every host of the job reports killed ranks there is no victim to name.
3. Otherwise the first root evidence decides (``transient_io`` for ENOSPC,
   ``walltime`` only with walltime evidence, ``user_error`` only before any
   progress; a program error the job made progress after, until a time limit,
   a cancellation or a preemption stopped it, yields to that stop).
4. Otherwise the first consequence line gives the class (``node_loss`` from a
   survivor's cancellation line) but blames nobody; then the scheduler's job
   state, then the exit status decide.
5. When no line names a host, nobody is blamed: never guess.

Origin and eviction are two answers. ``blamed_hosts`` are the hosts where
the failure started, when the log shows it: the node a launcher or scheduler
says failed, the first rank that died of a signal, the host of an OOM kill or
a GPU fault (lines whose pattern says ``host_means = "origin"`` or ``"dead"``,
before the teardown began). ``exclude_hosts`` is the subset with node-fault
evidence, the only hosts a supervisor swaps out. A segfault on A followed by
the launcher's SIGTERM to every other rank blames A and excludes nobody.
Hosts named only by a lost connection or a peer's view (``suspect``) are
leads: reported, never blamed.

Exit status 0 is success before all of these: the launcher's word on the
job outranks error lines the job survived. No verdict without evidence: with
no exit status, a log that shows no failure is ``unknown``, never ``success``
(success needs exit 0 or the scheduler's ``COMPLETED``).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from hotspare.act.node_states import unhealthy
from hotspare.act.scheduler import parse_duration_s
from hotspare.evidence import wordguess
from hotspare.evidence.patterns import LAST_RESORT, LINE_PREFIX, HostMeaning, Role
from hotspare.evidence.records import LAST_KEPT, Evidence, Progress, ScanResult
from hotspare.evidence.signature import failure_signature
from hotspare.failures import FailureClass, QuarantineReason
from hotspare.hosts import Host


def _opening(regex: str) -> re.Pattern[str]:
    """``regex`` read at a line's start as the packs read their ``^``: behind the prefixes a launcher, a log
    collector or a paste puts on every line (LINE_PREFIX: a timestamp, '[rank3]:', 'host: ', a quote's '> '), so a
    rule keyed on how a line opens holds for a log that came through a logger, kubectl, journald or CI."""
    return re.compile(f"^{LINE_PREFIX}(?:{regex})")


# SLURM job states (sacct/scontrol) and what they mean here; unknown states
# fall through to the exit status.
_JOB_STATES: Mapping[str, FailureClass] = {
    "NODE_FAIL": FailureClass.NODE_LOSS,
    "BOOT_FAIL": FailureClass.NODE_LOSS,
    "TIMEOUT": FailureClass.WALLTIME,
    "DEADLINE": FailureClass.WALLTIME,
    "PREEMPTED": FailureClass.PREEMPTED,
    "CANCELLED": FailureClass.CANCELLED,
    "OUT_OF_MEMORY": FailureClass.OOM,
    "COMPLETED": FailureClass.SUCCESS,
}



@dataclass(frozen=True, slots=True)
class ExitStatus:
    """How the launcher ended: an exit code or a signal (never both)."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def from_rc(cls, rc: int) -> ExitStatus:
        """Read a return code: negative is Popen's signal, 129..192 the shell's 128+N."""
        if rc < 0:
            return cls(signal=-rc)
        if 128 < rc <= 128 + 64:
            return cls(signal=rc - 128)
        return cls(code=rc)

    @property
    def ok(self) -> bool:
        """Exit code 0."""
        return self.code == 0

    def __str__(self) -> str:
        if self.signal is None:
            return f"exit {self.code}"
        try:
            name = signal.Signals(self.signal).name
        except ValueError:
            name = f"signal {self.signal}"
        return f"{name} (rc {128 + self.signal})"


@dataclass(frozen=True, slots=True)
class SchedulerFacts:
    """What the scheduler says about the job and its nodes."""

    job_state: str | None = None
    #: Node state strings as the scheduler prints them (``DOWN*``, ``IDLE+NOT_RESPONDING``).
    node_states: Mapping[Host, str] = field(default_factory=dict)

    def unhealthy(self) -> list[Host]:
        """Nodes the scheduler reports down or not responding."""
        return sorted(h for h, s in self.node_states.items() if unhealthy(s))


@dataclass(frozen=True, slots=True)
class Blame:
    """A host held responsible, with the reason and the lines that name it."""

    host: Host
    reason: QuarantineReason
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why an attempt ended and what to do about its hosts."""

    failure_class: FailureClass
    blamed: tuple[Blame, ...]
    mentioned_hosts: tuple[Host, ...]
    foreign_hosts: tuple[Host, ...]
    retryable: bool
    exclude_hosts: tuple[Host, ...]
    reason: str
    evidence: tuple[Evidence, ...]
    #: Hosts named only by a lost connection, a launch failure or a peer's view: leads, never blame.
    suspect_hosts: tuple[Host, ...] = ()
    #: What the attempt died of with what changes between runs masked (see :mod:`hotspare.evidence.signature`):
    #: two failures with one signature on healthy hosts are the program's.
    signature: str = ""
    #: The class came from a rank's own crash signal (SIGSEGV, SIGABRT, ...): its host is blamed as the origin,
    #: but that is no node fault until other evidence joins it.
    crash: bool = False

    @property
    def blamed_hosts(self) -> tuple[Host, ...]:
        """The blamed hosts, canonical, in blame order."""
        return tuple(b.host for b in self.blamed)

    @property
    def node_fault(self) -> bool:
        """Whether the verdict says a node failed: hosts to keep out, or a node-fault class that no crash or
        job-wide kill explains (a rank SIGKILLed on a host the log did not name)."""
        return bool(self.exclude_hosts) or (self.failure_class.excludes_hosts and not self.crash)


@dataclass(frozen=True, slots=True)
class _Decision:
    failure_class: FailureClass
    blamed: tuple[Blame, ...]
    reason: str
    #: The decision found that no host can be named (a job-wide kill): no origin is looked for.
    nobody: bool = False
    #: No line decided: the class came from the exit status alone (a rank's crash may still say more).
    from_status: bool = False
    #: The class is a rank's own crash (see :attr:`Verdict.crash`).
    crash: bool = False
    #: The line of the summary line that decided (``from_status`` from a line), if any.
    line: int | None = None
    #: The program's error line decided and the job's abort was its own (see :func:`_error_then_abort`).
    own_abort: bool = False
    #: Where a failure of unknown cause started (a worker that died, nothing says why): leads to probe, not blame.
    leads: tuple[Host, ...] = ()
    #: No exit status and no line shows a failure or a success: only the log's words are left (see :func:`_guessed`).
    bare: bool = False


def classify(
    result: ScanResult | Iterable[Evidence],
    *,
    rc: int | ExitStatus | None = None,
    allocation: Collection[Host] | None = None,
    facts: SchedulerFacts | None = None,
    last_line: str | None = None,
) -> Verdict:
    """Decide the failure class and the hosts to blame; see the module docstring. ``last_line`` (the last output
    line no pattern claimed) goes into the verdict's signature when no line decided."""
    evidence, progress = _unpack(result)
    left_to_words = wordguess.left_to_words(evidence)
    lines = result.lines if isinstance(result, ScanResult) else None
    evidence = _without_transport_status(_without_sent_faults(_without_amrex_own_aborts(evidence)))
    status = ExitStatus.from_rc(rc) if isinstance(rc, int) else rc
    evidence = _without_notice_readings(_without_success_words(status, evidence))
    members = frozenset(allocation) if allocation is not None else None
    usable = tuple(e for e in evidence if _usable(e, members))
    decision = (
        _exit_zero(status, evidence)
        or _killed_by_hand(evidence)
        or _hydra_banners_killed_alike(evidence)
        or _own_error_below_kill_banners(evidence)
        or _node_fault(usable, members, facts)
        or _mpd_job_wide_kill(evidence)
        or _finished_after_numerics(status, evidence, lines)
        or _finished_after_script_error(status, evidence, lines)
        or _custodian_recovered(status, evidence, lines)
        or _sigkilled_at_memory_request(evidence)
        or _first_root(evidence, progress)
        or _ran_to_walltime(evidence)
        or _lsf_run_limit_signal(evidence)
        or _first_cascade(evidence)
        or _from_facts(facts)
        or _said_it_finished(status, evidence, lines)
        or _from_status(status, evidence)
    )
    last = None
    # Nothing decided, or only the status did (exit 134 reads as a crash): the program may have said why it aborted.
    if decision.from_status and not decision.blamed and decision.line is None and decision.failure_class in (
            FailureClass.UNKNOWN, FailureClass.RANK_KILLED):
        last = _error_then_abort(status, evidence)
        decision = last or decision
    decision = _signal_death(decision, usable, evidence, members)
    if decision.failure_class is FailureClass.UNKNOWN and decision.from_status and not decision.blamed:
        last = _last_resort(status, evidence, progress)
        decision = (_setup_failed(status, evidence) or _amrex_own_stop(evidence) or last or _warned(evidence)
                    or _never_registered(evidence) or decision)
        if left_to_words and isinstance(result, ScanResult):
            decision = _guessed(decision, result.sample, evidence, progress)
    # A last-resort line that did not decide is no evidence of anything: left out of the verdict (its ledger record,
    # its signature), where it would stand before the line that did decide.
    evidence = tuple(e for e in evidence if e.pattern not in LAST_RESORT or (last is not None and e.line == last.line))
    decision = _origins(_scheduler_blame(decision, facts, members), usable, evidence)
    try:
        return _verdict(decision, evidence, members, status, last_line)
    finally:
        _forget_ignored()


def _forget_ignored() -> None:
    """Drop what :func:`_ignored_ids` kept (a verdict is made: its evidence need not stay alive)."""
    global _IGNORED_SEEN  # noqa: PLW0603 -- a one-entry cache, replaced whole
    _IGNORED_SEEN = ((), frozenset())


def _exit_zero(status: ExitStatus | None, evidence: tuple[Evidence, ...]) -> _Decision | None:
    """The launcher returns the job's status: exit 0 is success, whatever the log grumbled on the way
    (an I/O error the trainer retried, a rank's warning). Not when the program aborted the job: MPI_Abort kills
    every process and its error code becomes the launcher's status, so ``MPI_Abort(comm, 0)`` exits 0 (mpi4py's
    abort on an uncaught exception, a program's own) though the job never finished."""
    if status is None or not status.ok:
        return None
    if any(e.pattern in _ABORTS_JOB for e in evidence):
        return None
    roots = sum(1 for e in evidence if e.role is Role.ROOT and e.failure_class is not FailureClass.SUCCESS)
    note = f" ({roots} error line(s) in the log did not stop it)" if roots else ""
    return _Decision(FailureClass.SUCCESS, (), f"exit 0{note}")


#: Lines that say the program aborted the whole job (Open MPI's MPI_ABORT help message, MPICH's 'application called
#: MPI_Abort(...)'): never a run the job survived, whatever the exit status.
_ABORTS_JOB = frozenset({"openmpi.user_mpi_abort", "hydra.user_mpi_abort"})


def _without_success_words(status: ExitStatus | None, evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """A non-zero exit status or a signal is the launcher's word that the job failed: a line saying it finished
    well (a test program's 'completed MPI_Finalize', Ray's "Job '...' succeeded": one step's, one rank's, or an
    earlier run's in the same file) then says nothing about how this attempt ended, and is left out; what else the
    log shows, or the status itself, decides."""
    if status is None or status.ok:
        return evidence
    return tuple(e for e in evidence if e.failure_class is not FailureClass.SUCCESS)


#: A program's own notice that what its line reports is no failure, with the program-specific readings of its line it
#: overrules (beside any generic one): TensorFlow's BFC allocator warns that it 'ran out of memory trying to allocate'
#: scratch space its caller can do without ('The caller indicates that this is not a failure, ...',
#: python.tf_allocator_retry_notice), and the run goes on; TensorFlow's and XLA's StreamExecutor log at start-up that
#: cuInit failed ('cuda_driver.cc:397] failed call to cuInit: CUDA_ERROR_NO_DEVICE', python.tf_cuinit_failed_notice)
#: and go on with the CPU, so the missing device it quotes (nvidia.cuda_no_device) stopped nothing.
_NOT_FAILURE_NOTICES: dict[str, frozenset[str]] = {
    "python.tf_allocator_retry_notice": frozenset(),
    "python.tf_cuinit_failed_notice": frozenset({"nvidia.cuda_no_device"}),
}


def _without_notice_readings(evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """A generic pattern's root reading of a line that the program's own pack reads as its notice of no failure is
    left out, and so is a reading the notice names as its own (_NOT_FAILURE_NOTICES): the memory words of
    TensorFlow's allocator warning are no allocation that failed (heldout688, a run that stalled with only these
    warnings read as out of memory), and TensorFlow's start-up 'failed call to cuInit: CUDA_ERROR_NO_DEVICE' on a pod
    with no GPU is no job set up without its device (heldout717: a TFJob that failed for a reason its log does not
    show). The notice itself stays, as context."""
    notices: dict[int, frozenset[str]] = {}
    for e in evidence:
        if e.pattern in _NOT_FAILURE_NOTICES:
            notices[e.line] = notices.get(e.line, frozenset()) | _NOT_FAILURE_NOTICES[e.pattern]
    if not notices:
        return evidence
    return tuple(e for e in evidence
                 if not (e.line in notices and e.role is Role.ROOT
                         and (e.pattern.startswith("generic.") or e.pattern in notices[e.line])))


def _unpack(result: ScanResult | Iterable[Evidence]) -> tuple[tuple[Evidence, ...], Progress | None]:
    if isinstance(result, ScanResult):
        return result.evidence, result.progress
    return tuple(sorted(result, key=lambda e: e.line)), None


def _usable(ev: Evidence, members: frozenset[Host] | None) -> bool:
    """Evidence whose host (if it names one) may be blamed: a valid host of the allocation.

    Other evidence still says what kind of failure happened, never who.
    """
    if ev.host_text is None:
        return True
    return ev.host is not None and (members is None or ev.host in members)


#: A signal sent by hand at a pasted shell prompt ('$ kill -15 3948062'), kernel.shell_prompt_kill.
_PROMPT_KILL = "kernel.shell_prompt_kill"


def _killed_by_hand(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """The user killed a process at the prompt and every root line after it is a node declared dead: the daemon
    the user killed is the node the scheduler then calls lost (flux-core PR 7145: 'kill -15' of a broker, then the
    leader's 'dead to Flux: HOST (rank 15)'). A stop the user asked for, ``cancelled``, with no host blamed. Any
    other root line (a crash, an OOM, a node lost before the kill) leaves the log to the other rules."""
    kill = next((e for e in evidence if e.pattern == _PROMPT_KILL), None)
    if kill is None:
        return None
    roots = [e for e in evidence if e.role is Role.ROOT and e.failure_class is not None]
    if not roots or not all(e.line > kill.line and e.failure_class is FailureClass.NODE_LOSS
                            and e.host_means is HostMeaning.DEAD for e in roots):
        return None
    return _Decision(FailureClass.CANCELLED, (), f"the user's own {kill.text.strip()[:80]!r} at line {kill.line}, "
                     f"then {roots[0].pattern} at line {roots[0].line}: the node it reports dead is the process the "
                     f"user killed")


def _node_fault(
    evidence: tuple[Evidence, ...], members: frozenset[Host] | None, facts: SchedulerFacts | None
) -> _Decision | None:
    roots = _before_teardown([
        e for e in evidence
        if e.role is Role.ROOT and e.host is not None and e.failure_class is not None
        and e.failure_class.attributes_node and e.host_means in _ORIGIN_MEANINGS
    ], evidence)
    roots = _after_stop(_not_torn_down(roots, evidence), evidence)
    roots = _launched(roots, evidence)
    if not roots:
        return None
    explained = _explained_kills(roots, evidence, members)
    if explained is not None:
        return explained
    first = roots[0]
    blamed = _blames(roots, QuarantineReason.SCRAPED)
    names = ", ".join(b.host.name for b in blamed)
    down = {h.name for h in facts.unhealthy()} & {b.host.name for b in blamed} if facts else set()
    also = f"; scheduler reports {', '.join(sorted(down))} down" if down else ""
    reason = f"{names} named by {first.pattern} at line {first.line}{also}"
    return _Decision(first.failure_class or FailureClass.UNKNOWN, blamed, reason)


# A cloud cluster's resume program logs that the cloud refused a powered-down node's instance over the account's quota
# (ParallelCluster's '(Code:VcpuLimitExceeded)Failure when resuming nodes', slurm-gcp's 'GCP Error: Quota ... exceeded')
# and sets it DOWN; slurmctld then reports that node 'not resumed by ResumeTimeout'. The node never ran anything: its
# later DOWN lines are the same refused instance, not a node that was lost (README: the node is innocent). A capacity
# failure is left out: a labelled ParallelCluster log (slurm_heldout160) has the node then failed by a health check.
_NEVER_LAUNCHED = frozenset({"slurm.cloud_resume_quota_refused"})


def _never_launched(evidence: tuple[Evidence, ...]) -> set[Host]:
    return {e.host for e in evidence if e.pattern in _NEVER_LAUNCHED and e.host is not None}


def _launched(roots: list[Evidence], evidence: tuple[Evidence, ...]) -> list[Evidence]:
    missing = _never_launched(evidence)
    return [e for e in roots if e.host not in missing] if missing else roots


# A node that could not end the job's processes (slurmstepd's 'STEPD TERMINATED ON <node> ... DUE TO JOB NOT ENDING
# WITH SIGNALS'; slurmctld drains it 'Kill task failed') shows only while the job is being stopped: when a time limit,
# a preemption or a memory kill (Slurm's "exceeded memory limit ..., being killed", the kernel's OOM killer: processes
# reclaiming memory are slow to die) stopped the job first, that stop is the job's class, and the node is the
# scheduler's to drain (nodeloss_heldout598: memory limit, CANCELLED, then STEPD TERMINATED on the same node).
_KILL_FAILED = frozenset({"slurm.stepd_kill_task_failed"})


def _after_stop(roots: list[Evidence], evidence: tuple[Evidence, ...]) -> list[Evidence]:
    """``roots`` without a node's failure to kill the job (:data:`_KILL_FAILED`) reported after a time limit, a
    preemption or a memory kill had stopped it."""
    stop = next((e.line for e in evidence if e.role is Role.ROOT
                 and e.failure_class in (FailureClass.WALLTIME, FailureClass.PREEMPTED, FailureClass.OOM)), None)
    if stop is None:
        return roots
    return [e for e in roots if e.pattern not in _KILL_FAILED or e.line < stop]


def _before_teardown(
    roots: list[Evidence], evidence: tuple[Evidence, ...], *, strict: bool = False
) -> list[Evidence]:
    """Drop SIGKILLed ranks (with ``strict``, any origin) reported after the teardown began, when one came
    before it.

    SLURM SIGKILLs every remaining task once a step is cancelled (test bed m2b:
    n2's task dies, the step is cancelled, then n1's tasks are 'Killed' too).
    """
    start = next((e.line for e in evidence if e.role is Role.CASCADE or e.pattern in _TEARDOWN), None)
    if start is None or not any(e.line < start for e in roots):
        return roots
    return [e for e in roots if e.line < start or (not strict and e.failure_class is not FailureClass.RANK_KILLED)]


def _teardown_between(first: int, last: int, evidence: tuple[Evidence, ...]) -> bool:
    """A teardown line between two lines: the step's CANCELLED line, srun's own abort, a cascade line (a process
    ended by the stopper's signal). A crash reported after it died in the teardown (heldout532: a Dask worker's
    MemoryError, the step cancelled, then eight tasks 'Aborted (core dumped)' as Python shut down), so it no longer
    names where the out-of-memory process ran."""
    return any(first < e.line < last
               and (e.role is Role.CASCADE or e.pattern in _TEARDOWN or e.pattern == _STEP_CANCELLED)
               for e in evidence)


def _not_torn_down(
    roots: list[Evidence], evidence: tuple[Evidence, ...], *, late_crashes: bool = True
) -> list[Evidence]:
    """``roots`` without the SIGKILLs that were a cancellation's or a crash's teardown (with ``late_crashes``
    false, only a crash before the teardown began counts as one: see :func:`_before_crash`)."""
    return _before_crash(_before_cancel(_after_sigterm(roots, evidence), evidence), evidence,
                         late_crashes=late_crashes)


#: A teardown line (role cascade) that reports a process ended by SIGTERM: srun's 'task N: Terminated', PALS's 'died
#: from signal 15', Julia's runtime 'signal (15): Terminated'.
_SIGTERM_REPORT = re.compile(r"\bsignal:? ?\(?15\b|\bSIGTERM\b|\bTerminated\b")


def _after_sigterm(roots: list[Evidence], evidence: tuple[Evidence, ...]) -> list[Evidence]:
    """Drop SIGKILLed ranks reported after the job's processes reported a SIGTERM (a cascade line), when no root
    came before it: SIGTERM first, SIGKILL for what is left, is how a stopper ends a process tree (scancel and a time
    limit through slurmstepd, a CI runner cancelling or timing out a step, a launcher's cleanup), so the SIGKILL
    reported after it (Hydra's 'EXIT CODE: 9' banner) is that stop's second step, not a rank's death of its own.
    Every process got the same signals, nobody is the origin (README, signal deaths are read by what comes first)."""
    term = next((e.line for e in evidence if e.role is Role.CASCADE and _SIGTERM_REPORT.search(e.text)), None)
    if term is None or any(e.line < term for e in roots):
        return roots
    return [e for e in roots if not (e.failure_class is FailureClass.RANK_KILLED and e.line > term
                                     and _TEARDOWN_SIGNAL.search(e.text))]


def _is_crash(ev: Evidence) -> bool:
    """A rank's death of its own signal (SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE): the packs mark these lines
    context (they decide no node fault), class ``rank_killed``, host meaning ``origin`` (where the failure started,
    if it came first)."""
    return (ev.role is Role.CONTEXT and ev.host_means is HostMeaning.ORIGIN
            and ev.failure_class is FailureClass.RANK_KILLED and not _launcher_assert(ev))


#: glibc's assert() message names the program that failed it; MPICH Hydra's proxy and mpiexec assert() in their own
#: code (src/pm/hydra/proxy/pmip_cb.c, pmip_pg.c, mpiexec/mpiexec.c, pg.c, and the PMI wire code they link,
#: src/pmi/src/pmi_wire.c PMIU_cmd_output_v1 through pmi_util.h's PMIU_Assert; read at pmodels/mpich 6a79bf6). That
#: is the launcher's bug, not a rank's death (the README's rank_killed is a rank's): it crashes nobody's rank.
_LAUNCHER_ASSERT = _opening(r"[ \t]*(?:\S*/)?(?:hydra_pmi_proxy|hydra_bstrap_proxy|mpiexec\.hydra|mpiexec): ")


def _launcher_assert(ev: Evidence) -> bool:
    """An assertion failed in the launcher's own daemon (Hydra's proxy or mpiexec), not in a rank (heldout315)."""
    return ev.pattern == "generic.assertion_failed" and _LAUNCHER_ASSERT.match(ev.text) is not None


# Open MPI's crash handler saying the fault signal came from another process's kill() (si_code SI_USER).
_SENT_FAULT = "openmpi.opal_signal_sent_by_process"
_SENT_FAULT_LINES = 3
#: The frames Open MPI's handler prints below its head ('[host:pid] [ n] ...', opal_show_stackframe): at most the 32
#: of opal_backtrace_print's buffer, so a sent signal's report spans the head, a few code lines and those frames.
_HANDLER_FRAME = "openmpi.opal_signal_handler_frame"
_HANDLER_FRAME_LINES = 40
#: The handler's 'Failing at address: %p' line, printed just after 'Signal code:' for the fault signals whatever the
#: si_code (opal_show_stackframe): below a SI_USER code it is the sent signal's report too (heldout447).
_HANDLER_BELOW_CODE = frozenset({_HANDLER_FRAME, "openmpi.opal_signal_failing_address"})


#: A transport library's own log line ending in its status string for a failed operation: UCX's 'Input/output
#: error' is ucs_status_string(UCS_ERR_IO_ERROR) (src/ucs/type/status.c, read at openucx/ucx), printed by ucs_error
#: ('UCX  ERROR failed to unpack remote key ...'), a transport's fatal report ('rndv.c:943  Fatal: ...') and Open
#: MPI's pml_ucx ('pml_ucx.c:775  Error: ucx send failed: ...'). A failed transport operation, not a file system's
#: EIO: what follows it (the rank's crash, its abort) decides.
_TRANSPORT_STATUS = re.compile(r"(?:\bUCX +(?:ERROR|FATAL|WARN|DIAG)\b|\] +[a-z_0-9]+\.c:[0-9]+ +Fatal: |"
                               r"\bpml_ucx\.c:[0-9]+ +Error: ).*: Input/output error\.?[ \t]*$")


#: ROCr's GPU core dump writer: after a GPU fault the HSA runtime dumps the GPU's state to a core file and, when
#: posix_fallocate refuses the space, prints 'Failed to allocate file: <strerror>' and then 'GPU core dump failed'
#: (ROCm/ROCR-Runtime runtime/hsa-runtime/libamdhsacode/amd_core_dump.cpp, called from the queue error handler in
#: core/runtime/amd_aql_queue.cpp). A full disk there lost only the dump of a process the GPU fault had already
#: ended: the fault decides, not the file system (heldout280).
_GPU_CORE_DUMP_WRITE = re.compile(r"\bFailed to allocate file: ")

#: A write into the cgroup file system refused with ENOSPC: the kernel's answer for a cpuset cgroup with no CPUs or
#: memory nodes assigned, or a memory controller out of cgroup ids, never a full disk. Slurm's cgroup plugin prints
#: it as error("%s: write value '%s' to '%s' failed: %m", ...) with the control file's path (SchedMD/slurm
#: src/plugins/cgroup/common/cgroup_common.c common_file_write_uints/_content, read at 284c3b95f0), e.g. 'write
#: value '39981' to '/sys/fs/cgroup/cpuset/slurm/uid_N/job_N/step_batch/cgroup.procs' failed: No space left on
#: device' before slurmstepd's 'exiting abnormally: Slurmd could not execve job' (heldout632). The node's cgroup set-up
#: failed; what kind, the line does not say.
_CGROUPFS_WRITE = re.compile(r"/sys/fs/cgroup/")

#: UCX's query of an InfiniBand device at start-up, uct_ib_query_device: ucs_error("ibv_exp_query_device(%s) returned
#: %d: %m", ...) and its ibv_query_device_ex / ibv_query_device twins (openucx/ucx src/uct/ib/base/ib_verbs.h, v1.8.0
#: to v1.10.0). The number is the verbs call's return code; %m prints whatever errno held, so the strerror after it
#: ('returned 38: No space left on device' from HPC-X on a node whose driver lacks the experimental verbs, heldout646)
#: says nothing of a file system. UCX then skips the device; what ends the job is read elsewhere. ib_device.c's
#: 'ibv_query_port() returned %d: %m' is the same form (openucx/ucx 9466d104a3), so any verbs call's is read alike.
_VERBS_DEVICE_QUERY = re.compile(r"\bUCX +[A-Z]+ +ibv_[a-z_]+\([^()\n]*\) returned -?[0-9]+: ")


def _without_transport_status(evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """Drop storage faults read on a transport library's own line (see :data:`_TRANSPORT_STATUS`), on the GPU
    core dump writer's (see :data:`_GPU_CORE_DUMP_WRITE`), on a write into the cgroup file system
    (see :data:`_CGROUPFS_WRITE`) or on UCX's report of a failed device query (see :data:`_VERBS_DEVICE_QUERY`)."""
    return tuple(e for e in evidence
                 if not (e.failure_class is FailureClass.TRANSIENT_IO
                         and (_TRANSPORT_STATUS.search(e.text) or _GPU_CORE_DUMP_WRITE.search(e.text)
                              or _CGROUPFS_WRITE.search(e.text) or _VERBS_DEVICE_QUERY.search(e.text))))


# AMReX's signal handler (Src/Base/AMReX_BLBackTrace.cpp BLBackTrace::handler) prints the signal it caught alone on a
# line ('SIGABRT'), then 'See Backtrace.N file for details'. amrex::Abort and amrex::Error print their
# 'amrex::Abort::<rank>::<message> !!!' first and then raise that SIGABRT themselves (AMReX_Utility/AMReX.cpp
# amrex::Abort_host -> ParallelDescriptor::Abort), so a 'SIGABRT' line within a few lines after one is the program's
# own stop, whatever its message says (a GPU runtime's error included); alone, it is an abort from outside AMReX's
# checks (the HSA runtime's after a GPU memory access fault) and stays a crash.
_AMREX_SIGABRT, _AMREX_STOPS = "amrex.signal_handler_crash", frozenset({
    "amrex.error", "amrex.abort_out_of_memory", "amrex.abort_message", "amrex.assertion_failed"})
_AMREX_ABORT_LINES = 3


def _without_amrex_own_aborts(evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """Drop AMReX's 'SIGABRT' line when an amrex::Abort or amrex::Error line stands just above it (same host):
    the handler's report of the abort that amrex::Abort itself raised, not a crash of its own. When several ranks
    abort at once their messages reach the log first and their SIGABRTs after, one for each (five messages, then
    five SIGABRTs: AMReX-Astro/Castro 2263); the scanner keeps the first line of each with a count, so the first
    SIGABRT may stand as many lines further down as there were messages, and is the stops' own when there are no
    more SIGABRTs than messages. More SIGABRTs than stops: some rank crashed besides, and the line stays."""
    stops = [e for e in evidence if e.pattern in _AMREX_STOPS]
    if not stops:
        return evidence
    return tuple(e for e in evidence if not (
        e.pattern == _AMREX_SIGABRT and e.text.strip().endswith("SIGABRT")
        and any(0 < e.line - s.line <= _AMREX_ABORT_LINES + s.count - 1 and s.host == e.host
                and (e.count <= s.count or e.line - s.line <= _AMREX_ABORT_LINES) for s in stops)))


#: The GPU runtimes whose errors AMReX itself passes to amrex::Abort (Src/Base/AMReX_GpuError.H: 'GPU last error
#: detected in file', 'GPU error in file', 'CUDA error N in file', 'CURAND error', 'CUFFT error', 'HIP error',
#: 'HIPRAND error', 'rocFFT error'): not the application's own call.
_AMREX_RUNTIME_ABORT = re.compile(r"Abort::[0-9]+::\s*(?:CUDA|HIP|GPU|CURAND|CUFFT|HIPRAND|rocFFT)\b", re.IGNORECASE)


def _amrex_own_stop(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """An amrex::Abort that nothing else explains, once no line decided: the application called it on a check of
    its own (Castro's check_for_nan 'State has NaNs in the density component', 'Advance was unsuccessful.', an
    unknown input), as a program's own MPI_Abort is, so ``user_error`` (README). An abort that quotes a GPU
    runtime's error (AMReX_GpuError.H) is AMReX reporting the device, not the program's call, and is left alone."""
    ev = next((e for e in evidence if e.pattern == "amrex.abort_message" and not _AMREX_RUNTIME_ABORT.search(e.text)),
              None)
    if ev is None:
        return None
    return _Decision(FailureClass.USER_ERROR, (), f"{ev.pattern} at line {ev.line}, nothing else decided: the "
                     f"application's own amrex::Abort: {ev.text[:120]}", from_status=True, line=ev.line)


def _without_sent_faults(evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """Drop crash lines that the handler's next lines say were sent from outside: a SIGSEGV/SIGBUS/SIGILL/SIGFPE
    whose si_code is SI_USER ('Signal code:  (0)' within a few lines, same host) was kill()ed into the process (a
    ``timeout -s SEGV``, a watchdog), not a fault of its own, so it names no origin; nor do the faulting address and
    the backtrace frames the handler prints below that line for the same host."""
    sent = [e for e in evidence if e.pattern == _SENT_FAULT]
    if not sent:
        return evidence
    return tuple(e for e in evidence if not (_is_crash(e) and any(
        (0 < s.line - e.line <= _SENT_FAULT_LINES
         or (e.pattern in _HANDLER_BELOW_CODE and 0 < e.line - s.line <= _HANDLER_FRAME_LINES)) and s.host == e.host
        for s in sent)))


def _before_crash(
    roots: list[Evidence], evidence: tuple[Evidence, ...], *, late_crashes: bool = True
) -> list[Evidence]:
    """Drop SIGKILLed ranks reported after a rank crashed of another signal (a segfault, an abort) or raised a
    programming error, when no kill came before it: the launcher kills the remaining ranks (Cray ATP then ALPS,
    srun --kill-on-bad-exit, mpirun's abort of the job). Without ``late_crashes`` (the class, not the blame), a
    crash reported after the teardown began (the peers that abort once a lost rank's connection drops) is part of
    the teardown, not a first crash: a kill summed up later in the log may still be what came first."""
    if any(e.pattern in _SUMMARY_CRASHES for e in evidence):
        return [e for e in roots if e.failure_class is not FailureClass.RANK_KILLED]
    teardown = None if late_crashes else next(
        (e.line for e in evidence if e.role is Role.CASCADE or e.pattern in _TEARDOWN), None)
    crash = next((e.line for e in evidence if (_is_crash(e) and (teardown is None or e.line < teardown))
                  or e.pattern in _PROGRAM_EXITS or (
        e.role is Role.ROOT and e.failure_class is FailureClass.USER_ERROR and e.pattern not in LAST_RESORT
        and not _setup_line(e) and not _passed_over(e, evidence) and not _killed_says_more(e, evidence))), None)
    if crash is None or any(e.line < crash for e in roots):
        return roots
    return [e for e in roots if e.failure_class is not FailureClass.RANK_KILLED]


# A launcher's summary of every process's end that names a crash signal, printed after the per-process lines
# wherever the crash came in the run: Hydra's mpiexec ORs every process's wait status into one and prints its
# signal ("YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)", mpiexec.c). Beside a
# banner's SIGKILL (EXIT CODE: 9) it says another process ended otherwise: the SIGKILL is Hydra's cleanup of the
# rest after the crash, whichever was printed first.
_SUMMARY_CRASHES = frozenset({"hydra.exit_string_crash"})

# A launcher's word that a task ended by itself with a non-zero code (not a signal): the program gave up, and the
# SIGKILLs the launcher sends the other tasks after it (srun --kill-on-bad-exit) are the teardown. Under load the
# launcher's lines can come before the program's own traceback is relayed.
# Horovod's "The first process to do so was: ... Exit code: N" (N < 128) says the same of the first worker to end.
_PROGRAM_EXITS = frozenset({"slurm.srun_tasks_exit_code", "local.host_exit_code",
                            "horovod.first_exit_code"})  # non-zero codes only


#: The cancellation its canceller reports only after it has signalled the job's processes: the GitHub Actions runner
#: signals the step's process tree when the job is cancelled and logs 'The operation was canceled.' as the step's
#: error once the step has ended (actions/runner StepsRunner.RunStepAsync), so the processes the step's own output
#: reports SIGTERMed or SIGKILLed above that line are the cancellation's teardown too.
_CANCEL_AFTER_TEARDOWN = "generic.ci_runner_step_cancelled"
#: A rank's death by the signals a teardown sends (SIGKILL, SIGTERM), not by a crash signal of its own.
_TEARDOWN_SIGNAL = re.compile(r"\bKilled\b|\bsignal:? ?(?:9|15)\b|\bSIG(?:KILL|TERM)\b|\bTerminated\b"
                              r"|EXIT CODE: (?:9|15|137|143)\b")


#: The nanny's restart of a worker over its memory budget, and a worker's banner that it registered with its scheduler
#: (distributed pack).
_NANNY_MEMORY_RESTART, _WORKER_REGISTERED = "distributed.nanny_memory_restart", "distributed.registered_to"


def _restarted_until_stopped(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the Dask nanny's memory restart ``ev`` was one the worker came back from and the scheduler then
    stopped the job: the nanny restarts the worker process ('exceeded 95% memory budget. Restarting...', Nanny in
    distributed/nanny.py), the new worker registers with the scheduler again ('Registered to:') and works on, and a
    time limit, a cancellation or a preemption reported after that ends the job. As a program error the run went on
    after (:func:`_ran_on_until_stopped`), the restart did not end it; the stop did (heldout468: dask-jobqueue worker
    jobs on MPCDF Raven restarted over memory, then 'CANCELLED ... DUE TO TIME LIMIT')."""
    if ev.pattern != _NANNY_MEMORY_RESTART:
        return False
    back = max((e.last_line or e.line for e in evidence if e.pattern == _WORKER_REGISTERED), default=None)
    if back is None or back <= ev.line:
        return False
    return any(e.line > back and e.failure_class in _SCHEDULER_STOPS and e.role in (Role.ROOT, Role.CASCADE)
               for e in evidence)


def _lost_after_stop(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the network line ``ev`` comes after a cancellation line (scancel's 'CANCELLED AT', a Ctrl-C):
    processes signalled on purpose break their connections and their peers report it (a broken pipe as a Dask
    worker's queue feeder dies under slurmstepd's SIGTERM), so those lines are the cancellation's teardown, not a
    fault of the network, and the cancellation decides (heldout468: dask-jobqueue worker jobs scancelled when the
    cluster closed). A worker's own 'Stopping worker at' is no such line: Worker.close logs it when it lost its
    scheduler too (distributed/worker.py, 'Reason: worker-handle-scheduler-connection-broken')."""
    if ev.failure_class is not FailureClass.NETWORK:
        return False
    return any(e.line < ev.line and e.failure_class is FailureClass.CANCELLED for e in evidence)


def _before_cancel(roots: list[Evidence], evidence: tuple[Evidence, ...]) -> list[Evidence]:
    """Drop SIGKILLed ranks reported after the job was cancelled: ``scancel`` (or a second Ctrl-C to srun)
    ends the step with SIGTERM, then SIGKILL for whatever is left, and srun reports those tasks 'Killed'. A time
    limit's root line (the scheduler's, or the launcher's own: mpirun's MPIEXEC_TIMEOUT abort) stops the job the
    same way, so the ranks srun reports 'Killed' after it are that stop's, not a rank's own death. A cancellation
    reported only after its teardown (:data:`_CANCEL_AFTER_TEARDOWN`) also explains the SIGKILLed and SIGTERMed
    ranks above it; a crash signal of a rank's own (SIGSEGV, SIGABRT) above it still stands. srun's own word that it
    has SIGKILLed the step (:data:`_SRUN_ABORT`) is such a stop too: the tasks it reports 'Killed' after it are the
    ones it killed, whatever made it abort."""
    stop = next((e for e in evidence if e.failure_class is FailureClass.CANCELLED
                 or (e.failure_class is FailureClass.WALLTIME and e.role is Role.ROOT)
                 or (e.pattern == _SRUN_TEARDOWN and _SRUN_ABORT.search(e.text))), None)
    if stop is None:
        return roots
    cancel = stop.line
    afterwards = any(e.pattern == _CANCEL_AFTER_TEARDOWN for e in evidence)
    return [e for e in roots if e.failure_class is not FailureClass.RANK_KILLED
            or (e.line < cancel and not (afterwards and _TEARDOWN_SIGNAL.search(e.text)))]


#: srun's words that it has SIGKILLed the whole step itself: slurm_step_launch_wait_finish (src/api/step_launch.c)
#: sends slurm_kill_job_step(SIGKILL) and prints 'Job step aborted: Waiting up to N seconds for job step to finish.'
#: (or 'Job step aborted') once slurm_step_launch_abort has set sls->abort, which srun does when it is signalled
#: (src/srun/signals.c: SIGTERM, SIGHUP, SIGQUIT, a second Ctrl-C -> launch_fwd_signal(SIGKILL)) or told the job is
#: ending (src/srun/srun_job.c job_force_termination: 'forcing job termination'), and when a launch fails. A task's
#: bad exit under --kill-on-bad-exit takes another path (src/srun/launch.c _task_finish -> _step_signal,
#: 'Terminating StepId=...'), so these words follow no rank's failure of its own (read at SchedMD/slurm master).
_SRUN_ABORT = re.compile(r"\b(?:Job step aborted|forcing job termination)\b")
# Context lines that mark the start of a step's teardown.
_TEARDOWN = frozenset({"slurm.step_aborted"})
#: srun's own teardown line, the words it says only when it kills the step itself, and the step's CANCELLED line.
_SRUN_TEARDOWN, _SRUN_TERMINATING, _STEP_CANCELLED = "slurm.step_aborted", "Terminating ", "slurm.stepd_cancelled"
#: srun's report of a node's tasks that died of a crash signal (slurm pack).
_SRUN_TASK_CRASH = "slurm.srun_tasks_other_signal"
#: srun's report of a task's non-zero exit (slurm pack; src/srun/launch.c _task_finish: error("%s: %s %s: Exited with
#: exit code %d", ...)), after which srun itself ends the step when the exit is the first abnormal one
#: (task_state_first_abnormal_exit() && _kill_on_bad_exit() -> _terminate_job_step).
_SRUN_TASK_EXIT = "slurm.srun_tasks_exit_code"
#: Open MPI's MPI_ERRORS_ARE_FATAL banner ('*** An error occurred in MPI_Send'): the handler then aborts the job
#: itself (ompi/errhandler/errhandler_predefined.c ompi_mpi_errors_are_fatal_comm_handler -> ompi_mpi_abort, which
#: under srun is PMI_Abort), so a step's CANCELLED line after it is that abort's teardown, not a user's scancel.
_MPI_FATAL_BANNERS = frozenset({"openmpi.error_in_user_call", "openmpi.error_in_user_call_host"})


def _explained_kills(
    roots: list[Evidence], evidence: tuple[Evidence, ...], members: frozenset[Host] | None
) -> _Decision | None:
    """SIGKILLed ranks that are not a node fault: the OOM killer, or a job-wide kill."""
    if any(e.failure_class is not FailureClass.RANK_KILLED for e in roots):
        return None
    oom = next((e for e in evidence if e.role is Role.ROOT and e.failure_class is FailureClass.OOM), None)
    if oom is not None:
        why = f"out of memory ({oom.pattern} at line {oom.line}); the killed ranks follow from it"
        return _Decision(FailureClass.OOM, (), why)
    everyone = _all_hosts_killed(roots, evidence, members)
    if everyone is None:
        return None
    other = next((e for e in evidence if e.role is Role.ROOT and e.failure_class not in (None, *_KILLS)), None)
    if other is not None and other.failure_class is not None:
        return _Decision(other.failure_class, (), f"{other.pattern} at line {other.line}; {everyone}", nobody=True)
    return _Decision(FailureClass.UNKNOWN, (), everyone, nobody=True)


_KILLS = (FailureClass.RANK_KILLED,)

#: MPD's per-rank statuses (hydra pack): SIGKILL, a crash signal, any other exit or signal.
_MPD_KILLED, _MPD_OTHER = "hydra.mpd_rank_killed", frozenset({"hydra.mpd_rank_crash", "hydra.mpd_rank_other_status"})


def _mpd_job_wide_kill(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """MPD names its console, not the ranks' nodes, so a job-wide kill shows in the ranks: every rank it reports
    (two or more: the scanner counts the repeats of one line's shape) died of SIGKILL, none exited or crashed
    otherwise, and no line says why. Like every host's ranks SIGKILLed (_all_hosts_killed), that names no victim
    and does not say why (tests/data/real/README.md: every rank killed alike, no cause shown: ``unknown``)."""
    killed = sum(e.count for e in evidence if e.pattern == _MPD_KILLED)
    if killed < 2 or any(e.pattern in _MPD_OTHER or (e.role is Role.ROOT and e.failure_class not in (None, *_KILLS))
                         for e in evidence):
        return None
    why = f"MPD reports every rank it lists ({killed}) killed by signal 9: a job-wide kill names no failed node"
    return _Decision(FailureClass.UNKNOWN, (), why, nobody=True)


def _hydra_banners_killed_alike(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """Hydra's BAD TERMINATION banner is printed once per rank that ended badly (Intel MPI's i_hydra: 'RANK n PID p
    RUNNING AT h' then 'KILLED BY SIGNAL: 9 (Killed)' for each): when two or more banners all say SIGKILL and none a
    crash or another exit, every rank got the clean-up's signal (mpiexec kills the rest with SIGKILL, Intel MPI's
    I_MPI_JOB_ABORT_SIGNAL default 9), so the first banner is no more the origin than the others, as MPD's
    per-rank statuses alike (_mpd_job_wide_kill; tests/data/real/README.md: every rank killed alike, no cause
    shown: ``unknown``), when a rank's own error report comes above the first banner (a CUDA error, a program's
    message): the SIGKILLs are the clean-up after it. A line that says why (out of memory, a node lost) still decides;
    SIGKILL banners with nothing above them keep the first banner's host as the origin."""
    banners = [e for e in evidence if e.pattern == _BANNER_KILLED]
    killed = sum(e.count for e in banners)
    if killed < 2 or any(e.pattern in _BANNER_OTHER or (e.role is Role.ROOT and e.failure_class not in (None, *_KILLS))
                         for e in evidence):
        return None
    first = min(e.line for e in banners)
    own = next((e for e in evidence if e.line < first and e.failure_class is not None
                and not e.pattern.startswith("hydra.")), None)
    if own is None:
        return None
    why = (f"{own.pattern} at line {own.line}, then Hydra's banner reports every rank it lists ({killed}) killed by"
           " signal 9: the clean-up's kill after a rank's own error names no failed node")
    return _Decision(FailureClass.UNKNOWN, (), why, nobody=True)


#: Hydra banners that report a rank's own crash or another exit: with one of them the SIGKILLs are the clean-up.
_BANNER_OTHER = frozenset({"hydra.bad_termination_crash"})

#: A rank's own error that names no host and decides below Hydra's SIGKILL banners (see below).
_BELOW_BANNERS = (FailureClass.USER_ERROR, FailureClass.TRANSIENT_IO)


def _own_error_below_kill_banners(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """Two or more Hydra banners that all say SIGKILL (no crash, no other exit), nothing deciding above them, and
    below them a rank's own error of a class that names no host (the program's input or path fault, a full or
    failing file system): the banners are the clean-up's kill (mpiexec kills the rest with SIGKILL, Intel MPI's
    I_MPI_JOB_ABORT_SIGNAL default 9) and the error is what the rank said before it ended, printed below them when
    the job's stderr is appended after its stdout (a wrapper that copies the two streams one after the other, as
    DIRAC's pam 'below this line is the stderr stream'; heldout642: 'forrtl: Is a directory' below three banners).
    As _hydra_banners_killed_alike with the rank's error above the banners: the first banner is no origin."""
    banners = [e for e in evidence if e.pattern == _BANNER_KILLED]
    if sum(e.count for e in banners) < 2 or any(e.pattern in _BANNER_OTHER for e in evidence):
        return None
    first = min(e.line for e in banners)
    if any(e.role is Role.ROOT and e.failure_class is not None
           and (e.line < first or e.failure_class not in (*_KILLS, *_BELOW_BANNERS)) for e in evidence):
        return None
    below = [e for e in sorted(evidence, key=lambda e: e.line)
             if e.line > first and e.host is None and not e.pattern.startswith("hydra.")]
    own = next((e for e in below if e.role is Role.ROOT and e.failure_class in _BELOW_BANNERS), None)
    if own is not None and own.failure_class is not None:
        why = (f"{own.pattern} at line {own.line}, below Hydra's banners that report every rank they list killed by"
               f" signal 9: the clean-up's kill after the rank's own error names no failed node")
        return _Decision(own.failure_class, (), why, nobody=True, line=own.line)
    # A rank's own crash report below them ('forrtl: severe (71): integer divide by zero'): the rank died of its own
    # signal and the SIGKILLs are the clean-up's, so no banner's host is a SIGKILLed node to evict.
    crash = next((e for e in below if e.failure_class in _KILLS), None)
    if crash is None:
        return None
    why = (f"{crash.pattern} at line {crash.line}, below Hydra's banners that report every rank they list killed by"
           f" signal 9: a rank's own crash, then the clean-up's kill")
    return _Decision(FailureClass.RANK_KILLED, (), why, crash=True, line=crash.line)


def _all_hosts_killed(
    roots: list[Evidence], evidence: tuple[Evidence, ...], members: frozenset[Host] | None
) -> str | None:
    """A job-wide kill (every host's ranks SIGKILLed) names no victim."""
    killed = {e.host for e in roots}
    if len(killed) < 2:
        return None
    others = {e.host for e in evidence if e.host is not None} - killed
    if members is not None:
        others |= members - killed
    if others:
        return None
    return f"ranks were killed on every host ({len(killed)}): a job-wide kill names no failed node"


def _blames(roots: list[Evidence], reason: QuarantineReason) -> tuple[Blame, ...]:
    by_host: dict[Host, list[Evidence]] = {}
    for ev in roots:
        if ev.host is not None:
            by_host.setdefault(ev.host, []).append(ev)
    return tuple(Blame(h, reason, tuple(evs)) for h, evs in by_host.items())


def _wrapper_exit_zero(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is the batch system's report that the job's script exited 0 beside a line that reports a
    non-zero exit in words ('finished with 143'): the script was a wrapper that caught its program's failure; or
    qacct's exit_status 0 beside qacct's 'failed' field with a state other than 0: Grid Engine failed the job, and
    the exit status is one the job never set."""
    if ev.pattern == _QACCT_EXIT_ZERO:
        return any(e.pattern == _QACCT_FAILED for e in evidence)
    return ev.pattern == _EXIT_ZERO and any(e.pattern == _NONZERO_EXIT for e in evidence)


#: A library's notice that a call into the fabric failed and that the job "may behave unpredictably (and/or abort)
#: after this" (Open MPI's OFI MTL, help-mtl-ofi.txt [OFI call fail]): the fabric failure decides, but the notice does
#: not end the process itself; when the process then dies of its own crash signal (a segfault inside libfabric after
#: fi_domain failed), the README's signal rows read that death, so the crash decides (:func:`_signal_death`).
#: pip's 'Failed to build installable wheels ...' alike ends the install step, not the job: a script without
#: `set -e` goes on to run the program with the build it had, and a crash of that run decides (heldout494's
#: Polaris benchmark: the neuroh5 rebuild failed, the old binary then aborted).
_ABORT_MAY_FOLLOW = frozenset({"openmpi.mtl_ofi_call_failed", "python.pip_wheel_build_failed"})


def _crashed_after_notice(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is a notice that the job may abort after it (:data:`_ABORT_MAY_FOLLOW`) and a rank then died of
    its own crash signal: the crash decides."""
    return ev.pattern in _ABORT_MAY_FOLLOW and any(_is_crash(e) and e.line > ev.line for e in evidence)


def _first_root(evidence: tuple[Evidence, ...], progress: Progress | None) -> _Decision | None:
    kills = [e for e in evidence if e.failure_class is FailureClass.RANK_KILLED]
    teardown = {id(e) for e in kills} - {id(e) for e in _not_torn_down(kills, evidence, late_crashes=False)}
    oom = any(e.role is Role.ROOT and e.failure_class is FailureClass.OOM for e in evidence)
    # An exit status read from a line is the run's summary: any line that says why decides before it, wherever
    # it is (kubectl's "command terminated with exit code 137" above ORTE's lost daemon); alone, it decides.
    # Among the summaries, one that says the run succeeded comes last: Nextflow's 'Failed      : 1' below its
    # 'Succeeded   : 9' decides. (sorted is stable: the log's order otherwise.)
    ordered = sorted(evidence, key=lambda e: (e.pattern in _STATUS_ONLY,
                                              e.pattern in _STATUS_ONLY and e.failure_class is FailureClass.SUCCESS))
    for ev in ordered:
        if id(ev) in teardown:
            continue  # the SIGKILL of a cancellation, or of the ranks left after another one crashed
        if ((oom and ev.failure_class is FailureClass.RANK_KILLED) or _restarted_until_stopped(ev, evidence)
                or _oom_counted_after_limit(ev, evidence, progress)):
            # rule 2: the OOM killer's SIGKILL (a shell's 'Killed' printed before the OOM line); a worker the nanny
            # restarted over memory that came back: the scheduler's stop after it decides; a time limit that ended
            # a job whose tasks the OOM killer had ended first (the count below the limit line decides)
            continue
        if ev.role is not Role.ROOT or ev.failure_class is None:
            continue
        if ((ev.pattern == _NEXTFLOW_STATS_OK and any(e.pattern == _NEXTFLOW_ABORTED for e in evidence))
                or _evicted_for_removal(ev, evidence)):
            # Nextflow's end-of-run counts after Session.abort: a script error can abort with no task failed. An
            # HTCondor eviction that a removal of the running job made: the same job's abort below decides.
            continue
        if _passed_over(ev, evidence):
            continue  # a library logged the exception as a warning, or Python ignored it: the run went on
        if (ev.pattern in LAST_RESORT or _wrapper_exit_zero(ev, evidence) or _crashed_after_notice(ev, evidence)
                or _success_contradicted(ev, evidence)):
            # read only when nothing else decides (_last_resort); a wrapper's exit 0; a notice the crash outranks;
            # a success summary when a rank crashed or a task exited non-zero (one step's success is not the run's)
            continue
        if ev.failure_class is FailureClass.USER_ERROR and (
                _crashed_before(ev, evidence) or _ran_on_until_stopped(ev, evidence, progress)
                or _quotes_a_device_fault(ev, evidence) or _stop_words_quote_a_fault(ev, evidence)
                or _exception_relays_device_fault(ev, evidence)
                or _killed_says_more(ev, evidence)
                or _halted_at_lost_worker(ev, evidence) or _halted_without_error(ev, evidence)
                or _error_after_lost_cores(ev, evidence)
                or _r_error_relays_fault(ev, evidence) or _library_fatal_abort(ev, evidence)
                or _aborted_on_interrupt(ev, evidence)):
            # The MPI_Abort a crash handler calls (Charm++, PETSc): the crash came first and decides. The job went
            # on working after the error until the scheduler stopped it: the stop decides.
            continue
        if (_setup_line(ev) or _runtime_exit_io(ev, evidence) or _lost_after_stop(ev, evidence)
                or (ev.failure_class is FailureClass.NETWORK and _heap_abort_before(ev, evidence))):
            # glibc found the heap corrupt and aborted the process first: the connection errors reported after it
            # are how it and its peers went down, not a network fault. Signal deaths are read by what comes first.
            # A setup line is read only when nothing else decides (_setup_failed); a Fortran runtime's I/O error as
            # it closes its units ending a rank that crashed is that crash's exit: the crash decides.
            continue
        refusal = _ssh_refusal_below(ev, evidence)  # a failed ssh bootstrap that relays ssh's own refusal
        if ev.failure_class is FailureClass.USER_ERROR or refusal is not None:
            return _user_error(refusal or ev, evidence, progress)
        said = _died_of(ev, evidence, progress) if ev.failure_class is FailureClass.UNKNOWN else None
        if said is not None:
            return said
        if _bootstraps_itself(ev) or (ev.host_means is HostMeaning.SUSPECT and ev.failure_class.attributes_node):
            # A lost connection or a failed launch names a lead, not a dead node: until a probe or the scheduler
            # says more it is trouble between hosts (issue 13: a supervisor probes the suspects first).
            return _suspect_lead(ev)
        root = _quoted_cause(ev, evidence)
        summary = root.pattern in _STATUS_ONLY
        why = f"{root.pattern} at line {root.line}: {root.text[:120]}"
        # A frame of the program's own abort routine whose message is not in the log (class unknown): the abort
        # reported with its traceback is that stop (see _signal_death), not a crash that says more.
        stop = root.pattern in _ABORT_ROUTINES and root.failure_class is FailureClass.UNKNOWN
        return _Decision(root.failure_class or ev.failure_class, (), why, from_status=summary,
                         line=root.line if summary or stop else None, own_abort=stop)
    return None


def _success_contradicted(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """A line saying the run succeeded (a summary: Ray's "Job '...' succeeded", a test program's 'completed
    MPI_Finalize') holds only while nothing in the log says a process failed: a rank's own crash (its signal
    handler's report, before or after: a crash at exit after the program's last word still fails the job) or a
    launcher's word that a task exited non-zero. The run did not succeed; the failure lines decide."""
    return ev.failure_class is FailureClass.SUCCESS and any(
        e is not ev and (_is_crash(e) or e.pattern in _NONZERO_EXIT_WORDS) and not _passed_over(e, evidence)
        for e in evidence)


#: A launcher's or a job shell's word that tasks exited non-zero (flux-job's "task(s) exited with exit code 1", srun's
#: "error: HOST: task N: Exited with exit code 1", mpirun's "detected that one or more processes exited with non-zero
#: status"); not the generic forms, which a wrapper prints after its own success too (Airflow's SIGTERMed task).
_NONZERO_EXIT_WORDS = frozenset({"flux.job_tasks_status", "slurm.srun_tasks_exit_code", "openmpi.nonzero_status"})


#: A stop message read as unknown and the frames of the same stop printed after it: the CESM/E3SM share code's
#: shr_abort_abort writes 'ERROR: <message>' (print_error_to_logs) and then its backtrace (shr_abort_backtrace),
#: whose shr_abort_mod frames cesm.shr_abort_frame reads as the model's own stop. When the message is EAM's netCDF
#: check ('ERROR: HANDLE_NCERR', error_messages.F90 handle_ncerr -> endrun, the reason written only to atm.log),
#: the frames below are that same stop, not a second, programming, cause (heldout433).
_OWN_STOP_FRAMES: dict[str, frozenset[str]] = {"cesm.handle_ncerr_stop": frozenset({"cesm.shr_abort_frame"})}


def _died_of(ev: Evidence, evidence: tuple[Evidence, ...], progress: Progress | None) -> _Decision | None:
    """What a root that says only 'it died' (a KilledWorker, a worker lost) yields to, below it: the program's own
    error anywhere in the log (the worker died of the missing module), or the dead worker's own word for why it
    exited, relayed below the master's 'Worker N terminated.' (the worker's stderr under srun or in its job's output,
    :data:`_WORKER_EXIT_REASONS`): that reason decides, as the mistake does."""
    mistake = next((e for e in evidence if e.role is Role.ROOT and e.line > ev.line
                    and e.failure_class is FailureClass.USER_ERROR and not _passed_over(e, evidence)
                    and e.pattern not in _OWN_STOP_FRAMES.get(ev.pattern, ())
                    and not _setup_line(e) and not _halted_at_lost_worker(e, evidence)
                    and not _halted_without_error(e, evidence)
                    and e.pattern not in _STATUS_ONLY and e.pattern not in LAST_RESORT), None)
    if mistake is not None:
        return _user_error(mistake, evidence, progress)
    told = next((e for e in evidence if e.pattern in _WORKER_EXIT_REASONS and e.line > ev.line), None)
    if told is not None and told.failure_class is not None:
        return _Decision(told.failure_class, (), f"{told.pattern} at line {told.line}, the lost worker's "
                         f"own reason for exiting: {told.text[:120]}")
    return None


# Intel Fortran's runtime reports a crash signal it caught ("forrtl: severe (174): SIGSEGV, segmentation fault
# occurred") and then ends the image the way it ends on any severe error: it closes the open units, flushing their
# buffers, and a unit in a broken state fails there ("forrtl: severe (28): CLOSE error, unit 50", "(38) error during
# write"; the Intel Fortran Developer Guide's list of runtime error messages: 28 is an error condition met during a
# CLOSE). An I/O error on the few lines after the runtime's own crash report is that exit, not a storage fault.
_RUNTIME_CRASH, _RUNTIME_EXIT_IO = "fortran.forrtl_crash_signal", "fortran.forrtl_io_error"
_RUNTIME_EXIT_LINES = 4


def _runtime_exit_io(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is a Fortran runtime's I/O error printed while it ended a rank whose crash it had just reported
    (see :data:`_RUNTIME_EXIT_IO`)."""
    return ev.pattern == _RUNTIME_EXIT_IO and any(
        e.pattern == _RUNTIME_CRASH and 0 < ev.line - e.line <= _RUNTIME_EXIT_LINES for e in evidence)


#: A launcher's report that the ssh it bootstraps with failed on a host (Intel MPI Hydra's 'Unable to run
#: bstrap_proxy on X (pid N, exit code 65280)', 65280 being ssh's exit 255), and ssh's own refusal that the
#: launcher relays below its 'Possible reasons' block (hydra's i_hydra_bstrap.c prints the block, then the
#: bootstrap's stderr arrives).
_SSH_BOOTSTRAP = "hydra.bstrap_proxy_failed"
_SSH_REFUSALS = frozenset({"generic.ssh_usage", "generic.ssh_auth_refused"})
_SSH_BOOTSTRAP_LINES = 20  # check_exit_codes .. HYD_bstrap_setup, 'Error setting up', 'Possible reasons:' and 10 more


#: The host Intel MPI's Hydra names as its own in the prefix of its messages ('[mpiexec@<host>] check_exit_codes
#: (...): unable to run bstrap_proxy on <host> ...': HYD_PRINT's '[%s@%s] ' of the program name and its hostname).
_MPIEXEC_AT = re.compile(r"\[mpiexec@([A-Za-z0-9][A-Za-z0-9._-]*)\]")


def _bootstraps_itself(ev: Evidence) -> bool:
    """Whether ``ev`` is a failed bootstrap of the launcher's proxy on the launcher's own host (the host in the
    '[mpiexec@H]' prefix is the one the proxy would not start on): no network between hosts was in it, so the line
    names no far end to suspect; a missing binary, a broken environment or a refused local launch are as likely
    (heldout462, hydra2_heldout315, mpich_heldout14)."""
    if ev.pattern != _SSH_BOOTSTRAP or ev.host is None:
        return False
    own = _MPIEXEC_AT.search(ev.text)
    named = (ev.host_text or ev.host.name).lower()
    return own is not None and own.group(1).lower().split(".")[0] == named.split(".")[0]


def _suspect_lead(ev: Evidence) -> _Decision:
    """A line that names a host only as a suspect (a lost connection, a failed launch): trouble between hosts, the
    host a lead; but a launcher's proxy that would not start on the launcher's own host (:func:`_bootstraps_itself`)
    used no link between hosts, and the line does not say why."""
    if _bootstraps_itself(ev):
        return _Decision(FailureClass.UNKNOWN, (), f"{ev.pattern} at line {ev.line}: mpiexec could not start its "
                         f"proxy on its own host, no link between hosts in it; the line does not say why: "
                         f"{ev.text[:120]}")
    return _Decision(FailureClass.NETWORK, (), f"{ev.pattern} at line {ev.line} names "
                     f"{ev.host.name if ev.host else 'a host'} only as a suspect: {ev.text[:120]}")


def _ssh_refusal_below(ev: Evidence, evidence: tuple[Evidence, ...]) -> Evidence | None:
    """A launcher's failed ssh bootstrap says only that ssh did not start its proxy on a host (unreachable, or
    refused); ssh's own refusal below it (its usage text for an option it does not take, a host key or login
    refused) says which: the launch's ssh setup, the user's to fix, and the host it names is not at fault."""
    if ev.pattern != _SSH_BOOTSTRAP:
        return None
    return next((e for e in evidence if ev.line < e.line <= ev.line + _SSH_BOOTSTRAP_LINES
                 and e.pattern in _SSH_REFUSALS), None)


#: A network line that relays the error it caught on the lines after it: TensorFlow's MonitoredSession logs
#: 'An error was raised. This may be due to a preemption in a connected worker or parameter server. ... Error: %s'
#: (tensorflow/python/training/monitored_session.py, _RecoverableSession) with the caught error's message last, and
#: the message hedges between a preempted peer and gRPC trouble: a storage failure it quotes (a checkpoint upload
#: the store refused) says which.
_RELAYED_ERROR = "generic.tf_recoverable_session_error"


def _quoted_cause(ev: Evidence, evidence: tuple[Evidence, ...]) -> Evidence:
    """A communication library's error that quotes its cause on the lines after it (PyTorch's 'NCCL error in: ...,
    unhandled cuda error', then 'Last error:' and NCCL's "Cuda failure 2 'out of memory'"): the allocation that
    failed, or the GPU's own fault, decides, not the collective that reported it. An open connection that broke (naming
    no host), then a launcher's report of the daemon it lost (within the same few lines): the lost node decides. A
    relay (see _RELAYED_ERROR) that quotes a storage failure: the storage failure decides."""
    if ev.failure_class is not FailureClass.NETWORK:
        return ev
    if ev.pattern in _STREAM_CLOSED:
        # A connection that broke and names no host (Grid Engine's 'commlib error: got read error' as qrsh's stream
        # to the remote shepherd closes), then the launcher's word that it lost its daemon there (ORTE's 'lost
        # communication with its daemon'): one loss seen twice, and the launcher's says what was lost, so it
        # decides, as the README's node_loss row reads a launcher's report of a lost node.
        lost = next(_quoted_below(ev, evidence, lambda e: e.role is Role.ROOT
                                  and e.failure_class is FailureClass.NODE_LOSS), None)
        if lost is not None:
            return lost
    if ev.pattern == _RELAYED_ERROR:
        storage = next(_quoted_below(ev, evidence, lambda e: e.role is Role.ROOT
                                     and e.failure_class is FailureClass.TRANSIENT_IO), None)
        if storage is not None:
            return storage
    quoted = next(_quoted_below(ev, evidence, lambda e: e.role is Role.ROOT and e.failure_class in _QUOTABLE_CAUSES
                                and not _read_otherwise_by_its_program(e, evidence)), None) or _appended_oom(
                                    ev, evidence)
    quoted = quoted or _relayed_device_fault(ev, evidence)
    if quoted is not None:
        return quoted
    if ev.pattern == _NCCL_RELAY and _NCCL_RELAYED_CUDA.search(ev.text):
        # NCCL's own warning of the CUDA allocation that failed, wherever its NCCL_DEBUG output was pasted.
        return next((e for e in evidence if e.pattern == _NCCL_CUDA_OOM and e.role is Role.ROOT
                     and _NCCL_WARN in e.text), ev)
    return ev


#: PyTorch's relay of an NCCL result (C10D_NCCL_CHECK, torch/csrc/distributed/c10d/NCCLUtils.hpp: 'NCCL error in:
#: <file>:<line>, ' + ncclGetErrorWithVersion) says only which result the call returned; NCCL's own WARN lines
#: (NCCL_DEBUG=WARN/INFO, printed by NCCL's threads as the failure happens, misc/debug.cc ncclDebugLog) say why.
#: For ncclUnhandledCudaError ('unhandled cuda error') and ncclInternalError ('internal error': NCCL's proxy service
#: thread, when an operation such as a connection's Setup fails, warns '[Proxy Service %d] Failed to execute operation
#: %s from rank %d, retcode %d' and closes the rank's socket, src/proxy.cc at NVIDIA/nccl 5067397c, and the rank's call
#: fails with it) the CUDA allocation NCCL warned of ("Cuda failure 'out of memory'", nccl.cuda_out_of_memory) is
#: that cause. Posters paste the NCCL_DEBUG output
#: apart from the traceback and ranks interleave it, so it is not always within the few lines _quoted_below reads:
#: anywhere in the log it decides over the relay (heldout332). Only NCCL's own WARN line counts so (its 'NCCL WARN'
#: mark, printed by the library as it failed); the bare "Cuda failure ..." of PyTorch's 'Last error:' quote is read
#: only on the lines below the relay, as any quoted cause. 'unhandled system error' (sockets, shared memory) is not
#: read so: a CUDA allocation is not what a system call failing means.
_NCCL_RELAY = "nccl.unhandled_system_error"
_NCCL_RELAYED_CUDA = re.compile(r"\bunhandled cuda error\b|\binternal error\b")
#: ncclUnhandledCudaError alone: NCCL's CUDACHECK and CUDACALL wrappers WARN "Cuda failure %d '%s'" with
#: cudaGetErrorString's text and return it (NVIDIA/nccl 5067397c src/include/checks.h, src/include/cudawrap.h); PyTorch
#: quotes that warning below its relay after 'Last error:'. A GPU kernel's fault quoted there (an illegal address)
#: decides over the relay.
_NCCL_UNHANDLED_CUDA = re.compile(r"\bunhandled cuda error\b")
_NCCL_CUDA_OOM = "nccl.cuda_out_of_memory"
_NCCL_WARN = "NCCL WARN "


def _read_otherwise_by_its_program(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether a generic pattern's reading of a line is overruled by a program's own pack that reads the same line
    as another root cause: MSCCL++'s 'a work item failed: status 12 (Ib failure: Cannot allocate memory)' prints an
    InfiniBand completion status through strerror, so the memory words are no allocation (the program's own pack
    knows what it means, as _reads_the_same_line_closer says for a user error)."""
    return ev.pattern.startswith("generic.") and any(
        e.line == ev.line and e.role is Role.ROOT and not e.pattern.startswith("generic.")
        and e.failure_class is not None and e.failure_class is not ev.failure_class for e in evidence)


#: What a communication error quotes as its cause that decides over it: memory that could not be had, and the GPU's
#: own fault (NCCL's ncclUnhandledCudaError 'unhandled cuda error', then 'Last error:' and "Cuda failure 'unspecified
#: launch failure'"; a socket's error printed beside the uncorrectable NVLink error that broke the rank).
_QUOTABLE_CAUSES = frozenset({FailureClass.OOM, FailureClass.GPU_HW})


def _relayed_device_fault(ev: Evidence, evidence: tuple[Evidence, ...]) -> Evidence | None:
    """The CUDA call NCCL made failed because a kernel had already faulted (PyTorch's relay of 'unhandled cuda error',
    'Last error:', then NCCL's "Cuda failure 700 'an illegal memory access was encountered'"): the device's fault,
    quoted below the relay, is the cause, as an allocation is, and a kernel's fault is no network's (heldout561)."""
    if ev.pattern != _NCCL_RELAY or not _NCCL_UNHANDLED_CUDA.search(ev.text):
        return None
    return next(_quoted_below(ev, evidence, lambda e: e.pattern in _DEVICE_FAULTS), None)


def _appended_oom(ev: Evidence, evidence: tuple[Evidence, ...]) -> Evidence | None:
    """XLA's one-line form, 'NCCL operation <call> failed: unhandled cuda error ... Last NCCL warning(error) log entry
    (may be unrelated) ' + ncclGetLastError + "'.", appends NCCL's last WARN (src/debug.cc ncclDebugLog saves it) to
    its own line: a CUDA allocation it quotes there (nccl.cuda_out_of_memory) decides, as below (heldout355)."""
    return next((e for e in evidence if e.line == ev.line and e.pattern == _NCCL_CUDA_OOM and e.role is Role.ROOT),
                None)


def _quoted_below(
    ev: Evidence, evidence: tuple[Evidence, ...], quotes: Callable[[Evidence], bool]
) -> Iterator[Evidence]:
    """The lines up to _QUOTED_CAUSE_LINES below ``ev`` that ``quotes`` accepts: what an error's message quoted."""
    return (e for e in evidence if ev.line < e.line <= ev.line + _QUOTED_CAUSE_LINES and quotes(e))


#: A C++ exception's terminate line, whose 'what():' message below may quote what the device reported.
_TERMINATE_USER_ERRORS = frozenset({"generic.cxx_logic_error"})
#: A GPU's report of a kernel's fault (an illegal address, a device-side assert): a crash, not a failed check.
_DEVICE_FAULTS = frozenset({"nvidia.cuda_illegal_address", "nvidia.cuda_fault_terminate"})


def _quotes_a_device_fault(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """An uncaught std::logic_error whose message quotes a GPU kernel's fault within the lines below it (Kokkos's
    'FAIL:' then 'cudaDeviceSynchronize() error( cudaErrorIllegalAddress): an illegal memory access ...'): the check
    that threw only noticed the device's fault, which decides, as a crash."""
    return ev.pattern in _TERMINATE_USER_ERRORS and any(
        _quoted_below(ev, evidence, lambda e: e.pattern in _DEVICE_FAULTS))


#: A traceback's last line naming a programming error whose own message is the driver's report of a kernel's memory
#: fault: StreamExecutor (TensorFlow, XLA, JAX) returns a failed driver call as a status whose message ends with the
#: CUresult's name, 'Internal: Failed to launch CUDA kernel: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was
#: encountered' (tensorflow/stream_executor/cuda/cuda_driver.cc, ToString: 700 -> "CUDA_ERROR_ILLEGAL_ADDRESS"), and
#: the Python binding raises it under whatever exception type it maps the status to (old jaxlib: ValueError). Not a
#: device-side assert, which the program's own index check fires (a user error, see nvidia.cuda_device_assert).
_PY_PROGRAMMING_ERROR = "python.programming_error"
_KERNEL_MEMORY_FAULT = re.compile(
    r"an illegal memory access was encountered|CUDA_ERROR_ILLEGAL_ADDRESS|an illegal instruction was encountered"
    r"|misaligned address")


def _exception_relays_device_fault(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether a programming error's line is the relay of a GPU kernel's memory fault (see _KERNEL_MEMORY_FAULT):
    the type is the binding's choice, the message the driver's; the fault decides as a bare illegal address does
    (unknown, nobody blamed), not the user's mistake (heldout575: jax 'ValueError: Internal: Failed to launch CUDA
    kernel: CUDA_ERROR_ILLEGAL_ADDRESS')."""
    return ev.pattern == _PY_PROGRAMMING_ERROR and any(
        e.line == ev.line and e.pattern in _DEVICE_FAULTS and _KERNEL_MEMORY_FAULT.search(e.text) for e in evidence)


# A program's own stop words carry whatever message the program passed them ('FATAL ERROR: %s', LAMMPS's 'ERROR on
# proc N: %s (file.cpp:N)', MPAS's 'CRITICAL ERROR: %s', CESM's shr_abort 'ERROR: %s', LBANN's 'LBANN error on rank N
# (file:line): %s'): the words say the program stopped itself, the message says why. A message that reports the
# machine failing under it (NAMD's 'FATAL ERROR: CUDA error ... on Pe 3 (nid00012 device 0): an illegal memory access
# was encountered', GROMACS's 'Fatal error: cudaStreamSynchronize failed ...: unspecified launch failure', 'CRITICAL
# ERROR: Connection timed out while reading ...') is no mistake of the user's: the program only relayed what it was
# told, so the stop words do not decide (another line, or the status, does: a lone relay reads unknown and is
# retried). Header-style stops print the message on the lines below (GROMACS's 'Program: gmx mdrun, version ...'
# block, OpenFOAM's '--> FOAM FATAL ERROR', WRF's 'FATAL CALLED FROM FILE', CP2K's '[ABORT]' box, Parthenon's
# '### PARTHENON ERROR' block): a GPU kernel's fault among them counts the same.
_STOP_WORDS = frozenset({"generic.program_fatal_words", "namd.fatal_error", "mpas.critical_error",
                         "lammps.error_one_all", "cesm.shr_abort_error", "lbann.lbann_error"})
_STOP_HEADERS = frozenset({"gromacs.fatal_error_header", "openfoam.fatal_error", "wrf.fatal_called_from_file",
                           "cp2k.abort_box", "parthenon.error_header"})
_STOP_HEADER_LINES = 8  # GROMACS: Program, Source file, Function, MPI rank, a blank, 'Fatal error:', the message
#: What a relayed message says when the machine failed under the program: a connection or the network, memory
#: that could not be had, a storage error, a GPU's own fault (not a kernel launched wrong: 'invalid device
#: function', 'no kernel image' are the build's), a peer or node gone.
_MACHINE_FAULT = re.compile(
    r"(?i)\bconnection (?:refused|reset|timed out|closed|lost|failed|error)|\blost (?:connection|communication|contact)"
    r"|\btimed out\b|\bnetwork (?:error|failure|is unreachable)|\bunreachable\b|\bbroken pipe\b|\bno route to host\b"
    r"|\bout of memory\b|\bnot enough memory\b|\bcannot allocate memory\b|\binput/output error\b|\bi/o error\b"
    r"|\bdisk quota exceeded\b|\bno space left on device\b|\bstale file handle\b|\bread-only file system\b"
    r"|\billegal memory access\b|\bunspecified launch failure\b|\becc error|\buncorrectable\b|\bfallen off the bus\b"
    r"|\bmemory access fault\b|\bdevice (?:is )?(?:lost|removed|unavailable)\b|\bhardware (?:error|failure)\b")


def _stop_words_quote_a_fault(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether a program's own stop words (see _STOP_WORDS) relay the machine's failure rather than the program's
    reason: the message on the line says it, or a GPU kernel's fault is read on that line or within
    _STOP_HEADER_LINES below it (a header-style stop, or stop words whose message is on the next line)."""
    if ev.pattern in _STOP_WORDS and _MACHINE_FAULT.search(_PATHS.sub(_machine_paths_only, ev.text)):
        return True
    return (ev.pattern in _STOP_WORDS or ev.pattern in _STOP_HEADERS) and any(
        e.pattern in _DEVICE_FAULTS and ev.line <= e.line <= ev.line + _STOP_HEADER_LINES for e in evidence)


#: An open connection that broke, naming no host (not one that could not be made: a refused ssh is a cause of its
#: own, and decides over the launcher's lost daemon after it).
_STREAM_CLOSED = frozenset({"sge.commlib_stream_closed"})
#: How far below a network error its quoted cause may stand (PyTorch: the error line, the library's reading of
#: the code, 'Last error:', then the library's last warning).
_QUOTED_CAUSE_LINES = 4


# Lines that sum a run up rather than say why it ended: an exit status alone (127: not found, 126: not executable,
# 137 or -9: SIGKILL), a connection exception or MPICH's 'Connection reset by peer', which is as often a peer's
# view of a rank that died first as a network fault, and a program's bare "FATAL ERROR:", which says it stopped
# itself but not always why, a terminal's '^C' (the user stopped it, but maybe a job that had already failed), and
# one task's own word that it completed (submitit's: its siblings may have failed; Snakemake's 'N of N steps (100%)
# done': the job that printed it may still have hit its time limit; Airflow's 'Marking task as SUCCESS'; a Kubeflow
# Pipelines launcher's 'has reached the expected condition: Succeeded', the custom resource's summary, and a training
# operator's 'MPIJob ns/name successfully completed.' / reason MPIJobSucceeded alike; a model server's uvicorn
# 'Application startup complete.', which says the server came up, not that it stayed up; an
# HTCondor user log's '(1) Normal termination (return value 0)', one job's among a DAG's many; srun -v's 'NODE: tasks
# 0-31: Completed', one node's tasks among the step's; ezpz's 'Execution finished with 0.', a wrapper's summary that a
# failed teardown after it can belie), and a stop
# someone else asked for (bkill's 'Job <N> is being terminated', which an engine also prints when it kills the
# siblings of a job that failed; Ray Tune's 'Stop signal received', whose handler also takes a site's SIGUSR1 before
# a time limit), and a client's word that the job it waited for is gone without a result (future.batchtools'
# 'BatchtoolsExpiration: Future (...) expired', above the scheduler's own words in the log tail it quotes).
# Any other line that decides comes first, and a crash line decides before them (see _signal_death: for a fatal
# error or a Ctrl-C, only a crash before it); alone, they decide. A line that says the job died (a
# failed launch on a named node) is not explained away by a 127 after it, as the launcher that failed to start the
# program reports it.
#: A batch system's report that the job's script exited 0, and a line reporting a non-zero exit in words
#: ('finished with 143'): beside the second, the first is a wrapper script's exit, which caught its program's failure.
_EXIT_ZERO, _NONZERO_EXIT = "generic.job_exit_status_zero", "generic.nonzero_exit_reported"
#: qacct -j's exit_status 0, and its 'failed' field with a state other than 0 (Grid Engine failed the job itself).
_QACCT_EXIT_ZERO, _QACCT_FAILED = "sge.qacct_exit_status_zero", "sge.qacct_failed_state"

#: Nextflow's end-of-run stats with no failed task, and the log line Session.abort writes (any abort: a task's
#: failure, a script error, a signal): after an abort the counts are no success.
_NEXTFLOW_STATS_OK = "nextflow.workflow_stats_no_failure"
_NEXTFLOW_ABORTED = "nextflow.session_aborted"

#: HTCondor's user-log eviction (event 004) and abort (event 009, condor_rm or a removal the DAGMan job's own
#: removal set off): the id '(cluster.proc.subproc)' after the event number names the job both belong to.
_CONDOR_EVICTED, _CONDOR_REMOVED = "htcondor.job_evicted", "htcondor.job_removed_condor_rm"
#: A removal whose reason a user's tool gave ('... (by user NAME)' right under '009 ... Job was aborted.'): the
#: reason line names no job, its 009 heading does (heldout614).
_CONDOR_REMOVED_REASON, _CONDOR_ABORTED_HEADING = "htcondor.job_removed_by_user_reason", "htcondor.job_aborted_heading"
_CONDOR_EVENT_JOB = re.compile(r"^0[0-9]{2} \(([0-9]+\.[0-9]+)\.[0-9]+\) ")


def _evicted_for_removal(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the HTCondor eviction ``ev`` is how a removal ended the running job: the same job's abort event (009
    'Job was aborted by the user.', condor_rm's or the one a removed DAGMan job's OtherJobRemoveRequirements sets off)
    follows it. Removing a running job signals its shadow, which sets the exit reason JOB_KILLED and kills the
    starter (src/condor_shadow.V6.1/shadow.cpp, UniShadow::handleJobRemoval -> requestJobRemoval); the shadow logs
    a JOB_KILLED exit as an eviction (baseshadow.cpp, BaseShadow::logEvictEvent: JobEvictedEvent, 'Job was not
    checkpointed.') and the abort is logged once the job leaves the queue (read at htcondor 7491a14). The
    eviction is the removal's, not the machine taking its slot back: the removal decides (heldout543: an IceCube
    job's '004 ... Job was evicted.' a second before '009 ... via condor_rm (by user ...)', a LIGO DAG node's both
    at the same second)."""
    if ev.pattern != _CONDOR_EVICTED:
        return False
    job = _CONDOR_EVENT_JOB.match(ev.text.lstrip("\t "))
    if job is None:
        return False
    for e in evidence:
        if e.pattern not in (_CONDOR_REMOVED, _CONDOR_REMOVED_REASON) or e.line <= ev.line:
            continue
        other = _CONDOR_EVENT_JOB.match(e.text.lstrip("\t "))
        if other is None and e.pattern == _CONDOR_REMOVED_REASON:
            heading = next((h for h in evidence
                            if h.pattern == _CONDOR_ABORTED_HEADING and 0 <= e.line - h.line <= 1), None)
            other = _CONDOR_EVENT_JOB.match(heading.text.lstrip("\t ")) if heading is not None else None
        if other is not None and other.group(1) == job.group(1):
            return True
    return False


_STATUS_ONLY = frozenset({
    "kernel.exit_code_not_found", "kernel.exit_code_sigkill", "generic.negative_status_sigkill",
    "kubernetes.container_exit_code_137",
    "generic.tool_killed_signal_words",
    "generic.connection_exception", "generic.grpc_unavailable", "generic.program_fatal_words",
    "generic.connection_words", "generic.julia_worker_master_not_connected", "generic.out_of_memory_words",
    "generic.allocation_failed_words",
    "generic.build_lacks_support", "hydra.nem_tcp_reset_by_peer", "python.pip_wheel_build_failed",
    "generic.terminal_interrupt", "submitit.job_completed", "snakemake.all_steps_done", "spark.failed_to_connect",
    "hydra.exit_string_interrupt", "lsf.bkill_acknowledged", "ray.tune_stop_signal", "airflow.task_marked_success",
    "kubernetes.kfp_launcher_condition_succeeded", "torchrun.agent_worker_group_succeeded",
    "torchrun.worker_status_succeeded",
    "nextflow.run_summary_succeeded", "nextflow.run_summary_failed", "rlang.batchtools_future_expired",
    "nextflow.workflow_stats_no_failure",
    "generic.numerical_failure_words", "htcondor.normal_termination_zero",
    "spark.yarn_application_final_status_succeeded", "generic.job_exit_status_zero", "sge.qacct_exit_status_zero",
    "openmpi.noticed_interrupt_hangup", "openmpi.user_signal_abort", "flux.eventlog_complete_status_zero",
    "flux.broker_rc2_success", "flux.mpi_hello_finalized", "flux.jobs_listing_completed", "flux.jobs_listing_failed",
    "flux.jobs_listing_canceled",
    "slurm.srun_tasks_completed",
    "kubernetes.training_operator_job_succeeded", "python.uvicorn_startup_complete",
    "kubernetes.training_sdk_status_succeeded", "ray.job_cli_succeeded",
    "generic.ezpz_execution_finished_zero", "genomics.mrbayes_interrupt_detected",
    "htcondor.dagman_all_jobs_completed",
})
# A job script's environment setup that failed (a module that is unknown or cannot be loaded, a 'conda activate'
# in a shell conda was never set up in): the script goes on without it (no `set -e`), so what the
# program then says decides first, a crash line anywhere too; alone, it is the user's mistake (the site does not
# offer what the script asks for).
# Spectrum MPI's CUDA hook that found no PAMI symbols in the program (lsf.spectrum_cuda_hook_symbol: CUDA used before
# MPI_Init, or a non-MPI program launched with the hook) is the same: the launch line's set-up, harmless or fatal
# depending on what follows (OLCF's Summit guide), so what the program then says decides, and alone it is the user's.
_SETUP_ONLY = frozenset({"modules.lmod_error", "modules.modulefile_not_found", "lsf.spectrum_cuda_hook_symbol"})
# The same of a batch script's shell: the environment command itself is missing ('slurm_script: line 5: module:
# command not found': a site without Lmod on the compute nodes, or a non-login shell without its init); dash words
# it 'slurm_script: 9: module: not found' (exec.c shellexec behind exverror's '<arg0>: <line>: ', heldout693).
_SETUP_COMMANDS = re.compile(
    r": (?:line [0-9]+: (?:{0}): command not found|[0-9]+: (?:{0}): not found[ \t]*$)".format(
        r"module|ml|conda|mamba|micromamba|spack|source|activate|deactivate|pyenv|lmod"))


# The same of a shell start-up file the batch script sources ('. /etc/profile.d/TMI.sh', 'source
# ~/miniconda3/etc/profile.d/conda.sh', '. ~/.bashrc', Lmod's and Environment Modules' 'init/bash') that is not
# on this node: bash's '.'/'source' builtin opens the file in builtins/evalfile.c _evalfile() and, when open()
# fails, calls file_error() (error.c: report_error ("%s: %s", filename, strerror (errno))) behind the script's
# '<script>: line N: ' and goes on with the next line (read in bminor/bash at 637f5c86; heldout460, a VASP lab
# course's '/var/spool/slurm/jobN/slurm_script: line 13: /etc/profile.d/TMI.sh: No such file or directory' ahead
# of a time limit and a scancel). Files under a profile.d directory exist to be sourced (bash's /etc/profile and
# conda's etc/profile.d read them), as do /etc/profile and /etc/bashrc, the rc files and the module systems' init
# scripts (heldout476, blind to 460, wrote the same reading for another VASP job's missing profile.d file; merged).
_SETUP_FILES = re.compile(
    r": line [0-9]+: (?:/etc/(?:profile|(?:bash\.)?bashrc)|\S*/profile\.d/[^\s:/]+"
    r"|\S*/\.(?:bashrc|bash_profile|profile)|\S*/init/(?:bash|sh|profile)|\S*/(?:[Mm]odules|lmod)/\S*init/[a-z]+)"
    r": No such file or directory")


# The same of a failure inside an environment's activate or deactivate script itself, which the batch script
# sources ('source activate env', conda before 4.4 and virtualenv: '<prefix>/bin/activate'): bash names the sourced
# file in its report ('<env>/bin/activate: line 97: <env>/bin/conda: No such file or directory', then '[: =:
# unary operator expected' as conda 4.3.30's shell/activate line 97 'if [ $("$_CONDA_DIR/conda" ..changeps1) = "1"
# ]' runs without its conda; its own failures 'return 1' to the caller), and the script goes on without the
# environment, so what the program then says decides, a cancellation too (heldout620: a Parsl pilot block's
# broken env ahead of Slurm's CANCELLED).
_SETUP_SCRIPTS = re.compile(r"(?:^|\s)\S*/bin/(?:de)?activate: line [0-9]+: ")


# The same of an environment function a login shell exported and the job's bash could not import (bash's
# variables.c: it parses BASH_FUNC_module%% and reports 'bash: module: line 1: syntax error: unexpected end of
# file', then "error importing function definition for `module'"; 'BASH_FUNC_module(): line 0: ...' before the
# Shellshock fix): the job's shell runs on without `module`.
_SETUP_FUNCTIONS = re.compile(
    r"sh: (?:BASH_FUNC_)?(?:module|ml|_module_raw|switchml|conda|mamba|micromamba|spack|pyenv|lmod)(?:\(\)|%%)?: "
    r"line [0-9]+: ")


# The same of conda's 'conda activate' in a shell where conda's shell function was never set up: conda itself
# runs, raises CommandNotFoundError and exits 1 (conda/exceptions.py CommandNotFoundError.__init__: for the
# activate commands, "Your shell has not been properly configured to use 'conda %(command)s'.", then how to run
# 'conda init'), and the batch script goes on in the environment it had (read as generic.program_error_named).
_CONDA_SHELL_NOT_SET_UP = re.compile(
    r"CommandNotFoundError: Your shell has not been properly configured to use 'conda (?:de)?activate'")


def _setup_line(ev: Evidence) -> bool:
    """Whether ``ev`` says a job script's environment setup failed (see _SETUP_ONLY)."""
    return ev.pattern in _SETUP_ONLY or (
        ev.pattern == "python.script_command_error" and (
            _SETUP_COMMANDS.search(ev.text) is not None or _SETUP_FILES.search(ev.text) is not None
            or _SETUP_SCRIPTS.search(ev.text) is not None)) or (
        ev.pattern == "python.shell_error" and _SETUP_FUNCTIONS.search(ev.text) is not None) or (
        ev.pattern == "generic.program_error_named" and _CONDA_SHELL_NOT_SET_UP.search(ev.text) is not None)


# Python's report of an exception it could not raise and ignored (python.exception_ignored: a destructor's,
# a callback's, an exit handler's); the traceback after it ends with that exception's line within this many lines.
#: Tornado's 'Uncaught exception GET /status/ws (ip)' heads a block alike (python.web_handler_exception): a request
#: handler's exception, logged while the server went on serving (a dashboard's websocket; heldout185, heldout545).
_IGNORED_MARKS = frozenset({"python.exception_ignored", "python.web_handler_exception"})
#: A traceback whose first frame is Dask's own catch-and-log (distributed.server_logged_frame: utils.log_errors,
#: core.py handle_comm/handle_stream, right after the 'Traceback' line) is a copy its logger printed: the exception
#: that ends it is set aside alike; one that reached the program ends the program's traceback again (heldout568).
_LOGGED_FIRST_FRAMES = frozenset({"distributed.server_logged_frame"})
#: handle_comm's copy (distributed.server_replied_frame) goes back to the op's caller (heldout181's client): set aside
#: only when it repeats an exception line a logged copy already set aside (log_errors re-raised it into handle_comm).
_REPLIED_FIRST_FRAMES = frozenset({"distributed.server_replied_frame"})
_IGNORED_LINES = 100
_IGNORABLE = (FailureClass.USER_ERROR, FailureClass.UNKNOWN)


#: A program's own stop that it logs at its warning level: Parsl's HighThroughputExecutor (to 1.x, and the funcX
#: endpoint's fork of it) logs logger.warning("Executor shutting down due to version mismatch in interchange") in
#: executor.py _queue_management_worker, then sets its bad state and fails every task (read in Parsl/parsl at
#: e94d3b45~1): the level is the logger call's, the words say the executor stopped (heldout431).
_STOPS_AT_WARNING = frozenset({"parsl.executor_version_mismatch"})


def _passed_over(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the run went on after the error ``ev`` (or it is not the run's own: raised in a signal handler): a
    library caught it and logged it as a warning (unless its words are the program's own stop, _STOPS_AT_WARNING)
    or said it
    went on ("ModuleNotFoundError: No module named 'flash_attn'; falling back to eager attention": _GOES_ON), or
    Python printed it and ignored it, or a client warned of a network error it retried or outlived (see
    :func:`_network_warning`)."""
    return ((ev.failure_class is FailureClass.USER_ERROR
             and ((_logged_warning(ev) and ev.pattern not in _STOPS_AT_WARNING)
                  or _GOES_ON.search(ev.text) is not None or _in_signal_handler(ev, evidence)
                  or _in_spawn_bootstrap(ev, evidence)))
            or _network_warning(ev) or _ignored(ev, evidence) or _went_on_after_words(ev))


#: Words any program may print (memory it could not get, a build that lacks a feature): such a line may be a
#: warning the program went on after.
_WARNABLE_WORDS = frozenset({"generic.out_of_memory_words", "generic.allocation_failed_words",
                             "generic.build_lacks_support", "generic.numerical_failure_words"})
_WARNS = re.compile(r"(?i)\bwarn(?:ing)?\b")


def _went_on_after_words(ev: Evidence) -> bool:
    """A program's words for memory it could not get or a feature its build lacks, on a warning line or one that
    says what it did instead ('WARNING: insufficient memory for the cache, using the disk instead', 'not compiled
    with CUDA; falling back to the CPU'): it went on, so the line is not why the run ended."""
    return ev.pattern in _WARNABLE_WORDS and (_WARNS.search(ev.text) is not None
                                              or _WENT_ON.search(ev.text) is not None)


def _in_signal_handler(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the exception ``ev`` was raised inside a signal handler (its traceback's last frame, the frame line
    then its source line): the handler ran because a Ctrl-C or a SIGTERM arrived, which is the cause (DeepSpeed's
    runner raising NameError in sigkill_handler on a Ctrl-C); what the log says of that signal decides."""
    return any(e.pattern == "python.signal_handler_frame" and 0 < ev.line - e.line <= 2 for e in evidence)


def _in_spawn_bootstrap(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the exception ``ev`` was raised by multiprocessing's spawn bootstrap reading its parent's pipe (the
    line after python.spawn_bootstrap_read_frame, 'self = reduction.pickle.load(from_parent)'): an UnpicklingError
    'pickle data was truncated' there is a child whose parent died or stopped writing before the child was sent
    whole (a worker SIGKILLed, the parent's own error), so what ended the parent decides, not the child's error
    (heldout722: YOLOX's mp.start_processes child after 'process 0 terminated with signal SIGKILL')."""
    return any(e.pattern == "python.spawn_bootstrap_read_frame" and ev.line - e.line == 1 for e in evidence)


# An error line that says what the program does instead ("...; falling back to eager attention", "skipping
# sample 12", "continuing without apex"): it went on. Narrower than _WENT_ON: an exception that ends a run may
# well say 'deprecated' (numpy's "`np.float` was a deprecated alias") or 'ignored'.
_GOES_ON = re.compile(r"(?i)\bfall(?:ing)? ?back to\b|\bskipping\b|\bcontinuing (?:without|with|anyway)\b|"
                      r"\bwill proceed\b")


# A line that opens with a warning word ("WARNING: Retrying (Retry(total=4 ...)) after connection broken by ...",
# pip's; "Warning: ...").
_WARNING_OPENS = _opening(r"\s*(?:WARNING|Warning|WARN)\b")


def _network_warning(ev: Evidence) -> bool:
    """Whether ``ev`` is a network error a client wrote at its warning level and went on after: torch elastic's
    "failed to send a keep-alive heartbeat ... due to an error of type RendezvousConnectionError" (a background
    thread's, printed when the store's node finished first), pip's "WARNING: Retrying ... after connection broken".
    It decides only when nothing else says why (:func:`_warned`). A dead node's warning (Ray's "marked dead") is no
    network error and keeps its weight."""
    return ev.failure_class is FailureClass.NETWORK and ev.role is Role.ROOT and (
        _logged_warning(ev) or _WARNING_OPENS.search(ev.text) is not None)


#: A scheduler's refusal of the submission itself: the job never ran, so a workflow manager that logs the
#: command's stderr at its warning level has not gone on past it. Autosubmit prints every stderr line of a
#: submit command as Log.printlog(f'Command {command} in {self.host} warning: {self._ssh_output_err}', 6006), code
#: 6006 a warning (BSC-ES/autosubmit autosubmit/platforms/paramiko_platform.py, read at e4254d0d), then '[ERROR]
#: <platform> submission failed' (heldout632).
_SUBMIT_REFUSALS = frozenset({"slurm.unable_to_allocate"})


def _warned(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """The first network warning (see :func:`_network_warning`), once nothing else decided: the trouble the log
    shows, as a last word. Before it, a submission refusal logged at a warning level (see
    :data:`_SUBMIT_REFUSALS`): the job was never submitted."""
    refused = next((e for e in evidence if e.pattern in _SUBMIT_REFUSALS and e.role is Role.ROOT), None)
    if refused is not None and refused.failure_class is not None:
        return _Decision(refused.failure_class, (), f"{refused.pattern} at line {refused.line}, logged as a warning, "
                         f"and no other line says why: {refused.text[:120]}", from_status=True, line=refused.line)
    ev = next((e for e in evidence if _network_warning(e)), None)
    if ev is None:
        return None
    return _Decision(FailureClass.NETWORK, (), f"{ev.pattern} at line {ev.line}, a warning, and no other line says "
                     f"why: {ev.text[:120]}", from_status=True, line=ev.line)


#: A Dask worker's line that it is trying to reach its scheduler (distributed pack).
_WORKER_WAITING = "distributed.waiting_to_connect"
#: How many of those lines, for one scheduler and with no worker registered, say the workers never reached it.
_NEVER_REGISTERED_WAITS = 3


def _never_registered(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """Dask workers that kept 'Waiting to connect to' one scheduler and never logged 'Registered to:' (a worker
    that cannot open a connection logs the line again after each failed attempt; dask-mpi's ranks each print it
    once): they could not reach it (a wrong interface, a scheduler gone or behind a firewall), once nothing else
    decided. The scheduler's address is a lead, never blamed (heldout700; heldout326's dask-mpi workers)."""
    if any(e.pattern == _WORKER_REGISTERED for e in evidence):
        return None
    waits: dict[Host, int] = {}
    for e in evidence:
        if e.pattern == _WORKER_WAITING and e.host is not None:
            waits[e.host] = waits.get(e.host, 0) + e.count
    far = [h for h, n in waits.items() if n >= _NEVER_REGISTERED_WAITS]
    if len(far) != 1:
        return None
    first = next(e for e in evidence if e.pattern == _WORKER_WAITING and e.host == far[0])
    return _Decision(FailureClass.NETWORK, (), f"{waits[far[0]]} lines 'Waiting to connect to' {far[0].name} from "
                     f"line {first.line} and no worker registered: it was never reached", from_status=True,
                     line=first.line, leads=(far[0],))


def _ignored(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev``, a program error (or a bare 'it died'), is the exception of a block Python printed and
    ignored: the first root line after that block's header. An infrastructure error there still says what state
    the machine is in (a full disk in an exit handler) and is not set aside."""
    return ev.failure_class in _IGNORABLE and id(ev) in _ignored_ids(evidence)


#: The last evidence :func:`_ignored_ids` read and what it found (one tuple, replaced whole: threads may classify).
_IGNORED_SEEN: tuple[tuple[Evidence, ...], frozenset[int]] = ((), frozenset())


def _ignored_ids(evidence: tuple[Evidence, ...]) -> frozenset[int]:
    """The ids of the root lines that end a block Python printed and ignored (see :func:`_ignored`), found in one
    pass and kept for the evidence last asked about: the classifier asks per line, and a log of 10,000 hosts'
    errors must not cost 10,000 passes."""
    global _IGNORED_SEEN  # noqa: PLW0603 -- a one-entry cache, replaced whole
    seen = _IGNORED_SEEN
    if seen[0] is evidence:
        return seen[1]
    found: set[int] = set()
    headers = {e.line for e in evidence if e.pattern == "python.traceback"}
    marks = {id(e) for e in evidence if e.pattern in _IGNORED_MARKS
             or (e.pattern in _LOGGED_FIRST_FRAMES | _REPLIED_FIRST_FRAMES and e.line - 1 in headers)}
    if marks:
        mark: int | None = None
        replied = False  # the mark is handle_comm's: only a repeat of a line set aside is
        first: int | None = None  # the line of the first root after the mark
        aside: set[str] = set()  # the exception lines set aside so far
        for e in sorted(evidence, key=lambda e: e.line):
            if id(e) in marks:
                mark, first, replied = e.line, None, e.pattern in _REPLIED_FIRST_FRAMES
            elif e.role is Role.ROOT and mark is not None and e.line > mark:
                if first is None:
                    first = e.line
                if e.line == first and e.line - mark <= _IGNORED_LINES and e.failure_class in _IGNORABLE and (
                        not replied or e.text.strip() in aside):
                    found.add(id(e))
                    aside.add(e.text.strip())
    ids = frozenset(found)
    _IGNORED_SEEN = (evidence, ids)
    return ids
#: Classes of a summary line (above) that a crash line explains: the SIGKILL of the ranks left, the peers' lost
#: connections, the fatal error a crash handler prints, the Ctrl-C of a user whose job hung after a rank crashed.
_CRASH_EXPLAINS = frozenset({
    FailureClass.RANK_KILLED, FailureClass.NETWORK, FailureClass.USER_ERROR, FailureClass.CANCELLED,
})


# A program's bare error line ("ERROR: cannot open run.in", "prog: error: ..."; generic.error_severity_line) is the
# last resort: it decides only when no other line, no teardown, the scheduler and the exit status say nothing (a
# launcher's own "srun: error: n3: task 0: Segmentation fault" has the same shape and its own reading), and then
# as the program's own stop, unless it speaks of the infrastructure (the words a connection, memory, storage,
# device or node failure is reported in), is a launcher's or a scheduler client's own line ("srun: error: Unable
# to create job step"), or only reports an exit status (a supervisor's "process exited 1" says that it failed, not
# why; also in one word, as TorchElastic's "Error msg: Process failed with exitcode 1" and many supervisors'
# "failed with exitCode=N" write it, and Python's subprocess attribute as SkyPilot's "Failed workers: (pid=N,
# returncode=1)" does; a wrapper's "returns error code N" for the container or program it ran, as Stimela's cab
# runner words it, stimela/utils/xrun_poll.py xrun: "{} returns error code {}", heldout404). A missed heartbeat is
# a liveness check that gave up on a process or a peer (cryoSPARC's "ERROR: No Heartbeat", heldout404): the
# infrastructure's report that something stopped answering, not why. Programs no pack knows word those failures the
# same way ("Error: failed to
# connect to 10.0.0.5"), and calling them the user's mistake would stop a job a retry could finish. An end of file
# read where more was due is a peer gone (Julia's "ERROR (unhandled task failure): EOFError: read end of file" after
# "Worker 2 terminated.", stdlib Distributed), so it reads as infrastructure too.
# Open MPI's daemons (orted, prted) count as whole words only: "unsupported", "reported" and "sorted" are not them.
# A transport library's own names count inside an identifier too (UCX's 'rc_verbs_iface.c:63 FATAL: send completion
# with error', 'uct_ib_mlx5_...'): its log line names its source file, and an underscore is no word boundary.
# A pilot is the batch job a pilot system (RADICAL-Pilot, HTCondor glideins, PanDA) runs tasks in: its failure is the
# executor's, lost under the tasks (RADICAL-Pilot's Pilot._default_state_cb raises RuntimeError('pilot %s failed -
# fatal!') when the pilot's state turns FAILED, read with find_string), not the task's own mistake.
# HIP is AMD's CUDA, named as a whole word: PyTorch's ROCm build reports a GPU runtime error as 'HIP error: <the
# runtime's message>' where its CUDA build says 'CUDA error: <message>' (with 'HIP kernel errors might be
# asynchronously reported at some other API call' beside it, as posted in the corpus's ROCm entries), so a traceback
# ending in 'RuntimeError: HIP error: ...' is the GPU runtime's report, as its CUDA twin is (heldout331).
# ACL (the Ascend Computing Language runtime, CANN's) is Huawei's: torch_npu raises 'RuntimeError: ACL stream
# synchronize failed, error code:507048' where the CUDA build would say 'CUDA error: ...' (the corpus's vllm-ascend
# entries, heldout134), a whole word as HIP is; read once vLLM's logger prefix stopped hiding these lines (heldout417).
# MPICH's texts for the error classes that name no wrong call count too, as Open MPI's 'MPI_ERR_OTHER' does through
# 'mpi_err_': MPI_ERR_OTHER is 'Other MPI error' (**other), MPI_ERR_INTERN 'Internal MPI error!' (**intern,
# **internrc) in src/mpi/errhan/errnames.txt, and a code of no valid class 'Unknown error class' (errutil.c
# get_class_msg); mpi4py's Exception carries that text ('mpi4py.MPI.Exception: Other MPI error, error stack:', a
# send that failed deep in the transport at a thousand ranks, heldout352), which says the library failed, not how
# the program called it. The wrong-call classes ('Message truncated', 'Invalid rank') stay the program's.
# gRPC's and absl's DEADLINE_EXCEEDED (absl::StatusCode::kDeadlineExceeded, 'Deadline Exceeded' in gRPC's words,
# TensorFlow's DeadlineExceededError) is a time out by its status name: a call that got no answer in time (jaxlib's
# XlaRuntimeError carries the status code name first, 'DEADLINE_EXCEEDED: Barrier timed out. ...', from the XLA
# coordination service), so a traceback ending in it is not read as the program's mistake even when the rest of
# the message is cut off (heldout477).
_INFRA_WORDS = re.compile(
    r"(?i)connect|sock|network|\brpc\b|timed? ?out|deadline[ _]?exceeded|memory|\bdisk|space left|quota|"
    r"\bi/o\b|input/output|stale|"
    r"file ?system|permission|device|\bgpu|cuda|\bhip\b|(?<![-\w])node|(?<![-\w])host|(?<![-\w])pilot\b|mount|resource|"
    r"unavailable|\bacl\b|"
    r"interrupt|signal|killed|terminated|launch|allocation|revoked|container|\bpmix?\b|slurmstepd|slurmd|pyxis|enroot|spank|"
    r"\borted\b|\bprted\b|code:? -[0-9]|\bhdf|netcdf|temporar|unreachable|refused|reset by|broken pipe|no route|"
    r"\bdns\b|end of file|\beof(?:error)?\b|\b[nrh]ccl\b|\bgloo\b|\bofi\b|fabric|infiniband|completion with error|"
    r"(?<![a-z0-9])(?:ucx|uct|ucp|ucs|verbs|ibv|mlx[45]|rdma(?:cm)?)(?![a-z0-9])|\b(?:psm[23]?|cxi|efa|u?gni)\b|"
    r"\bmpi_err_|other mpi error|internal mpi error|unknown error class|driver|address already in use|"
    r"name resolution|throttl|rate limit|busy|try again|retry|retries|exited|exit[ _]?(?:code|status)|"
    r"return(?:ed|s)? ?(?:error ?)?code|retcode|heartbeat|\bs(?:run|alloc|batch|control|queue|info|acct|cancel|stat)\b|"
    r"\bq(?:sub|stat|del|alter)\b|pbsnodes|\bb(?:sub|jobs|kill)\b|\bflux\b|\bmpirun\b|\bmpiexec\b|\baprun\b|\bjsrun\b|"
    r"job step|job ?id")


# An error line that says the program went on past it (ld.so's "... cannot be preloaded ...: ignored.", "skipping",
# "falling back to", slurmstepd's "couldn't chdir to ...: going to /tmp instead"): not what stopped it, so never
# the last resort's reading.
_WENT_ON = re.compile(r"(?i)\bignor(?:ed|ing)\b|\bskipp(?:ed|ing)\b|\bcontinuing\b|\bfall(?:ing)? ?back\b|\binstead\b|"
                      r"\bdeprecated\b|\bwill (?:be )?(?:use|using|proceed)|"
                      # a report's field that names where errors go ('error file: job.err.000', pegasus-analyzer's
                      # failed-job table; torchrun's 'error_file: <N/A>'): a label and one path, not an error. A label
                      # followed by the error itself ('Error Log: `... out of memory ...`', an issue template's field
                      # with the log pasted after it) is the error, and is read
                      rf"^{LINE_PREFIX}\s*(?:error|stderr)[ _](?:file|log|path)s?\s*[:=][ \t]*"
                      r"(?:[\"'`]?[^\s\"'`]*[\"'`]?)?[ \t]*$|"
                      # dmidecode's inventory of the memory and caches, each attribute on its own tab-indented line
                      # (dmioutput.c pr_attr: printf("\t%s: ", name)), three of them named from the word 'Error':
                      # 'Error Correction Type: Multi-bit ECC' (dmidecode.c dmi_decode, types 7 and 16), 'Error
                      # Detecting Method: Parity' (type 5), 'Error Information Handle: Not Provided'
                      # (dmi_memory_array_error_handle; read at mirror/dmidecode b70f6ee). A node-inventory script
                      # prints them in every log (heldout351): what the hardware supports, not an error
                      rf"^{LINE_PREFIX}\s*Error (?:Correction Type|Detecting Method|Information Handle): ")


# A job script's housekeeping that found nothing to do: `ls` of a checkpoint a first run has not written yet, `rm`
# of a lock already gone, git refusing to check out over local changes or run outside a repository (a script that
# logs its commit), a tool asking a terminal a batch job does not have (srun's, stty's, mesg's 'Inappropriate ioctl
# for device': ENOTTY). The script goes on after them, so the last resort never reads them as why the job stopped.
_HOUSEKEEPING = re.compile(rf"^{LINE_PREFIX}\s*(?:ls|rm|rmdir|unlink|readlink|realpath): |would be overwritten by "
                           r"(?:checkout|merge)|not a git repository|Inappropriate ioctl for device")


# A logger's warning level on the line (Python logging's '[WARNING]' and 'WARNING:root:', Ray's 'WARNING
# worker.py:N --', glog's 'W1129 ...'): the exception on it was caught and reported, not what ended the run.
_WARNING_LEVEL = re.compile(r"\[WARNING\]|(?:^|[\s\]])WARNING(?::[\w.]*:|\s+\S+\.py:[0-9]+ --)|^W[0-9]{4} [0-9:.]+ ")


# A crash line that says the process aborted (SIGABRT by number or name, Aborted, 134 = 128 + 6, exitcode -6).
_ABORT = re.compile(r"signal 6\b|SIGABRT|\bAbort(?:ed)?\b|\b134\b|exitcode: -6\b")


#: What the scheduler (or its user) does to a job that is still running: it ran out of time, was cancelled, was
#: preempted.
_SCHEDULER_STOPS = frozenset({FailureClass.WALLTIME, FailureClass.CANCELLED, FailureClass.PREEMPTED})


#: slurmstepd's count of the OOM kills in a step's cgroup ('Detected N oom_kill events in StepId=...', older
#: 'oom-kill event(s) in step N.batch cgroup'): task_cgroup_memory_check_oom (src/plugins/task/cgroup/
#: task_cgroup_memory.c), run from task_p_post_term once the step's tasks have ended, so it is printed after the
#: step ended, below a time limit's 'CANCELLED AT ... DUE TO TIME LIMIT' line, and counts kills made before it.
_STEP_OOM_COUNT = frozenset({"kernel.slurm_oom", "slurm.stepd_memory_kill"})
_OOM_COUNT_WORDS = re.compile(r"Detected [0-9]+ oom[-_]kill event")


def _oom_counted_after_limit(ev: Evidence, evidence: tuple[Evidence, ...], progress: Progress | None) -> bool:
    """Whether the time limit ``ev`` only ended a job the OOM killer had already stopped: tasks died (a shell's
    'Killed', a rank's death) above the limit line, slurmstepd's OOM count for the step stands below it (printed
    when the step's tasks ended, :data:`_STEP_OOM_COUNT`), and no progress line follows the first death. The
    kills came first and decide (tests/data/real/README.md: the error before the limit, no progress between;
    heldout483). Progress after the deaths leaves the time limit the cause."""
    if ev.failure_class is not FailureClass.WALLTIME or ev.role is not Role.ROOT:
        return False
    if not any(e.pattern in _STEP_OOM_COUNT and e.line > ev.line and _OOM_COUNT_WORDS.search(e.text)
               for e in evidence):
        return False
    deaths = [e.line for e in evidence if e.failure_class is FailureClass.RANK_KILLED and e.line < ev.line]
    if not deaths:
        return False
    return progress is None or progress.last_line < min(deaths)


def _ran_on_until_stopped(ev: Evidence, evidence: tuple[Evidence, ...], progress: Progress | None) -> bool:
    """Whether the job made progress after the program error ``ev`` (a training step, a tqdm item) and then the
    scheduler stopped it (a time limit, a cancellation, a preemption after the last progress line): the error did
    not end the run (a batch script's failed 'conda activate' the script went on after), the stop did. An error
    with no progress after it still decides: the job that hung on after it until the time limit failed by itself."""
    if progress is None or progress.last_line <= ev.line:
        return False
    return any(e.line >= progress.last_line and e.failure_class in _SCHEDULER_STOPS
               and e.role in (Role.ROOT, Role.CASCADE) for e in evidence)


def _logged_warning(ev: Evidence) -> bool:
    return _WARNING_LEVEL.search(ev.text) is not None


# An exit status that says the process was killed from outside (137, -9): a program's or a wrapper's bare fatal
# words beside it ('FATAL ERROR: Error occurred during execution of mpiexec ...', logged before the traceback that
# quotes the status) say only that the step failed; the kill says how, wherever the two lines are.
_KILLED_STATUS = frozenset({"kernel.exit_code_sigkill", "generic.negative_status_sigkill",
                            "kubernetes.container_exit_code_137",
                            "generic.tool_killed_signal_words"})


#: R's parallel package's word that a worker was lost (mclapply's children without a result, a socket cluster's
#: master reading from a closed worker connection), and how many lines below it R's own halt may stand ('Error in
#: unserialize(socklist[[n]]) : error reading from connection', 'Calls: ...', 'Execution halted').
_R_LOST_WORKER = "rlang.parallel_worker_lost"

#: A worker's own report of why it is exiting, printed by the worker process itself: Julia Distributed's worker that
#: waited in vain for the master to connect ('Master process (id 1) could not connect within 60.0 seconds.', then
#: exit(1); stdlib Distributed src/cluster.jl check_master_connect). Below the master's word that it lost that
#: worker ('Worker 81 terminated.', generic.julia_worker_terminated), it says why the worker died (heldout345).
_WORKER_EXIT_REASONS = frozenset({"generic.julia_worker_master_not_connected"})
_R_HALT_LINES = 3


def _halted_at_lost_worker(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is R's error line or 'Execution halted' at, or just below, the parallel package's word that a
    worker was lost: the session stopped because a worker died, not at the script's own error (a script's own
    'Error in f(x) :' before the lost worker still decides). R's error line may also stand just above that word:
    when the call and the message do not fit on one line, R prints 'Error in <call> : ' and puts the message on the
    next line, indented (src/main/errors.c verrorcall_dflt: a newline and two spaces once the head, the call and
    the message's first line pass LONGWARN), as clustermq's and future's errors show ('Error in master(...) : ' above
    'Socket timeout reached, likely due to a worker crash'): that line is the lost worker's own error."""
    if ev.pattern != "rlang.execution_halted":
        return False
    return any(e.pattern == _R_LOST_WORKER for e in _r_wrapped_message(ev, evidence)) or any(
        e.pattern == _R_LOST_WORKER and e.line <= ev.line <= e.line + _R_HALT_LINES for e in evidence) or (
        _halt_below_lost_worker_trailer(ev, evidence))


#: How far below the lost worker's word R's 'Execution halted' may stand when the error's trailer stands between them.
_R_TRAILER_LINES = 10


def _halt_below_lost_worker_trailer(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is R's 'Execution halted' below the parallel package's word that a worker was lost with only the
    error's trailer between them, no other line any pattern read: R prints the error, then 'Calls: ...', then the
    warnings it held back under 'In addition: Warning message(s):' (src/main/errors.c verrorcall_dflt and
    R_PrintDeferredWarnings), and halts only after them, so the halt may stand further below the lost worker than the
    bare 'Calls:' line puts it (a future worker 'no longer alive', then a warning of 'timedatectl' and its status,
    heldout658). A script's own error between them is evidence of its own and still decides."""
    if not ev.text.rstrip().endswith("Execution halted"):
        return False
    return any(e.pattern == _R_LOST_WORKER and e.line < ev.line <= e.line + _R_TRAILER_LINES
               and not any(e.line < o.line < ev.line for o in evidence)
               for e in evidence)


#: mclapply's warning that forked children ended without a result (src/library/parallel/R/unix/mclapply.R:
#: warning(... 'scheduled cores %s did not deliver results, ...') or, without prescheduling, '%d parallel function
#: calls did not deliver results'): the words that tell this warning from the other lost-worker lines.
_R_LOST_CORES_WORDS = "did not deliver"


def _error_after_lost_cores(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is R's error line with mclapply's warning that children delivered no result printed a few lines
    below it. R holds a call's warnings back and prints them after the error that ends it, under 'In addition: '
    (src/main/errors.c R_PrintDeferredWarnings: REprintf(_("In addition: ")); PrintWarnings(), read at wch/r-source
    0c26529e80): so the warning below was raised first, when the children died, and the error is the script tripping
    over the results they never sent (heldout399, 'Arguments must be mcmc objects' above 'scheduled cores 1, 2, 8 did
    not deliver results'). The lost workers decide, as at 'Execution halted' below them."""
    if ev.pattern != "rlang.execution_halted":
        return False
    return any(e.pattern == _R_LOST_WORKER and _R_LOST_CORES_WORDS in e.text
               and ev.line < e.line <= ev.line + _R_ERROR_LINES for e in evidence)


def _r_wrapped_message(head: Evidence, evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """What the patterns read on the line after R's error line ``head`` when R wrapped the message there: a call and a
    message too long for one line end the error line at 'Error in <call> : ' and put the message on the next,
    indented (src/main/errors.c verrorcall_dflt, LONGWARN). Nothing when ``head`` is not such a line."""
    if head.pattern != "rlang.execution_halted" or not head.text.rstrip().endswith(":"):
        return ()
    return tuple(e for e in evidence if e.line == head.line + 1)


#: What an R error's message may report of the machine under the session rather than the script's mistake.
_R_RELAYED_FAULTS = frozenset({FailureClass.NETWORK, FailureClass.TRANSIENT_IO, FailureClass.OOM})
#: How far below R's wrapped 'Error in <call> : ' line its 'Execution halted' may stand (the message, 'Calls:').
_R_ERROR_LINES = 6


def _r_error_relays_fault(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is R's error line, or the 'Execution halted' below it, for an error whose message reports the
    machine failing under the session: when the call and the message do not fit on one line, R ends the error line
    at 'Error in <call> : ' and puts the message on the next, after a newline and two spaces (src/main/errors.c
    verrorcall_dflt, LONGWARN), so a connection the far end dropped that a package's C code raised ('Error in
    curl::curl_fetch_memory(url, handle = handle) : ' then '  Server returned nothing (no headers, no data)'), a
    full disk or memory not had is read on that next line. The call only relayed it: the message decides, as
    the same message would on the error line itself. A message read only as a summary (a bare connection reset,
    as often a peer's view) does not."""
    if ev.pattern != "rlang.execution_halted":
        return False
    return any(m.role is Role.ROOT and m.failure_class in _R_RELAYED_FAULTS and m.pattern not in _STATUS_ONLY
               for h in evidence if h.line <= ev.line <= h.line + _R_ERROR_LINES
               for m in _r_wrapped_message(h, evidence))


def _halted_without_error(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is R's bare 'Execution halted' with no line above it that any pattern read (no 'Error in f(x) :',
    no 'Error: ...'): R prints an error's message before it halts at it (src/main/errors.c verrorcall_dflt), but an
    interrupt prints only a newline (onintrEx) before jump_to_top_ex shows the deferred warnings and, in a
    non-interactive session, 'Execution halted'. A halt with no error line, whose socket workers then find their
    connection closed, is the session interrupted from outside (SIGINT: a Ctrl-C, or the first signal a scheduler
    sends at its limits) and its workers torn down with it, not the script's own error; the excerpt does not say
    who sent it. (Only with the lost workers below: an R error line no pattern reads, 'Error in if (x) { : ...',
    leaves a bare halt too.)"""
    return (ev.pattern == "rlang.execution_halted" and ev.text.strip() == "Execution halted"
            and not any(e.line < ev.line for e in evidence)
            and any(e.pattern == _R_LOST_WORKER and e.line > ev.line for e in evidence))


#: Flux's job shell raises 'MPI_Abort: <msg>' for any PMI_Abort a task makes (flux-core src/shell/pmi/pmi.c,
#: shell_pmi_abort). MPICH's default error handler ends a rank through the same call after printing its error
#: stack's header ('Abort(N) on node R (rank R in comm C): Fatal error in PMPI_Wait: ...', 'Fatal error in ...':
#: src/mpi/errhan/errutil.c, MPIR_Handle_fatal_error, then MPID_Abort): with that header beside the shell's line, the
#: abort is the library's report of a failed call, not the program's choice, and the stack's own lines decide (an
#: OFI poll that failed: the network), as the README's user_error rule asks. The shell's exception and the rank's
#: stderr reach the log by different paths, so the header may stand on either side.
_SHELL_PMI_ABORT = "flux.shell_pmi_abort"
_MPICH_FATAL_HEADERS = frozenset({"hydra.mpi_abort", "hydra.fatal_error_in"})
_FATAL_HEADER_LINES = 5


def _library_fatal_abort(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is Flux's MPI_Abort exception for an abort MPICH's fatal error handler made (its error
    stack's header within _FATAL_HEADER_LINES of it): the library's report of a failed call, not the program's."""
    return ev.pattern == _SHELL_PMI_ABORT and any(
        e.pattern in _MPICH_FATAL_HEADERS and abs(e.line - ev.line) <= _FATAL_HEADER_LINES for e in evidence)


#: The program's own words that it was interrupted (Python's KeyboardInterrupt, as its traceback ends or as a handler
#: logged its repr; Julia's InterruptException). Excepthooks answer an uncaught exception with MPI_Abort, an
#: interrupt too: mpi4py's `python -m mpi4py` runner (src/mpi4py/run.py set_abort_status: MPI.COMM_WORLD.Abort at
#: Python's exit for an unhandled exception, status 128 + SIGINT for a KeyboardInterrupt in newer releases), and
#: codes' own hooks alike. So an interrupt forwarded to every rank (Ctrl-C, or mpirun relaying a signal a batch
#: system sent it) reaches the log as the launcher's MPI_ABORT banner around the tracebacks: the banner is how the
#: interrupt ended the run.
_INTERRUPTS = frozenset({"python.keyboard_interrupt", "python.keyboard_interrupt_repr",
                         "kernel.julia_interrupt_exception"})
_MPI_ABORT_BANNERS = _ABORTS_JOB | {"msmpi.rank_called_mpi_abort"}


def _aborted_on_interrupt(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is a launcher's word that a rank called MPI_Abort in a log where the program says it was
    interrupted (:data:`_INTERRUPTS`): the abort is the interrupt's consequence, and the interrupt decides (a
    cancellation), wherever the launcher's banner landed in the merged output (heldout634)."""
    return ev.pattern in _MPI_ABORT_BANNERS and any(e.pattern in _INTERRUPTS for e in evidence)


def _killed_says_more(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` is a summary's fatal words in a log whose exit status says the process was SIGKILLed."""
    return ev.pattern == "generic.program_fatal_words" and any(e.pattern in _KILLED_STATUS for e in evidence)


#: glibc's malloc aborting on a corrupt heap ('double free or corruption (!prev)', 'corrupted size vs. prev_size':
#: malloc/malloc.c malloc_printerr then abort()): the process's own memory, which no network error corrupts.
_HEAP_ABORT = "kernel.glibc_heap_abort"


def _heap_abort_before(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether glibc aborted a process on a corrupt heap before ``ev`` and before any teardown began."""
    teardown = next((e.line for e in evidence if e.role is Role.CASCADE or e.pattern in _TEARDOWN), None)
    return any(e.pattern == _HEAP_ABORT and e.line < ev.line and (teardown is None or e.line < teardown)
               for e in evidence)


def _crashed_before(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether a rank died of its own crash signal before the program's error line ``ev`` (and before any
    teardown): runtimes that trap SIGSEGV and friends (Charm++, PETSc) end the job with MPI_Abort, which reads
    as the program's own stop but is the crash's consequence. Signal deaths are read by what comes first."""
    teardown = next((e.line for e in evidence if e.role is Role.CASCADE or e.pattern in _TEARDOWN), None)
    own_abort = ev.pattern in _ABORT_ROUTINES
    # The launcher's word that the job was aborted and the aborting rank's own report reach the log by different
    # paths (mpirun prints its help message itself, the rank's stderr is relayed), so a handler that ends the job
    # with MPI_Abort after catching a crash signal explains that word wherever its report lands.
    relayed = ev.pattern in _ABORTS_JOB
    return any(_is_crash(e) and (e.line < ev.line or (relayed and e.pattern in _HANDLER_ABORTS))
               and (teardown is None or e.line < teardown)
               and not (own_abort and _ABORT.search(_signal_text(e, evidence)))
               and not _walks_back_to_abort(e, evidence)
               and not _terminate_reports(e, ev.line)
               for e in evidence)


#: libgfortran's 'Backtrace for this error:' header and the 'Program received signal ...' line its handler writes
#: just above it (runtime/compile_options.c backtrace_handler: show_signal, a blank line, then the header).
_GFORTRAN_BACKTRACE = "fortran.gfortran_backtrace_handler"
_GFORTRAN_SIGNAL = "fortran.gfortran_crash_signal"
_SIGNAL_LINE_ABOVE = 3


def _signal_text(crash: Evidence, evidence: tuple[Evidence, ...]) -> str:
    """The words that name the signal of the crash report ``crash``: for libgfortran's backtrace header, the
    handler's signal line just above it when the log has it (the header names no signal itself)."""
    if crash.pattern != _GFORTRAN_BACKTRACE:
        return crash.text
    above = next((e for e in evidence if e.pattern == _GFORTRAN_SIGNAL
                  and 0 < crash.line - e.line <= _SIGNAL_LINE_ABOVE), None)
    return above.text if above is not None else crash.text


# A frame of MPI_Abort in the stack walkback a crash report prints with it (Cray ATP's 'Application N is crashing'
# and 'Process died with signal 6' around 'ATP Stack walkback for Rank N' ... '  MPI_Abort@0x...'): the signal it
# reports is the SIGABRT MPI_Abort raised to end the rank, the program's own stop, not a crash that explains it.
_ABORT_FRAMES = frozenset({"alps.atp_frame_mpi_abort"})
_WALKBACK_LINES = 40  # an ATP report: the banner, the walkback's frames, then 'Process died with signal N'


def _walks_back_to_abort(crash: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the crash report ``crash`` belongs to a walkback that passes through MPI_Abort (a frame of it within
    the report's lines, above or below the report's line)."""
    return any(e.pattern in _ABORT_FRAMES and abs(e.line - crash.line) <= _WALKBACK_LINES for e in evidence)


# Crash reports of signal handlers that end the job with MPI_Abort themselves: PETSc's PetscSignalHandlerDefault prints
# 'Caught signal number N ...' and the error report, then PETSCABORT(PETSC_COMM_WORLD, ...) (src/sys/error/signal.c).
_HANDLER_ABORTS = frozenset({"petsc.caught_crash_signal", "petsc.crash_report_host"})


# A frame of a program's own abort routine in the traceback its SIGABRT prints (CESM/E3SM's shr_abort_abort, CP2K's
# cp_abort, PIO 1's piodie, which end in abort()): the abort line above it is how the program stopped itself, so
# that crash does not explain it.
_ABORT_ROUTINES = frozenset({"cesm.shr_abort_frame", "cp2k.cp_abort_frame", "netcdf.pio1_piodie_frame"})


# Infrastructure that explains a program's error wherever its line is (a KeyError from a truncated file on a full
# file system, an abort after the OOM killer took a helper, a dead node). A time limit or network trouble explains
# it only when it came first (then it is the first root anyway): after the error, the job hung on, or its peers saw
# the rank leave.
_EXPLAINS_USER_ERROR = frozenset({
    FailureClass.OOM, FailureClass.TRANSIENT_IO, FailureClass.GPU_HW, FailureClass.NODE_LOSS,
})


def _user_error(ev: Evidence, evidence: tuple[Evidence, ...], progress: Progress | None) -> _Decision:
    """The program failed by itself (a programming or input error, argparse, its own MPI_Abort), at any point of
    the run, unless an infrastructure line in the log explains it. Network trouble explains it only when it came
    first: after the error it is the peers' view of the rank that left."""
    if _reframe_job_never_ran(ev, evidence):
        return _Decision(FailureClass.UNKNOWN, (), f"{ev.pattern} at line {ev.line} with no node list: the job "
                         f"never ran, its output file is missing: {ev.text[:120]}")
    said = _panic_message_root(ev, evidence)
    if said is not None and said.failure_class is not None:
        return _Decision(said.failure_class, (), f"{said.pattern} at line {said.line} is the message of the panic "
                         f"{ev.pattern} at line {ev.line}: {said.text[:120]}")
    missing = _never_launched(evidence)  # a node the cloud refused to create was never lost
    infra = next((e for e in evidence if e.role is Role.ROOT and e.failure_class in _EXPLAINS_USER_ERROR
                  and (e.host_means is not HostMeaning.SUSPECT) and not _lost_contact_after(e, ev)
                  and not _reads_the_same_line_closer(ev, e) and (e.host is None or e.host not in missing)), None)
    if infra is not None and infra.failure_class is not None:
        return _Decision(infra.failure_class, (), f"{infra.pattern} at line {infra.line} explains {ev.pattern} at "
                         f"line {ev.line}: {infra.text[:120]}")
    when = " after progress" if progress is not None and progress.first_line < ev.line else ""
    return _Decision(FailureClass.USER_ERROR, (), f"{ev.pattern} at line {ev.line}{when}: {ev.text[:120]}")


#: ReFrame's sanity error for the job's own output file that is not there ('sanity error: rfm_job.out: No such file
#: or directory'), and its FAILURE INFO saying the job has no node list ('* Node list: None': reframe/frontend/
#: printer.py failure_report prints the scheduler's job.nodelist, None until the job was placed on nodes).
_REFRAME_SANITY = "reframe.sanity_error_reason"
_REFRAME_NO_NODES = "reframe.node_list_none"


def _reframe_job_never_ran(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """A ReFrame sanity error that only says the job's output file is missing, in a FAILURE INFO whose node list is
    None: the job never ran, so the sanity check judged no output of the program (heldout365). With a node list
    the same missing file is the test's verdict (heldout205's local job on pacu01)."""
    return (ev.pattern == _REFRAME_SANITY and "No such file or directory" in ev.text
            and any(e.pattern == _REFRAME_NO_NODES for e in evidence))


#: A Rust panic's header that ends at its location ("thread 'main' panicked at src/x.rs:3:5:"): since Rust 1.73 the
#: default panic hook prints the panic's message on the next line, not inside quotes on the same one.
_PANIC_HEADER = re.compile(r"\bpanicked at \S+:[0-9]+:[0-9]+:[ \t]*$")


def _panic_message_root(ev: Evidence, evidence: tuple[Evidence, ...]) -> Evidence | None:
    """The root that another pack reads on the line under a Rust panic's header: the panic's own message (an
    `unwrap()` of a connection error, 'called `Result::unwrap()` on an `Err` value: BuildError(Unable to create
    lease. Check etcd server status at ...)'), which says why the program stopped; the panic is how (heldout417).
    Only a root of a class other than the program's own or an unknown one."""
    if _PANIC_HEADER.search(ev.text) is None:
        return None
    return next((e for e in evidence if e.line == ev.line + 1 and e.role is Role.ROOT
                 and e.failure_class not in (None, FailureClass.USER_ERROR, FailureClass.UNKNOWN)), None)


def _reads_the_same_line_closer(ev: Evidence, infra: Evidence) -> bool:
    """Whether a program's pack reads the line ``ev`` that a generic pattern also reads as infrastructure: MATLAB's
    'Out of memory. The likely cause is an infinite recursion within the program.' is the program's recursion to
    the matlab pack and memory words to generic.out_of_memory_words; the program's own pack knows what it means."""
    return infra.line == ev.line and infra.pattern.startswith("generic.") and not ev.pattern.startswith("generic.")


def _lost_contact_after(infra: Evidence, ev: Evidence) -> bool:
    """A launcher's report that it lost a node's daemon, after the program's own error, that names no dead node
    (ORTE's 'lost communication with its daemon located on node:', whose host row is only a suspect): the daemon
    that could not load (a loader's relocation error) is gone before it calls back, so the lost contact is the
    consequence of the error, not a node fault that explains it."""
    return (infra.failure_class is FailureClass.NODE_LOSS and infra.line > ev.line
            and (infra.host is None or infra.host_means not in _ORIGIN_MEANINGS))


def _cancel_of_crashed_step(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """A step's CANCELLED line that gives no reason, in a log where srun reports tasks killed by a crash signal
    (see _first_cascade): the teardown of that crash wherever the line was printed."""
    return (ev.pattern == _STEP_CANCELLED and "*** STEP " in ev.text and " DUE " not in ev.text
            and any(e.pattern == _SRUN_TASK_CRASH for e in evidence))


def _first_cascade(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """With no root cause, a consequence still says what kind of failure it was (never who), unless a rank
    died on its own before it (a segfault, then the step's cancellation is only the teardown). A step's CANCELLED
    line after srun's own "Terminating StepId" is that teardown too, not a user's scancel: srun prints it only when
    a task exited abnormally (--kill-on-bad-exit) or -W's timer ran out after the first task ended (Slurm
    src/srun/launch.c _step_signal, signals.c). After Open MPI's MPI_ERRORS_ARE_FATAL banner the handler aborts the
    job itself (PMI_Abort under srun), so the CANCELLED line after it is that abort's teardown as well. So is a
    step's CANCELLED line that only says when (no DUE TO) in a log where srun reports a task of the same step killed
    by a crash signal ('srun: error: H: tasks 251-255: Segmentation fault', src/srun/launch.c _task_finish): a
    scancel ends tasks with SIGTERM/SIGKILL, never SIGSEGV or SIGBUS, so the crash came first and srun's
    --kill-on-bad-exit cancelled the step, even when slurmstepd's line reached stderr before srun's (heldout456).
    So is one after srun's 'H: task N: Exited with exit code M' (src/srun/launch.c _task_finish prints it as the task
    ends, then ends the step itself on the first abnormal exit under --kill-on-bad-exit; an MPI or PMIx abort ends
    it the same way): a task had failed before the step was cancelled, and a scancel's tasks are reported after its
    CANCELLED line, never before (heldout723). The cancellation is the teardown of that exit, which says no more than
    the exit itself. A JOB's CANCELLED line stays a cancellation: scancel of the job, not the step's own end."""
    srun_teardown = task_failed = False
    for ev in evidence:
        if _cancel_of_crashed_step(ev, evidence) or _terminate_of_cascade(ev, evidence):
            continue  # (the abort that reports the consequence below it is that consequence's own stop)
        if ev.host_means is HostMeaning.ORIGIN and ev.role is Role.CONTEXT:
            return None
        if ev.pattern == _SRUN_TEARDOWN and _SRUN_TERMINATING in ev.text:
            srun_teardown = True
        if ev.pattern == _SRUN_TASK_EXIT:
            task_failed = True  # a task already failed: a STEP's CANCELLED line after it is the step's teardown
        if ev.pattern in _MPI_FATAL_BANNERS:
            srun_teardown = True  # the MPI error handler's own abort: the step's cancellation after it is its teardown
        if ev.pattern == _STEP_CANCELLED and (srun_teardown or (task_failed and "*** STEP " in ev.text)):
            continue
        if ev.role is Role.CASCADE and ev.failure_class not in (None, FailureClass.UNKNOWN):
            fclass = ev.failure_class or FailureClass.UNKNOWN
            return _Decision(fclass, (), f"only consequences seen, first {ev.pattern} at line {ev.line}; no host named")
    return None


#: The PBS Pro epilogue's request and usage lines (pbs pack) and the walltime each gives.
_EPILOGUE_REQUESTED = "pbs.epilogue_walltime_requested"
_EPILOGUE_USED = "pbs.epilogue_walltime_used"
_WALLTIME_VALUE = re.compile(r"\bwalltime=([0-9:]+)")
#: NCI Gadi's job footer: the walltime requested and used on one line (pbs pack).
_USAGE_WALLTIME_PAIR = "pbs.usage_walltime_pair"
_USAGE_WALLTIME_VALUES = re.compile(r"Walltime requested: +([0-9:]+) +Walltime Used: +([0-9:]+)")


def _walltime_s(text: str) -> float | None:
    found = _WALLTIME_VALUE.search(text)
    return parse_duration_s(found.group(1)) if found else None


def _ran_to_walltime(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """With no root cause, the job's epilogue may still say it ran out of time: the walltime it used ('Resources
    allocated: ...,walltime=00:05:03') at or past the walltime it requested ('Resources requested: ...,walltime=
    00:05:00') means the MOM's limit ended it (a job stops under its limit on its own, and the MOM kills it a few
    seconds past). The last pair printed decides (an excerpt may hold several jobs' epilogues). NCI Gadi's job
    footer gives both on one line ('Walltime requested: 15:00:00   Walltime Used: 15:01:13'); its last one decides
    first."""
    pair = next((e for e in reversed(evidence) if e.pattern == _USAGE_WALLTIME_PAIR), None)
    found = _USAGE_WALLTIME_VALUES.search(pair.text) if pair is not None else None
    if pair is not None and found is not None:
        requested = used = pair
        limit, spent = parse_duration_s(found.group(1)), parse_duration_s(found.group(2))
    else:
        epilogue_requested = next((e for e in reversed(evidence) if e.pattern == _EPILOGUE_REQUESTED), None)
        epilogue_used = next((e for e in reversed(evidence) if e.pattern == _EPILOGUE_USED), None)
        if epilogue_requested is None or epilogue_used is None:
            return None
        requested, used = epilogue_requested, epilogue_used
        limit, spent = (_walltime_s(e.text) for e in (requested, used))
    if limit is None or spent is None or limit == 0 or spent < limit:
        return None
    return _Decision(FailureClass.WALLTIME, (), f"the epilogue at line {used.line} shows {spent:.0f} s used of the "
                     f"{limit:.0f} s walltime requested at line {requested.line}: the job ran to its limit",
                     line=used.line)


#: SIGUSR2's strsignal alone on a line, and the lines that say the log is an LSF job's (its script's #BSUB
#: directives, its report's header or final status).
_LSF_USR2 = "lsf.user_defined_signal_2"
_LSF_JOB = frozenset({"lsf.job_script_directive", "lsf.executed_on_host", "lsf.exited_code"})


def _lsf_run_limit_signal(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """With no root cause, an LSF job whose command died of SIGUSR2 ('User defined signal 2' alone on its line)
    ran past its run limit: LSF sends a UNIX job SIGUSR2 at the limit and kills it ten minutes later if it has
    not stopped (IBM Spectrum LSF 10.1, bsub -W). Only in a log that is an LSF job's (_LSF_JOB): Slurm's --signal
    and Grid Engine's soft limits send SIGUSR2 for other reasons."""
    usr2 = next((e for e in evidence if e.pattern == _LSF_USR2), None)
    if usr2 is None or not any(e.pattern in _LSF_JOB for e in evidence):
        return None
    return _Decision(FailureClass.WALLTIME, (), f"{usr2.pattern} at line {usr2.line}: the LSF job died of SIGUSR2, "
                     "the signal LSF sends at the run limit (bsub -W)", line=usr2.line)


#: NCI Gadi's job footer: the memory requested and used on one line (pbs pack), and the footer's SIGKILL status.
_USAGE_MEMORY_PAIR = "pbs.usage_memory_pair"
_USAGE_MEMORY_VALUES = re.compile(r"Memory Requested: +([0-9.]+)([KMGT]?)B +Memory Used: +([0-9.]+)([KMGT]?)B")
_EXIT_SIGKILL = "kernel.exit_code_sigkill"
_MEMORY_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _sigkilled_at_memory_request(evidence: tuple[Evidence, ...]) -> _Decision | None:
    """A job SIGKILLed (exit status 137, and no line saying another cause) whose footer shows it used all the memory
    it requested was killed at its memory limit: NCI Gadi's footer gives both on one line ('Memory Requested: 4.0GB
    Memory Used: 4.0GB', heldout530); its last one decides. Used under requested leaves the SIGKILL unexplained."""
    pair = next((e for e in reversed(evidence) if e.pattern == _USAGE_MEMORY_PAIR), None)
    found = _USAGE_MEMORY_VALUES.search(pair.text) if pair is not None else None
    if pair is None or found is None or not any(e.pattern == _EXIT_SIGKILL for e in evidence):
        return None
    roots = [e for e in evidence if e.role is Role.ROOT and e.failure_class is not None
             and e.failure_class is not FailureClass.SUCCESS]
    if any(e.failure_class is not FailureClass.RANK_KILLED or e.host is not None for e in roots):
        return None  # another cause, or a rank's death on a named host: the usual rules read them
    try:
        limit = float(found.group(1)) * _MEMORY_UNIT[found.group(2)]
        spent = float(found.group(3)) * _MEMORY_UNIT[found.group(4)]
    except ValueError:
        return None
    if limit <= 0 or spent < limit:
        return None
    return _Decision(FailureClass.OOM, (), f"SIGKILLed, and the job footer at line {pair.line} shows "
                     f"{found.group(3)}{found.group(4)}B used of the {found.group(1)}{found.group(2)}B requested: "
                     "killed at its memory limit", line=pair.line)


def _srun_reports_all_crashed(hosted: list[Evidence], evidence: tuple[Evidence, ...]) -> bool:
    """srun's own report that every node's tasks died of a crash signal, none of them of the teardown's. On a task's
    first abnormal exit srun kills the step itself ('Terminating <step>', SIGTERM then SIGKILL: src/srun/launch.c
    _step_signal, called from the task-exit handler under kill-on-bad-exit; read at SchedMD/slurm 284c3b95), so the
    other tasks end as 'Terminated' or 'Killed' (slurm pack srun_tasks_terminated, srun_tasks_killed), and once the
    step is cancelled their exits are logged at verbose level only. A node whose tasks srun reports crashed by their
    own signal, before any teardown, was nobody's victim: two such nodes are a job-wide crash as three are (the first
    printed is only the first srun heard of)."""
    if not hosted or any(e.pattern != _SRUN_TASK_CRASH for e in hosted):
        return False
    return not any(e.pattern in _SRUN_TASK_ENDS for e in evidence)


#: srun's reports of tasks that ended some other way than a crash of their own (slurm pack).
_SRUN_TASK_ENDS = frozenset({"slurm.srun_tasks_killed", "slurm.srun_tasks_terminated", "slurm.srun_tasks_exit_code",
                             "slurm.srun_tasks_out_of_memory"})


def _signal_death(
    decision: _Decision, usable: tuple[Evidence, ...], evidence: tuple[Evidence, ...], members: frozenset[Host] | None
) -> _Decision:
    """Signal deaths by what comes first. When no line decided, the first rank that died of its own signal
    (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE) makes the failure a ``rank_killed`` that started on its host
    (blamed, not excluded: a crash is the program's until node evidence joins it). SIGTERM/SIGHUP to the other
    ranks after it, and crash lines after the teardown began, are the teardown. When every host's ranks crashed
    alike, nobody is the origin. A line that only says a process died, not why (class ``unknown``: Ray's "a worker
    died or was killed", a launcher's bare exit banner), leaves the why to a crash line as the exit status does."""
    if decision.failure_class is not FailureClass.UNKNOWN and not (
            decision.from_status and decision.failure_class in _CRASH_EXPLAINS):
        return decision
    teardown = next((e.line for e in evidence if (e.role is Role.CASCADE or e.pattern in _TEARDOWN)
                     and not _cancel_of_crashed_step(e, evidence)), None)
    crashes = [e for e in evidence if _is_crash(e) and (teardown is None or e.line < teardown)
               and not _terminate_of_cascade(e, evidence)]
    if decision.failure_class in (FailureClass.USER_ERROR, FailureClass.CANCELLED) and decision.line is not None:
        # A program's own fatal error explains the abort that follows it (its way to stop); a crash before it
        # explains the error (a crash handler's message). A user's Ctrl-C explains the signals its ranks report
        # after it; a crash before it is why the user gave up.
        crashes = [e for e in crashes if e.line < decision.line
                   and not (decision.own_abort and _ABORT.search(e.text))
                   and not _terminate_reports(e, decision.line)]
    if decision.failure_class is FailureClass.UNKNOWN and decision.own_abort and decision.line is not None:
        # The program's own abort routine decided, its message elsewhere (PIO 1's piodie frame): the SIGABRT whose
        # traceback shows that frame is how it stopped, so an abort reported in the walkback above it says no more.
        crashes = [e for e in crashes if not (_ABORT.search(e.text) and 0 <= decision.line - e.line <= _WALKBACK_LINES)]
    if not crashes:
        return decision
    first = crashes[0]
    ok = {id(e) for e in usable}
    hosted = [e for e in crashes if e.host is not None and id(e) in ok]
    # Every host crashing alike names nobody; without the allocation, two crashed hosts are more likely a first crash
    # and its victim than a job-wide one (the corpus labels the first printed as the origin), so it takes three.
    everyone = _all_hosts_killed(hosted, evidence, members)
    if (everyone is not None and members is None and len({e.host for e in hosted}) < 3
            and not _srun_reports_all_crashed(hosted, evidence)):
        everyone = None
    if everyone is not None:
        return _Decision(FailureClass.RANK_KILLED, (), f"{first.pattern} at line {first.line}; "
                         f"{everyone.replace('killed', 'crashed')}", nobody=True, crash=True)
    # A rank's own line is placed by that rank's end only (another rank's exit line says nothing of it).
    ranked = _RANK_PREFIX.match(first.text) is not None
    tied = _rank_exit_host(first, usable) if not hosted and ranked else []
    ended = _ended_first(usable) if not hosted and not ranked else []
    coded = _exit_code_host(first, usable) if not hosted and not ranked else []
    # mpirun's count of processes that failed to start: the ranks never ran, so the one host the log names (where
    # the batch job ran) is no rank's crash site (orte_quit.c's '%d total processes failed to start'; heldout630).
    unstarted = any(e.pattern == _PROCS_NOT_STARTED for e in evidence)
    only = [] if unstarted else _only_host(usable, prompt=False)
    # A rank-prefixed crash line is placed by its rank's lines only: the one host the log names counts when the line
    # naming it carries the same prefix (that rank's own report of where it ran; ctest's 'NN: ' prefix too).
    own = [e for e in only if _same_rank_prefix(first, e)] if ranked and not tied else []
    if not hosted and (ran := (tied or own) if ranked else (only or ended or coded)):
        place = ran[0]
        assert place.host is not None
        where = ("where the launcher says that rank ended" if tied
                 else "where the launcher says the first process ended" if ran is ended
                 else "where the launcher says the first process ended with the runtime's own error number"
                 if ran is coded else "the one host the log names, on that rank's own line" if ran is own
                 else "the one host the log names")
        return _Decision(FailureClass.RANK_KILLED, _blames(ran, QuarantineReason.SCRAPED),
                         f"a rank died of its own signal first ({first.pattern} at line {first.line}: "
                         f"{first.text[:120]}) on {place.host.name}, {where} ({place.pattern} at "
                         f"line {place.line}); a crash, not a node fault", crash=True)
    if not hosted:
        return _Decision(FailureClass.RANK_KILLED, (), f"a rank died of its own signal first ({first.pattern} at line "
                         f"{first.line}: {first.text[:120]}); no host named", nobody=True, crash=True)
    origin = hosted[0]
    assert origin.host is not None
    blamed = _blames([e for e in hosted if e.host == origin.host], QuarantineReason.SCRAPED)
    return _Decision(FailureClass.RANK_KILLED, blamed, f"{origin.host.name} died of its own signal first "
                     f"({origin.pattern} at line {origin.line}: {origin.text[:120]}); a crash, not a node fault",
                     crash=True)


def _scheduler_blame(
    decision: _Decision, facts: SchedulerFacts | None, members: frozenset[Host] | None
) -> _Decision:
    """A node fault no line attributes may be attributed by the scheduler's DOWN nodes."""
    if decision.blamed or facts is None or not decision.failure_class.attributes_node:
        return decision
    down = tuple(h for h in facts.unhealthy() if members is None or h in members)
    if not down:
        return decision
    names = ", ".join(h.name for h in down)
    blamed = tuple(Blame(h, QuarantineReason.SCHEDULER, ()) for h in down)
    return _Decision(decision.failure_class, blamed, f"{decision.reason}; scheduler reports {names} down")


# Classes whose lines can name where a failure started (tests/data/real/README.md): a time limit, a full
# file system, a network error or a user's mistake start nowhere in particular, whatever host printed them.
_ORIGIN_CLASSES = frozenset({
    FailureClass.NODE_LOSS, FailureClass.RANK_KILLED, FailureClass.GPU_HW, FailureClass.OOM, FailureClass.UNKNOWN,
})
_ORIGIN_MEANINGS = (HostMeaning.ORIGIN, HostMeaning.DEAD)


#: A job-terminated line that words its end as a SIGKILL ('(0) Abnormal termination (signal 9)', 'Killed') tells of a
#: kill from outside the process (the OOM killer, a user's force stop: heldout543's dask-chtc stop) as often as of a
#: crash, so _crash_place places nothing on it. TorchElastic's agent line 'failed (exitcode: -9)' is not read by it:
#: its failure table names the rank's host, placed like the agent's other exit codes, as the corpus labels it
#: (heldout53).
_SIGKILL_WORDS = re.compile(r"\bsignal 9\b|\bSIGKILL\b|\bKilled\b")


def _deciding_root(evidence: tuple[Evidence, ...]) -> Evidence | None:
    """The first root line that says why the job failed (not a setup line, not one a later line passes over)."""
    return next((e for e in evidence if e.role is Role.ROOT and e.failure_class is not None
                 and not _setup_line(e) and not _passed_over(e, evidence)), None)


def _crash_place(decision: _Decision, usable: tuple[Evidence, ...], evidence: tuple[Evidence, ...]) -> _Decision:
    """Where a crash ran when the line that decided it names no host (HTCondor's job-terminated event, '(0) Abnormal
    termination (signal 11)'): the one host the log names, when a line says the job ran there (_only_host: its
    execute event, LSF's report header), as _signal_death places a crash no pattern decided. A log naming a second
    host says nothing of which one it was; a line worded as a SIGKILL places nothing (see _SIGKILL_WORDS)."""
    root = _deciding_root(evidence)
    if (root is None or root.failure_class is not FailureClass.RANK_KILLED or root.host is not None
            or decision.from_status or _SIGKILL_WORDS.search(root.text)):
        return decision
    ran = _only_host(usable, prompt=False)
    if not ran:
        return decision
    place = ran[0]
    assert place.host is not None
    return replace(decision, blamed=_blames(ran, QuarantineReason.SCRAPED), crash=True,
                   reason=f"{decision.reason}; on {place.host.name}, the one host the log names ({place.pattern} at "
                          f"line {place.line}): a crash, not a node fault")


def _origins(decision: _Decision, usable: tuple[Evidence, ...], evidence: tuple[Evidence, ...]) -> _Decision:
    """Name where a failure that is not a node fault started (blamed, never excluded): the first ranks that
    died of a signal, the OOM-killed host. Lines after the teardown began do not count when one came before."""
    if decision.blamed or decision.nobody or decision.failure_class not in _ORIGIN_CLASSES:
        return decision
    # A device fault or a crash whose line names no host: where the log says it ran.
    place = {FailureClass.GPU_HW: _device_place, FailureClass.RANK_KILLED: _crash_place}.get(decision.failure_class)
    if place is not None:
        return place(decision, usable, evidence)
    if decision.failure_class.attributes_node:
        return decision  # a node fault names its node or nobody: a segfault elsewhere is not that node
    starts = [
        e for e in usable
        if e.host is not None and e.host_means in _ORIGIN_MEANINGS
        and (e.failure_class is None or e.failure_class in _ORIGIN_CLASSES)
    ]
    # A crash after the first failure line is the teardown's (the seed: PALS reports the survivors' SIGSEGV too),
    # except where that line is a process's own running out of memory and names no host: an abort (SIGABRT) that
    # follows first (a C++ bad_alloc's terminate, a runtime's abort) is that process dying, and names where it ran.
    # Other signals after it are the peers' (the seed: one rank's bad_alloc, then thousands of SIGSEGVs).
    root = _deciding_root(evidence)
    first_root = root.line if root is not None else None
    late = [e for e in starts if _is_crash(e) and first_root is not None and e.line > first_root]
    starts = [e for e in starts if not any(e is x for x in late)]
    starts = _not_torn_down(_before_teardown(starts, evidence, strict=True), evidence)
    if (late and not starts and root is not None and root.failure_class is FailureClass.OOM and root.host is None
            and not _teardown_between(root.line, late[0].line, evidence)
            and (_ABORT.search(late[0].text) or _terminate_aborts(root, late[0], evidence))):
        starts = late[:1]
    if not starts and decision.failure_class is FailureClass.OOM:
        # A rank's own out-of-memory: where that rank ran; a line that names no rank: where the job ran. The OOM's
        # line, not a shell's 'Killed' above it (the OOM killer's SIGKILL, rule 2: LSF's TERM_MEMLIMIT report
        # after the job script's 'line 12: 20069 Killed').
        oom = next((e for e in evidence if e.role is Role.ROOT and e.failure_class is FailureClass.OOM
                    and not _passed_over(e, evidence)), None)
        if oom is not None and oom.host is None and not _relayed_from_worker(oom, evidence):
            starts = (_rank_exit_host(oom, usable) if _RANK_PREFIX.match(oom.text)
                      else _only_host(_same_petsc_rank(oom, usable)))
    if not starts:
        return decision
    blamed = _blames(starts, QuarantineReason.SCRAPED)
    names = ", ".join(b.host.name for b in blamed)
    first = starts[0]
    if decision.failure_class is FailureClass.UNKNOWN:
        # Nothing says why it failed, so nothing says the host where it did is at fault (a worker that died with no
        # cause shown, a bare non-zero exit): a lead the supervisor probes first, with a control, never blame.
        why = f"{decision.reason}; started on {names} ({first.pattern} at line {first.line}): a suspect, not blamed"
        return replace(decision, reason=why, leads=tuple(b.host for b in blamed))
    why = f"{decision.reason}; started on {names} ({first.pattern} at line {first.line}), not a node fault"
    return _Decision(decision.failure_class, blamed, why)


#: libstdc++'s verbose terminate handler (libsupc++/vterminate.cc __gnu_cxx::__verbose_terminate_handler): it prints
#: "terminate called after throwing an instance of 'T'" and "  what():  MSG", then calls abort() in the same process.
_TERMINATE = re.compile(r"\bterminate called after throwing an instance of ")
#: The same handler's second line, "  what():  " and the exception's what() (vterminate.cc: fputs("  what():  ")): part
#: of its report, so a pack that reads the out-of-memory only in the message (an allocator's own exception type,
#: umpire::out_of_memory_error, whose type line no pack reads) still has the abort that follows it.
_TERMINATE_WHAT = re.compile(r"^\s*what\(\):  \S")
#: A crash line that says which signal or status ended the process.
_NAMES_SIGNAL = re.compile(r"(?i:\bsignal:? [0-9]+|segmentation|bus error|floating point|illegal instruction|abort"
                           r"|\bexit(?:ed with)? (?:code|status)\b|\bexitcode\b)|\bSIG[A-Z]{2,}\b")


#: How far below libstdc++'s 'terminate called after throwing ...' line its report's message may reach: the
#: '  what():  ' line right after it and one more line of a message with a newline in it.
_TERMINATE_REPORT_LINES = 2


def _terminate_reports(crash: Evidence, line: int | None) -> bool:
    """Whether ``crash`` is libstdc++'s terminate line whose exception message is the program's own error at
    ``line`` (a ``user_error`` or ``cancelled`` line within the handler's report: its '  what():  ' line or the next
    one, as CUDA-Q's runtime_error quoting dlerror's missing library on its second line, heldout391). The README's
    rule for a C++ exception: its message says what failed (a missing file, an MPI error class of a wrong call), and
    the abort() the handler calls after it is how the process stops, not a crash of its own."""
    return (line is not None and _TERMINATE.search(crash.text) is not None
            and 0 < line - crash.line <= _TERMINATE_REPORT_LINES)


def _terminate_of_cascade(crash: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``crash`` is libstdc++'s terminate line whose own '  what():  ' line, right below it, is a consequence
    of another rank's failure (a cascade line: PyTorch before 2.2 threw the watchdog's timeout as a std::runtime_error,
    "terminate called after throwing an instance of 'std::runtime_error'" then "  what():  [Rank 7] Watchdog caught
    collective operation timeout: ...", ncclCommWatchdog's uncaught exception). The handler only reports that
    exception and calls abort(): the abort is how the timed-out rank stops, not a crash of its own (heldout659)."""
    return _TERMINATE.search(crash.text) is not None and any(
        e.role is Role.CASCADE and e.line == crash.line + 1 and _TERMINATE_WHAT.search(e.text) for e in evidence)


#: Kokkos's last line of an exception's message when built without stack traces (throw_runtime_exception appends
#: '\nTraceback functionality not available\n' to the message, core/src/impl/Kokkos_Error.cpp): printed inside the
#: terminate handler's 'what():' report, so the report ends on the empty line after it.
_KOKKOS_TRACEBACK = "kokkos.traceback_unavailable"


def _joined_report_lines(text: str) -> int:
    """How many lines below its first the terminate handler's report reaches inside one joined record: the scanner
    joins a logger's record with the lines under it that carry no prefix of their own (spdlog's '[date] [name]
    [level] msg' then libstdc++'s 'terminate called ...' and '  what():  ' lines, as purify prints them,
    heldout404), so the record's line is its first and the report's lines follow it: one for the 'terminate called'
    line when the record starts with other words, one for the 'what():' line after it."""
    where = _TERMINATE.search(text)
    if where is None:
        return 0
    return (where.start() > 0) + ("what():" in text[where.end():])


def _terminate_aborts(root: Evidence, crash: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``crash`` is the abort() that libstdc++'s terminate handler calls after reporting an uncaught
    exception (``root``, the process's own out-of-memory: std::bad_alloc, or the 'what():' line of an exception whose
    message says it, heldout379's umpire::out_of_memory_error): the crash line comes on the line right after the
    handler's report (its 'terminate called ...' and 'what():' lines) and names no signal. A crash
    handler's first line names none (Open MPI's '[host:pid] *** Process received signal ***', opal/util/stacktrace.c,
    its 'Signal: Aborted (6)' on the next line), but nothing can come between the handler's report and its abort in
    the same stream; a crash a few lines later may be a peer's. A Kokkos message's own last line ('Traceback
    functionality not available', then an empty line: _KOKKOS_TRACEBACK) is still the report (heldout401)."""
    if not (_TERMINATE.search(root.text) or _TERMINATE_WHAT.search(root.text)) or _NAMES_SIGNAL.search(crash.text):
        return False  # a line that says which signal ('died from signal 11') is read by what it says
    end = root.line + _joined_report_lines(root.text)
    blank = False  # the report ends in an empty line, which a paste may have dropped
    for e in sorted(evidence, key=lambda x: x.line):
        if e.line == end + 1 and e.role is Role.ROOT and e.failure_class is FailureClass.OOM:
            end, blank = e.line, False
        elif e.line == end + 1 and e.pattern == _KOKKOS_TRACEBACK:
            end, blank = e.line, True  # the message's own last line, then the empty line its newline leaves
    return crash.line == end + 1 or (blank and crash.line == end + 2)


#: A Dask client's frame re-raising a task's exception with the worker's traceback (Future.result/_result,
#: Client._gather: 'raise exc.with_traceback(tb)'): the frames below it ran on a worker.
_CLIENT_RERAISE = "distributed.client_reraises_task_error"


def _relayed_from_worker(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether ``ev`` closes a traceback a Dask client re-raised from a task that ran on a worker: a re-raising
    frame of distributed/client.py above it in the same traceback (after the last 'Traceback (most recent call
    last)' before it). What the worker ran out of happened on the worker, which the client's log does not name;
    the host the client ran on (its srun line, the one host the log names) is not where it happened."""
    frames = [e.line for e in evidence if e.pattern == _CLIENT_RERAISE and e.line < ev.line]
    if not frames:
        return False
    heads = [e.line for e in evidence if e.pattern == "python.traceback" and e.line < ev.line]
    return not heads or frames[-1] > heads[-1]


#: A line a launcher prefixed with the global rank that printed it (PyTorch's '[rank7]: RuntimeError: ...', srun -l's
#: '  7: ', a colon and a space: a time of day's '12:34' is no rank).
_RANK_PREFIX = _opening(r"\s*(?:\[rank([0-9]+)\]:|(?<![0-9.])([0-9]+): )")  # not a time's last digits
#: Launcher lines that give a rank's host with its end (PALS: 'host: rank 7 exited with code 1'; srun: 'srun: error:
#: host: task 7: Exited with exit code 1', 'host: task 7: Aborted (core dumped)'; Cray MPICH's abort header of that
#: rank: 'MPICH ERROR [Rank 7] [job id J] [date] [host] - Abort(1) ...').
_RANK_EXIT_LINES = frozenset({
    "pals.rank_exited", "pals.rank_exited_crash_code", "slurm.srun_tasks_exit_code", "slurm.srun_tasks_other_signal",
    "pals.cray_mpich_error_host",
})


def _same_rank_prefix(root: Evidence, other: Evidence) -> bool:
    """Whether two lines carry the same rank prefix ('[rank7]:', srun -l's '7: ', ctest's 'NN: ' test number): both
    printed by one rank (or one test's output), so the other line's host is where the first line's process ran."""
    mine, theirs = _RANK_PREFIX.match(root.text), _RANK_PREFIX.match(other.text)
    return (mine is not None and theirs is not None
            and (mine.group(1) or mine.group(2)) == (theirs.group(1) or theirs.group(2)))


def _rank_exit_host(root: Evidence, usable: tuple[Evidence, ...]) -> list[Evidence]:
    """The host of the rank whose own line decided: a line that names no host but is prefixed with its global
    rank ('[rank7]: RuntimeError: level_zero ... OUT_OF_RESOURCES', srun -l's '581: Program received signal
    SIGABRT'), and the launcher's line for that same rank's end ('x4610c4s3b0n0...: rank 7 exited with code 1',
    'srun: error: frontier04993: task 581: Aborted (core dumped)'), which alone is only a mention or comes after the
    teardown began. The same rank number in both ties the failure to where it ran; no match, no host."""
    prefix = _RANK_PREFIX.match(root.text)
    if prefix is None:
        return []
    rank = prefix.group(1) or prefix.group(2)
    ended = re.compile(rf"\b(?:rank {rank} exited with code [1-9][0-9]*\b|task {rank}: )"
                       rf"|\bMPICH ERROR \[Rank {rank}\] ")
    return [e for e in usable if e.pattern in _RANK_EXIT_LINES and e.host is not None and e.line > root.line
            and ended.search(e.text)][:1]


#: Lines that say where the job (or a rank of it) ran: PALS's exit line of a rank, LSF's report header, the node of
#: a Kubernetes pod, Grid Engine's spool path of the job script, PETSc's error report header, TorchElastic's failure
#: table's 'host :' row (its agent's host), OpenMMLab's 'Start running, host: user@host', and slurmstepd's
#: "*** JOB N ON host CANCELLED" (the batch host; a STEP's line names only the step's first node).
_RAN_ON_LINES = frozenset({
    "pals.rank_exited", "pals.rank_exited_crash_code", "lsf.executed_on_host", "kubernetes.pod_ran_on_node",
    "generic.job_runs_on_host", "slurm.srun_tasks_exit_code", "sge.spool_job_script", "petsc.error_report_host",
    "torchrun.agent_failure_host", "generic.runner_start_host",
    # HTCondor's user-log execute event ('001 (C.P.S) ... Job executing on host: <ip:port>'): the machine the job
    # started on; its job-terminated event's signal names none.
    "htcondor.job_executing_on_host",
    # srun's report of how a node's tasks ended ('srun: error: H: tasks 0-3: Killed', Slurm src/srun/launch.c
    # _task_finish): the step's tasks ran on H. Only ever read when H is the one host the log names.
    "slurm.srun_tasks_killed",
    # uname's output line ('Linux H 5.15.0-91-generic ... x86_64 GNU/Linux', coreutils src/uname.c): a CI job or a
    # script printing where it runs, as a pasted prompt's host does.
    "generic.uname_nodename_host",
    # Open MPI 4.x's openib start-up warning ('WARNING: There was an error initializing an OpenFabrics device.', then
    # 'Local host: H', help-mpi-btl-openib.txt): printed by an MPI process with its own node name, so a rank ran on H
    # (a crash line that names no host, gdb's 'Program received signal SIGSEGV', happened there; heldout650). Not
    # when mpirun's count says other processes printed it too (_OPENIB_AGGREGATED).
    "openmpi.openib_init_warning_local_host",
})
#: A pasted shell prompt says where a program typed at it ran out of memory; a crash's paste as often shows a
#: login node or a laptop the job was launched from (mpirun, qsub), so it is not taken for a crash.
_PROMPT = "kernel.shell_prompt_command"
#: Both prompt forms: user@host (shell_prompt_command) and host:dir without the user (shell_prompt_host_cwd,
#: PS1='\h:\w\$ ': two mining rigs' 'rig-Nvidia:~$ nvidia-smi' then 'GPU is lost', heldout675).
_PROMPTS = frozenset({_PROMPT, "kernel.shell_prompt_host_cwd"})
#: ... unless the command typed there asks a scheduler about jobs (condor_history, sacct, qacct, bjobs, qstat, ...):
#: the lines after it report jobs that ran elsewhere, and the prompt names the submit or login host that asked.
_QUERY_COMMAND = re.compile(r"[#$%>] +(?:sudo +)?(?:condor_(?:history|q)|sacct|qacct|bacct|bhist|bjobs|qstat|tracejob"
                            r"|checkjob|showq|scontrol|flux +jobs)\b")


def _ran_on(ev: Evidence, *, prompt: bool) -> bool:
    return (ev.pattern in _RAN_ON_LINES or (prompt and ev.pattern in _PROMPTS and not _QUERY_COMMAND.search(ev.text))
            or (ev.pattern == "slurm.stepd_cancelled" and "*** JOB " in ev.text))


#: PETSc's per-rank prefix of every line of its error reports ('[1]PETSC ERROR: ...': PetscErrorPrintfDefault,
#: src/sys/error/errtrace.c, prints '[%d]PETSC ERROR: ' with the rank in PETSC_COMM_WORLD).
_PETSC_RANK = _opening(r"\s*\[([0-9]+)\]PETSC ERROR:")


def _same_petsc_rank(root: Evidence, usable: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """The lines that may say where ``root`` ran: all of them, less another rank's PETSc report when ``root`` is
    a PETSc report of its own rank. The header of a PETSc error report names the host of the rank that printed it
    ('[1]PETSC ERROR: prog on a arch named H by u ...'), so rank 1's header says nothing about where rank 0 ran
    out of memory ('[0]PETSC ERROR: Out of memory.')."""
    own = _PETSC_RANK.match(root.text)
    if own is None:
        return usable
    return tuple(e for e in usable
                 if (other := _PETSC_RANK.match(e.text)) is None or other.group(1) == own.group(1))


#: Open MPI's closing count of processes it could not start (openmpi.total_procs_failed_to_start).
_PROCS_NOT_STARTED = "openmpi.total_procs_failed_to_start"


_OPENIB_LOCAL_HOST = "openmpi.openib_init_warning_local_host"
_OPENIB_AGGREGATED = "openmpi.openib_help_aggregated"


def _only_host(usable: tuple[Evidence, ...], *, prompt: bool = True) -> list[Evidence]:
    """Where a process ran out of memory (or crashed) when its line names no host: the one host the log names,
    when it names exactly one (as anything but a suspect) and a line says the job ran there (see _RAN_ON_LINES).
    A log that names a second host says nothing about which one it was."""
    # mpirun's count of the other processes that printed the openib warning hides their 'Local host:' rows: the one
    # shown is the first process's node, not every process's (orte/util/show_help.c aggregation; heldout138).
    hidden = any(e.pattern == _OPENIB_AGGREGATED for e in usable)
    return [e for e in _one_host_named(usable)
            if _ran_on(e, prompt=prompt) and not (hidden and e.pattern == _OPENIB_LOCAL_HOST)][:1]


#: Launcher lines that name the host of the process whose end brought the job down, without saying why it ended
#: (Open MPI: 'mpirun has exited due to process rank 0 with PID 12205 on node H exiting improperly' or '... calling
#: "abort"'; Flux's
#: exit-timeout / exit-on-error plugin: 'lmp: rank 322 on host H exited and exit-timeout=30s has expired').
#: Hydra's BAD TERMINATION banner ('PID N RUNNING AT host', then the EXIT CODE) names the host of the process
#: whose bad end made mpiexec clean up (pmodels/mpich src/pm/hydra/mpiexec/mpiexec.c, the banner printed for the
#: first process that terminated badly; Intel MPI's i_hydra prints it the same way). When its EXIT CODE is 9 the
#: process named was SIGKILLed, as the clean-up kills the rest, so it says nothing of where a crash was.
#: Open MPI/PRRTE's 'has exited due to process rank N with PID P on node H calling "abort"' is the same notice for a
#: process that called abort (a crash handler's abort, as PETSc's after its SEGV report; heldout394).
_ENDED_FIRST_LINES = frozenset({"openmpi.exited_improperly_node", "openmpi.proc_called_abort_node",
                                "flux.task_exit_first", "hydra.running_at"})
_BANNER_KILLED = "hydra.bad_termination_signal_9"
_BANNER_LINES = 3


def _ended_first(usable: tuple[Evidence, ...]) -> list[Evidence]:
    """Where a crash whose own line names no host happened ('forrtl: severe (174): SIGSEGV', 'flux-job: task(s)
    Bus error'): the host the launcher names as where the first process ended, when it names one host only and the
    log names no other (as anything but a suspect). The launcher's line alone says only that a process ended (it
    also follows a lost daemon, so it is a lead there); beside a crash with no host it says where that crash was."""
    killed = [e.line for e in usable if e.pattern == _BANNER_KILLED]
    ended = [e for e in usable if e.pattern in _ENDED_FIRST_LINES and e.host is not None
             and not (e.pattern == "hydra.running_at" and any(0 < k - e.line <= _BANNER_LINES for k in killed))]
    hosts = {e.host for e in ended}
    if len(hosts) != 1:
        return []
    others = {e.host for e in usable if e.host is not None and e.host_means is not HostMeaning.SUSPECT}
    return ended[:1] if others <= hosts else []


#: Intel Fortran's runtime ends the process with the number of its error as the exit status ('forrtl: severe (174):
#: SIGSEGV' exits 174; the same number in srun's 'srun: error: H: task 97: Exited with exit code 174').
_FORRTL_CODE = _opening(r"forrtl: (?:severe|error) \(([0-9]+)\):")


def _exit_code_host(first: Evidence, usable: tuple[Evidence, ...]) -> list[Evidence]:
    """Where an Intel Fortran crash whose line names no host happened, when the log names several: the host of the
    first rank the launcher reports ending after it, when that report's exit code is the runtime's own error number
    ('forrtl: severe (174): SIGSEGV, ...' then 'srun: error: H: task 97: Exited with exit code 174'). A first report
    with any other code (or a signal) says nothing of the crash, and no host is named."""
    code = _FORRTL_CODE.match(first.text)
    if code is None:
        return []
    ends = [e for e in usable if e.pattern in _RANK_EXIT_LINES and e.line > first.line]
    if not ends or ends[0].host is None:
        return []
    return ends[:1] if re.search(rf"\bexit(?:ed with)? code {code.group(1)}\b", ends[0].text) else []


def _one_host_named(usable: tuple[Evidence, ...]) -> list[Evidence]:
    """The lines that name a host (as anything but a suspect), when the log names exactly one; none otherwise."""
    named = [e for e in usable if e.host is not None and e.host_means is not HostMeaning.SUSPECT]
    return named if len({e.host for e in named}) == 1 else []


#: A command typed at a prompt that runs the program elsewhere (a launcher, a batch submission, a remote shell): the
#: prompt's host is where it was typed, not where the device failed.
_REMOTE_COMMAND = re.compile(r"[#$%>] +(?:sudo +)?(?:mpirun|mpiexec|srun|sbatch|salloc|qsub|bsub|jsrun|aprun|flux"
                             r"|ssh|pdsh|clush|pssh|kubectl|ansible|sky|ray +(?:job|submit))\b")


def _device_place(decision: _Decision, usable: tuple[Evidence, ...], evidence: tuple[Evidence, ...]) -> _Decision:
    """Where a device fault whose line names no host happened ('HW Exception by GPU node-1 ... reason :GPU Hang',
    'GPU is lost. Reboot the system', CUDA_ERROR_ECC_UNCORRECTABLE): the one host the log names, when a line ties
    the run to it: a line that says the job ran there (_RAN_ON_LINES), a process on it that crashed after the fault
    (the runtime's abort on that fault: '[host:pid] Signal: Aborted (6)'), or a prompt at which a local command was
    typed (nvidia-smi, a GPU test, a health check run there; a launcher's or a remote shell's prompt is where it
    was typed). A log that names a second host says nothing about which one it was."""
    if decision.blamed or decision.nobody:
        return decision
    fault = next((e for e in evidence if e.role is Role.ROOT and e.failure_class is FailureClass.GPU_HW
                  and not _passed_over(e, evidence)), None)
    if fault is None or fault.host is not None:
        return decision
    # A rank's own line ('2047: cudaSetDevice(...) error( cudaErrorDevicesUnavailable) ...') is placed by that rank's
    # end, as a crash's is; otherwise by the one host the log names.
    tied = _rank_exit_host(fault, usable)
    place = tied[0] if tied else next(
        (e for e in _one_host_named(usable)
         if _ran_on(e, prompt=False) or (_is_crash(e) and e.line > fault.line)
         or (e.pattern in _PROMPTS and not _QUERY_COMMAND.search(e.text) and not _REMOTE_COMMAND.search(e.text))),
        None)
    if place is None or place.host is None:
        return decision
    blamed = (Blame(place.host, QuarantineReason.SCRAPED, (fault, place)),)
    where = "where the launcher says that rank ended" if tied else "the one host the log names"
    return _Decision(decision.failure_class, blamed, f"{decision.reason}; on {place.host.name}, {where} "
                     f"({place.pattern} at line {place.line})", line=decision.line)


def _from_facts(facts: SchedulerFacts | None) -> _Decision | None:
    if facts is None or facts.job_state is None:
        return None
    state = facts.job_state.upper().split()[0]
    fclass = _JOB_STATES.get(state)
    if fclass is None:
        return None
    return _Decision(fclass, (), f"scheduler reports job state {state}")


def _last_resort(status: ExitStatus | None, evidence: tuple[Evidence, ...],
                 progress: Progress | None = None) -> _Decision | None:
    """The first error line of a program no pack knows (see LAST_RESORT), once nothing else decided: no other
    pattern reads that line, and the exit status is not a signal's (a crash or a kill says more). Lines the program
    or its script went on after (_WENT_ON, _HOUSEKEEPING) are passed over; when the first line left speaks of the
    infrastructure, nothing is read (the error lines after it are as often its consequences)."""
    if status is not None and status.signal is not None:
        return None
    ev = _first_error_line(evidence, progress, tracebacks=True)
    if ev is None:
        return None
    return _Decision(ev.failure_class or FailureClass.USER_ERROR, (),
                     f"{ev.pattern} at line {ev.line}, no other line says why: {ev.text[:120]}",
                     from_status=True, line=ev.line)


def _first_error_line(evidence: tuple[Evidence, ...], progress: Progress | None = None, *,
                      tracebacks: bool = False) -> Evidence | None:
    """The last resort's line (see :func:`_last_resort`), whatever the exit status: a program's bare error line
    (LAST_RESORT) or, with ``tracebacks``, the exception that ended a traceback of a type no pack knows
    (:func:`_uncaught`)."""
    ev = _error_line_read(evidence, progress, tracebacks=tracebacks)
    if ev is None or _speaks_of_infrastructure(ev):
        return None
    return ev


def _speaks_of_infrastructure(ev: Evidence) -> bool:
    """Whether the last resort's line speaks of the infrastructure (:data:`_INFRA_WORDS`, a host's tag and its
    paths aside; argp's hint after a refused command line never does)."""
    return not _ARGP_HINT.match(ev.text) and bool(
        _INFRA_WORDS.search(_PATHS.sub(_machine_paths_only, _HOST_TAG.sub(" ", ev.text, count=1))))


def _error_line_read(evidence: tuple[Evidence, ...], progress: Progress | None = None, *,
                     tracebacks: bool = False) -> Evidence | None:
    """The line :func:`_first_error_line` reads, before it is asked whether it speaks of the infrastructure."""
    # a line another pattern reads is its
    others = {e.line for e in evidence if e.pattern not in LAST_RESORT and e.pattern != _EXCEPTION_LINE}
    return next((e for e in evidence if (e.pattern in LAST_RESORT or (tracebacks and _uncaught(e, evidence, progress)))
               and e.line not in others
               and not _WENT_ON.search(e.text) and not _HOUSEKEEPING.search(e.text)
               and not (e.pattern == "generic.java_main_uncaught" and _JAVA_CONTEXT_GONE.search(e.text))
               and not (e.pattern == "generic.error_severity_line" and _JAVA_RESTATED_GONE.search(e.text))
               and not (e.pattern == "generic.error_severity_line" and _NEXTFLOW_TASK_RESTATED.search(e.text))), None)


#: GNU argp's hint after it refused a command line (generic.error_severity_line): glibc argp/argp-help.c _help prints
#: "Try `%s --help' or `%s --usage' for more information." only under ARGP_HELP_SEE, which argp_error() and argp_usage()
#: ask for before exiting with argp_err_exit_status (read at bminor/glibc 04277e02). The name in it is the program that
#: refused its arguments, a launcher's too (LSF's jsrun, IBM/CAST#140, heldout506): a wrong call, not the launcher
#: failing, so the infrastructure's words (_INFRA_WORDS names the launchers) do not hold it back.
_ARGP_HINT = re.compile(
    r"[ \t]*Try [`'][A-Za-z0-9_./+-]+ --help' or [`'][A-Za-z0-9_./+-]+ --usage' for more information\.[ \t]*$")


#: The host tag a collector or a launcher puts before a line ('node12: ', '[gpu017:34567] ', pdsh's and Open MPI's
#: forms): where the line was printed, not what it says, so 'node' or 'gpu' in a host's name is not read as the
#: line speaking of the infrastructure. A name with a digit only (a word like 'srun' or 'node' alone stays).
_HOST_TAG = re.compile(r"^[ \t]*\[?[A-Za-z][A-Za-z0-9_.-]*[0-9][A-Za-z0-9_.-]*(?::[0-9]+)?(?:\]:?|:)(?=[ \t])")


#: The JVM exception types a library throws for a stream, a peer or a context that went away, a time out, an
#: interrupt, or another task's failure it wraps: not the program's own mistake (generic.java_main_uncaught).
_JAVA_CONTEXT_GONE = re.compile(r'" (?:java\.(?:io|net|nio|rmi)\.|\S*(?:IllegalState|Interrupted|Timeout|Execution|'
                                r'Remote|Rpc|Closed|Socket|Connect|IO)[A-Za-z]*(?:Exception|Error)\b)')

#: The same types when a JVM workflow engine restates the exception a task raised in its own debug log: Nextflow's
#: TaskProcessor.resumeOrDie logs 'Handling unexpected condition for', the task, then '  error [<class name>]:
#: <message>' (nextflow-io/nextflow modules/nextflow/src/main/groovy/nextflow/processor/TaskProcessor.groovy), and
#: its singularity cache throws IllegalStateException('Failed to pull singularity image ...') for a pull that failed
#: (container/SingularityCache.groovy). A context-gone type there is a step around the program that failed (an image
#: pull, a stream), not the program's own mistake, so the last resort does not read it; other types (a
#: ProcessUnrecoverableException's message) still read as before.
_JAVA_RESTATED_GONE = _opening(r'\s*error \[(?:java\.(?:io|net|nio|rmi)\.\S*|\S*(?:IllegalState|Interrupted|Timeout|'
                                 r'Execution|Remote|Rpc|Closed|Socket|Connect|IO)[A-Za-z]*(?:Exception|Error))\]: ')

#: Nextflow's restatement of a task's failure in its debug log (TaskProcessor.resumeOrDie: '  error [<class>]:
#: <message>') when the exception is the engine's own ProcessFailedException: TaskProcessor.finalizeTask throws it
#: with 'Process `<name>` terminated with an error exit status (N)', '... terminated for an unknown reason -- Likely
#: it has been terminated by the external system' or '... failed' (nextflow-io/nextflow modules/nextflow/src/main/
#: groovy/nextflow/processor/TaskProcessor.groovy, read at 2aad02f). It says that the task failed, not why: the task's
#: own stderr that the report quotes below it ('Command error:') is the line to read, so this one is passed over,
#: not taken as the first error line (heldout444).
_NEXTFLOW_TASK_RESTATED = _opening(r"\s*error \[(?:nextflow\.exception\.)?ProcessFailedException\]: ")

#: A traceback's last line, whatever the exception's type (a context line: it decides nothing by itself).
_EXCEPTION_LINE = "python.exception_line"


def _uncaught(ev: Evidence, evidence: tuple[Evidence, ...], progress: Progress | None) -> bool:
    """Whether ``ev`` is the exception line of a traceback that ended the run, of a type no pack knows
    ('mylib.errors.SimulationError: negative density in cell 42', 'sklearn.exceptions.NotFittedError: ...'): a
    'Traceback (most recent call last)' line stands above it, it is not a SystemExit's, it was not logged as a
    warning, raised in a signal handler or ignored, and no progress line came after it (a library that logs a
    caught exception with its traceback goes on working). Read as the last resort reads a program's bare error
    line: the program's own stop, unless its words speak of the infrastructure."""
    return (ev.pattern == _EXCEPTION_LINE and (progress is None or progress.last_line <= ev.line)
            and not _EXIT_TYPE.search(ev.text) and not _WRAPPER_TYPE.search(ev.text)
            and (_JULIA_UNCAUGHT.match(ev.text) is not None
                 or any(e.pattern in _TRACEBACK_MARKS and e.line < ev.line for e in evidence))
            and not _RELAYED.search(ev.text)
            and not (_logged_warning(ev) or _GOES_ON.search(ev.text) is not None
                     or _in_signal_handler(ev, evidence) or _in_ignored_block(ev, evidence)))


def _in_ignored_block(ev: Evidence, evidence: tuple[Evidence, ...]) -> bool:
    """Whether the exception line ``ev`` is the first below a header of a block Python printed and ignored
    ('Exception ignored in: ...', 'Error in atexit._run_exitfuncs:'), within _IGNORED_LINES of it."""
    mark = max((e.line for e in evidence if e.pattern in _IGNORED_MARKS and e.line < ev.line), default=None)
    return mark is not None and ev.line - mark <= _IGNORED_LINES and not any(
        e.pattern == _EXCEPTION_LINE and mark < e.line < ev.line for e in evidence)


#: What shows a traceback stood above an exception line: its header, or a frame of it where a paste or an excerpt
#: cut the header off.
_TRACEBACK_MARKS = frozenset({"python.traceback", "python.traceback_frame"})
#: An exception whose message only relays a command's exit status ("Call '/bin/bash user_script.sh' returned 256."):
#: another program failed, and this says not why.
#: A subprocess helper's exception alike, which names the command first ("RuntimeError: Command ['cactus_bar', ...]
#: exited 128", the exit status often past the part of a long line that is kept).
#: An exception whose message sends the reader elsewhere for the cause alike: vLLM's engine raises
#: 'Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root
#: cause.' (v1/executor/multiproc_executor.py wait_for_ready, as its traceback shows) and 'RuntimeError: Engine core
#: initialization failed. See root cause above.' once a worker or the engine core died: the cause is another
#: process's, printed elsewhere or not at all (heldout417).
#: A client's exception that restates a remote job's end alike: the SageMaker Python SDK's _check_job_status raises
#: UnexpectedStatusException (or CapacityError) with 'Error for Training job <name>: Failed. Reason: <reason>' when
#: the job it waits on failed or stopped (sagemaker/session.py, as its traceback shows; the older SDK's 'Failed
#: Reason:'): the notebook's traceback is the wait that gave up, not the training script's mistake; the reason it
#: quotes decides when a pack knows it (cloud.sagemaker_client_error), else nothing does (heldout681).
_RELAYED = re.compile(r"\breturned (?:non-?zero|-?[0-9]+\b)|(?:Error|Exception): (?:Command|Call)\b"
                      r"|\b[Ss]ee (?:the )?(?:stack trace|root cause)\b"
                      r"|\bError for [A-Z][A-Za-z]* job \S+: (?:Failed|Stopped)\b")

#: Julia's report of the exception that ended a script (base/client.jl: 'ERROR: ', 'LoadError: ' for an error in an
#: included file): the header a Python traceback has above its exception line, on the same line.
_JULIA_UNCAUGHT = _opening(r"[ \t]*ERROR: (?:LoadError: )*[A-Z]")
#: An exception line of an exit, not an error ('SystemExit: 2' where a caller printed it).
_EXIT_TYPE = re.compile(r"(?:^|[\s:>\]])[\w.]*Exit(?::|[ \t]*$)")
#: An exception that only relays another process's or task's failure (subprocess's CalledProcessError,
#: ipyparallel's RemoteError, Snakemake's RuleException, TorchElastic's ChildFailedError, Parsl's AppException): it
#: says that something else failed, not why. A future's or a task's cancellation alike (concurrent.futures'
#: CancelledError, Lib/concurrent/futures/_base.py, which dask.distributed's client raised for a released or lost
#: key before its FutureCancelledError(CancelledError); asyncio's CancelledError): it says the work was dropped.
#: A process that died under the work alike (Ray's OwnerDiedError, WorkerCrashedError, ObjectLostError, ActorDiedError,
#: python/ray/exceptions.py): it says which process went, not why.
#: A line prefix ('[rank3]: ', '[1,0]<stderr>:', Julia's 'ERROR: LoadError: ') may stand before the type.
_WRAPPER_TYPE = re.compile(r"(?:^|[\s:>\]])[\w.]*?(?:Process|Remote|Child|Worker|Task|Job|Rule|App|Command|Execution|"
                           r"Executor|Future|Composite|Cancelled|Died|Dead|Lost|Crashed)"
                           r"[A-Za-z]*(?:Error|Exception|Failure|Fault)(?::|\(|[ \t]*$)")


#: A file path in an error line: where a program or its input lives, not what failed ('/var/spool/slurmd/job42/
#: slurm_script: illegal option', 'cannot open /data/network/weights.bin'), so its words are not read as the
#: infrastructure's; a device's or the kernel's files (/dev, /sys, /proc) are the machine's.
_PATHS = re.compile(r"(?<![\w.~/-])(?:~|\.{1,2})?/[^\s:'\"`,;()]+")


def _machine_paths_only(path: re.Match[str]) -> str:
    return path.group() if path.group().startswith(("/dev/", "/sys/", "/proc/")) else " "


#: How far below a program's error line the abort it ends with may stand (stderr relayed through a shell).
_OWN_ABORT_LINES = 2


def _error_then_abort(status: ExitStatus | None, evidence: tuple[Evidence, ...]) -> _Decision | None:
    """A program's own error line (the last resort's) with its abort on the next line or the one after ('Error:
    reference annotation file (x.gtf) not found.' then the shell's 'Aborted (core dumped)', exit 134): the program
    stopped itself with abort() after saying why, so the error decides (and explains the abort, see
    :func:`_signal_death`), once nothing else decided. An abort with no error line before it, or any other crash
    signal, is read as a crash."""
    if status is not None and status.signal not in (None, signal.SIGABRT):
        return None
    ev = _first_error_line(evidence)
    # A crash of another signal before the error explains it; an abort reported above it (a workflow engine's
    # summary, 'terminated with an error exit status (134)', before the task's own stderr) is the same death.
    if ev is None or ev.failure_class is None or any(
            _is_crash(e) and e.line <= ev.line and not _ABORT.search(e.text) for e in evidence):
        return None
    if not any(_is_crash(e) and _ABORT.search(e.text) and 0 < e.line - ev.line <= _OWN_ABORT_LINES
               for e in evidence):
        return None
    return _Decision(ev.failure_class, (), f"{ev.pattern} at line {ev.line}, then the program's own abort: "
                     f"{ev.text[:120]}", from_status=True, line=ev.line, own_abort=True)


def _setup_failed(status: ExitStatus | None, evidence: tuple[Evidence, ...]) -> _Decision | None:
    """A job script's environment setup that failed (see _SETUP_ONLY), once nothing else decided and the exit
    status is not a signal's."""
    if status is not None and status.signal is not None:
        return None
    ev = next((e for e in evidence if _setup_line(e) and e.failure_class is not None), None)
    if ev is None or ev.failure_class is None:
        return None
    return _Decision(ev.failure_class, (), f"{ev.pattern} at line {ev.line}, no other line says why: {ev.text[:120]}",
                     from_status=True, line=ev.line)


#: The job script's own trace of a kill, pkill or killall (kernel.shell_trace_kill).
_TRACE_KILL = "kernel.shell_trace_kill"


def _own_kill(evidence: tuple[Evidence, ...]) -> Evidence | None:
    """The job script's traced kill (bash set -x: '+ pkill -f copper') with the launcher's teardown lines after it
    (PALS 'rank N died from signal 15'): with nothing else to explain them, the ranks died of the signal the
    script sent itself, a stop it asked for, not a failure."""
    kill = next((e for e in evidence if e.pattern == _TRACE_KILL), None)
    if kill is None or not any(e.role is Role.CASCADE and e.line > kill.line for e in evidence):
        return None
    return kill


def _without_status(evidence: tuple[Evidence, ...], noise: int) -> _Decision:
    """No exit status and no root cause: the script's own kill explains the teardown; else nothing does."""
    if noise and (kill := _own_kill(evidence)) is not None:
        return _Decision(FailureClass.CANCELLED, (), f"the job script's own {kill.text.strip()[:80]!r} at line "
                         f"{kill.line}, then {noise} teardown line(s): it stopped its own ranks", from_status=True)
    if noise:
        return _Decision(FailureClass.UNKNOWN, (), f"{noise} teardown line(s) but no root cause and no exit status",
                         from_status=True)
    # No verdict without evidence: a log that shows no failure has not shown success either (a job killed
    # before it could say why, an excerpt cut short). Success needs exit 0 or the scheduler's COMPLETED.
    return _Decision(FailureClass.UNKNOWN, (), "no exit status given and no line shows a failure or a success",
                     from_status=True, bare=True)


def _guessed(decision: _Decision, sample: bytes, evidence: tuple[Evidence, ...],
             progress: Progress | None = None) -> _Decision:
    """A log with no exit status that no line decided and the rules left to its words (see
    :func:`hotspare.evidence.wordguess.left_to_words`): the class they read like, when the guess is confident; it
    names no host. A supervisor always has the launcher's exit status, so this reads pasted logs and jobs whose
    status was lost, never an attempt it acts on. A line that reports a non-zero exit in the usual words ('exit
    code: 3', generic.nonzero_exit_reported) keeps a guess of success out: the run said it failed. (A program's own
    such line, HTCondor's '(1) Normal termination (return value 8)', is a pack's and leaves nothing to the words.)
    An error line the last resort held back because it speaks of the infrastructure (a traceback ending 'RuntimeError:
    HIP error: ...', the GPU runtime's report) keeps a guess of user_error out: the rules know that line is not the
    program's own mistake, and words such as 'cannot' or 'module' must not make it one (heldout331)."""
    if not decision.bare or not sample:
        return decision
    guess = wordguess.guess(sample)
    if guess is None:
        return decision
    if guess.failure_class is FailureClass.SUCCESS and any(e.pattern == _NONZERO_EXIT for e in evidence):
        return decision
    if guess.failure_class is FailureClass.USER_ERROR and (held := _error_line_read(evidence, progress,
                                                                                    tracebacks=True)) is not None \
            and _speaks_of_infrastructure(held):
        return decision
    return _Decision(guess.failure_class, (), guess.reason, from_status=True)


def _said_it_finished(status: ExitStatus | None, evidence: tuple[Evidence, ...], lines: int | None,
                      gone_on: frozenset[str] = frozenset({"generic.numerical_failure_words"})) -> _Decision | None:
    """No exit status and no line that decides: the program's own word that it finished well (generic.
    program_finished_words) among the log's last :data:`_FINISHED_LINES` lines is a success, when no line speaks of
    a failure (but one the run went on after, a warning: :func:`_passed_over`; or a solver's words that its numerics
    did not converge, printed before it: generic.numerical_failure_words, which chemistry codes print per step and
    go on after, Quantum ESPRESSO's 'c_bands:  2 eigenvalues not converged' before its 'JOB DONE.', a relax that
    reached its step limit: the program ended by its normal path all the same), none after it at all, and its words
    do not take it back ('... completed successfully, but some output files are
    missing', 'Abort before MPI_INIT completed successfully', 'task completed normally with an exit code of 1'). A log
    cut short, or a job killed before it could say why, ends otherwise."""
    if status is not None or lines is None:
        return None
    done = max((e for e in evidence if e.pattern in _FINISHED), key=lambda e: e.last_line or e.line, default=None)
    if done is None:
        return None
    # Nextflow's console progress: a process line that ends in ' ✔' is a finished word only when no process line
    # beside it was left unfinished or errored (a run cut short, still running, or whose other process failed;
    # AnsiLogObserver.line(), gridsched_heldout730).
    if done.pattern == _NF_PROCESS_DONE and any(e.pattern == _NF_PROCESS_UNFINISHED for e in evidence):
        return None
    end = done.last_line or done.line  # each rank prints its own: the last one is the program's last word
    # The shell's time report closing the log (a batch script's 'time srun prog') came after the program ended:
    # the program's last word is measured to it, not to the log's end.
    timed = min((e.line for e in evidence if e.pattern == _TIME_REPORT and e.line > end), default=None)
    tail = timed - 1 if timed is not None and lines - timed < _FINISHED_LINES else lines
    # So is Open MPI's verbose UCX finalize chatter right after it, every line of it, to the log's end (or to the
    # time report): MPI_Finalize disconnecting from each peer once the program's work is done (heldout529).
    chatter = [e for e in evidence if e.pattern == _FINALIZE_CHATTER and e.line > end]
    if chatter:
        first = min(e.line for e in chatter)
        last = max(e.last_line or e.line for e in chatter)
        if first - end <= _FINISHED_LINES and tail - last < _FINISHED_LINES and \
                sum(e.count for e in chatter) >= last - first + 1:
            tail = min(tail, first - 1)
    window = _CLOSING_REPORT_LINES.get(done.pattern, _FINISHED_LINES)
    if tail - end >= window or (done.pattern not in _WHOLE_LINE and _NOT_FINISHED.search(done.text)):
        return None
    if any(e.failure_class is not None and (e.line > end or not (
            _passed_over(e, evidence) or e.pattern in gone_on)) for e in evidence):
        return None
    return _Decision(FailureClass.SUCCESS, (), f"no exit status; the program's last word at line {end} is that "
                     f"it finished: {done.text.strip()[:100]}", line=done.line)


def _finished_after_numerics(status: ExitStatus | None, evidence: tuple[Evidence, ...],
                             lines: int | None) -> _Decision | None:
    """A solver's words that its numerics did not converge (generic.numerical_failure_words, a summary line that
    decides only when nothing else does) and, after them at the log's end, the program's own word that it finished
    well, with no exit status and no other failure line (:func:`_said_it_finished`): the program went on after
    them and ended by its normal path, so the run is a success, not the numerics' user_error (Quantum ESPRESSO
    prints 'c_bands:  2 eigenvalues not converged' on an SCF step and still ends with 'JOB DONE.')."""
    if not any(e.pattern == _NUMERICAL_WORDS for e in evidence):
        return None
    return _said_it_finished(status, evidence, lines)


def _finished_after_script_error(status: ExitStatus | None, evidence: tuple[Evidence, ...],
                                 lines: int | None) -> _Decision | None:
    """A batch script's shell that could not run one of its commands (python.script_command_error: '<script>: line
    19: surce: command not found') and, after it at the log's end, the program's own word that it finished well
    (a program's pattern: Charm++'s 'End of program', PWSCF's 'JOB DONE.', WRF's 'SUCCESS COMPLETE WRF'; not
    generic.program_finished_words, which a script's own closing echo matches as well), with no exit status and
    no other failure line (:func:`_said_it_finished`): bash goes on to the next command after one it cannot run,
    the program ran after it and ended by its normal path, so the run is a success, not the script's user_error
    (heldout321: a Slurm script's typo of 'source' before a 12-node Charm++ run that ended 'End of program').
    The missing command after the program's last word, or a script's closing echo alone, decides nothing here."""
    if not any(e.pattern == _SCRIPT_COMMAND for e in evidence):
        return None
    decision = _said_it_finished(status, evidence, lines, gone_on=frozenset({_NUMERICAL_WORDS, _SCRIPT_COMMAND}))
    if decision is None or decision.line is None:
        return None
    done = next((e for e in evidence if e.line == decision.line and e.pattern in _FINISHED), None)
    return decision if done is not None and done.pattern != _GENERIC_FINISHED else None


def _custodian_recovered(status: ExitStatus | None, evidence: tuple[Evidence, ...],
                         lines: int | None) -> _Decision | None:
    """custodian (the Materials Project's job wrapper) ran its jobs to the end after correcting every failure it
    met: no exit status, its closing 'Run completed. Total time taken = ...' (custodian.run_completed) among the
    log's last :data:`_FINISHED_LINES` lines, every failure line before a later 'Starting job no. N (X) attempt no.
    M.' (custodian.attempt_started: custodian goes on to another attempt or job only after its handlers corrected
    the error), none after the last such start, and none of its words for giving up (custodian.stop_words: an
    unrecoverable handler error, too many corrections), which it logs before the same closing line: the run is a
    success (heldout342: an srun 'task 0: Aborted' of Q-Chem at its optimisation-cycle limit, corrected and rerun
    to the end). A failure line seen more than once (its count) may hide a repeat after the restart: not read.
    A run with no failure line at all is a success alike: custodian logs its closing line in a finally block, after
    an error too, but an error reaches it only through its own words for giving up (the CustodianError message it
    logs first: custodian.stop_words), a handler's finding (a failure line) or an exception whose traceback follows
    the closing line; with none of them, every job ran and passed its handlers and validators (heldout588: two
    QCJobs, one attempt each, under a pymatgen UserWarning)."""
    if status is not None or lines is None:
        return None
    done = max((e.line for e in evidence if e.pattern == _CUSTODIAN_DONE), default=None)
    if done is None or lines - done >= _FINISHED_LINES or any(e.pattern == _CUSTODIAN_STOP for e in evidence):
        return None
    restart = max((line for e in evidence if e.pattern == _CUSTODIAN_ATTEMPT
                   for line in (e.line, e.last_line or e.line) if line < done), default=None)
    failures = [e for e in evidence if e.failure_class is not None]
    if restart is None or any(e.line > restart or e.count > 1 for e in failures):
        return None
    if not failures:
        return _Decision(FailureClass.SUCCESS, (), f"no exit status; custodian ran its jobs with no failure and ended "
                         f"its run at line {done}", line=done)
    return _Decision(FailureClass.SUCCESS, (), f"no exit status; custodian corrected each failure, started another "
                     f"attempt after it and ended its run at line {done}", line=done)


_CUSTODIAN_DONE = "custodian.run_completed"
_CUSTODIAN_ATTEMPT = "custodian.attempt_started"
_CUSTODIAN_STOP = "custodian.stop_words"


#: A batch script's shell that could not run one of its commands: before the program's own finished word, a line
#: the script went on after (:func:`_finished_after_script_error`).
_SCRIPT_COMMAND = "python.script_command_error"
_GENERIC_FINISHED = "generic.program_finished_words"
#: A program's word that it finished well (see :func:`_said_it_finished`), and how near the log's end it must be.
_FINISHED = LAST_KEPT - {"custodian.attempt_started", "distributed.registered_to",  # the scanner keeps their last line
                         "openmpi.ucx_finalize_disconnect"}
#: Open MPI's UCX layer taking its endpoints down at MPI_Finalize, at verbose level 2 ('[host:pid] common_ucx.c:440
#: disconnecting from rank 0', 'waiting for 0 disconnect requests'): after a finished line, the library's finalize.
_FINALIZE_CHATTER = "openmpi.ucx_finalize_disconnect"
#: A solver's words that its numerics did not converge: before a finished line, a warning it went on after.
_NUMERICAL_WORDS = "generic.numerical_failure_words"
#: The shell's 'real/user/sys' report of a timed command (bash's time keyword, time -p): after a finished line, not
#: more of the log, as a batch script's 'time srun prog' prints it once the program has ended.
_TIME_REPORT = "generic.shell_time_report"
#: Nextflow's console progress lines: a process that terminated with no errored task (' ✔'), and one not ended well.
_NF_PROCESS_DONE = "nextflow.progress_process_done"
_NF_PROCESS_UNFINISHED = "nextflow.progress_process_unfinished"
_FINISHED_LINES = 3
#: Finished lines a program follows with a closing report of its own, and how many lines that report may take: the
#: line stays the program's last word through them (a failure line after it still takes it back). ASPECT prints,
#: after 'Termination requested by criterion: ...', its TimerOutput summary (a table row per timed section, tens
#: of them), the solver-failure warnings, the total wallclock line, a resource block and the citation box
#: (source/simulator/core.cc Simulator::run, heldout409).
#: MLPerf implementations log a few closing events after their run_stop (openfold's epoch_stop and two tracked_stats
#: lines in mlcommons/hpc_results_v3.0; mllog's compliance rules ask only for exactly one run_stop, not that it be
#: last: mlperf_logging/compliance_checker/hpc_*/common.yaml, heldout464).
#: 'ray start' follows 'Ray runtime started.' with its dashed rule and, on a head, its 'Next steps' block (how to add
#: a node, connect, submit a job, stop Ray, view the status and the dashboard: some 25 lines; python/ray/scripts/
#: scripts.py start(), ray 2.9.3, heldout466).
#: VASP's ' General timing and accounting informations for this job:' in OUTCAR is followed by its run totals, a
#: rule and about a dozen lines to 'Voluntary context switches' (heldout656).
_CLOSING_REPORT_LINES = {"dealii.aspect_termination_requested": 80, "mlperf.run_stop_success": 8,
                         "generic.vasp_general_timing": 20,
                         "ray.start_runtime_started": 30}
#: Finished lines whose pattern spells the whole line, numbers aside: no room for words that take them back, and
#: their own fixed words are not a failure's (MPICH's cpi prints 'pi is approximately %.16f, Error is %.16f', the
#: numerical error of its result; examples/cpi.c, heldout315; OPM Flow's trailer counts the work of its chopped steps
#: as '(Failed: N; P%)', SimulatorReport.cpp, heldout405; MPICH's test suite prints ' No Errors', whose 'Errors' is
#: the count it reports, MTest_Finalize in test/mpi/util/mtest.c, heldout416; STREAM's 'Solution Validates: avg error
#: less than %e on all three arrays', the tolerance it checked, checkSTREAMresults in stream.c, heldout529).
_WHOLE_LINE = frozenset({"hydra.cpi_finished", "hydra.mpich_test_no_errors", "charliecloud.mpihello_finalize_ok",
                         "opm.trailer_linear_iterations", "stream.solution_validates"})
#: Words that take a finished line back: a failure beside it, an exit status other than 0, or a phrase that puts
#: the finish in a condition or in the past of something else.
_NOT_FINISHED = re.compile(r"(?i)\b(?:but|before|until|not|never|unless|if|whether|fail\w*|error\w*|abort\w*|"
                           r"warning|wait\w*)\b|(?:exit|return) ?(?:code|status|value)\D{0,8}[1-9]|"
                           # Open MPI's '%s job %s terminated normally, but %d process returned a non-zero exit
                           # code' (orte errmgr/state help [normal-termination-but]): an abort banner, even cut short
                           r"\b(?:primary|child) job +(?:\S+ +)?terminated normally|"
                           r"(?:exit|return) ?(?:code|status|value) (?:of |is |was )?(?:None|null|unknown)\b")


def _from_status(status: ExitStatus | None, evidence: tuple[Evidence, ...]) -> _Decision:
    noise = sum(1 for e in evidence if e.role is Role.CASCADE)
    if status is None:
        return _without_status(evidence, noise)
    if status.ok:
        return _Decision(FailureClass.SUCCESS, (), "exit 0 and no failure evidence", from_status=True)
    if status.signal in (signal.SIGINT, signal.SIGHUP):
        return _Decision(FailureClass.CANCELLED, (), f"{status}: interrupted (Ctrl-C, or the terminal went away)")
    if status.signal in _CRASH_SIGNALS:
        return _Decision(FailureClass.RANK_KILLED, (), f"{status}: the program crashed; no line names a host",
                         from_status=True, crash=True)
    detail = " (exit 143 is walltime only with walltime evidence)" if status.signal == signal.SIGTERM else ""
    return _Decision(FailureClass.UNKNOWN, (), f"{status} and no line names a cause or a host{detail}",
                     from_status=True)


#: A rank's own death signals (a bug or a bad instruction); SIGKILL, SIGTERM, SIGHUP and SIGINT come from outside.
_CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE})


def _node_fault_blame(blame: Blame) -> bool:
    """Whether a blame carries node-fault evidence (or none from the log: the scheduler's or a probe's word)."""
    return not blame.evidence or any(
        e.role is Role.ROOT and e.failure_class is not None and e.failure_class.attributes_node
        and e.host_means in _ORIGIN_MEANINGS for e in blame.evidence
    )


def _signed(evidence: tuple[Evidence, ...], decision: _Decision) -> tuple[Evidence, ...]:
    """The evidence a signature is made of: without the lines the run went on after (an exception Python ignored
    or a library logged as a warning, a job script's setup that failed), unless one of them decided. Each attempt
    of a job prints them alike: read first, they would give two different failures one signature."""
    return tuple(e for e in evidence
                 if e.line == decision.line or not (_setup_line(e) or _passed_over(e, evidence)))


def _verdict(decision: _Decision, evidence: tuple[Evidence, ...], members: frozenset[Host] | None,
             status: ExitStatus | None, last_line: str | None = None) -> Verdict:
    named = [e.host for e in evidence if e.host is not None]
    foreign = sorted({h for h in named if members is not None and h not in members})
    blamed_set = {b.host for b in decision.blamed}
    mentioned = sorted({h for h in named if h not in blamed_set and h not in foreign})
    fclass = decision.failure_class
    exclude = tuple(b.host for b in decision.blamed if _node_fault_blame(b)) if fclass.excludes_hosts else ()
    suspects = sorted({
        e.host for e in evidence
        if e.host is not None and e.host_means is HostMeaning.SUSPECT and e.host not in blamed_set
        and e.host not in foreign
    } | {h for h in decision.leads if h not in blamed_set and h not in foreign})
    mentioned = [h for h in mentioned if h not in suspects]
    return Verdict(
        failure_class=fclass,
        blamed=decision.blamed,
        mentioned_hosts=tuple(mentioned),
        foreign_hosts=tuple(foreign),
        retryable=fclass.retryable,
        exclude_hosts=exclude,
        reason=f"{fclass.value}: {decision.reason}",
        evidence=evidence,
        suspect_hosts=tuple(suspects),
        signature="" if fclass is FailureClass.SUCCESS else failure_signature(
            _signed(evidence, decision), str(status) if status is not None else None,
            hosts=(h.name for h in members or ()),
            last_line=last_line, crash=decision.crash),
        crash=decision.crash,
    )


@dataclass(frozen=True, slots=True)
class Refusal:
    """A host (or host-like text) a log named that the verdict does not blame, and why."""

    host_text: str
    line: int
    pattern: str
    why: str


def refusals(verdict: Verdict) -> tuple[Refusal, ...]:
    """Every named host the verdict did not blame, once each (first line naming it), with the reason."""
    blamed = set(verdict.blamed_hosts)
    foreign = set(verdict.foreign_hosts)
    suspects = set(verdict.suspect_hosts)
    has_origin = verdict.failure_class in _ORIGIN_CLASSES
    out: dict[str, Refusal] = {}
    for e in verdict.evidence:
        if e.host_text is None or (e.host is not None and e.host in blamed):
            continue
        key = e.host.name if e.host is not None else e.host_text
        if key in out:
            continue
        out[key] = Refusal(e.host_text, e.line, e.pattern, _refusal_reason(e, foreign, suspects, has_origin, verdict))
    return tuple(out.values())


_MEANING_REFUSED = {
    HostMeaning.SUSPECT: "named only by a lost connection, a launch failure or a peer's view: a lead to probe, "
                         "never proof",
    HostMeaning.CASCADE: "hurt by the failure elsewhere (a teardown or a survivor's report)",
    HostMeaning.MENTION: "named in passing: the line says nothing about the host",
}


def _refusal_reason(
    e: Evidence, foreign: set[Host], suspects: set[Host], has_origin: bool, verdict: Verdict
) -> str:
    if e.host is None:
        return "not a host: a placeholder, an address in a link, or text no node is named"
    if e.host in foreign:
        return "not a host of the allocation"
    meaning = HostMeaning.SUSPECT if e.host in suspects else e.host_means
    if meaning in _MEANING_REFUSED:
        return _MEANING_REFUSED[meaning]
    if not has_origin:
        return f"a {verdict.failure_class.value} failure starts nowhere in particular, whatever host printed it"
    if verdict.blamed:
        return "reported after the first failure (the teardown had begun, or another host failed first)"
    return "the job's failure has no single origin (every host was killed alike, or the scheduler decided)"
