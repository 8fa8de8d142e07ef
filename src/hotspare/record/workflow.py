"""A workflow's own record: the batch jobs an adapter submitted, how each ended, each failed try of a task.

Kept in the workflow's ledger (``ledger.sqlite`` in the workflow directory), written only by the
workflow process — the Parsl provider and its retry handler, or a Dask cluster — the one owner of
that directory's shared files (see :mod:`hotspare.record.quarantine`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass

from hotspare.hosts import Host
from hotspare.jobs import Fault, JobJudgement
from hotspare.record.ledger import Ledger

_TABLES = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, job_name TEXT, submitted_s REAL NOT NULL, ended_s REAL,
    hosts TEXT NOT NULL DEFAULT '[]', excluded TEXT NOT NULL DEFAULT '[]', scheduler_state TEXT,
    failure_class TEXT, verdict TEXT, evidence TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS task_retries (
    task_id INTEGER, try_id INTEGER, at_s REAL NOT NULL, scope TEXT NOT NULL, fault TEXT NOT NULL,
    cost REAL NOT NULL, try_s REAL, reason TEXT NOT NULL
);
"""


class RetryScope(enum.StrEnum):
    """What a retry reruns."""

    #: The task's job (block) was lost: the rerun waits for a new one.
    WHOLE_JOB = "whole_job"
    #: The task alone reruns in a live job.
    TASK = "task"


@dataclass(frozen=True, slots=True)
class JobRow:
    """One submitted job as recorded."""

    job_id: str
    job_name: str | None
    submitted_s: float
    ended_s: float | None
    hosts: tuple[str, ...]
    excluded: tuple[str, ...]
    scheduler_state: str | None
    failure_class: str | None
    verdict: str | None
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RetryRow:
    """One failed try: its scope, what failed, what the framework was charged, and how long the try ran."""

    task_id: int | None
    try_id: int | None
    at_s: float
    scope: RetryScope
    fault: Fault
    cost: float
    #: Seconds from the try's launch to its failure (queue wait included): work a rerun may repeat.
    try_s: float | None
    reason: str


class WorkflowRecord:
    """Typed writes and reads of a workflow's jobs and retries, in its ledger."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        ledger.connection.executescript(_TABLES)

    def submitted(self, job_id: str, job_name: str, at_s: float, excluded: Sequence[Host]) -> None:
        with self._ledger.transaction() as db:
            db.execute("INSERT OR REPLACE INTO jobs (job_id, job_name, submitted_s, excluded) VALUES (?, ?, ?, ?)",
                       (job_id, job_name, at_s, json.dumps([h.raw for h in excluded])))

    def hosts_learned(self, job_id: str, hosts: Sequence[Host]) -> None:
        with self._ledger.transaction() as db:
            db.execute("UPDATE jobs SET hosts = ? WHERE job_id = ?", (json.dumps([h.raw for h in hosts]), job_id))

    def ended(self, judgement: JobJudgement, at_s: float) -> None:
        v = judgement.verdict
        with self._ledger.transaction() as db:
            db.execute("UPDATE jobs SET ended_s = ?, scheduler_state = ?, failure_class = ?, verdict = ?,"
                       " evidence = ? WHERE job_id = ?",
                       (at_s, judgement.state, v.failure_class.value, v.reason, json.dumps(judgement.evidence),
                        judgement.job_id))

    def retried(self, row: RetryRow) -> None:
        with self._ledger.transaction() as db:
            db.execute("INSERT INTO task_retries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (row.task_id, row.try_id, row.at_s, row.scope.value, row.fault.value, row.cost, row.try_s,
                        row.reason[:500]))

    def jobs(self) -> list[JobRow]:
        rows = self._ledger.connection.execute(
            "SELECT job_id, job_name, submitted_s, ended_s, hosts, excluded, scheduler_state, failure_class,"
            " verdict, evidence FROM jobs ORDER BY submitted_s").fetchall()
        return [JobRow(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])), tuple(json.loads(r[5])), r[6], r[7], r[8],
                       tuple(json.loads(r[9]))) for r in rows]

    def retries(self) -> list[RetryRow]:
        rows = self._ledger.connection.execute(
            "SELECT task_id, try_id, at_s, scope, fault, cost, try_s, reason FROM task_retries ORDER BY rowid")
        return [RetryRow(r[0], r[1], r[2], RetryScope(r[3]), Fault(r[4]), r[5], r[6], r[7]) for r in rows]
