"""``FailoverProvider``: a Parsl execution provider that wraps another and keeps blocks off dead nodes.

One line changes in a Parsl config::

    provider=FailoverProvider(SlurmProvider(nodes_per_block=4, ...), spares_per_block=1, run_dir="wf-run")

What it adds to the wrapped provider (``inner``):

* **spares**: each block asks ``inner`` for ``nodes_per_block + spares_per_block`` nodes; inside the
  job, :mod:`hotspare_parsl.block` narrows ``SLURM_NODELIST``/``PBS_NODEFILE`` to the active nodes
  (what Parsl's MPI task scheduler hands out) and exports the spares for :func:`mpi_launch` commands;
* **placement away from quarantined hosts**: SLURM ``#SBATCH --exclude=`` (added to the wrapped
  provider's ``scheduler_options`` for that one submit, then restored); PBS Pro cannot exclude, so
  the ``select`` line of the instance's ``template_string`` is rewritten to pin ``host=`` chunks
  chosen among hosts known good (:func:`pin_pbs_select`);
* **judging blocks that end**: the scheduler's own record (SLURM ``scontrol show job``: NODE_FAIL;
  PBS ``qstat -x -f -F json``: Exit_status and comment, because PBSProProvider calls every finished
  job COMPLETED), the block's stdout/stderr, and the core classifier. A block lost to a node fault
  quarantines exactly the named hosts (reason and evidence in the run's ledger) and is reported
  FAILED with that reason; Parsl's scaling strategy replaces it, and the next submit excludes them;
* **bounded resubmission**: at most ``max_submits`` blocks per ``window_s`` seconds; beyond that
  ``submit`` raises, so a broken site cannot turn into thousands of jobs.

The quarantine lives in ``run_dir/ledger.sqlite`` and is shared by every block, executor and task
supervisor of the workflow (:class:`hotspare.quarantine.Quarantine`).
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from parsl.jobs.states import JobState, JobStatus
from parsl.providers.base import ExecutionProvider

from hotspare import FailureClass, Host, Verdict, classify, load_patterns, scan
from hotspare.classify import Blame, SchedulerFacts
from hotspare.errors import HotspareError
from hotspare.ledger import LEDGER_NAME, Ledger
from hotspare.probe import probe_hosts
from hotspare.quarantine import Quarantine
from hotspare.scheduler import JobFacts, SchedulerQuery, unhealthy

log = logging.getLogger(__name__)

_BLOCKS_TABLE = """
CREATE TABLE IF NOT EXISTS parsl_blocks (
    job_id TEXT PRIMARY KEY, job_name TEXT, submitted_s REAL NOT NULL, ended_s REAL,
    hosts TEXT NOT NULL DEFAULT '[]', excluded TEXT NOT NULL DEFAULT '[]', scheduler_state TEXT,
    failure_class TEXT, verdict TEXT, evidence TEXT NOT NULL DEFAULT '[]'
)
"""

_RETRIES_TABLE = """
CREATE TABLE IF NOT EXISTS parsl_retries (
    task_id INTEGER, try_id INTEGER, at_s REAL NOT NULL, scope TEXT NOT NULL, kind TEXT NOT NULL,
    parsl_cost REAL NOT NULL, try_s REAL, reason TEXT NOT NULL
)
"""

#: Read at most this much of a block's stdout/stderr when judging it (the end matters most).
_TAIL_BYTES = 8 << 20


class ResubmissionLimit(HotspareError):
    """More blocks were asked for in the window than the provider allows."""


def _kind(inner: ExecutionProvider) -> str:
    name = type(inner).__name__
    if "Slurm" in name:
        return "slurm"
    if "PBS" in name or "Torque" in name:
        return "pbs"
    return "local"


def pin_pbs_select(template: str, hosts: Sequence[str]) -> str:
    """A PBS Pro template whose ``select=`` line asks for exactly ``hosts`` (``1:host=H:…`` chunks).

    The chunk's other resources (``ncpus=...``) are kept. Hosts are validated first; a template
    without a ``select=`` line is returned unchanged.
    """
    names = [Host(h).raw for h in hosts]
    match = re.search(r"^(#PBS -l select=)(\S+)(.*)$", template, re.MULTILINE)
    if match is None or not names:
        return template
    rest = match.group(2).split(":", 1)[1] if ":" in match.group(2) else ""
    chunk = ":" + rest if rest else ""
    select = "+".join(f"1:host={name}{chunk}" for name in names)
    return template[: match.start()] + match.group(1) + select + match.group(3) + template[match.end():]


@dataclass
class _Block:
    job_id: str
    job_name: str
    stdout: str | None = None
    stderr: str | None = None
    hosts: tuple[Host, ...] = ()
    verdict: Verdict | None = None
    facts: JobFacts | None = None
    judged: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class FailoverProvider(ExecutionProvider):
    """Wraps ``inner`` (SlurmProvider, PBSProProvider, TorqueProvider, LocalProvider, ...); see the module."""

    def __init__(
        self,
        inner: ExecutionProvider,
        *,
        spares_per_block: int = 0,
        run_dir: str | Path = "hotspare-parsl",
        max_submits: int = 20,
        window_s: float = 600.0,
        quarantine_ttl_s: float | None = None,
        probe_timeout_s: float = 60.0,
        query: SchedulerQuery | None = None,
        python: str | None = None,
        simulated_hosts: Sequence[str] = (),
    ) -> None:
        if spares_per_block < 0:
            raise ValueError(f"spares_per_block={spares_per_block}: give 0 or more")
        if max_submits < 1 or window_s <= 0:
            raise ValueError("max_submits must be >= 1 and window_s > 0")
        self.inner = inner
        self.spares_per_block = spares_per_block
        self.run_dir = Path(run_dir).resolve()
        self.max_submits = max_submits
        self.window_s = window_s
        self.quarantine_ttl_s = quarantine_ttl_s
        self.probe_timeout_s = probe_timeout_s
        self._kind = _kind(inner)
        self._query = query or SchedulerQuery(self._kind if self._kind != "local" else None, None)
        self._python = python
        self._lock = threading.Lock()
        self._submits: deque[float] = deque()
        self._blocks: dict[str, _Block] = {}
        self._patterns = load_patterns()
        self._ledger = Ledger.open(self.run_dir)  # the workflow's ledger: blocks and the shared quarantine
        self._db = self._ledger.connection
        self._db.execute(_BLOCKS_TABLE)
        self._db.execute(_RETRIES_TABLE)
        self.quarantine = Quarantine.attach(self._db)
        #: LocalProvider only: each block stands for one of these hosts (demos, tests, laptops). A block
        #: whose process group is killed from outside is that host powering off.
        self.simulated_hosts = tuple(Host(h) for h in simulated_hosts)
        if self.simulated_hosts and self._kind != "local":
            raise ValueError("simulated_hosts is for LocalProvider: a batch scheduler names the real hosts")
        self._cancelled: set[str] = set()

    # -- what executors and the DFK read and set: the inner provider's own -------------------
    label = property(lambda self: self.inner.label)
    status_polling_interval = property(lambda self: self.inner.status_polling_interval)

    def _delegate(name: str) -> property:  # type: ignore[misc]
        return property(lambda self: getattr(self.inner, name),
                        lambda self, value: setattr(self.inner, name, value))

    min_blocks = _delegate("min_blocks")
    max_blocks = _delegate("max_blocks")
    init_blocks = _delegate("init_blocks")
    parallelism = _delegate("parallelism")
    nodes_per_block = _delegate("nodes_per_block")
    script_dir = _delegate("script_dir")
    launcher = _delegate("launcher")
    resources = _delegate("resources")
    cores_per_node = _delegate("cores_per_node")
    mem_per_node = _delegate("mem_per_node")
    walltime = _delegate("walltime")
    del _delegate

    def __getattr__(self, name: str) -> Any:
        # Anything else a caller reads (worker_init, partition, channel, ...) is the inner provider's.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # -- submit ------------------------------------------------------------------------------
    def submit(self, command: str, tasks_per_node: int, job_name: str = "parsl.failover") -> object:
        """Submit one block through ``inner``: spares added, quarantined hosts kept out."""
        now = time.monotonic()
        with self._lock:
            while self._submits and now - self._submits[0] > self.window_s:
                self._submits.popleft()
            if len(self._submits) >= self.max_submits:
                raise ResubmissionLimit(
                    f"{len(self._submits)} blocks submitted in the last {self.window_s:g} s (max_submits="
                    f"{self.max_submits}): not submitting more; see {self.run_dir / LEDGER_NAME} for why blocks ended")
            self._submits.append(now)
        self._readmit_due()
        bad = sorted(h.raw for h in self.quarantine.hosts())
        saved = {k: getattr(self.inner, k) for k in ("nodes_per_block", "worker_init", "scheduler_options",
                                                     "template_string") if k in vars(self.inner)}
        name = f"{job_name}.{time.time():.6f}"
        simulated = self._pick_simulated() if self.simulated_hosts else None
        try:
            if simulated is not None and "worker_init" in saved:
                self.inner.worker_init = f"export HOTSPARE_HOST={shlex.quote(simulated.raw)}\n" + saved["worker_init"]
            self.inner.nodes_per_block = saved["nodes_per_block"] + self.spares_per_block
            if "worker_init" in saved and self._kind != "local":
                self.inner.worker_init = self._block_init(name) + saved["worker_init"]
            if self._kind == "slurm" and "scheduler_options" in saved:
                extra = "#SBATCH --no-requeue\n"
                if self.spares_per_block:
                    extra += "#SBATCH --no-kill\n"  # a lost node is the block's spare's job, not the block's end
                if bad:
                    extra += f"#SBATCH --exclude={','.join(bad)}\n"
                self.inner.scheduler_options = saved["scheduler_options"] + extra
            if self._kind == "pbs" and bad and "template_string" in saved:
                good = self._known_good(self.inner.nodes_per_block)
                if good:
                    self.inner.template_string = pin_pbs_select(saved["template_string"], good)
            job_id = self.inner.submit(command, tasks_per_node, job_name=job_name)
        finally:
            for key, value in saved.items():
                setattr(self.inner, key, value)
        record = self.inner.resources.get(job_id, {}) if isinstance(self.inner.resources, dict) else {}
        block = _Block(str(job_id), name, record.get("job_stdout_path"), record.get("job_stderr_path"),
                       hosts=(simulated,) if simulated is not None else ())
        with self._lock:
            self._blocks[str(job_id)] = block
        self._db.execute("INSERT OR REPLACE INTO parsl_blocks (job_id, job_name, submitted_s, excluded)"
                         " VALUES (?, ?, ?, ?)", (str(job_id), name, time.time(), json.dumps(bad)))
        return job_id

    def _readmit_due(self) -> None:
        """Quarantined hosts whose expiry passed come back only after a passing probe.

        SLURM: a one-task ``srun`` on the host (its own tiny job, through the core's probe); a host that
        does not answer stays out. Elsewhere (PBS, local) no probe can be run from here, so expired hosts
        stay out until readmitted by hand (``Quarantine.readmit``).
        """
        due = self.quarantine.due()
        if not due or self._kind != "slurm":
            return
        # --immediate: a node that cannot be had now (down, drained, busy) fails the probe at once.
        immediate = f"--immediate={max(1, int(self.probe_timeout_s / 2))}"
        for result in probe_hosts([e.host for e in due], "srun", self.run_dir / "probes",
                                  timeout_s=self.probe_timeout_s, extra_args=(immediate,)):
            back = self.quarantine.readmit(result.host, probe_passed=result.ok)
            log.warning("hotspare: quarantined host %s expired; probe: %s; %s", result.host.name, result.detail,
                        "readmitted" if back else "kept out")

    def _pick_simulated(self) -> Host:
        """A simulated host for the next block: not quarantined, not held by a live block."""
        bad = self.quarantine.hosts()
        with self._lock:
            busy = {b.hosts[0] for b in self._blocks.values() if b.hosts and not b.judged}
        free = [h for h in self.simulated_hosts if h not in bad and h not in busy]
        if not free:
            raise HotspareError(f"no simulated host left for a block: {len(bad)} quarantined, {len(busy)} in use "
                                f"of {len(self.simulated_hosts)}")
        return free[0]

    def _block_init(self, name: str) -> str:
        python = self._python or sys.executable
        argv = [python, "-m", "hotspare_parsl.block", "--run-dir", str(self.run_dir),
                "--spares", str(self.spares_per_block), "--job-name", name]
        return f'eval "$({" ".join(shlex.quote(a) for a in argv)})"\n'

    def _known_good(self, count: int) -> list[str]:
        """Hosts earlier blocks ran on that are not quarantined (PBS host pinning), newest first."""
        bad = self.quarantine.hosts()
        seen: dict[Host, None] = {}
        for block in reversed(list(self._blocks.values())):
            for host in block.hosts:
                if host not in bad:
                    seen.setdefault(host, None)
        good = [h.raw for h in seen]
        return good[:count] if len(good) >= count else []

    # -- status ------------------------------------------------------------------------------
    def status(self, job_ids: Sequence[object]) -> Sequence[JobStatus]:
        """The inner provider's statuses, as fresh objects; node-loss blocks FAILED with the reason."""
        answers = self.inner.status(job_ids)
        out: list[JobStatus] = []
        for job_id, answer in zip(job_ids, answers, strict=True):
            block = self._blocks.get(str(job_id))
            if block is not None:
                if not block.hosts and answer.state == JobState.RUNNING:
                    self._learn_hosts(block)
                if answer.state == JobState.RUNNING and not block.judged and self._kind == "slurm":
                    self._check_lead(block)
                if answer.terminal and not block.judged:
                    self._judge(block, answer)
                if block.verdict is not None and block.verdict.failure_class is not FailureClass.SUCCESS \
                        and block.verdict.exclude_hosts:
                    out.append(JobStatus(JobState.FAILED, f"hotspare: {block.verdict.reason}",
                                         block.facts.exit_code if block.facts else answer.exit_code,
                                         answer.stdout_path, answer.stderr_path))
                    continue
            out.append(JobStatus(answer.state, answer.message, answer.exit_code, answer.stdout_path,
                                 answer.stderr_path))
        return out

    def record_retry(self, task_record: Any, *, scope: str, kind: str, cost: float, reason: str) -> None:
        """Write down one failed try: ``scope`` ``whole_job`` (its block was lost and is re-provisioned) or
        ``task`` (rerun in a live block), the Parsl cost charged, and ``try_s``: seconds from the try's launch to
        its failure (queue wait for a block included), the work a rerun may have to repeat."""
        launched = task_record.get("try_time_launched")
        now = time.time()
        try_s = now - launched.timestamp() if launched is not None else None
        self._db.execute("INSERT INTO parsl_retries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (task_record.get("id"), task_record.get("try_id"), now, scope, kind, cost, try_s,
                          reason[:500]))

    def retries(self) -> list[dict[str, Any]]:
        """Every failed try recorded by the retry handler, oldest first."""
        cursor = self._db.execute("SELECT * FROM parsl_retries ORDER BY rowid")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def node_lost(self, job_id: object) -> bool:
        """Whether the block ``job_id`` ended because of a node fault (see :func:`block_error_handler`)."""
        block = self._blocks.get(str(job_id))
        return bool(block and block.verdict and block.verdict.exclude_hosts)

    def block_hosts(self, job_id: object) -> tuple[Host, ...]:
        """The hosts block ``job_id`` got (empty until learned)."""
        block = self._blocks.get(str(job_id))
        if block is not None and not block.hosts:
            self._learn_hosts(block)
        return block.hosts if block else ()

    def unhealthy(self, hosts: Sequence[Host]) -> tuple[Host, ...]:
        """The hosts the scheduler reports down or not responding now (none when it cannot be asked)."""
        states = self._query.node_states(hosts) if self._query.kind else {}
        return tuple(h for h, state in states.items() if unhealthy(state))

    def _learn_hosts(self, block: _Block) -> None:
        """The block's hosts, lead (batch) node first: from the record its job wrote when it started, else
        from the scheduler (which drops nodes a ``--no-kill`` job lost, so it is the second choice)."""
        record = self.run_dir / "blocks" / f"{block.job_name}.json"
        hosts: tuple[Host, ...] = ()
        if record.exists():
            try:
                hosts = tuple(Host(h) for h in json.loads(record.read_text())["hosts"])
            except (OSError, ValueError, KeyError, HotspareError) as exc:
                log.warning("hotspare: block %s: cannot read its host record %s (%s)", block.job_id, record, exc)
        if not hosts:
            facts = self._query.job_facts(block.job_id) if self._query.kind else None
            hosts = facts.hosts if facts is not None else ()
        if hosts:
            block.hosts = hosts
            self._db.execute("UPDATE parsl_blocks SET hosts = ? WHERE job_id = ?",
                             (json.dumps([h.raw for h in hosts]), block.job_id))

    def _check_lead(self, block: _Block) -> None:
        """A ``--no-kill`` SLURM job whose lead node died keeps running on the others with no batch script,
        Parsl manager or task left (seen on the test bed): the block is dead but holds its nodes until the
        walltime. When the scheduler has dropped the lead from the job's nodes, cancel the block and judge
        it a node loss of the lead."""
        if not block.hosts:
            return
        facts = self._query.job_facts(block.job_id)
        lead = block.hosts[0]
        if facts is None or facts.state != "RUNNING" or not facts.hosts or lead in facts.hosts:
            return
        why = (f"the block's lead node {lead.name} (its batch script and Parsl manager) left the job: SLURM kept "
               f"it running on {', '.join(h.name for h in facts.hosts)} only; cancelled")
        block.judged = True
        block.facts = facts
        self.inner.cancel([block.job_id])
        self._conclude(block, _blame(_unknown(), (lead,), why), facts.state, [])

    def _judge(self, block: _Block, answer: JobStatus) -> None:
        block.judged = True
        if self.simulated_hosts and answer.state == JobState.CANCELLED and block.job_id not in self._cancelled:
            why = (f"the block's process group was killed from outside: simulated host {block.hosts[0].name} "
                   "powered off")
            self._conclude(block, _blame(_unknown(), block.hosts, why), answer.state.name, [])
            return
        facts = self._query.job_facts(block.job_id) if self._query.kind else None
        if facts is None and self._query.kind:
            log.warning("hotspare: block %s ended but %s has no record of it: judged from its output alone",
                        block.job_id, self._query.kind)
        block.facts = facts
        if not block.hosts:
            self._learn_hosts(block)
        hosts = block.hosts or (facts.hosts if facts else ())
        states = self._query.node_states(hosts) if hosts and self._query.kind else {}
        result = scan(self._tails(block, answer), self._patterns)
        scheduler = SchedulerFacts(job_state=facts.state if facts else None, node_states=dict(states))
        rc = facts.exit_code if facts and facts.exit_code is not None else answer.exit_code
        verdict = classify(result, rc=rc, allocation=hosts or None, facts=scheduler)
        if facts is not None and facts.node_failed and not verdict.exclude_hosts:
            down = tuple(h for h in hosts if unhealthy(states.get(h, "")))
            if down:
                names = ", ".join(h.name for h in down)
                verdict = _blame(verdict, down, f"the scheduler ended the block NODE_FAIL; {names} reported down")
        evidence = [f"{e.pattern}@{e.line} {e.host_text or ''}: {e.text[:300]}" for e in result.evidence[:20]]
        self._conclude(block, verdict, facts.state if facts else answer.state.name, evidence)

    def _conclude(self, block: _Block, verdict: Verdict, state: str, evidence: list[str]) -> None:
        """Record the block's verdict; quarantine the hosts it blames (evidence in the ledger)."""
        block.verdict = verdict
        for host in verdict.exclude_hosts:
            self.quarantine.add(host, _reason(verdict, host), ttl_s=self.quarantine_ttl_s,
                                detail=f"block {block.job_id}: {verdict.reason}")
        self._db.execute("UPDATE parsl_blocks SET ended_s = ?, scheduler_state = ?, failure_class = ?, verdict = ?,"
                         " evidence = ? WHERE job_id = ?",
                         (time.time(), state, verdict.failure_class.value, verdict.reason, json.dumps(evidence),
                          block.job_id))

    def _tails(self, block: _Block, answer: JobStatus) -> bytes:
        data = b""
        for path in (block.stdout or answer.stdout_path, block.stderr or answer.stderr_path):
            if not path:
                continue
            try:
                with open(path, "rb") as f:
                    f.seek(0, 2)
                    size = f.tell()
                    f.seek(max(0, size - _TAIL_BYTES))
                    data += f.read() + b"\n"
            except OSError as exc:
                log.warning("hotspare: block %s: cannot read %s (%s); judged without it", block.job_id, path, exc)
        return data

    # -- cancel ------------------------------------------------------------------------------
    def cancel(self, job_ids: Sequence[object]) -> Sequence[bool]:
        self._cancelled.update(str(j) for j in job_ids)
        return self.inner.cancel(job_ids)

    def close(self) -> None:
        """Close the ledger connection (the DFK does not call this; tests and scripts may)."""
        self._ledger.close()


def _reason(verdict: Verdict, host: Host) -> str:
    return next((b.reason for b in verdict.blamed if b.host == host), "scraped")


def _unknown() -> Verdict:
    return classify((), rc=1)  # a failure with no evidence: what the blame is added to


def _blame(verdict: Verdict, hosts: tuple[Host, ...], why: str) -> Verdict:
    return replace(verdict, failure_class=FailureClass.NODE_LOSS, retryable=True,
                   blamed=tuple(Blame(h, "scheduler", ()) for h in hosts), exclude_hosts=hosts, reason=why)
