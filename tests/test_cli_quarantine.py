"""``hotspare quarantine RUN_DIR``: the entries listed, hosts readmitted by hand (ledger, snapshot, postmortem),
and a wrong host or directory refused with one line and nothing changed. Real CLI processes on a real ledger."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from hotspare import Host, Ledger, Quarantine, QuarantineReason
from hotspare.record.quarantine import SNAPSHOT_NAME, read_snapshot
from hotspare.record.workflow import WorkflowRecord


def _workflow(wf: Path) -> None:
    """A workflow directory as a Dask cluster leaves it: one job recorded, two hosts quarantined."""
    ledger = Ledger.open(wf)
    try:
        WorkflowRecord(ledger).submitted("7", "dask-worker-0", 1_800_000_000.0, [])
        quarantine = Quarantine.attach(ledger.connection, snapshot=wf / SNAPSHOT_NAME)
        quarantine.add(Host("n3"), QuarantineReason.SCRAPED, detail="Xid 79 on n3: fallen off the bus")
        quarantine.add(Host("n4"), QuarantineReason.PROBED, ttl_s=3600, detail="missed two probes")
    finally:
        ledger.close()


def test_the_entries_are_listed_with_their_reason_and_expiry(tmp_path: Path) -> None:
    _workflow(tmp_path / "wf")
    done = run_cli("quarantine", str(tmp_path / "wf"))
    assert done.returncode == 0, done.stderr
    n3, n4 = done.stdout.splitlines()
    assert n3.startswith("n3  scraped  since ") and "until readmitted by hand: Xid 79 on n3" in n3
    assert n4.startswith("n4  probed  since ") and " UTC: missed two probes" in n4


def test_a_host_readmitted_by_hand_is_out_of_the_ledger_and_snapshot_and_the_readmission_recorded(
        tmp_path: Path) -> None:
    wf = tmp_path / "wf"
    _workflow(wf)
    done = run_cli("quarantine", str(wf), "--readmit", "n3", "--json")
    assert done.returncode == 0, done.stderr
    said, left = done.stdout.splitlines()
    assert said == "readmitted n3"
    assert [e["host"] for e in json.loads(left)["entries"]] == ["n4"]
    assert [e.host for e in read_snapshot(wf / SNAPSHOT_NAME)] == [Host("n4")]  # what task supervisors read
    report = run_cli("postmortem", str(wf))
    assert "readmitted by hand (hotspare quarantine --readmit); it was kept out for scraped: Xid 79" in report.stdout


def test_a_host_not_quarantined_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    wf = tmp_path / "wf"
    _workflow(wf)
    done = run_cli("quarantine", str(wf), "--readmit", "n4", "n9")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: not quarantined in {wf}: n9 (quarantined: n3, n4)"
    assert [e.host.raw for e in read_snapshot(wf / SNAPSHOT_NAME)] == ["n3", "n4"]
    assert "hotspare quarantine --readmit" not in run_cli("postmortem", str(wf)).stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run_cli("quarantine", str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no ledger.sqlite" in done.stderr
    _workflow(tmp_path / "wf")
    done = run_cli("quarantine", str(tmp_path / "wf"), "--readmit", "n3;rm -rf /")
    assert done.returncode == 2 and done.stderr.startswith("error: --readmit: ")
    assert len(read_snapshot(tmp_path / "wf" / SNAPSHOT_NAME)) == 2
