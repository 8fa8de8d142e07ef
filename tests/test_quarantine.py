"""Quarantine: reasons, expiry, readmission only after a passing probe, shared through one file."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotspare import Host, Quarantine


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


def test_shared_by_many_runs(tmp_path: Path) -> None:
    """Two runs (two connections) opening one file see each other's quarantine at once."""
    a = Quarantine.open(tmp_path / "shared.sqlite")
    b = Quarantine.open(tmp_path / "shared.sqlite")
    a.add(Host("n7"), "strikes")
    assert Host("n7") in b
