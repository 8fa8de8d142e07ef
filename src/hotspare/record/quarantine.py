"""Hosts kept out, with a reason and an expiry — one writer per file, shared with the others as a snapshot.

A quarantined host is not used again until its entry expires *and* a probe passes
(:meth:`Quarantine.readmit`).

**One writer per shared file.** The entries live in the SQLite ledger of the one process that owns
them: a supervisor (its run directory) or a workflow (the Parsl provider, the Dask cluster, in the
workflow directory). After every change the owner publishes a snapshot, ``quarantine.json``, replaced
atomically (temp file + fsync + rename: readers see the old snapshot or the new one, never half).
Processes on other hosts — block hooks, the supervisors of a workflow's tasks — only *read* that
snapshot (:func:`read_snapshot`), and each writes what it finds into its own run directory's snapshot,
which the owner folds in (:meth:`Quarantine.fold`). SQLite itself is never opened from two hosts: its
WAL index is shared memory (one host only), and its locks are unreliable on NFS and Lustre. Renames
within a directory are atomic on both, so a snapshot is always whole.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotspare.errors import HotspareError, InputError
from hotspare.failures import QuarantineReason
from hotspare.hosts import Host
from hotspare.record.files import open_sqlite, write_atomic

#: The snapshot a quarantine's owner publishes beside its ledger.
SNAPSHOT_NAME = "quarantine.json"
_FORMAT = "hotspare-quarantine/1"


_TABLES = """
CREATE TABLE IF NOT EXISTS quarantine (
    host TEXT PRIMARY KEY, raw TEXT NOT NULL, reason TEXT NOT NULL, attempt INTEGER,
    since_s REAL NOT NULL, expires_s REAL, detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS quarantine_folded (
    source TEXT NOT NULL, host TEXT NOT NULL, since_s REAL NOT NULL, PRIMARY KEY (source, host, since_s)
);
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One quarantined host."""

    host: Host
    reason: QuarantineReason
    attempt: int | None
    since_s: float
    expires_s: float | None
    detail: str


def render_snapshot(entries: Iterable[Entry], published_s: float) -> str:
    """The JSON text of a snapshot (pure)."""
    return json.dumps({
        "format": _FORMAT, "published_s": published_s,
        "entries": [{"host": e.host.raw, "reason": e.reason.value, "attempt": e.attempt, "since_s": e.since_s,
                     "expires_s": e.expires_s, "detail": e.detail} for e in entries],
    }, indent=1) + "\n"


def parse_snapshot(text: str, source: str) -> tuple[Entry, ...]:
    """The entries of a snapshot's text; InputError naming ``source`` when it is not one (pure)."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"not a {_FORMAT} snapshot")
        return tuple(_entry(item) for item in data["entries"])
    except (ValueError, KeyError, TypeError, HotspareError) as exc:
        raise InputError(source, f"not a quarantine snapshot ({exc})") from exc


def _entry(item: dict[str, Any]) -> Entry:
    expires = item["expires_s"]
    since = float(item["since_s"])
    if not math.isfinite(since):
        raise ValueError(f"since_s {since!r}")
    return Entry(Host(str(item["host"])), QuarantineReason.parse(str(item["reason"])),
                 None if item.get("attempt") is None else int(item["attempt"]), since,
                 None if expires is None else float(expires), str(item.get("detail", "")))


def read_snapshot(path: str | Path) -> tuple[Entry, ...]:
    """The entries another process published at ``path``; InputError if it is missing or not a snapshot."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot read the quarantine snapshot ({exc.strerror})") from exc
    return parse_snapshot(text, str(path))


def changed_snapshots(parent: Path, seen: dict[Path, int]) -> list[Path]:
    """The snapshots ``parent/*/quarantine.json`` (one per task run directory) that are new or changed since
    ``seen`` ({path: mtime in ns}, updated here), in name order, for :meth:`Quarantine.fold`. A snapshot whose
    owner is replacing it this instant cannot be stat'ed and is left for the next call."""
    changed = []
    for snap in sorted(parent.glob(f"*/{SNAPSHOT_NAME}")):
        try:
            mtime = snap.stat().st_mtime_ns
        except OSError:
            continue
        if seen.get(snap) != mtime:
            seen[snap] = mtime
            changed.append(snap)
    return changed


class Quarantine:
    """The hosts not to use, owned by one process. Wall-clock times: entries outlive processes.

    ``snapshot``: where to publish after every change (None: not shared). ``shared``: a snapshot some
    other owner publishes (a workflow's), whose hosts are kept out too but never written here.
    """

    def __init__(self, connection: sqlite3.Connection, *, snapshot: str | Path | None = None,
                 shared: str | Path | None = None, clock: Callable[[], float] = time.time) -> None:
        self._db = connection
        self._clock = clock
        self.snapshot = None if snapshot is None else Path(snapshot)
        self.shared = None if shared is None else Path(shared)

    @classmethod
    def open(cls, path: str | Path, *, snapshot: str | Path | None = None, shared: str | Path | None = None,
             clock: Callable[[], float] = time.time) -> Quarantine:
        """A quarantine in the SQLite file ``path``, opened by its one owner process."""
        db = open_sqlite(path, "quarantine")
        return cls.attach(db, snapshot=snapshot, shared=shared, clock=clock)

    @classmethod
    def attach(cls, connection: sqlite3.Connection, *, snapshot: str | Path | None = None,
               shared: str | Path | None = None, clock: Callable[[], float] = time.time) -> Quarantine:
        """A quarantine kept in an open database (the owner's ledger)."""
        connection.executescript(_TABLES)
        return cls(connection, snapshot=snapshot, shared=shared, clock=clock)

    def add(self, host: Host, reason: QuarantineReason | str, *, attempt: int | None = None,
            ttl_s: float | None = None, detail: str = "") -> None:
        """Keep ``host`` out (``ttl_s`` None: until readmitted by hand). Re-adding refreshes the entry."""
        why = QuarantineReason.parse(str(reason))
        now = self._clock()
        self._put(Entry(host, why, attempt, now, None if ttl_s is None else now + ttl_s, detail))
        self.publish()

    def _put(self, e: Entry) -> None:
        self._db.execute(
            "INSERT INTO quarantine VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(host) DO UPDATE SET"
            " raw = excluded.raw, reason = excluded.reason, attempt = excluded.attempt,"
            " since_s = excluded.since_s, expires_s = excluded.expires_s, detail = excluded.detail",
            (e.host.name, e.host.raw, e.reason.value, e.attempt, e.since_s, e.expires_s, e.detail),
        )

    def entries(self) -> list[Entry]:
        """This owner's entries, expired or not, oldest first."""
        rows = self._db.execute(
            "SELECT raw, reason, attempt, since_s, expires_s, detail FROM quarantine ORDER BY since_s").fetchall()
        return [Entry(Host(r[0]), QuarantineReason(r[1]), r[2], r[3], r[4], r[5]) for r in rows]

    def hosts(self) -> frozenset[Host]:
        """Hosts to keep out now: this owner's (expired ones stay until a probe readmits them) and the shared
        snapshot's. A shared snapshot that cannot be read raises: running on unchecked nodes is worse."""
        own = {e.host for e in self.entries()}
        if self.shared is not None:
            own.update(e.host for e in read_snapshot(self.shared))
        return frozenset(own)

    def __contains__(self, host: object) -> bool:
        return isinstance(host, Host) and host in self.hosts()

    def due(self) -> list[Entry]:
        """This owner's entries whose expiry has passed: probe these, then :meth:`readmit` the ones that answer."""
        now = self._clock()
        return [e for e in self.entries() if e.expires_s is not None and e.expires_s <= now]

    def readmit(self, host: Host, *, probe_passed: bool, early: bool = False) -> bool:
        """Let an expired host back in after a passing probe; True if it was readmitted. ``early``: before its
        expiry, because the scheduler shows it back in service since it was quarantined (the caller decided so:
        :func:`hotspare.decide.life.back_in_service`)."""
        entry = next((e for e in (self.entries() if early else self.due()) if e.host == host), None)
        if entry is None or not probe_passed:
            return False
        self._db.execute("DELETE FROM quarantine WHERE host = ?", (host.name,))
        self.publish()
        return True

    def release(self, host: Host) -> Entry | None:
        """Let ``host`` back in now, without a probe: readmitted by hand (``hotspare quarantine --readmit``). Its
        entry, or None when it was not quarantined here."""
        entry = next((e for e in self.entries() if e.host == host), None)
        if entry is not None:
            self._db.execute("DELETE FROM quarantine WHERE host = ?", (host.name,))
            self.publish()
        return entry

    def publish(self) -> None:
        """Replace the snapshot with the current entries (atomically); nothing when not shared."""
        if self.snapshot is not None:
            write_atomic(self.snapshot, render_snapshot(self.entries(), self._clock()))

    def fold(self, snapshots: Iterable[Path]) -> tuple[list[Entry], list[str]]:
        """Take in what other processes found: each entry of each snapshot not folded before is added here.

        Returns (entries added, problems): a snapshot that cannot be read is reported, not fatal (the
        supervisor writing it may be mid-crash; its next snapshot is folded at the next call). An entry
        folded once is not folded again, so a host readmitted here stays readmitted.
        """
        added: list[Entry] = []
        problems: list[str] = []
        for path in snapshots:
            try:
                found = read_snapshot(path)
            except InputError as exc:
                problems.append(str(exc))
                continue
            for e in found:
                key = (str(path), e.host.name, e.since_s)
                seen = self._db.execute("SELECT 1 FROM quarantine_folded WHERE source = ? AND host = ? AND"
                                        " since_s = ?", key).fetchone()
                if seen is not None:
                    continue
                self._db.execute("INSERT INTO quarantine_folded VALUES (?, ?, ?)", key)
                now = self._clock()
                mine = Entry(e.host, e.reason, e.attempt, now,
                             None if e.expires_s is None else now + (e.expires_s - e.since_s),
                             f"{e.detail} (found by {path.parent.name})")
                self._put(mine)
                added.append(mine)
        if added:
            self.publish()
        return added, problems
