"""The run's record: SQLite (WAL) in the run directory.

Every attempt, every decision with its reason, every piece of evidence and
every quarantined host is written here inside a transaction, so a supervisor
killed with SIGKILL leaves a consistent record that ``--resume`` continues.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotspare.errors import InputError
from hotspare.evidence.records import Evidence
from hotspare.record.files import open_sqlite

LEDGER_NAME = "ledger.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    created_s REAL NOT NULL,
    config TEXT NOT NULL,
    state TEXT NOT NULL,
    exit_code INTEGER,
    ended_s REAL,
    progress TEXT
);
CREATE TABLE IF NOT EXISTS attempts (
    number INTEGER PRIMARY KEY,
    started_s REAL NOT NULL,
    ended_s REAL,
    hosts TEXT NOT NULL,
    spares TEXT NOT NULL,
    pgid INTEGER,
    resumed_step INTEGER,
    resumed_path TEXT,
    log_path TEXT NOT NULL,
    rc INTEGER,
    stopped_by TEXT,
    failure_class TEXT,
    verdict TEXT,
    first_progress_s REAL,
    last_step INTEGER,
    checkpoint_step INTEGER,
    checkpoint_s REAL
);
CREATE TABLE IF NOT EXISTS decisions (
    attempt INTEGER NOT NULL,
    at_s REAL NOT NULL,
    action TEXT NOT NULL,
    hosts TEXT NOT NULL,
    reason TEXT NOT NULL,
    delay_s REAL NOT NULL,
    quarantine_reason TEXT
);
CREATE TABLE IF NOT EXISTS evidence (
    attempt INTEGER NOT NULL,
    line INTEGER NOT NULL,
    pattern TEXT NOT NULL,
    role TEXT NOT NULL,
    host TEXT,
    host_text TEXT,
    count INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS timeline (
    attempt INTEGER NOT NULL,
    at_s REAL NOT NULL,
    kind TEXT NOT NULL,
    step INTEGER
);
CREATE TABLE IF NOT EXISTS observations (
    attempt INTEGER NOT NULL,
    at_s REAL NOT NULL,
    kind TEXT NOT NULL,
    host TEXT,
    detail TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """One attempt as recorded."""

    number: int
    started_s: float
    ended_s: float | None
    hosts: tuple[str, ...]
    spares: tuple[str, ...]
    pgid: int | None
    resumed_step: int | None
    resumed_path: str | None
    log_path: str
    rc: int | None
    stopped_by: str | None
    failure_class: str | None
    verdict: str | None
    first_progress_s: float | None
    last_step: int | None
    checkpoint_step: int | None
    checkpoint_s: float | None


@dataclass(frozen=True, slots=True)
class DecisionRow:
    """One decision as recorded: what, on which hosts, why, after how long."""

    attempt: int
    at_s: float
    action: str
    hosts: tuple[str, ...]
    reason: str
    delay_s: float
    quarantine_reason: str | None


@dataclass(frozen=True, slots=True)
class EvidenceRow:
    """One piece of an attempt's evidence as recorded: where in the log, which pattern, its role, the host."""

    line: int
    pattern: str
    role: str
    host: str | None
    count: int
    text: str


@dataclass(frozen=True, slots=True)
class ObservationRow:
    """Something seen outside the log: a probe answer, a scheduler report or error, a claim, a readmission."""

    attempt: int
    at_s: float
    kind: str
    host: str | None
    detail: str


@dataclass(frozen=True, slots=True)
class TimelineRow:
    """A moment of an attempt's progress: a progress line (``progress``, sampled) or a complete checkpoint
    (``checkpoint``, at its write time), with the step it carries (None: the line named no step)."""

    attempt: int
    at_s: float
    kind: str
    step: int | None


#: The kinds of :class:`TimelineRow`.
PROGRESS = "progress"
CHECKPOINT = "checkpoint"


class Ledger:
    """Typed access to a run's SQLite record. Open with :meth:`open`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path

    @classmethod
    def open(cls, run_dir: str | Path) -> Ledger:
        """Open (creating if needed) the ledger in ``run_dir``."""
        path = Path(run_dir) / LEDGER_NAME
        db = open_sqlite(path, "ledger")
        try:
            db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            db.close()
            raise InputError(str(path), f"cannot open the ledger ({exc})") from exc
        return cls(db, path)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All writes inside happen or none do (a SIGKILL mid-way leaves the last whole state)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- run ---------------------------------------------------------------
    def start_run(self, config: dict[str, Any], now_s: float) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO run (id, created_s, config, state) VALUES (1, ?, ?, 'running')",
                       (now_s, json.dumps(config, sort_keys=True)))

    def run_config(self) -> dict[str, Any] | None:
        row = self._db.execute("SELECT config FROM run WHERE id = 1").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def run_state(self) -> tuple[str, int | None] | None:
        row = self._db.execute("SELECT state, exit_code FROM run WHERE id = 1").fetchone()
        return None if row is None else (str(row[0]), row[1])

    def save_progress(self, progress: dict[str, Any]) -> None:
        """The supervisor's state after a decision (pool, budgets spent), for ``--resume``."""
        with self.transaction() as db:
            db.execute("UPDATE run SET progress = ? WHERE id = 1", (json.dumps(progress, sort_keys=True),))

    def load_progress(self) -> dict[str, Any] | None:
        row = self._db.execute("SELECT progress FROM run WHERE id = 1").fetchone()
        return None if row is None or row[0] is None else dict(json.loads(row[0]))

    def run_times(self) -> tuple[float, float | None] | None:
        """When the run was created and when it ended (None: still running or killed)."""
        row = self._db.execute("SELECT created_s, ended_s FROM run WHERE id = 1").fetchone()
        return None if row is None else (float(row[0]), row[1])

    def end_run(self, state: str, exit_code: int, now_s: float) -> None:
        with self.transaction() as db:
            db.execute("UPDATE run SET state = ?, exit_code = ?, ended_s = ? WHERE id = 1", (state, exit_code, now_s))

    # -- attempts ----------------------------------------------------------
    def begin_attempt(
        self, number: int, *, started_s: float, hosts: Iterable[str], spares: Iterable[str], log_path: str,
        resumed_step: int | None, resumed_path: str | None,
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO attempts (number, started_s, hosts, spares, log_path, resumed_step, resumed_path)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (number, started_s, json.dumps(list(hosts)), json.dumps(list(spares)), log_path, resumed_step,
                 resumed_path),
            )

    def set_pgid(self, number: int, pgid: int) -> None:
        with self.transaction() as db:
            db.execute("UPDATE attempts SET pgid = ? WHERE number = ?", (pgid, number))

    def set_first_progress(self, number: int, at_s: float) -> None:
        with self.transaction() as db:
            db.execute("UPDATE attempts SET first_progress_s = ? WHERE number = ? AND first_progress_s IS NULL",
                       (at_s, number))

    def end_attempt(
        self, number: int, *, ended_s: float, rc: int | None, stopped_by: str | None, failure_class: str,
        verdict: str, last_step: int | None, checkpoint_step: int | None, checkpoint_s: float | None,
        evidence: Iterable[Evidence],
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE attempts SET ended_s = ?, rc = ?, stopped_by = ?, failure_class = ?, verdict = ?,"
                " last_step = ?, checkpoint_step = ?, checkpoint_s = ? WHERE number = ?",
                (ended_s, rc, stopped_by, failure_class, verdict, last_step, checkpoint_step, checkpoint_s, number),
            )
            db.executemany(
                "INSERT INTO evidence VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(number, e.line, e.pattern, e.role.value, e.host.name if e.host else None, e.host_text, e.count,
                  e.text) for e in evidence],
            )

    def next_attempt(self) -> int:
        """The number the next attempt gets (numbering carries on across ``--resume``)."""
        return int(self._db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM attempts").fetchone()[0])

    def attempts(self) -> list[AttemptRow]:
        rows = self._db.execute(
            "SELECT number, started_s, ended_s, hosts, spares, pgid, resumed_step, resumed_path, log_path, rc,"
            " stopped_by, failure_class, verdict, first_progress_s, last_step, checkpoint_step, checkpoint_s"
            " FROM attempts ORDER BY number"
        ).fetchall()
        return [AttemptRow(r[0], r[1], r[2], tuple(json.loads(r[3])), tuple(json.loads(r[4])), *r[5:]) for r in rows]

    def evidence(self, attempt: int) -> list[EvidenceRow]:
        """The evidence of one attempt, in line order."""
        return [EvidenceRow(*r) for r in self._db.execute(
            "SELECT line, pattern, role, host, count, text FROM evidence WHERE attempt = ? ORDER BY line",
            (attempt,))]

    # -- decisions and observations ----------------------------------------
    def add_decision(self, attempt: int, at_s: float, action: str, *, hosts: Iterable[str], reason: str,
                     delay_s: float, quarantine_reason: str | None = None) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (attempt, at_s, action, json.dumps(list(hosts)), reason, delay_s, quarantine_reason))

    def decisions(self) -> list[DecisionRow]:
        rows = self._db.execute("SELECT * FROM decisions ORDER BY rowid").fetchall()
        return [DecisionRow(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6]) for r in rows]

    def observe(self, attempt: int, at_s: float, kind: str, host: str | None, detail: str) -> None:
        """Record a probe answer or a scheduler report (corroborating evidence)."""
        with self.transaction() as db:
            db.execute("INSERT INTO observations VALUES (?, ?, ?, ?, ?)", (attempt, at_s, kind, host, detail))

    def observations(self, attempt: int | None = None) -> list[ObservationRow]:
        """Observations of one attempt (or of all), in the order they were made."""
        if attempt is None:
            rows = self._db.execute("SELECT * FROM observations ORDER BY rowid")
        else:
            rows = self._db.execute("SELECT * FROM observations WHERE attempt = ? ORDER BY rowid", (attempt,))
        return [ObservationRow(*r) for r in rows]

    def add_timeline(self, attempt: int, rows: Iterable[tuple[float, str, int | None]]) -> None:
        """Record progress samples and checkpoints of ``attempt``: (wall time, kind, step) each."""
        batch = [(attempt, at_s, kind, step) for at_s, kind, step in rows]
        if batch:
            with self.transaction() as db:
                db.executemany("INSERT INTO timeline VALUES (?, ?, ?, ?)", batch)

    def timeline(self) -> list[TimelineRow]:
        """Every progress sample and checkpoint of the run, in time order."""
        return [TimelineRow(*r) for r in self._db.execute("SELECT * FROM timeline ORDER BY at_s, rowid")]

    @property
    def connection(self) -> sqlite3.Connection:
        """For :meth:`hotspare.record.quarantine.Quarantine.attach`, which keeps its table in the same file."""
        return self._db
