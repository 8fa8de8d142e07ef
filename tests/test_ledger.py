"""The ledger: attempts, decisions, evidence and observations survive reopening; numbering carries on."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotspare import scan
from hotspare.errors import InputError
from hotspare.record.ledger import Ledger, ObservationRow


def test_round_trip(tmp_path: Path) -> None:
    """What one process writes, another reads back, in order."""
    ledger = Ledger.open(tmp_path)
    ledger.start_run({"command": ["true"]}, 1.0)
    assert ledger.next_attempt() == 1
    ledger.begin_attempt(1, started_s=2.0, hosts=["n1", "n2"], spares=["n3"], log_path="attempt-1.log",
                         resumed_step=None, resumed_path=None)
    evidence = scan(b"srun: error: Node failure on n2\n").evidence
    ledger.end_attempt(1, ended_s=3.0, rc=143, stopped_by=None, failure_class="node_loss", verdict="n2 named",
                       last_step=7, checkpoint_step=5, checkpoint_s=2.5, evidence=evidence)
    ledger.add_decision(1, 3.1, "swap", hosts=["n2"], reason="n2 out (scraped)", delay_s=0.5)
    ledger.observe(1, 3.0, "probe", "n2", "no answer")
    ledger.close()
    again = Ledger.open(tmp_path)
    (row,) = again.attempts()
    assert (row.hosts, row.spares, row.rc, row.failure_class, row.last_step) == (("n1", "n2"), ("n3",), 143, "node_loss", 7)
    assert again.next_attempt() == 2
    first = again.evidence(1)[0]
    assert (first.pattern, first.role, first.host) == ("slurm.srun_node_failure", "root", "n2")
    d = again.decisions()[0]
    assert (d.action, d.hosts, d.reason) == ("swap", ("n2",), "n2 out (scraped)")
    assert again.observations(1) == [ObservationRow(attempt=1, at_s=3.0, kind="probe", host="n2", detail="no answer")]
    assert again.run_config() == {"command": ["true"]}
    again.close()


def test_unwritable_place_is_an_input_error(tmp_path: Path) -> None:
    """A run directory that cannot be created is one clear error."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="ledger"):
        Ledger.open(blocker / "run")
