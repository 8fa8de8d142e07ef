"""What a run's failures cost (the honest incident timeline, where the wall time went) and its picture,
from ledgers whose every time is known."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest

from hotspare.errors import InputError
from hotspare.record.ledger import CHECKPOINT, PROGRESS, Ledger
from hotspare.record.plot import draw
from hotspare.record.postmortem import build_report, render

HOTSPARE = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "hotspare"

#: One node crash on a 3-host job, every moment known (seconds; the run starts at 100).
#: attempt 1: starts 101, first step 103, checkpoint step 10 written at 110, last step 15 at 115 (the
#: fault), launcher exits 118, decision 119 (swap n1), attempt 2 starts 121 from step 10, first step 123,
#: last step 40 at 140, exits 141 (success); the run ends 142.
KNOWN = {
    "wall_s": 42.0, "productive_s": 7.0 + 17.0, "lost_s": 5.0, "detect_s": 3.0, "decide_s": 1.0,
    "relaunch_s": 2.0, "startup_s": 2.0 + 2.0, "other_s": 1.0 + 1.0 + 1.0,
}


def record_known_run(run: Path, *, timeline: bool = True) -> None:
    ledger = Ledger.open(run)
    try:
        ledger.start_run({"allocation": ["n1", "n2", "n3", "n4"], "nhosts": 3}, 100.0)
        ledger.begin_attempt(1, started_s=101.0, hosts=["n1", "n2", "n3"], spares=["n4"], log_path="a1.log",
                             resumed_step=None, resumed_path=None)
        ledger.set_first_progress(1, 103.0)
        if timeline:
            ledger.add_timeline(1, [(103.0, PROGRESS, 1), (110.0, CHECKPOINT, 10), (110.0, PROGRESS, 10),
                                    (115.0, PROGRESS, 15)])
        ledger.end_attempt(1, ended_s=118.0, rc=137, stopped_by=None, failure_class="node_loss",
                           verdict="n1 died", last_step=15, checkpoint_step=10, checkpoint_s=110.0, evidence=())
        ledger.add_decision(1, 119.0, "swap", hosts=["n1"], reason="n1 died", delay_s=0.0,
                            quarantine_reason="scraped")
        ledger.begin_attempt(2, started_s=121.0, hosts=["n4", "n2", "n3"], spares=[], log_path="a2.log",
                             resumed_step=10, resumed_path="ckpt/step-10")
        ledger.set_first_progress(2, 123.0)
        if timeline:
            ledger.add_timeline(2, [(123.0, PROGRESS, 11), (130.0, CHECKPOINT, 20), (140.0, PROGRESS, 40)])
        ledger.end_attempt(2, ended_s=141.0, rc=0, stopped_by=None, failure_class="success", verdict="ok",
                           last_step=40, checkpoint_step=40, checkpoint_s=140.0, evidence=())
        ledger.add_decision(2, 141.5, "stop", hosts=[], reason="success", delay_s=0.0)
        ledger.end_run("succeeded", 0, 142.0)
    finally:
        ledger.close()


def report_of(run: Path):  # type: ignore[no-untyped-def]
    ledger = Ledger.open(run)
    try:
        return build_report(ledger)
    finally:
        ledger.close()


def test_a_known_incident_gives_known_figures(tmp_path: Path) -> None:
    record_known_run(tmp_path / "run")
    report = report_of(tmp_path / "run")
    [incident] = report.incidents
    assert incident.last_progress_at_s == 15.0
    assert (incident.detect_s, incident.decide_s, incident.relaunch_s, incident.resume_s) == (3.0, 1.0, 2.0, 2.0)
    # Recovery runs from the last progress before the fault, not from the attempt's end (that would say 5 s).
    assert incident.recover_s == 8.0
    assert incident.lost_node_s == (115.0 - 110.0) * 3
    got = report.goodput.to_json()
    assert {k: got[k] for k in KNOWN} == KNOWN
    assert got["ettr"] == round(24.0 / 42.0, 4)
    assert sum(got[k] for k in KNOWN if k != "wall_s") == pytest.approx(got["wall_s"])
    text = render(report)
    assert "57.1 % of 42.00 s" in text and "8.00 s" in text


def test_a_ledger_from_before_progress_was_sampled_still_reports(tmp_path: Path) -> None:
    """No timeline rows (an older ledger): the attempt's end stands in for its last progress, nothing breaks."""
    record_known_run(tmp_path / "run", timeline=False)
    report = report_of(tmp_path / "run")
    [incident] = report.incidents
    assert incident.detect_s == 0.0 and incident.recover_s == 123.0 - 118.0
    assert 0 < report.goodput.ettr < 1


def test_work_not_saved_by_a_checkpoint_counts_as_lost(tmp_path: Path) -> None:
    """The next attempt started from scratch: nothing attempt 1 did survived."""
    run = tmp_path / "run"
    ledger = Ledger.open(run)
    ledger.start_run({"allocation": ["n1", "n2"]}, 0.0)
    ledger.begin_attempt(1, started_s=0.0, hosts=["n1"], spares=["n2"], log_path="a", resumed_step=None,
                         resumed_path=None)
    ledger.set_first_progress(1, 1.0)
    ledger.add_timeline(1, [(1.0, PROGRESS, 1), (9.0, PROGRESS, 9)])
    ledger.end_attempt(1, ended_s=10.0, rc=1, stopped_by=None, failure_class="node_loss", verdict="x", last_step=9,
                       checkpoint_step=None, checkpoint_s=None, evidence=())
    ledger.add_decision(1, 10.0, "swap", hosts=["n1"], reason="x", delay_s=0.0, quarantine_reason="scraped")
    ledger.begin_attempt(2, started_s=10.0, hosts=["n2"], spares=[], log_path="b", resumed_step=None,
                         resumed_path=None)
    ledger.close()
    report = report_of(run)
    assert report.goodput.productive_s == 0.0 and report.goodput.lost_s == 8.0
    assert report.incidents[0].lost_node_s == 9.0 and report.incidents[0].recover_s is None
    assert report.state == "running"


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_plot_renders_from_a_recorded_ledger(tmp_path: Path) -> None:
    record_known_run(tmp_path / "run")
    report = report_of(tmp_path / "run")
    png = draw(report, tmp_path / "run.png")
    width, height = _png_size(png)
    assert width >= 1000 and 400 <= height <= 1200 and png.stat().st_size > 20_000
    svg = draw(report, tmp_path / "run.svg").read_text()
    # Every host has its row, the fault and the decision are drawn and explained.
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for words in ("n1", "n4", "D1", "swap n1 out (scraped)", "recovered in 8.0 s", "checkpoint written"):
        assert words in svg, words


def test_plot_refuses_what_it_cannot_draw(tmp_path: Path) -> None:
    record_known_run(tmp_path / "run")
    with pytest.raises(InputError, match=r"\.png or \.svg"):
        draw(report_of(tmp_path / "run"), tmp_path / "run.pdf")
    result = subprocess.run([str(HOTSPARE), "postmortem", str(tmp_path / "run"), "--plot", "x.gif"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and result.stdout == "", result.stderr


def test_postmortem_json_and_plot_from_the_cli(tmp_path: Path) -> None:
    record_known_run(tmp_path / "run")
    result = subprocess.run([str(HOTSPARE), "postmortem", "--json", str(tmp_path / "run"), "--plot",
                             str(tmp_path / "p.png")], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # the note about the plot goes to stderr: stdout stays JSON
    assert data["goodput"]["ettr"] == round(24 / 42, 4) and data["incidents"][0]["recover_s"] == 8.0
    assert "plot written to" in result.stderr and _png_size(tmp_path / "p.png")[0] >= 1000
