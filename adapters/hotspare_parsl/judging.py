"""What the failover provider reads and decides at each status poll: the inner provider's statuses (PBS's
``qstat`` one job at a time), each block's hosts, the end of a block judged from the scheduler's record, its
output and the core classifier, and the act step that records, quarantines and cancels. Mixed into
:class:`hotspare_parsl.FailoverProvider`, which owns the state it uses."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parsl.jobs.states import JobState, JobStatus
from parsl.providers.base import ExecutionProvider

from hotspare import (
    Host,
    JobEnd,
    JobJudgement,
    Ledger,
    PatternSet,
    Quarantine,
    QueryFailure,
    SchedulerKind,
    SchedulerQuery,
    WorkflowRecord,
    changed_snapshots,
    confirm_by_probe,
    judge_host_lost,
    judge_job,
    lead_left,
    read_outputs,
)
from hotspare_parsl.layout import read_record
from hotspare_parsl.pbs import PBS_KNOWS_FINISHED, finished_as_completed, merge_qstat_json, split_qstat_json

log = logging.getLogger("hotspare_parsl.provider")  # the provider's logger: one name for users to configure


@dataclass
class Block:
    job_id: str
    job_name: str
    stdout: str | None = None
    stderr: str | None = None
    hosts: tuple[Host, ...] = ()
    judgement: JobJudgement | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """What one status poll decided for one block; carried out by :meth:`FailoverProvider._act`."""

    block: Block
    hosts: tuple[Host, ...] = ()
    judgement: JobJudgement | None = None
    cancel: bool = False


class BlockJudging:
    """The status poll's reading, judging and acting (see the module)."""

    # The provider's own (set in FailoverProvider.__init__); declared so this mixin is checked.
    inner: ExecutionProvider
    run_dir: Path
    probe_timeout_s: float
    quarantine_ttl_s: float | None
    simulated_hosts: tuple[Host, ...]
    record: WorkflowRecord
    quarantine: Quarantine
    _kind: SchedulerKind | None
    _query: SchedulerQuery
    _query_failures: list[QueryFailure]
    _patterns: PatternSet
    _ledger: Ledger
    _findings: dict[Path, int]
    _cancelled: set[str]
    _warned: bool

    def _inner_status(self, job_ids: Sequence[object]) -> Sequence[JobStatus]:
        """``inner.status``; for PBS, its ``qstat -F json`` of several jobs run one job at a time
        (:func:`split_qstat_json`)."""
        if self._kind != "pbs":
            return self.inner.status(job_ids)
        inner: Any = self.inner
        own_execute = vars(inner).get("execute_wait")
        execute = inner.execute_wait

        def qstat(cmd: str, *args: Any, **kwargs: Any) -> Any:
            each = split_qstat_json(cmd)
            if each is None:
                answer = execute(cmd, *args, **kwargs)
            else:
                answer = merge_qstat_json([execute(one, *args, **kwargs) for one in each])
            return answer if PBS_KNOWS_FINISHED else finished_as_completed(answer)

        inner.execute_wait = qstat  # this poll only: the instance attribute is removed below
        try:
            answers: Sequence[JobStatus] = inner.status(job_ids)
            return answers
        finally:
            vars(inner).pop("execute_wait", None)
            if own_execute is not None:
                inner.execute_wait = own_execute

    def _look(self, block: Block | None, answer: JobStatus) -> Step | None:
        """What to do about one block (reads the scheduler and the block's files; changes nothing)."""
        if block is None or block.judgement is not None:
            return None
        hosts = block.hosts or (self._hosts_of(block) if answer.state == JobState.RUNNING or answer.terminal else ())
        if answer.state == JobState.RUNNING and self._kind == "slurm" and hosts:
            facts = self._query.job_facts(block.job_id)
            why = lead_left(hosts, facts)
            if why is not None:
                judged = judge_host_lost(block.job_id, hosts[:1], f"{why}; the block is cancelled",
                                         state=facts.state if facts else "RUNNING")
                return Step(block, hosts, judged, cancel=True)
        if answer.terminal:
            return Step(block, hosts, self._judge(block, hosts, answer))
        return Step(block, hosts) if hosts != block.hosts else None

    def _judge(self, block: Block, hosts: tuple[Host, ...], answer: JobStatus) -> JobJudgement:
        if self.simulated_hosts and answer.state == JobState.CANCELLED and block.job_id not in self._cancelled:
            return judge_host_lost(block.job_id, block.hosts, "(a simulated host) powered off: the block's process "
                                   "group was killed from outside", state=answer.state.name)
        facts = self._query.job_facts(block.job_id) if self._query.kind else None
        if facts is None and self._query.kind:
            log.warning("hotspare: block %s ended but %s has no record of it: judged from its output alone",
                        block.job_id, self._query.kind)
        hosts = hosts or (facts.hosts if facts else ())
        states = self._query.node_states(hosts) if hosts and self._query.kind else {}
        output, unread = read_outputs([block.stdout or answer.stdout_path, block.stderr or answer.stderr_path])
        for problem in unread:
            log.warning("hotspare: block %s: cannot read %s; judged without it", block.job_id, problem)
        end = JobEnd(block.job_id, hosts, facts, states, output, answer.exit_code, unread)
        return self._confirm(judge_job(end, self._patterns, state=answer.state.name), hosts)

    def _confirm(self, judged: JobJudgement, hosts: tuple[Host, ...]) -> JobJudgement:
        """Hosts the block's output named only as suspects are probed (SLURM), beside a control host: kept out
        only if they fail it. Elsewhere no probe can be run from here, so a suspect is never kept out."""
        if self._kind != "slurm":
            return judged
        judged, notes = confirm_by_probe(judged, hosts, self.run_dir / "probes", timeout_s=self.probe_timeout_s)
        for note in notes:
            log.warning("hotspare: block %s: %s", judged.job_id, note)
        return judged

    def _hosts_of(self, block: Block) -> tuple[Host, ...]:
        """The block's hosts, lead (batch) node first: from the record its hook wrote when it started, else from
        the scheduler (which drops nodes a ``--no-kill`` job lost, so it is the second choice)."""
        hosts = read_record(self.run_dir, block.job_name)
        if not hosts and self._query.kind:
            facts = self._query.job_facts(block.job_id)
            hosts = facts.hosts if facts is not None else ()
        return hosts

    def _act(self, steps: Sequence[Step]) -> None:
        """Carry out what the poll decided: cancel dead blocks, quarantine with evidence, record; then take in
        what the task supervisors found."""
        for step in steps:
            if step.hosts and step.hosts != step.block.hosts:
                step.block.hosts = step.hosts
                self.record.hosts_learned(step.block.job_id, step.hosts)
            if step.cancel:
                self._cancelled.add(step.block.job_id)
                self.inner.cancel([step.block.job_id])
            if step.judgement is not None:
                self._conclude(step.block, step.judgement)
        self._record_query_failures()
        self.fold_findings()

    def _record_query_failures(self) -> None:
        """A scheduler that cannot be asked (a wrong SLURM_CONF, qstat missing) is recorded each time and said
        once: blocks would otherwise be judged from their output alone without anyone knowing why."""
        failures, self._query_failures[:] = list(self._query_failures), []
        for failure in failures:
            self._ledger.observe(0, time.time(), "scheduler-error", None, str(failure))
        if failures and not self._warned:
            self._warned = True
            message = (f"hotspare: warning: cannot ask the scheduler ({failures[0]}); blocks are judged from their "
                       f"output alone until it answers")
            log.warning(message)
            print(message, file=sys.stderr, flush=True)

    def _conclude(self, block: Block, judgement: JobJudgement) -> None:
        block.judgement = judgement
        for host, reason in judgement.keep_out:
            self.quarantine.add(host, reason, ttl_s=self.quarantine_ttl_s,
                                detail=f"block {block.job_id}: {judgement.verdict.reason}")
        self.record.ended(judgement, time.time())

    def _report(self, block: Block | None, answer: JobStatus) -> JobStatus:
        """A fresh status (HTEX rewrites them in place): FAILED with the reason for a block lost to a node."""
        judged = block.judgement if block is not None else None
        if judged is not None and (judged.node_lost or judged.hook_failed):
            code = judged.exit_code if judged.exit_code is not None else answer.exit_code
            return JobStatus(JobState.FAILED, f"hotspare: {judged.verdict.reason}", code, answer.stdout_path,
                             answer.stderr_path)
        return JobStatus(answer.state, answer.message, answer.exit_code, answer.stdout_path, answer.stderr_path)

    def fold_findings(self) -> None:
        """Take into the workflow's quarantine what each task supervisor published in its run directory."""
        changed = changed_snapshots(self.run_dir / "tasks", self._findings)
        if not changed:
            return
        added, problems = self.quarantine.fold(changed)
        for entry in added:
            log.warning("hotspare: %s quarantined by a task (%s): %s", entry.host.name, entry.reason, entry.detail)
        for problem in problems:
            log.warning("hotspare: a task's findings could not be read: %s", problem)
