"""The few ways hotspare touches files that others read: atomic replacement, output tails, SQLite.

One writer per shared file is the rule (see :mod:`hotspare.record.quarantine`); these helpers are how that
writer publishes and how everyone else reads.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from hotspare.errors import InputError

#: Read at most this much of a job's output when judging it: the end says how it ended.
TAIL_BYTES = 8 << 20


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically: readers see the old file or the new, never half.

    The temp file is in the same directory (``rename`` is atomic only within one filesystem, and on
    NFS and Lustre too), fsynced before the rename so that a crash never leaves a visible file without
    its bytes.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_tail(path: str | Path, *, start: int = 0, max_bytes: int = TAIL_BYTES) -> tuple[bytes, int]:
    """The bytes of ``path`` from ``start`` to its end, at most the last ``max_bytes``; and the end offset.

    OSError (missing, unreadable) is the caller's to report: a judge must say what it could not read.
    """
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        f.seek(max(start, end - max_bytes))
        return f.read(max(0, end - start)), end


def open_sqlite(path: str | Path, what: str) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` (created if needed) for its one writer process.

    WAL mode: readers never block the writer. WAL's index is shared memory, so every process that
    opens the file must be on the same host: hotspare never opens one from two hosts (each supervisor
    writes its own run directory; a workflow's quarantine is shared as a published snapshot).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(target, timeout=30, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    except (OSError, sqlite3.Error) as exc:
        raise InputError(str(target), f"cannot open the {what} ({exc})") from exc
    return db
