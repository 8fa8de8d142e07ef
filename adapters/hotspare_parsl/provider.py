"""``FailoverProvider``: a Parsl execution provider that wraps another and keeps blocks off dead nodes.

One line changes in a Parsl config::

    provider=FailoverProvider(SlurmProvider(nodes_per_block=4, ...), spares_per_block=1, run_dir="wf-run")

What it adds to the wrapped provider (``inner``):

* **spares**: each block asks ``inner`` for ``nodes_per_block + spares_per_block`` nodes; inside the
  job, :mod:`hotspare_parsl.block` narrows ``SLURM_NODELIST``/``PBS_NODEFILE`` to the active nodes
  (what Parsl's MPI task scheduler hands out) and exports the spares for :func:`mpi_launch` commands; a
  block with spares is kept when a node other than its lead dies (SLURM ``--no-kill``, PBS Pro
  ``-W tolerate_node_failures=all``): the task's supervisor swaps in a spare;
* **placement away from quarantined hosts**: SLURM ``#SBATCH --exclude=`` (added to the wrapped
  provider's ``scheduler_options`` for that one submit, then restored); PBS Pro cannot exclude, so
  the ``select`` line of the instance's ``template_string`` is rewritten to pin ``host=`` chunks
  chosen among hosts known good (:func:`pin_pbs_select`): those given as ``hosts=`` and those earlier
  blocks ran on, none quarantined or held by a live block; with too few, the block is left to PBS;
* **judging blocks that end**: the scheduler's own record (SLURM ``scontrol show job``: NODE_FAIL;
  PBS ``qstat -x -f -F json``: Exit_status and comment, because PBSProProvider calls every finished
  job COMPLETED), the block's stdout/stderr, and the core classifier. A block lost to a node fault
  quarantines exactly the named hosts (reason and evidence in the run's ledger) and is reported
  FAILED with that reason; Parsl's scaling strategy replaces it, and the next submit excludes them;
* **bounded resubmission**: at most ``max_submits`` blocks per ``window_s`` seconds; beyond that
  ``submit`` raises, so a broken site cannot turn into thousands of jobs.

**One writer per shared file** (:mod:`hotspare.record.quarantine`): the provider, in the workflow process,
owns ``run_dir/ledger.sqlite`` (the quarantine, each block's record, each failed try) and publishes
``run_dir/quarantine.json`` after every change. Block hooks and task supervisors on compute nodes only
read that snapshot; each writes only its own ``run_dir/blocks/NAME/`` or ``run_dir/tasks/TASK/``, and
the provider folds what the task supervisors found (their own ``quarantine.json``) into the workflow's
quarantine at each status poll. Spare claims (``blocks/NAME/claims/``) are ``O_EXCL`` creates, atomic
on NFSv3+ and Lustre.
"""

from __future__ import annotations

import logging
import shlex
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from parsl.jobs.states import JobState, JobStatus
from parsl.providers import PBSProProvider
from parsl.providers.base import ExecutionProvider

from hotspare import (
    DEFAULT_QUARANTINE_TTL_S,
    SNAPSHOT_NAME,
    Host,
    HotspareError,
    Ledger,
    LookProbes,
    NodeFinding,
    PatternSet,
    Quarantine,
    QuarantineLife,
    QuarantineReason,
    QueryFailure,
    RetryRow,
    SchedulerKind,
    SchedulerQuery,
    WorkflowRecord,
    judge_host_lost,
    load_patterns,
    look_answers,
    unhealthy,
)
from hotspare_parsl.judging import Block, BlockJudging, Step
from hotspare_parsl.layout import block_prologue, read_record
from hotspare_parsl.pbs import (
    PBS_NO_RERUN,
    PBS_TOLERATE,
    pin_pbs_select,
    qsub_with_output,
)
from hotspare_parsl.silence import NodeEvidence

log = logging.getLogger(__name__)


class ResubmissionLimit(HotspareError):
    """More blocks were asked for in the window than the provider allows."""


def _kind(inner: ExecutionProvider) -> SchedulerKind | None:
    name = type(inner).__name__
    if "Slurm" in name:
        return SchedulerKind.SLURM
    if "PBS" in name or "Torque" in name:
        return SchedulerKind.PBS
    return None


class FailoverProvider(BlockJudging, ExecutionProvider):
    """Wraps ``inner`` (SlurmProvider, PBSProProvider, TorqueProvider, LocalProvider, ...); see the module."""

    def __init__(
        self,
        inner: ExecutionProvider,
        *,
        spares_per_block: int = 0,
        run_dir: str | Path = "hotspare-parsl",
        max_submits: int = 20,
        window_s: float = 600.0,
        quarantine_ttl_s: float | None = DEFAULT_QUARANTINE_TTL_S,
        probe_timeout_s: float = 60.0,
        query: SchedulerQuery | None = None,
        python: str | None = None,
        simulated_hosts: Sequence[str] = (),
        hosts: Sequence[str] = (),
    ) -> None:
        if spares_per_block < 0:
            raise ValueError(f"spares_per_block={spares_per_block}: give 0 or more")
        if max_submits < 1 or window_s <= 0:
            raise ValueError("max_submits must be >= 1 and window_s > 0")
        if quarantine_ttl_s is not None and not quarantine_ttl_s > 0:
            raise ValueError(f"quarantine_ttl_s={quarantine_ttl_s!r}: give seconds > 0, or None to keep hosts out "
                             "until readmitted by hand")
        self.inner = inner
        self.spares_per_block = spares_per_block
        self.run_dir = Path(run_dir).resolve()
        self.max_submits = max_submits
        self.window_s = window_s
        self.quarantine_ttl_s = quarantine_ttl_s
        self.probe_timeout_s = probe_timeout_s
        self._kind = _kind(inner)
        #: Scheduler commands that did not answer since the last act step (recorded there, said once).
        self._query_failures: list[QueryFailure] = []
        self._query = replace(query or SchedulerQuery(self._kind, None), on_failure=self._query_failures.append)
        self._python = python
        self._lock = threading.Lock()
        #: The ledger's one connection is shared by the status poll, the retry handler and the block watch.
        self._db_lock = threading.RLock()
        self._submits: deque[float] = deque()
        self._blocks: dict[str, Block] = {}
        self._patterns: PatternSet = load_patterns()
        #: The workflow's ledger: blocks, retries and the quarantine, written by this process only.
        self._ledger = Ledger.open(self.run_dir)
        self.record = WorkflowRecord(self._ledger)
        self.quarantine = Quarantine.attach(self._ledger.connection, snapshot=self.run_dir / SNAPSHOT_NAME)
        self._findings: dict[Path, int] = {}
        #: Readmits quarantined nodes that came back, says when the quarantine leaves a block no room (SLURM).
        self._life = QuarantineLife(self.quarantine, self._ledger, self._query, self.run_dir / "probes",
                                    probe_timeout_s=probe_timeout_s, lock=self._db_lock, warn=log.warning)
        #: LocalProvider only: each block stands for one of these hosts (demos, tests, laptops). A block
        #: whose process group is killed from outside is that host powering off.
        self.simulated_hosts = tuple(Host(h) for h in simulated_hosts)
        if self.simulated_hosts and self._kind is not None:
            raise ValueError("simulated_hosts is for LocalProvider: a batch scheduler names the real hosts")
        if isinstance(hosts, str):
            raise ValueError(f"hosts={hosts!r}: give a list of host names, e.g. hosts=[{hosts!r}]")
        if hosts and self._kind != "pbs":
            raise ValueError("hosts= is for PBS (the hosts a block may be pinned to); SLURM excludes quarantined "
                             "hosts itself")
        #: PBS: hosts the user says the workflow may use, candidates for pinning beside those blocks ran on.
        self.pin_candidates = tuple(Host(h) for h in hosts)
        self._cancelled: set[str] = set()
        self._warned = False

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
        self._count_submit()
        for sub in ("blocks", "tasks"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        self.fold_findings()
        self._readmit_due(placing=True)
        self.quarantine.publish()  # the block's hook reads it: it must exist before the block starts
        bad = sorted(self.quarantine.hosts())
        name = f"{job_name}.{time.time():.6f}"
        simulated = self._pick_simulated() if self.simulated_hosts else None
        outputs: list[str | None] = []
        job_id = self._submit_inner(command, tasks_per_node, job_name, name=name, bad=bad, simulated=simulated,
                                    outputs=outputs)
        record = self.inner.resources.get(job_id, {}) if isinstance(self.inner.resources, dict) else {}
        stdout, stderr = outputs if outputs else (None, None)
        block = Block(str(job_id), name, record.get("job_stdout_path") or stdout,
                       record.get("job_stderr_path") or stderr, hosts=(simulated,) if simulated is not None else ())
        with self._lock:
            self._blocks[str(job_id)] = block
        self.record.submitted(str(job_id), name, time.time(), bad)
        return job_id

    def _count_submit(self) -> None:
        now = time.monotonic()
        with self._lock:
            while self._submits and now - self._submits[0] > self.window_s:
                self._submits.popleft()
            if len(self._submits) >= self.max_submits:
                raise ResubmissionLimit(
                    f"{len(self._submits)} blocks submitted in the last {self.window_s:g} s (max_submits="
                    f"{self.max_submits}): not submitting more; see {self._ledger.path} for why blocks ended")
            self._submits.append(now)

    def _submit_inner(self, command: str, tasks_per_node: int, job_name: str, *, name: str, bad: list[Host],
                      simulated: Host | None, outputs: list[str | None]) -> Any:
        """``inner.submit`` with this block's settings, the inner provider's own restored afterwards; for PBS,
        its ``qsub`` told where the block's output goes (see :func:`qsub_with_output`), noted in ``outputs``."""
        # The settings below exist only on some providers (checked with vars()): typed loosely on purpose.
        inner: Any = self.inner
        saved = {k: getattr(inner, k) for k in ("nodes_per_block", "worker_init", "scheduler_options",
                                                     "template_string") if k in vars(inner)}
        try:
            if simulated is not None and "worker_init" in saved:
                inner.worker_init = f"export HOTSPARE_HOST={shlex.quote(simulated.raw)}\n" + saved["worker_init"]
            inner.nodes_per_block = saved["nodes_per_block"] + self.spares_per_block
            if "worker_init" in saved and self._kind is not None:
                inner.worker_init = block_prologue(self._python or sys.executable, self.run_dir,
                                                        self.spares_per_block, name) + saved["worker_init"]
            if self._kind == "slurm" and "scheduler_options" in saved:
                inner.scheduler_options = saved["scheduler_options"] + self._slurm_options(bad)
            if self._kind == "pbs" and "scheduler_options" in saved:
                inner.scheduler_options = saved["scheduler_options"] + self._pbs_options()
            if self._kind == "pbs" and bad and "template_string" in saved:
                good = self._known_good(inner.nodes_per_block)
                if good:
                    inner.template_string = pin_pbs_select(saved["template_string"], good)
                else:
                    self._life.unpinned(f"block {job_name}", *self._pin_pool())
            own_execute = vars(inner).get("execute_wait")
            if self._kind == "pbs":
                execute = inner.execute_wait

                def qsub(cmd: str, *args: Any, **kwargs: Any) -> Any:
                    cmd, out, err = qsub_with_output(cmd)
                    if out is not None:
                        outputs[:] = [out, err]
                    return execute(cmd, *args, **kwargs)

                inner.execute_wait = qsub  # this submit only: the instance attribute is removed below
            return inner.submit(command, tasks_per_node, job_name=job_name)
        finally:
            vars(inner).pop("execute_wait", None)
            if own_execute is not None:
                inner.execute_wait = own_execute
            for key, value in saved.items():
                setattr(inner, key, value)

    def _pbs_options(self) -> str:
        tolerate = self.spares_per_block and isinstance(self.inner, PBSProProvider)
        return PBS_NO_RERUN + (PBS_TOLERATE if tolerate else "")

    def _slurm_options(self, bad: list[Host]) -> str:
        extra = "#SBATCH --no-requeue\n"
        if self.spares_per_block:
            extra += "#SBATCH --no-kill\n"  # a lost node is the block's spare's job, not the block's end
        if bad:
            extra += f"#SBATCH --exclude={','.join(h.raw for h in bad)}\n"
        return extra

    def _readmit_due(self, *, placing: bool = False, pending: Sequence[str] = ()) -> None:
        """The quarantine's look at its nodes (:class:`hotspare.QuarantineLife`): a node back in service since it
        was quarantined (SLURM: restarted, or seen down and now up; PBS: seen down and now up) or whose expiry
        passed comes back after a passing probe (SLURM: a one-task ``srun --immediate``; PBS: a tiny job pinned to
        it); one that does not answer stays out. Each probe is in the ledger. SLURM only: a block of ``pending``
        held back while every free node is quarantined is said once (log and ledger). At each submit
        (``placing``), else at most every 10 s of status polls. Local blocks have no scheduler to ask and no probe
        from here: their hosts stay out until readmitted by hand."""
        if self._kind is not None:
            self._life.tick(placing=placing, pending=pending)

    def _pick_simulated(self) -> Host:
        """A simulated host for the next block: not quarantined, not held by a live block."""
        bad = self.quarantine.hosts()
        with self._lock:
            busy = {b.hosts[0] for b in self._blocks.values() if b.hosts and b.judgement is None}
        free = [h for h in self.simulated_hosts if h not in bad and h not in busy]
        if not free:
            raise HotspareError(f"no simulated host left for a block: {len(bad)} quarantined, {len(busy)} in use "
                                f"of {len(self.simulated_hosts)}")
        return free[0]

    def _known_good(self, count: int) -> list[str]:
        """Hosts to pin a PBS block to: those given as ``hosts=``, then those earlier blocks ran on (newest
        first), neither quarantined nor held by a live block; none when fewer than ``count``. A block pinned to a
        live block's hosts would queue behind it (seen on the bed: pinned to the running replacement's two
        nodes, "Not Running: Insufficient amount of resource: ncpus")."""
        bad = self.quarantine.hosts()
        known, busy = self._pin_pool()
        good = list(dict.fromkeys(h.raw for h in known if h not in bad and h not in busy))
        return good[:count] if len(good) >= count else []

    def _pin_pool(self) -> tuple[list[Host], set[Host]]:
        """The hosts a PBS block may be pinned to (``hosts=``, then those earlier blocks ran on, newest first),
        and those held by a live block."""
        with self._lock:
            blocks = list(self._blocks.values())
        busy = {h for b in blocks if b.judgement is None for h in b.hosts}
        return [*self.pin_candidates, *(h for block in reversed(blocks) for h in block.hosts)], busy

    # -- status: read, decide, then act in one step ------------------------------------------
    def status(self, job_ids: Sequence[object]) -> Sequence[JobStatus]:
        """The inner provider's statuses, as fresh objects; node-loss blocks FAILED with the reason."""
        answers = self._inner_status(job_ids)
        steps = [self._look(self._blocks.get(str(j)), a) for j, a in zip(job_ids, answers, strict=True)]
        with self._db_lock:
            self._act([s for s in steps if s is not None])
        self._readmit_due(pending=[str(j) for j, a in zip(job_ids, answers, strict=True)
                                   if a.state == JobState.PENDING])
        return [self._report(self._blocks.get(str(j)), a) for j, a in zip(job_ids, answers, strict=True)]

    # -- what the retry handler and the block error handler ask --------------------------------
    def record_retry(self, row: RetryRow) -> None:
        """Write down one failed try (see :class:`hotspare.RetryRow`)."""
        with self._db_lock:
            self.record.retried(row)

    def retries(self) -> list[RetryRow]:
        """Every failed try recorded by the retry handler, oldest first."""
        return self.record.retries()

    def node_lost(self, job_id: object) -> bool:
        """Whether the block ``job_id`` ended because of a node fault (see :func:`block_error_handler`)."""
        block = self._blocks.get(str(job_id))
        return bool(block and block.judgement and block.judgement.node_lost)

    def block_hosts(self, job_id: object) -> tuple[Host, ...]:
        """The hosts block ``job_id`` got (empty until learned)."""
        block = self._blocks.get(str(job_id))
        if block is None:
            return ()
        if not block.hosts:
            hosts = self._hosts_of(block)
            if hosts:
                self._act([Step(block, hosts)])
        return block.hosts

    def unhealthy(self, hosts: Sequence[Host]) -> tuple[Host, ...]:
        """The hosts the scheduler reports down or not responding now (none when it cannot be asked)."""
        states = self._query.node_states(hosts) if self._query.kind else {}
        return tuple(h for h, state in states.items() if unhealthy(state))

    def keep_out(self, hosts: Sequence[tuple[Host, QuarantineReason]], detail: str) -> None:
        """Quarantine ``hosts`` (the retry handler's findings), each with its reason. A host already kept out keeps
        its entry: the block watch's (its probes and the scheduler's word) would otherwise be overwritten a moment
        later by each lost task's "loss of manager" (the retry handler's evidence once SLURM calls the node down),
        and the probes' evidence lost with it."""
        with self._db_lock:
            known = {e.host for e in self.quarantine.entries()}
            for host, reason in hosts:
                if host not in known:
                    self.quarantine.add(host, reason, ttl_s=self.quarantine_ttl_s, detail=detail)

    # -- what the block watch (hotspare_parsl.watch) reads and does ------------------------------
    @property
    def query(self) -> SchedulerQuery:
        """How the scheduler is asked (its kind is None for LocalProvider)."""
        return self._query

    def live(self, job_id: object) -> bool:
        """Whether block ``job_id`` was submitted here and is neither judged nor cancelled."""
        block = self._blocks.get(str(job_id))
        return block is not None and block.judgement is None and str(job_id) not in self._cancelled

    def lead_hosts(self, job_ids: Sequence[str]) -> dict[str, Host]:
        """Each block's lead (batch) node where known: learned at a status poll, else from the record its hook
        wrote when it started (a file read; nothing asked of the scheduler)."""
        found = {}
        for job_id in job_ids:
            block = self._blocks.get(job_id)
            if block is not None and not block.hosts and self._kind is not None:
                hosts = read_record(self.run_dir, block.job_name)
                if hosts:
                    with self._db_lock:
                        self._act([Step(block, hosts)])
            if block is not None and block.hosts:
                found[job_id] = block.hosts[0]
        return found

    def node_states(self, hosts: Sequence[Host]) -> dict[Host, str]:
        """The scheduler's state of each host (none when it cannot be asked)."""
        return self._query.node_states(hosts) if self._query.kind else {}

    def observe(self, kind: str, host: Host | None, detail: str) -> None:
        """One observation in the workflow's ledger (a lead, a probe answer, a finding)."""
        with self._db_lock:
            self._ledger.observe(0, time.time(), kind, host.name if host is not None else None, detail)

    def record_look(self, evidence: NodeEvidence, finding: NodeFinding) -> None:
        """Each answer of a look at a block's node as it came, and the finding."""
        for host, words in look_answers(LookProbes(evidence.rounds, evidence.uncounted), evidence.control,
                                        evidence.lead.why):
            self.observe("probe", host, words)
        if unhealthy(evidence.node_state):
            self.observe("scheduler", finding.host, f"reported {evidence.node_state} {evidence.lead.when}")
        self.observe("silence", finding.host, f"{'node fault' if finding.dead else 'not evicted'}: {finding.why}")
        if not finding.dead:
            log.info("hotspare: %s not evicted: %s", finding.host.name, finding.why)

    def lose_block(self, job_id: str, finding: NodeFinding, *, state: str) -> None:
        """Block ``job_id``'s node is dead (the block watch found two signals): cancel the job, quarantine the node
        with the evidence, record the block lost to a node fault (its next status is FAILED with the reason)."""
        block = self._blocks.get(job_id)
        if block is None or block.judgement is not None:
            return
        judged = judge_host_lost(job_id, (finding.host,), finding.why, state=state, reason=finding.reason)
        log.warning("hotspare: block job %s lost: %s %s", job_id, finding.host.name, finding.why)
        with self._db_lock:
            self._act([Step(block, block.hosts or (finding.host,), judged, cancel=True)])

    # -- cancel ------------------------------------------------------------------------------
    def cancel(self, job_ids: Sequence[object]) -> Sequence[bool]:
        self._cancelled.update(str(j) for j in job_ids)
        return self.inner.cancel(job_ids)

    def close(self) -> None:
        """Close the ledger connection (the DFK does not call this; tests and scripts may)."""
        self._ledger.close()
