"""The PBS readmission probe's decisions (pure: a job's record read, a probe judged; and the probe's commands with a
scripted runner). The real probe on the OpenPBS bed: tests/test_life_pbs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotspare import (
    SIGNAL_PROBE,
    Host,
    JobFacts,
    LookProbes,
    NodeLook,
    ProbeResult,
    SchedulerKind,
    judge_look,
    look_answers,
    probe_look,
)
from hotspare.act.pbs_probe import (
    ProbeJob,
    judge_probe_job,
    parse_probe_job,
    probe_job_argv,
    probe_pbs_counted,
    probe_pbs_hosts,
)
from hotspare.act.runner import Completed


def qstat_json(job_id: str, **record: object) -> str:
    return json.dumps({"pbs_version": "23.06.06", "Jobs": {job_id: record}})


def test_the_probe_job_is_pinned_not_rerunnable_and_never_shell_text(tmp_path: Path) -> None:
    argv = probe_job_argv(Host("x4102c5s3b0n0"), tmp_path / "p.out")
    assert argv[argv.index("-l") + 1] == "select=1:host=x4102c5s3b0n0:ncpus=1"
    assert argv[argv.index("-r") + 1] == "n"
    assert argv[-2:] == ["--", "/bin/true"]


@pytest.mark.parametrize(("text", "job_id", "want"), [
    (qstat_json("7.head", job_state="F", Exit_status=0, exec_host="p3/0"), "7.head", ProbeJob("F", 0, "p3/0")),
    # qsub printed a short id, the server answers with its full name
    (qstat_json("7.head.bed", job_state="R", exec_host="p3/0"), "7.head", ProbeJob("R", None, "p3/0")),
    (qstat_json("7.head", job_state="Q"), "7.head", ProbeJob("Q", None, "")),
    (qstat_json("8.head", job_state="Q"), "7.head", None),
    ("qstat: Unknown Job Id 7.head", "7.head", None),
    (json.dumps({"Jobs": []}), "7.head", None),
])
def test_a_probe_jobs_record_is_read_or_not_at_all(text: str, job_id: str, want: ProbeJob | None) -> None:
    assert parse_probe_job(text, job_id) == want


@pytest.mark.parametrize(("job", "timed_out", "ok", "words"), [
    (ProbeJob("F", 0, "p3/0"), False, True, "ran on p3 and exited 0"),
    (ProbeJob("F", 0, ""), False, True, "ran on p3 and exited 0"),
    (ProbeJob("F", 0, "p4/0"), False, False, "ended with Exit_status 0 on p4"),  # not where it was pinned
    (ProbeJob("F", -3, "p3/0"), False, False, "ended with Exit_status -3 on p3"),
    (None, False, False, "qstat no longer describes it"),
    (ProbeJob("R", None, "p3/0"), True, False, "started on p3 but did not end within 8 s: deleted"),
    (ProbeJob("Q", None, ""), True, False, "did not start within 8 s (the node, or a busy queue)"),
    (None, True, False, "did not start within 8 s"),
])
def test_only_a_job_that_ran_on_the_node_and_exited_0_passes(job: ProbeJob | None, timed_out: bool, ok: bool,
                                                             words: str) -> None:
    result = judge_probe_job(Host("p3"), "7.head", job, timed_out=timed_out, waited_s=8.0)
    assert result.ok is ok and words in result.detail


class Scripted:
    """A runner playing PBS: ``qsub`` gives ids in turn, ``qstat`` answers from ``states`` ({job id: records in
    turn, the last one repeated}), every command kept; a fake clock advanced by each sleep."""

    def __init__(self, states: dict[str, list[dict[str, object]]], refuse: bool = False,
                 qdel_fails: bool = False) -> None:
        self.states, self.refuse, self.qdel_fails, self.now = states, refuse, qdel_fails, 0.0
        self.argvs: list[list[str]] = []
        self._ids = iter(states)
        self._seen: dict[str, int] = {}

    def __call__(self, argv: list[str], timeout_s: float) -> Completed:
        self.argvs.append(argv)
        if argv[0] == "qsub":
            if self.refuse:
                return Completed(tuple(argv), 1, "", "qsub: Unknown resource Resource_List.host\n", False)
            return Completed(tuple(argv), 0, f"{next(self._ids)}\n", "", False)
        if argv[0] == "qstat":
            job = argv[-1]
            turn = self._seen.get(job, 0)
            self._seen[job] = turn + 1
            records = self.states[job]
            return Completed(tuple(argv), 0, qstat_json(job, **records[min(turn, len(records) - 1)]), "", False)
        if argv[0] == "qdel" and self.qdel_fails:
            return Completed(tuple(argv), 35, "", "qdel: Server could not connect to MOM 1.head\n", False)
        return Completed(tuple(argv), 0, "", "", False)

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_probes_run_at_once_and_a_job_that_never_ends_is_deleted(tmp_path: Path) -> None:
    """Two hosts: p2's job runs and ends, p1's waits in the queue to the deadline; p1's job (only) is deleted, and
    the loop ends at the deadline."""
    pbs = Scripted({
        "1.head": [{"job_state": "Q"}],
        "2.head": [{"job_state": "R", "exec_host": "p2/0"}, {"job_state": "F", "Exit_status": 0, "exec_host": "p2/0"}],
    })
    results = probe_pbs_hosts([Host("p1"), Host("p2")], tmp_path, timeout_s=3.0, run=pbs, clock=lambda: pbs.now,
                              sleep=pbs.sleep)
    assert [(r.host.raw, r.ok) for r in results] == [("p1", False), ("p2", True)]
    assert "did not start within 3 s" in results[0].detail
    assert [a for a in pbs.argvs if a[0] == "qdel"] == [["qdel", "-W", "force", "1.head"]]
    assert pbs.now == pytest.approx(3.0)


def test_a_refused_probe_job_fails_with_qsubs_words(tmp_path: Path) -> None:
    pbs = Scripted({"1.head": [{"job_state": "Q"}]}, refuse=True)
    (result,) = probe_pbs_hosts([Host("p1")], tmp_path, timeout_s=3.0, run=pbs, clock=lambda: pbs.now,
                                sleep=pbs.sleep)
    assert not result.ok and result.detail == "pbs probe job not submitted: qsub: Unknown resource Resource_List.host"
    assert not any(a[0] in ("qstat", "qdel") for a in pbs.argvs)


def test_a_probe_job_qdel_could_not_delete_is_said(tmp_path: Path) -> None:
    """The deadline passed and qdel failed: the probe still fails, and its words say the job may remain."""
    pbs = Scripted({"1.head": [{"job_state": "Q"}]}, qdel_fails=True)
    (result,) = probe_pbs_hosts([Host("p1")], tmp_path, timeout_s=2.0, run=pbs, clock=lambda: pbs.now,
                                sleep=pbs.sleep)
    assert not result.ok
    assert result.detail.endswith("; qdel -W force failed (35: qdel: Server could not connect to MOM 1.head): the job "
                                  "may remain, delete it by hand")


def test_a_look_counts_only_probe_jobs_placed_on_their_node(tmp_path: Path) -> None:
    """For a look at a silent node (probe_pbs_counted): p1's job was sent to p1 and never ended (a frozen MOM takes
    a job and never starts it): a missed probe that counts; p2's ran and exited 0: an answer; p3's never left the
    queue (the node full) and p4's was refused: they said nothing of their nodes, and are not counted."""
    pbs = Scripted({
        "1.head": [{"job_state": "R", "substate": 41, "exec_host": "p1/0"}],
        "2.head": [{"job_state": "F", "Exit_status": 0, "exec_host": "p2/0"}],
        "3.head": [{"job_state": "Q", "comment": "Not Running: Insufficient amount of resource: ncpus"}],
    })
    said, nothing = probe_pbs_counted([Host("p1"), Host("p2"), Host("p3")], tmp_path, timeout_s=4.0, run=pbs,
                                      clock=lambda: pbs.now, sleep=pbs.sleep)
    assert [(r.host.raw, r.ok) for r in said] == [("p1", False), ("p2", True)]
    assert "started on p1 but did not end within 4 s: deleted" in said[0].detail
    assert [(r.host.raw, r.ok) for r in nothing] == [("p3", False)]
    assert "did not start" in nothing[0].detail
    refused = Scripted({"4.head": [{"job_state": "Q"}]}, refuse=True)
    said, nothing = probe_pbs_counted([Host("p4")], tmp_path, timeout_s=2.0, run=refused,
                                      clock=lambda: refused.now, sleep=refused.sleep)
    assert said == [] and [r.host.raw for r in nothing] == ["p4"]
    # Each probe writes its jobs' output under a directory of its own (two rounds of a look run at once).
    outputs = {a[a.index("-o") + 1] for a in pbs.argvs + refused.argvs if a[0] == "qsub"}
    assert len({str(Path(o).parent) for o in outputs}) == 2


def test_a_look_on_pbs_probes_twice_with_pinned_jobs_and_keeps_the_unplaced_apart(tmp_path: Path) -> None:
    """probe_look on PBS: two rounds of pinned probe jobs (suspect p1 frozen: placed, never ends; control p2 full:
    never placed). Both rounds count p1's miss; p2's probes are kept apart, uncounted; judged with the core's
    two-signal rule, p1 is dead. On a batch system with no probe from outside (None): no round at all."""
    pbs = Scripted({
        "1.head": [{"job_state": "R", "exec_host": "p1/0"}], "2.head": [{"job_state": "Q"}],
        "3.head": [{"job_state": "R", "exec_host": "p1/0"}], "4.head": [{"job_state": "Q"}],
    })
    # The rounds run in two threads: qsub ids are handed out in turn, so which round gets which pair varies; every
    # record above says the same of its host, and the clock is real (short deadlines).
    probes = probe_look({Host("p1"): "9.head", Host("p2"): "8.head"}, SchedulerKind.PBS, tmp_path, timeout_s=1.0,
                        run=pbs)
    assert [[(r.host.raw, r.ok) for r in answers] for answers in probes.rounds] == [[("p1", False)], [("p1", False)]]
    assert sorted((r.host.raw, r.ok) for r in probes.uncounted) == [("p2", False), ("p2", False)]
    finding = judge_look(NodeLook(Host("p1"), "9.head", "its worker w silent for 3.2 s", "while silent",
                                  probes.rounds, Host("p2"), "free", JobFacts("9.head", "R")))
    assert finding.dead and finding.signals == (SIGNAL_PROBE, SIGNAL_PROBE)
    assert probe_look({Host("p1"): "9.head"}, None, tmp_path, timeout_s=1.0, run=pbs).rounds == ()


def test_a_looks_answers_in_words_mark_the_control_and_the_uncounted() -> None:
    """look_answers: what the Dask and Parsl watches record of a look, the rounds first, then what said nothing."""
    probes = LookProbes(((ProbeResult(Host("p1"), False, "no answer"), ProbeResult(Host("p2"), True, "ran")),),
                        (ProbeResult(Host("p2"), False, "did not start"),))
    assert look_answers(probes, Host("p2"), "silent 3 s") == [
        (Host("p1"), "silent 3 s, probe 1: no answer"),
        (Host("p2"), "silent 3 s (control), probe 1: ran"),
        (Host("p2"), "silent 3 s (control): did not start (said nothing of the node: not counted)"),
    ]
