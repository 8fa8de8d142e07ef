"""hotspare.record.files: the one atomic writer, the one tail reader, the one SQLite opener."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hotspare.errors import InputError
from hotspare.record.files import open_sqlite, read_tail, write_atomic


def test_write_atomic_replaces_whole_and_leaves_no_temp(tmp_path: Path) -> None:
    """Readers see the old file or the new one; a write that fails half-way leaves the old file and no temp."""
    target = tmp_path / "quarantine.json"
    write_atomic(target, "old\n")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["quarantine.json"]

    with pytest.raises(TypeError):
        write_atomic(target, b"not text")  # type: ignore[arg-type]
    assert target.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["quarantine.json"]


def test_read_tail_from_an_offset_and_bounded(tmp_path: Path) -> None:
    """The bytes after ``start`` (what a retry handler has not read yet), at most the last ``max_bytes``."""
    path = tmp_path / "task.out"
    path.write_bytes(b"try 1\n")
    first, end = read_tail(path)
    with path.open("ab") as f:
        f.write(b"try 2: srun: error: Node failure on n2\n")
    second, end2 = read_tail(path, start=end)
    assert (first, second) == (b"try 1\n", b"try 2: srun: error: Node failure on n2\n")
    assert end2 == path.stat().st_size and read_tail(path, start=end2)[0] == b""
    assert read_tail(path, max_bytes=8)[0] == b"e on n2\n"
    with pytest.raises(OSError):
        read_tail(tmp_path / "gone")


def test_open_sqlite_names_the_file_it_cannot_open(tmp_path: Path) -> None:
    """A path that cannot hold a database: InputError naming it and what it was for."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="ledger"):
        open_sqlite(blocker / "ledger.sqlite", "ledger")
    db = open_sqlite(tmp_path / "run" / "ledger.sqlite", "ledger")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    assert os.path.isfile(tmp_path / "run" / "ledger.sqlite")
