"""What the batch scheduler says: node states, remaining walltime, how a job ended (SLURM, PBS).

Parsers are pure (``parse_*``) and tested on captured output; :class:`SchedulerQuery`
asks the real commands through the runner, bounded by a timeout, and answers
None/empty when the scheduler cannot be asked — a missing answer is never
read as a fault. It is never silent either: each failed command is handed, as a
:class:`QueryFailure`, to the query's ``on_failure`` callback (a wrong
``SLURM_CONF`` would otherwise switch the scheduler watch off unnoticed).
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from hotspare.act.node_states import SCHEDULER_CHOICES
from hotspare.act.runner import Completed, capture
from hotspare.errors import HostError
from hotspare.hosts import Host, expand_hosts


def parse_duration_s(text: str) -> float | None:
    """SLURM/PBS durations: ``[D-]HH:MM:SS``, ``MM:SS``, ``SS`` or plain seconds; None for UNLIMITED etc."""
    match = re.fullmatch(r"\s*(?:(\d+)-)?(?:(\d+):)?(?:(\d+):)?(\d+)\s*", text)
    if not match:
        return None
    days, a, b, secs = match.groups()
    parts = [int(p) for p in (a, b) if p is not None]
    hours, minutes = [0, 0, *parts][-2:]
    return float(int(days or 0) * 86400 + hours * 3600 + minutes * 60 + int(secs))


def parse_squeue_time_left(text: str) -> float | None:
    """``squeue -h -j ID -o %L`` output."""
    return parse_duration_s(text.strip().splitlines()[0]) if text.strip() else None


def parse_qstat_time_left(text: str) -> float | None:
    """``qstat -f ID``: ``Walltime.Remaining`` (PBS Pro) or ``Resource_List.walltime`` minus the used walltime."""
    fields = dict(re.findall(r"^\s*([\w.]+) = (.*)$", text, re.MULTILINE))
    if "Walltime.Remaining" in fields:
        return parse_duration_s(fields["Walltime.Remaining"])
    limit = parse_duration_s(fields.get("Resource_List.walltime", ""))
    used = parse_duration_s(fields.get("resources_used.walltime", "0"))
    return None if limit is None else max(0.0, limit - (used or 0.0))


def parse_scontrol_nodes(text: str) -> dict[Host, str]:
    """``scontrol show node [NAMES]``: each block's NodeName and State."""
    states: dict[Host, str] = {}
    for block in re.split(r"\n(?=NodeName=)", text):
        name = re.search(r"NodeName=(\S+)", block)
        state = re.search(r"\bState=(\S+)", block)
        if name and state:
            _put(states, name.group(1), state.group(1))
    return states


def parse_pbsnodes(text: str) -> dict[Host, str]:
    """``pbsnodes [-a] [NAMES]``: a node name line, then indented ``state = ...``."""
    states: dict[Host, str] = {}
    for name, state in re.findall(r"^(\S+)\n(?:\s+\S.*\n)*?\s+state = (\S+)", text + "\n", re.MULTILINE):
        _put(states, name, state)
    return states


#: A PBS Pro resource line (``select=N:ncpus=4:mem=8GB``) and a Torque one (``nodes=N:ppn=4``): the count (a number
#: or a template's ``${nodes_per_block}``), then the rest of the chunk, then anything after it on the line.
_PBS_SELECT = re.compile(r"^(#PBS -l select=)([^:\s]+)((?::\S*)?)(.*)$", re.MULTILINE)
_PBS_NODES = re.compile(r"^(#PBS -l nodes=)([^:\s]+)((?::\S*)?)(.*)$", re.MULTILINE)


def pin_pbs_hosts(script: str, hosts: Sequence[Host]) -> str | None:
    """``script`` (a PBS job script or its header) asking for exactly ``hosts``, one chunk each, or None when it
    has no resource line to pin (pure).

    PBS Pro cannot exclude a host, only ask for named ones: ``select=N:ncpus=4`` becomes
    ``select=1:host=H1:ncpus=4+1:host=H2:ncpus=4``. Torque names hosts where the count was:
    ``nodes=N:ppn=4`` becomes ``nodes=H1:ppn=4+H2:ppn=4`` (slurm-wlm-torque's qsub honours this form and
    ignores ``select=…:host=``, seen on the test bed). Hosts are validated :class:`Host` values; their ``raw``
    spelling is written.
    """
    if not hosts:
        return None
    match = _PBS_SELECT.search(script)
    if match is not None:
        chunks = "+".join(f"1:host={h.raw}{match.group(3)}" for h in hosts)
    else:
        match = _PBS_NODES.search(script)
        if match is None:
            return None
        chunks = "+".join(f"{h.raw}{match.group(3)}" for h in hosts)
    return script[: match.start()] + match.group(1) + chunks + match.group(4) + script[match.end():]


#: PBS ``Exit_status`` values of a job ended by a node failure (OpenPBS ``src/include/job.h``):
#: JOB_EXEC_RERUN_SIS_FAIL (a sister MOM failed; seen on the bed) and JOB_EXEC_RERUN_MS_FAIL (the mother superior).
PBS_NODE_FAIL_EXITS = frozenset({-14, -20})


@dataclass(frozen=True, slots=True)
class JobFacts:
    """How the scheduler describes one job: its state, nodes, exit code and the scheduler's own words."""

    job_id: str
    state: str
    hosts: tuple[Host, ...] = ()
    exit_code: int | None = None
    reason: str = ""
    #: How many times the scheduler started the job again (SLURM ``Restarts=``; 0 when not said).
    restarts: int = 0

    @property
    def node_failed(self) -> bool:
        """SLURM's NODE_FAIL, or a PBS ``Exit_status`` of a node failure (:data:`PBS_NODE_FAIL_EXITS`). Real PBS
        says it nowhere else: on the bed the comment stayed "Job run at ... on (p1:ncpus=1)+(p2:ncpus=1)+..." and
        the job's .o/.e held no PBS line."""
        return self.state.upper().startswith("NODE_FAIL") or self.exit_code in PBS_NODE_FAIL_EXITS

    @property
    def requeued(self) -> bool:
        """The scheduler put the job back in its queue after a run ended (SLURM requeues a batch job whose node
        failed, by default): restarted at least once and waiting to run again. Not after a preemption."""
        state = self.state.upper().split()[0] if self.state.strip() else ""
        return (self.restarts > 0 and state in _REQUEUED_STATES
                and "preempt" not in self.reason.lower())


#: SLURM states of a job put back in the queue (before it runs again), and PBS's queued/held/waiting (with a run
#: count: PBS requeues a rerunnable job whose sister MOM died, Exit_status -14, and it waits as ``Q``).
_REQUEUED_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "Q", "H", "W"})


def _hosts(names: Sequence[str]) -> tuple[Host, ...]:
    found: dict[Host, Host] = {}
    for name in names:
        with contextlib.suppress(HostError):
            host = Host(name)
            found.setdefault(host, host)
    return tuple(found)


def parse_scontrol_job(text: str) -> JobFacts | None:
    """``scontrol show job [-o] ID``: JobState, NodeList (a hostlist), ExitCode ``rc:signal``, Reason."""
    fields = dict(re.findall(r"(?:^|\s)(\w+)=(\S*)", text))
    if "JobId" not in fields or "JobState" not in fields:
        return None
    nodes = fields.get("NodeList", "")
    hosts: tuple[Host, ...] = ()
    if nodes and nodes != "(null)":
        with contextlib.suppress(HostError, ValueError):
            hosts = tuple(expand_hosts(nodes))
    code = re.fullmatch(r"(\d+):(\d+)", fields.get("ExitCode", ""))
    exit_code = None if code is None else (128 + int(code.group(2)) if int(code.group(2)) else int(code.group(1)))
    reason = fields.get("Reason", "")
    restarts = int(fields["Restarts"]) if fields.get("Restarts", "").isdigit() else 0
    return JobFacts(fields["JobId"], fields["JobState"], hosts, exit_code, "" if reason == "None" else reason,
                    restarts)


def parse_pbs_exec_host(text: str) -> tuple[Host, ...]:
    """PBS ``exec_host`` (``n1/0*2+n2/0``) or ``exec_vnode`` (``(n1:ncpus=2)+(n2:ncpus=2)``): the hosts."""
    names = [re.split(r"[/:*]", part.strip("() "), maxsplit=1)[0] for part in re.split(r"[+]", text) if part.strip()]
    return _hosts([n for n in names if n])


def parse_qstat_json(text: str) -> dict[str, JobFacts]:
    """``qstat -x -f -F json [IDS]`` (PBS Pro): each job's state, exec hosts, Exit_status and comment.

    PBS Pro reports a finished job as state F whether it succeeded or not: the exit status and the
    comment are what tell them apart.
    """
    try:
        jobs = json.loads(text).get("Jobs", {})
    except (ValueError, AttributeError):
        return {}
    facts: dict[str, JobFacts] = {}
    for job_id, job in jobs.items() if isinstance(jobs, dict) else ():
        if not isinstance(job, dict):
            continue
        hosts = parse_pbs_exec_host(str(job.get("exec_vnode") or job.get("exec_host") or ""))
        state = str(job.get("job_state", ""))
        facts[job_id] = JobFacts(job_id, state, hosts, _int(job.get("Exit_status")), str(job.get("comment", "")),
                                 _pbs_restarts(state, _int(job.get("run_count")) or 0))
    return facts


def _int(value: object) -> int | None:
    """A JSON number or numeric string as an int (PBS writes Exit_status -14 as a number), else None."""
    return int(value) if isinstance(value, int | str) and str(value).lstrip("-").isdigit() else None


def _pbs_restarts(state: str, run_count: int) -> int:
    """Restarts from PBS's ``run_count`` (how many times the job was started): a job back in the queue (``Q``)
    after a run was put back ``run_count`` times (the bed: a sister MOM killed, ``Exit_status -14``, ``Q``,
    ``run_count 1``); a running or ended one was started again ``run_count - 1`` times."""
    return run_count if state in {"Q", "H", "W"} else max(0, run_count - 1)


def find_pbs_job(facts: Mapping[str, JobFacts], job_id: str) -> JobFacts | None:
    """Job ``job_id`` in :func:`parse_qstat_json`'s answer, by its sequence number and server's short name: PBS
    keys it ``SEQ.SERVER`` with the server as the server names itself (``0.pbshead`` on the bed, a full domain at
    some sites), while a job id given as ``0``, or ``0.pbs01.example.com`` asked of ``0.pbs01``, is the same job."""
    if job_id in facts:
        return facts[job_id]
    seq, _, server = job_id.partition(".")
    for key, job in facts.items():
        key_seq, _, key_server = key.partition(".")
        if key_seq == seq and (not server or not key_server or server.split(".")[0] == key_server.split(".")[0]):
            return job
    return None


def _put(states: dict[Host, str], name: str, state: str) -> None:
    with contextlib.suppress(HostError):  # a name we cannot use is not a node we run on
        states[Host(name)] = state


class SchedulerKind(enum.StrEnum):
    """The batch schedulers hotspare asks (None where there is none)."""

    SLURM = "slurm"
    PBS = "pbs"


#: Characters of a failed command's stderr kept in a :class:`QueryFailure`.
STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class QueryFailure:
    """A scheduler command that did not answer: what was run, how it ended, the end of what it said."""

    argv: tuple[str, ...]
    rc: int | None
    timed_out: bool
    timeout_s: float
    stderr_tail: str

    @classmethod
    def of(cls, done: Completed, timeout_s: float) -> QueryFailure:
        return cls(done.argv, done.rc, done.timed_out, timeout_s, done.stderr[-STDERR_TAIL_CHARS:])

    @property
    def command(self) -> str:
        """The command as one would type it (for messages; the argv is never run through a shell)."""
        return " ".join(self.argv)

    @property
    def first_line(self) -> str:
        """What the command said first (scontrol names the cause there), else how it ended."""
        lines = [line.strip() for line in self.stderr_tail.splitlines() if line.strip()]
        if self.timed_out:
            return f"timed out after {self.timeout_s:g} s" + (f": {lines[0]}" if lines else "")
        return lines[0] if lines else f"exited {self.rc} saying nothing"

    def __str__(self) -> str:
        return f"{self.command}: {self.first_line}"


def _ignore(failure: QueryFailure) -> None:
    """The default ``on_failure``: the caller did not ask to hear about failures."""


#: What ``--scheduler`` accepts (see :meth:`SchedulerQuery.detect`).
def check_scheduler_choice(choice: str) -> str:
    """``choice`` if it is one of :data:`SCHEDULER_CHOICES`, else ValueError naming them."""
    if choice not in SCHEDULER_CHOICES:
        raise ValueError(f"scheduler {choice!r}: use one of {', '.join(SCHEDULER_CHOICES)}")
    return choice


@dataclass(frozen=True, slots=True)
class SchedulerQuery:
    """Asks SLURM or PBS (whichever runs this job) about nodes and walltime.

    A command that fails or times out gives the "nothing known" answer (empty, None) and is handed to
    ``on_failure`` as a :class:`QueryFailure`; :class:`hotspare.supervisor.Supervisor` records each one and
    warns once.
    """

    #: Stored as a :class:`SchedulerKind`; a plain ``"slurm"``/``"pbs"`` is accepted (callers typed ``str``).
    kind: SchedulerKind | str | None
    job_id: str | None
    timeout_s: float = 10.0
    run: Callable[[Sequence[str], float], Completed] = lambda argv, t: capture(argv, timeout_s=t)
    on_failure: Callable[[QueryFailure], None] = field(default=_ignore)

    def __post_init__(self) -> None:
        if self.kind is not None:  # a plain "slurm"/"pbs" is accepted; anything else is refused here
            try:
                object.__setattr__(self, "kind", SchedulerKind(self.kind))
            except ValueError:
                raise ValueError(f"scheduler kind {self.kind!r}: use one of "
                                 f"{', '.join(SchedulerKind)} or None") from None

    def describe(self) -> str:
        """Who is asked about this job's nodes, in words for the ledger (``slurm job 42 (scontrol show node)``)."""
        job = f"job {self.job_id}" if self.job_id else "no job id"
        if self.kind is SchedulerKind.SLURM:
            return f"slurm {job} (scontrol show node)"
        if self.kind is SchedulerKind.PBS:
            return f"pbs {job} (pbsnodes)"
        return "none: hosts are judged by probes alone"

    def _ask(self, argv: Sequence[str]) -> str | None:
        """The command's stdout, or None (and the failure reported) when it did not answer."""
        done = self.run(argv, self.timeout_s)
        if done.ok:
            return done.stdout
        self.on_failure(QueryFailure.of(done, self.timeout_s))
        return None

    @classmethod
    def detect(cls, environ: Mapping[str, str] | None = None, *, choice: str = "auto") -> SchedulerQuery:
        """The query for ``choice`` (one of :data:`SCHEDULER_CHOICES`): ``auto`` is SLURM inside a SLURM job,
        else PBS inside a PBS job, else a query that knows nothing; ``slurm``/``pbs`` name the scheduler (a site
        whose PBS jobs also carry SLURM variables); ``none`` asks nobody."""
        check_scheduler_choice(choice)
        env = os.environ if environ is None else environ
        slurm, pbs = env.get("SLURM_JOB_ID") or None, env.get("PBS_JOBID") or None
        if choice == "slurm" or (choice == "auto" and slurm):
            return cls(SchedulerKind.SLURM, slurm)
        if choice == "pbs" or (choice == "auto" and pbs):
            return cls(SchedulerKind.PBS, pbs)
        return cls(None, None)

    def node_states(self, hosts: Sequence[Host]) -> dict[Host, str]:
        """States of ``hosts`` as the scheduler reports them (empty when it cannot be asked)."""
        if not hosts or self.kind is None:
            return {}
        names = [h.raw for h in hosts]
        if self.kind is SchedulerKind.SLURM:
            out = self._ask(["scontrol", "show", "node", ",".join(names)])
            return {} if out is None else parse_scontrol_nodes(out)
        out = self._ask(["pbsnodes", *names])
        return {} if out is None else parse_pbsnodes(out)

    def job_facts(self, job_id: str) -> JobFacts | None:
        """How the scheduler describes job ``job_id`` (None when it cannot be asked or forgot the job)."""
        if self.kind is SchedulerKind.SLURM:
            out = self._ask(["scontrol", "show", "job", "-o", job_id])
            return None if out is None else parse_scontrol_job(out)
        if self.kind is SchedulerKind.PBS:
            out = self._ask(["qstat", "-x", "-f", "-F", "json", job_id])
            return None if out is None else find_pbs_job(parse_qstat_json(out), job_id)
        return None

    def walltime_left_s(self) -> float | None:
        """Seconds left before the scheduler ends the job (None: unknown or unlimited)."""
        if self.kind is None or self.job_id is None:
            return None
        if self.kind is SchedulerKind.SLURM:
            out = self._ask(["squeue", "-h", "-j", self.job_id, "-o", "%L"])
            return None if out is None else parse_squeue_time_left(out)
        out = self._ask(["qstat", "-f", self.job_id])
        return None if out is None else parse_qstat_time_left(out)
