"""Hosts kept out, with a reason and an expiry; shared by every run that opens the same file.

A quarantined host is not used again until its entry expires *and* a probe
passes (:meth:`Quarantine.readmit`). Entries live in SQLite: the run's ledger
by default, or a file of their own that many runs of one workflow share.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hotspare.errors import InputError
from hotspare.hosts import Host

#: Why a host was quarantined (the words of PRODUCT.md).
REASONS = frozenset({"scraped", "probed", "scheduler", "strikes", "blind"})

_TABLE = """
CREATE TABLE IF NOT EXISTS quarantine (
    host TEXT PRIMARY KEY, raw TEXT NOT NULL, reason TEXT NOT NULL, attempt INTEGER,
    since_s REAL NOT NULL, expires_s REAL, detail TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One quarantined host."""

    host: Host
    reason: str
    attempt: int | None
    since_s: float
    expires_s: float | None
    detail: str


class Quarantine:
    """The set of hosts not to use. Wall-clock times: entries outlive processes."""

    def __init__(self, connection: sqlite3.Connection, *, clock: Callable[[], float] = time.time) -> None:
        self._db = connection
        self._clock = clock

    @classmethod
    def open(cls, path: str | Path, *, clock: Callable[[], float] = time.time) -> Quarantine:
        """A quarantine file of its own (WAL), shareable by many runs and processes."""
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_TABLE)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(str(path), f"cannot open the quarantine ({exc})") from exc
        return cls(db, clock=clock)

    @classmethod
    def attach(cls, connection: sqlite3.Connection, *, clock: Callable[[], float] = time.time) -> Quarantine:
        """A quarantine kept in an open database (the run's ledger)."""
        connection.execute(_TABLE)
        return cls(connection, clock=clock)

    def add(self, host: Host, reason: str, *, attempt: int | None = None, ttl_s: float | None = None,
            detail: str = "") -> None:
        """Keep ``host`` out (``ttl_s`` None: until readmitted by hand). Re-adding refreshes the entry."""
        if reason not in REASONS:
            raise ValueError(f"quarantine reason {reason!r}: use one of {sorted(REASONS)}")
        now = self._clock()
        expires = None if ttl_s is None else now + ttl_s
        self._db.execute(
            "INSERT INTO quarantine VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(host) DO UPDATE SET"
            " raw = excluded.raw, reason = excluded.reason, attempt = excluded.attempt,"
            " since_s = excluded.since_s, expires_s = excluded.expires_s, detail = excluded.detail",
            (host.name, host.raw, reason, attempt, now, expires, detail),
        )

    def entries(self) -> list[Entry]:
        """Every entry, expired or not, oldest first."""
        rows = self._db.execute(
            "SELECT raw, reason, attempt, since_s, expires_s, detail FROM quarantine ORDER BY since_s").fetchall()
        return [Entry(Host(r[0]), r[1], r[2], r[3], r[4], r[5]) for r in rows]

    def hosts(self) -> frozenset[Host]:
        """Hosts to keep out now. Expired entries stay until a probe readmits them."""
        return frozenset(e.host for e in self.entries())

    def __contains__(self, host: object) -> bool:
        return isinstance(host, Host) and host in self.hosts()

    def due(self) -> list[Entry]:
        """Entries whose expiry has passed: probe these, then :meth:`readmit` the ones that answer."""
        now = self._clock()
        return [e for e in self.entries() if e.expires_s is not None and e.expires_s <= now]

    def readmit(self, host: Host, *, probe_passed: bool) -> bool:
        """Let an expired host back in after a passing probe; True if it was readmitted."""
        entry = next((e for e in self.due() if e.host == host), None)
        if entry is None or not probe_passed:
            return False
        self._db.execute("DELETE FROM quarantine WHERE host = ?", (host.name,))
        return True
