"""Quarantine: reasons, expiry, readmission only after a passing probe, shared as a snapshot only its owner writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hotspare import SNAPSHOT_NAME, Host, Quarantine, QuarantineReason, changed_snapshots, read_snapshot
from hotspare.errors import InputError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_reasons_expiry_and_readmission(tmp_path: Path) -> None:
    """An expired entry stays until a probe passes; an unexpired one cannot be readmitted."""
    clock = Clock()
    q = Quarantine.open(tmp_path / "q.sqlite", clock=clock)
    q.add(Host("n2-hsn0.example"), "scraped", attempt=1, ttl_s=60, detail="rank 12 died from signal 9")
    q.add(Host("n3"), "probed", ttl_s=None)
    assert Host("n2") in q and Host("N3") in q and Host("n4") not in q
    assert q.due() == [] and not q.readmit(Host("n2"), probe_passed=True)
    clock.now += 61
    assert [e.host.name for e in q.due()] == ["n2"]
    assert not q.readmit(Host("n2"), probe_passed=False) and Host("n2") in q
    assert q.readmit(Host("n2"), probe_passed=True) and Host("n2") not in q
    assert Host("n3") in q  # no expiry: stays until readmitted by hand


def test_entry_keeps_the_raw_form_and_reason(tmp_path: Path) -> None:
    """Entries keep the host as written (for hostfiles) and why it was kept out."""
    q = Quarantine.open(tmp_path / "q.sqlite")
    q.add(Host("x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov"), "scheduler", attempt=3)
    (entry,) = q.entries()
    assert entry.host.raw == "x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov"
    assert (entry.reason, entry.attempt) == ("scheduler", 3)


def test_unknown_reason_is_refused(tmp_path: Path) -> None:
    """Only the vocabulary's reasons are accepted."""
    with pytest.raises(ValueError, match="scraped"):
        Quarantine.open(tmp_path / "q.sqlite").add(Host("n1"), "hunch")


def test_owner_publishes_a_snapshot_others_only_read(tmp_path: Path) -> None:
    """Every change by the owner replaces quarantine.json atomically; a reader (another process, another host)
    keeps those hosts out through ``shared=`` without ever writing the owner's files."""
    clock = Clock()
    snap = tmp_path / "wf" / SNAPSHOT_NAME
    owner = Quarantine.open(tmp_path / "wf" / "ledger.sqlite", snapshot=snap, clock=clock)
    owner.add(Host("n7"), QuarantineReason.STRIKES, ttl_s=10, detail="3 strikes")
    assert [(e.host.name, e.reason, e.expires_s) for e in read_snapshot(snap)] == [("n7", "strikes", 1010.0)]
    reader = Quarantine.open(tmp_path / "task" / "ledger.sqlite", shared=snap)
    assert Host("n7") in reader and reader.entries() == []
    clock.now += 11
    assert owner.readmit(Host("n7"), probe_passed=True)
    assert read_snapshot(snap) == () and Host("n7") not in reader
    assert sorted(p.name for p in snap.parent.iterdir()) == ["ledger.sqlite", "ledger.sqlite-shm",
                                                              "ledger.sqlite-wal", SNAPSHOT_NAME]  # no temp left


def test_owner_folds_in_what_each_run_found_once(tmp_path: Path) -> None:
    """A task supervisor publishes its findings in its own run directory; the owner folds each entry in once:
    a host the owner readmitted is not brought back by the same old finding; a new finding is."""
    clock = Clock()
    owner = Quarantine.open(tmp_path / "wf" / "ledger.sqlite", snapshot=tmp_path / "wf" / SNAPSHOT_NAME, clock=clock)
    task_snap = tmp_path / "wf" / "tasks" / "t1" / SNAPSHOT_NAME
    task = Quarantine.open(task_snap.parent / "ledger.sqlite", snapshot=task_snap, clock=clock)
    task.add(Host("n2"), "probed", attempt=1, ttl_s=5, detail="did not answer a probe")
    broken = tmp_path / "wf" / "tasks" / "t2" / SNAPSHOT_NAME
    broken.parent.mkdir(parents=True)
    broken.write_text("{half")
    added, problems = owner.fold([task_snap, broken])
    assert [(e.host.name, e.reason) for e in added] == [("n2", "probed")] and len(problems) == 1
    assert "t1" in owner.entries()[0].detail and [e.host.name for e in read_snapshot(tmp_path / "wf" / SNAPSHOT_NAME)] == ["n2"]
    clock.now += 6
    assert owner.readmit(Host("n2"), probe_passed=True)
    assert owner.fold([task_snap]) == ([], [])  # the same finding is not folded twice
    clock.now += 1
    task.add(Host("n2"), "probed", attempt=2, detail="lost again")
    assert [e.host.name for e in owner.fold([task_snap])[0]] == ["n2"]


@pytest.mark.parametrize("text", ["", "[]", '{"format": "hotspare-quarantine/1"}',
                                  '{"format": "hotspare-quarantine/1", "entries": [{"host": "n1", "reason": "hunch",'
                                  ' "since_s": 1, "expires_s": null}]}',
                                  '{"format": "hotspare-quarantine/1", "entries": [{"host": "n1 ; rm", "reason": '
                                  '"probed", "since_s": 1, "expires_s": null}]}'])
def test_a_bad_snapshot_is_refused_with_its_path(tmp_path: Path, text: str) -> None:
    """Not a snapshot, an unknown reason, a hostile host name: InputError naming the file."""
    path = tmp_path / SNAPSHOT_NAME
    path.write_text(text)
    with pytest.raises(InputError, match=SNAPSHOT_NAME):
        read_snapshot(path)


def test_changed_snapshots_reports_each_task_snapshot_once_per_change(tmp_path: Path) -> None:
    """The one scan both adapters use to fold their tasks' findings: new and rewritten snapshots, never the same
    one twice; a missing parent directory is simply nothing yet."""
    seen: dict[Path, int] = {}
    assert changed_snapshots(tmp_path / "tasks", seen) == []
    a, b = tmp_path / "tasks" / "a" / SNAPSHOT_NAME, tmp_path / "tasks" / "b" / SNAPSHOT_NAME
    for snap in (a, b):
        snap.parent.mkdir(parents=True)
        snap.write_text("{}")
    assert changed_snapshots(tmp_path / "tasks", seen) == [a, b]
    assert changed_snapshots(tmp_path / "tasks", seen) == []
    os.utime(b, ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns + 1_000_000))
    assert changed_snapshots(tmp_path / "tasks", seen) == [b]
