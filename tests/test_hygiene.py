"""The checkout guard's comparison (tests/conftest.py): which paths a run left behind in the checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import GIT_STATUS, Change, checkout_changes, parse_porcelain


def z(*entries: str) -> str:
    """Entries as ``git status --porcelain=v1 -z`` prints them."""
    return "".join(f"{e}\0" for e in entries)


BEFORE = z(" M src/hotspare/cli.py", "?? notes.txt", "!! .venv/bin/python", "!! hotspare.egg-info/PKG-INFO",
           "!! .hypothesis/constants/14652b26f36d2906")


def test_an_unchanged_checkout_has_no_changes() -> None:
    assert checkout_changes(BEFORE, BEFORE) == []
    assert checkout_changes("", "") == []


def test_stray_files_are_listed_with_their_status() -> None:
    """The debris of issue 9: Parsl/Torque block output in the root, a slurm-N.out under tests/."""
    after = BEFORE + z("?? parsl.parsl.mpi.block-0.1795968189.5755033.submit.e1",
                       "?? parsl.parsl.mpi.block-0.1795968189.5755033.submit.o1", "?? tests/slurm-1.out")
    changes = checkout_changes(BEFORE, after)
    assert [c.path for c in changes] == ["parsl.parsl.mpi.block-0.1795968189.5755033.submit.e1",
                                         "parsl.parsl.mpi.block-0.1795968189.5755033.submit.o1",
                                         "tests/slurm-1.out"]
    assert str(changes[-1]) == "?? tests/slurm-1.out"


def test_ignored_strays_count_too() -> None:
    """A path .gitignore covers (``!!``) is still debris unless it is a tolerated cache: /bench-out/ is not."""
    changes = checkout_changes(BEFORE, BEFORE + z("!! bench-out/campaign.json", "!! runinfo/000/parsl.log"))
    assert [c.path for c in changes] == ["bench-out/campaign.json", "runinfo/000/parsl.log"]


def test_caches_and_the_install_are_tolerated() -> None:
    after = z(" M src/hotspare/cli.py", "?? notes.txt", "!! .venv/lib/python3.11/site-packages/x.py",
              "!! src/hotspare/__pycache__/cli.cpython-311.pyc", "!! tests/__pycache__/conftest.cpython-311.pyc",
              "!! .pytest_cache/v/cache/lastfailed", "!! .mypy_cache/3.11/cache.db", "!! .ruff_cache/0.5.0/123",
              "!! .hypothesis/constants/ffcde517b1a905c8", "!! adapters/hotspare_parsl.egg-info/PKG-INFO")
    assert checkout_changes(BEFORE, after) == []  # the tolerated entries before, gone after, are fine too


def test_tracked_files_changed_or_deleted_are_listed() -> None:
    after = z(" M src/hotspare/cli.py", " M tests/data/golden.toml", " D examples/logs/rc.txt", "?? notes.txt",
              "!! .venv/bin/python")
    assert checkout_changes(BEFORE, after) == [Change("examples/logs/rc.txt", "", " D"),
                                               Change("tests/data/golden.toml", "", " M")]
    assert checkout_changes(z("?? notes.txt"), z("A  notes.txt")) == [Change("notes.txt", "??", "A ")]
    assert str(Change("notes.txt", "??", "A ")) == "?? -> A  notes.txt"


def test_a_path_that_left_the_list_is_listed_as_gone() -> None:
    """An untracked file deleted by a test (the guard drops it again if the file still exists: committed)."""
    (change,) = checkout_changes(BEFORE, z(" M src/hotspare/cli.py", "!! .venv/bin/python"))
    assert change == Change("notes.txt", "??", "")
    assert str(change) == "gone: notes.txt (was ??)"


def test_names_come_through_verbatim() -> None:
    """-z: spaces, quotes, newlines and non-UTF-8 bytes are not quoted or split; a rename's source is dropped."""
    odd = ['a b.txt', 'say "hi".log', 'two\nlines', 'caf\udce9.out']
    assert list(parse_porcelain(z(*(f"?? {n}" for n in odd)))) == odd
    assert parse_porcelain(z("R  new.py", "old.py", "?? x")) == {"new.py": "R ", "x": "??"}


def test_on_a_real_repository(tmp_path: Path) -> None:
    """The same comparison over real ``git status`` output: a stray file and a modified tracked file are seen,
    caches are not."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True,
                              timeout=60).stdout

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("__pycache__/\nbench-out/\n")
    (tmp_path / "kept.txt").write_text("1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "init")
    before = git(*GIT_STATUS[1:])
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "m.pyc").write_bytes(b"")
    (tmp_path / "bench-out").mkdir()
    (tmp_path / "bench-out" / "r.json").write_text("{}")
    (tmp_path / "job name.e1").write_text("")
    (tmp_path / "kept.txt").write_text("2\n")
    assert [str(c) for c in checkout_changes(before, git(*GIT_STATUS[1:]))] == [
        "!! bench-out/r.json", "?? job name.e1", " M kept.txt"]
