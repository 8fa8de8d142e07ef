"""The PBS parsers, the ``pbs`` pattern pack and job judging on real OpenPBS 23.06 output captured from the bed
(tests/data/pbs-bed, see its README): pbsnodes plain text, ``qstat -f -F json`` running and from history, a job
ended by a sister node's crash (its .o/.e, ``qstat -x``, the MOM and server logs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotspare import Host, PatternSet
from hotspare.act.node_states import unhealthy
from hotspare.act.scheduler import find_pbs_job, parse_pbsnodes, parse_qstat_json
from hotspare.evidence.classify import classify
from hotspare.evidence.scan import scan
from hotspare.jobs import JobEnd, judge_job

DATA = Path(__file__).parent / "data" / "pbs-bed"
P = [Host(f"p{i}") for i in range(1, 5)]


@pytest.mark.parametrize(("name", "down"), [
    ("pbsnodes-av-free.txt", set()),
    ("pbsnodes-av-p2-down.txt", {"p2"}),
    ("pbsnodes-av-p2-down-job-running.txt", {"p2"}),  # with "jobs = 5.pbshead/0" lines on each node
])
def test_pbsnodes_plain_gives_every_node_and_down_is_unhealthy(name: str, down: set[str]) -> None:
    """Plain ``pbsnodes -av``: each of p1..p4 with its state; only ``down`` is unhealthy (free is not)."""
    states = parse_pbsnodes((DATA / name).read_text())
    assert sorted(states) == P
    assert {h.name for h, s in states.items() if unhealthy(s)} == down


def test_qstat_json_running_and_finished() -> None:
    """``qstat -f -F json``: the job keyed ``SEQ.SERVER``, state R then F, exec hosts from exec_vnode, Exit_status."""
    running = parse_qstat_json((DATA / "qstat-f-running-3node.json").read_text())["5.pbshead"]
    assert (running.state, running.hosts, running.exit_code, running.restarts) == ("R", tuple(P[:3]), None, 0)
    assert parse_qstat_json((DATA / "qstat-xf-finished-exit3.json").read_text())["1.pbshead"].exit_code == 3


def test_a_sister_crash_ends_the_job_with_exit_status_minus_14() -> None:
    """A job whose sister MOM's node crashed (not rerunnable, so it ends F): Exit_status -14 (the only word PBS
    gives: the comment is still "Job run at ..."); :attr:`JobFacts.node_failed` reads it."""
    text = (DATA / "qstat-xf-node-fail.json").read_text()
    facts = parse_qstat_json(text)["5.pbshead"]
    assert (facts.state, facts.exit_code, facts.hosts, facts.restarts) == ("F", -14, tuple(P[:3]), 0)
    assert facts.node_failed and not facts.requeued
    assert facts.reason.startswith("Job run at ") and "fail" not in facts.reason
    assert not parse_qstat_json((DATA / "qstat-xf-finished.json").read_text())["0.pbshead"].node_failed


@pytest.mark.parametrize(("asked", "found"), [
    ("5.pbshead", True), ("5", True), ("5.pbshead.example.org", True), ("6.pbshead", False), ("5.other", False),
])
def test_a_job_is_found_by_sequence_number_and_server_short_name(asked: str, found: bool) -> None:
    """PBS keys a job ``5.pbshead``; ``5`` and the server's long name find it too, another server's does not."""
    facts = parse_qstat_json((DATA / "qstat-xf-node-fail.json").read_text())
    assert (find_pbs_job(facts, asked) is not None) is found


@pytest.mark.parametrize(("state", "run_count", "restarts", "requeued"), [
    ("Q", 1, 1, True),   # put back after a node failure, waiting (research capture: Exit_status -14, Q, run_count 1)
    ("R", 2, 1, False),  # running again after one requeue
    ("R", 1, 0, False), ("F", 1, 0, False), ("Q", 0, 0, False),  # a fresh job waiting
])
def test_run_count_gives_restarts_and_requeued(state: str, run_count: int, restarts: int, requeued: bool) -> None:
    """PBS's run_count becomes restarts; a job back in Q after a run is requeued."""
    record = json.loads((DATA / "qstat-xf-node-fail.json").read_text())
    record["Jobs"]["5.pbshead"].update(job_state=state, run_count=run_count)
    facts = parse_qstat_json(json.dumps(record))["5.pbshead"]
    assert (facts.restarts, facts.requeued) == (restarts, requeued)


@pytest.mark.parametrize(("name", "blamed", "suspect"), [
    ("mom_logs-p1-node-fail.txt", ["p2"], []),   # the mother superior: lost p2, then killing after 15 s
    ("server_logs-node-fail.txt", ["p2"], []),   # stream_eof, p2 down; node down; sister failed to delete
    ("mom_logs-p3-node-fail.txt", [], []),       # a surviving sister only got KILL_JOB: nobody to blame
    ("job-nodefail.e", [], []),                  # Hydra: "assert (!closed)" from the survivors, no lost peer named
])
def test_node_failure_logs_blame_only_the_crashed_node(patterns: PatternSet, name: str, blamed: list[str],
                                                       suspect: list[str]) -> None:
    """The daemons' own lines of a sister crash name p2 and nobody else; the job's error file names no one."""
    verdict = classify(scan(DATA / name, patterns))
    assert [h.name for h in verdict.blamed_hosts] == blamed
    assert [h.name for h in verdict.suspect_hosts] == suspect
    assert not {"p1", "p3", "p4"} & {h.name for h in verdict.exclude_hosts}


def test_judged_job_keeps_out_the_node_pbs_reports_down(patterns: PatternSet) -> None:
    """The job's .o/.e (Hydra names no lost peer), its ``qstat -x`` record (Exit_status -14) and pbsnodes (p2
    down): the judgement keeps out p2 alone, on the scheduler's word."""
    out = (DATA / "job-nodefail.o").read_bytes() + (DATA / "job-nodefail.e").read_bytes()
    facts = parse_qstat_json((DATA / "qstat-xf-node-fail.json").read_text())["5.pbshead"]
    states = parse_pbsnodes((DATA / "pbsnodes-av-p2-down-job-running.txt").read_text())
    judged = judge_job(JobEnd("5.pbshead", facts.hosts, facts, states, out), patterns)
    assert [(h.name, r.value) for h, r in judged.keep_out] == [("p2", "scheduler")]
    assert judged.exit_code is None and judged.node_lost  # -14 is PBS's own code (a sister failed), not the job's
