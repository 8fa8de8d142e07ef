"""Defect 4: a scheduler that cannot be asked is seen, not silently read as "nothing known"."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import HOTSPARE
from hotspare import Host
from hotspare.act.runner import Completed
from hotspare.act.scheduler import SchedulerQuery
from hotspare.decide.policy import Budgets
from hotspare.errors import EXIT_OK
from hotspare.record.ledger import Ledger
from hotspare.supervisor import RunConfig, Supervisor

#: What scontrol printed on this machine with no slurm.conf to find (configless lookup failed), rc 1.
NO_CONF = ("scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
           "scontrol: error: fetch_config: DNS SRV lookup failed\n"
           "scontrol: error: _establish_config_source: failed to fetch config\n"
           "scontrol: fatal: Could not establish a configuration source\n")


def _broken_slurm(asked: list[tuple[str, ...]]) -> SchedulerQuery:
    def run(argv: Sequence[str], timeout_s: float) -> Completed:
        asked.append(tuple(argv))
        return Completed(tuple(argv), 1, "", NO_CONF, False)

    return SchedulerQuery("slurm", "42", run=run)


def test_a_failing_scontrol_is_recorded_warned_once_and_reported(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A job that stalls makes the supervisor ask scontrol, which fails (wrong SLURM_CONF): each failure is an
    observation in the ledger, stderr says so once, and `hotspare postmortem` (text and --json) shows it."""
    job = tmp_path / "job.py"
    job.write_text("import time\nprint('step=1', flush=True)\ntime.sleep(4)\nprint('step=2', flush=True)\n")
    config = RunConfig(command=(sys.executable, str(job)), allocation=("n1", "n2"), nhosts=2, launcher="local",
                       stall_s=0.3, scheduler_poll_s=0.2, budgets=Budgets(max_attempts=1))
    asked: list[tuple[str, ...]] = []
    run = tmp_path / "run"
    assert Supervisor(config, run, scheduler=_broken_slurm(asked)).run() == EXIT_OK
    assert len(asked) >= 2, asked  # asked again and again while stalled: every failure counts
    ledger = Ledger.open(run)
    errors = [o for o in ledger.observations() if o.kind == "scheduler-error"]
    ledger.close()
    assert len(errors) == len(asked)
    assert errors[0].detail.startswith("scontrol show node n1,n2: rc 1: scontrol: error: ") and "res_nsearch error: Unknown host" in errors[0].detail
    err = capsys.readouterr().err
    assert err.count("hotspare: warning: cannot ask the scheduler") == 1
    assert ("hotspare: warning: cannot ask the scheduler (scontrol show node n1,n2: scontrol: error: "
            "resolve_ctls_from_dns_srv: res_nsearch error: Unknown host); the scheduler watch is off until it "
            "answers\n") in err
    text = subprocess.run([str(HOTSPARE), "postmortem", str(run)], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    assert f"scheduler errors: {len(asked)}" in text and "res_nsearch error: Unknown host" in text
    data = json.loads(subprocess.run([str(HOTSPARE), "postmortem", "--json", str(run)], capture_output=True,
                                     text=True, timeout=60, check=True).stdout)
    assert data["scheduler_errors"]["count"] == len(asked)
    assert "res_nsearch error" in data["scheduler_errors"]["first"]


def test_a_query_reports_each_failure_to_its_callback() -> None:
    """node_states/job_facts/walltime_left_s keep their "nothing known" answers, and hand the failure (argv, rc,
    stderr) to on_failure; a timed-out command is a failure too."""
    seen = []
    asked: list[tuple[str, ...]] = []
    query = replace(_broken_slurm(asked), on_failure=seen.append)
    assert query.node_states([]) == {}  # nothing asked, nothing failed
    assert query.node_states([Host("n1")]) == {}
    assert query.job_facts("42") is None
    assert query.walltime_left_s() is None
    assert [f.argv[0] for f in seen] == ["scontrol", "scontrol", "squeue"]
    assert seen[0].rc == 1 and seen[0].first_line == "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host"

    def hung(argv: Sequence[str], timeout_s: float) -> Completed:
        return Completed(tuple(argv), None, "", "scontrol: error: s_p_parse_file: cannot stat file /nonexistent: "
                         "No such file or directory, retrying in 1sec up to 60sec\n", True)

    late = []
    SchedulerQuery("slurm", "9", timeout_s=10, run=hung, on_failure=late.append).walltime_left_s()
    assert late[0].timed_out and "timed out after 10 s" in str(late[0])
