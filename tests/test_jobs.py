"""Job judging (hotspare.jobs): an ended batch job or a failed task judged from the scheduler's record, node states,
its output and exit status — pure, from tables of real lines, the same for the Parsl and Dask adapters."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotspare import (
    HOOK_FAILED,
    Fault,
    Host,
    JobEnd,
    JobFacts,
    PatternSet,
    ProbeResult,
    QuarantineReason,
    confirm_suspects,
    judge_host_lost,
    judge_job,
    judge_task,
    lead_left,
    read_outputs,
    suspects_to_probe,
)
from hotspare.act.scheduler import parse_qstat_json, parse_scontrol_job

N = [Host(f"n{i}") for i in range(1, 5)]
DATA = Path(__file__).parent / "data"


def _facts(line: str) -> JobFacts:
    facts = parse_scontrol_job(line)
    assert facts is not None
    return facts


CASES = [
    # (what, JobEnd, failure class, hosts kept out with reasons)
    ("output names the dead node (bed capture a2)",
     JobEnd("3", N[:3], _facts("JobId=3 JobState=NODE_FAIL NodeList=n[1-3] ExitCode=0:0 Reason=NodeDown"),
            {N[1]: "DOWN*"}, b"srun: error: Node failure on n2\nsrun: error: Node failure on n2\n"),
     "node_loss", [(N[1], QuarantineReason.SCRAPED)]),
    ("NODE_FAIL with silent output: the host the scheduler reports down, and only it",
     JobEnd("4", N[:3], _facts("JobId=4 JobState=NODE_FAIL NodeList=n[1-3] ExitCode=0:0 Reason=NodeDown"),
            {N[0]: "ALLOCATED", N[1]: "IDLE", N[2]: "DOWN*+NOT_RESPONDING"}, b"parsl worker started\n"),
     "node_loss", [(N[2], QuarantineReason.SCHEDULER)]),
    ("NODE_FAIL but nobody reported down: nobody kept out",
     JobEnd("5", N[:2], _facts("JobId=5 JobState=NODE_FAIL NodeList=n[1-2] ExitCode=0:0"), {N[0]: "IDLE"}, b""),
     "node_loss", []),
    ("a user's import error before any progress",
     JobEnd("6", N[:1], _facts("JobId=6 JobState=FAILED NodeList=n1 ExitCode=1:0"), {},
            b"Traceback (most recent call last):\nModuleNotFoundError: No module named 'torchh'\n"),
     "user_error", []),
    ("a clean end", JobEnd("7", N[:1], _facts("JobId=7 JobState=COMPLETED NodeList=n1 ExitCode=0:0"), {}, b""),
     "success", []),
    ("a host the output names that is not the job's is never kept out",
     JobEnd("8", N[:2], _facts("JobId=8 JobState=FAILED NodeList=n[1-2] ExitCode=1:0"), {},
            b"srun: error: Node failure on login01\n"),
     None, []),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_judge_job(case: tuple, patterns: PatternSet) -> None:  # type: ignore[type-arg]
    """Each ended job gets the documented class and exactly the documented keep-outs, each with its reason."""
    _, end, fclass, keep = case
    judged = judge_job(end, patterns)
    if fclass is not None:
        assert judged.verdict.failure_class.value == fclass, judged.verdict.reason
    assert list(judged.keep_out) == keep, judged.verdict.reason
    assert judged.node_lost == bool(keep) and not judged.hook_failed
    assert judged.state == (end.facts.state if end.facts else "")


def test_a_hook_failure_is_a_setup_error_not_a_node_fault(patterns: PatternSet) -> None:
    """The hook's line wins over everything else in the output: nobody is kept out."""
    out = f"srun: error: Node failure on n2\n{HOOK_FAILED}: python -m hotspare_parsl.block exited 2\n".encode()
    judged = judge_job(JobEnd("9", N[:2], None, {}, out, rc=86), patterns)
    assert judged.hook_failed and judged.keep_out == () and judged.exit_code == 86
    assert judged.verdict.failure_class.value == "user_error" and "exited 2" in judged.verdict.reason


def test_what_could_not_be_read_is_said(tmp_path: Path, patterns: PatternSet) -> None:
    """An unreadable output file is named in the verdict's reason; what could be read is judged."""
    out = tmp_path / "job.out"
    out.write_bytes(b"x" * 10 + b"\nsrun: error: Node failure on n2\n")
    data, unread = read_outputs([out, tmp_path / "gone.err", None])
    assert data.endswith(b"Node failure on n2\n\n") and len(unread) == 1 and "gone.err" in unread[0]
    judged = judge_job(JobEnd("10", N[:2], None, {}, data, None, unread), patterns)
    assert judged.keep_out == ((N[1], QuarantineReason.SCRAPED),) and "could not read" in judged.verdict.reason


def test_lead_left_a_running_job() -> None:
    """SLURM keeps a --no-kill job RUNNING on its other nodes when its batch node dies (bed): that is a dead
    job; a job that still has its lead, or that nobody can describe, is not."""
    running = _facts((DATA / "slurm-testbed" / "scontrol-job-running-2nodes.txt").read_text())
    assert lead_left(N[:2], running) is None
    why = lead_left((N[2], *N[:2]), running)
    assert why is not None and "n1, n2 only" in why
    assert lead_left(N[:2], None) is None and lead_left((), running) is None
    judged = judge_host_lost("11", (N[2],), why, state="RUNNING")
    assert judged.keep_out == ((N[2], QuarantineReason.SCHEDULER),) and judged.node_lost
    assert judged.verdict.reason.startswith("node_loss: n3 (the job's lead node")


TASKS = [
    (b"srun: error: Node failure on n2\n", 1, Fault.NODE, [N[1]]),
    (b"Traceback (most recent call last):\nModuleNotFoundError: No module named 'torchh'\n", 1, Fault.USER, []),
    (b"OSError: [Errno 28] No space left on device\n", 1, Fault.OTHER, []),
    (b"", 93, Fault.NODE, []),  # the task's supervisor spent the spares; its findings are in its snapshot
    # The supervisor's 3 is its last word, whatever its log quotes: an ordinary retry (never free, nobody kept out).
    (b"srun: error: Node failure on n2\n", 3, Fault.OTHER, []),
    (b"", 1, Fault.OTHER, []),
]


@pytest.mark.parametrize(("output", "rc", "fault", "hosts"), TASKS)
def test_judge_task(output: bytes, rc: int, fault: Fault, hosts: list[Host], patterns: PatternSet) -> None:
    """A failed try's output and exit status: node faults (with the hosts), user errors, the rest."""
    judged = judge_task(output, rc, patterns)
    assert (judged.fault, [h for h, _ in judged.keep_out]) == (fault, hosts), judged.reason


def test_the_supervisors_exit_3_says_it_is_an_ordinary_retry(patterns: PatternSet) -> None:
    """The judgement of a supervisor's exit 3 says why it is neither a user error nor free."""
    judged = judge_task(b"", 3, patterns)
    assert judged.fault is Fault.OTHER and judged.keep_out == ()
    assert "exit 3" in judged.reason and "an ordinary retry, never free" in judged.reason


#: A programming error after progress lines, then Open MPI's banners (mpirun 4.1's words): the user's bug, at any
#: point of the run; the banners are context.
USER_BUG = (b"step 1 loss=0.93\nstep 2 loss=0.88\nTraceback (most recent call last):\n"
            b'  File "train.py", line 40, in <module>\n    batch = shards[rank]\n'
            b"IndexError: list index out of range\n"
            b"--------------------------------------------------------------------------\n"
            b"Primary job  terminated normally, but 1 process returned\n"
            b"a non-zero exit code. Per user-direction, the job has been aborted.\n"
            b"--------------------------------------------------------------------------\n")
#: One rank's own segfault before srun tears the others down: a crash, not a node fault.
SEGFAULT_TEARDOWN = b"srun: error: n2: task 3: Segmentation fault (core dumped)\nsrun: error: n1: task 0: Terminated\n"


def test_a_user_bug_is_a_user_error_for_a_task_and_for_a_job(patterns: PatternSet) -> None:
    """The Parsl and Dask adapters agree: the same log is a user error from judge_task (Fault.USER) and from
    judge_job (class user_error), with nobody kept out and the programming error named."""
    task = judge_task(USER_BUG, 1, patterns)
    assert (task.fault, task.keep_out) == (Fault.USER, ()), task.reason
    job = judge_job(JobEnd("12", N[:2], _facts("JobId=12 JobState=FAILED NodeList=n[1-2] ExitCode=1:0"), {},
                           USER_BUG), patterns)
    assert job.verdict.failure_class.value == "user_error" and job.keep_out == () and not job.node_lost
    assert "IndexError" in task.reason and "IndexError" in job.verdict.reason


def test_a_lone_segfault_keeps_nobody_out(patterns: PatternSet) -> None:
    """A rank's own segfault, then the teardown: an ordinary failure of the task (not a node fault), and a job
    judged rank_killed with n2 named as the crash's origin but kept out by neither."""
    task = judge_task(SEGFAULT_TEARDOWN, 139, patterns)
    assert (task.fault, task.keep_out) == (Fault.OTHER, ()), task.reason
    job = judge_job(JobEnd("13", N[:2], _facts("JobId=13 JobState=FAILED NodeList=n[1-2] ExitCode=139:0"), {},
                           SEGFAULT_TEARDOWN), patterns)
    assert job.verdict.failure_class.value == "rank_killed" and job.verdict.crash, job.verdict.reason
    assert job.verdict.blamed_hosts == (N[1],)  # the origin, for the record
    assert job.keep_out == () and not job.node_lost and not job.verdict.node_fault


#: A block whose srun could not launch on n2 (SLURM 22.05's words): n2 is a lead, not evidence.
SUSPECT_END = JobEnd("9", N[:3], _facts("JobId=9 JobState=FAILED NodeList=n[1-3] ExitCode=1:0"), {},
                     b"srun: error: Task launch for StepId=9.0 failed on node n2: Communication connection failure\n"
                     b"srun: error: Application launch failed: Communication connection failure\n")


def _answers(**ok: bool) -> list[ProbeResult]:
    return [ProbeResult(Host(h), up, "answered" if up else "no answer within 10 s") for h, up in ok.items()]


def test_a_suspect_is_kept_out_only_when_it_fails_its_probe(patterns: PatternSet) -> None:
    """The workflow adapters' rule: the log's suspect is probed beside a control; kept out (probed) only if it fails,
    left alone if it answers, and nobody is blamed when the control fails too."""
    judged = judge_job(SUSPECT_END, patterns)
    assert judged.keep_out == () and judged.verdict.suspect_hosts == (N[1],)
    suspects, control = suspects_to_probe(judged, N[:3])
    assert suspects == (N[1],) and control == N[0]
    dead = confirm_suspects(judged, _answers(n2=False, n1=True), control)
    assert dead.keep_out == ((N[1], QuarantineReason.PROBED),) and dead.node_lost
    assert "did not answer a probe" in dead.verdict.reason
    assert confirm_suspects(judged, _answers(n2=True, n1=True), control).keep_out == ()
    assert confirm_suspects(judged, _answers(n2=False, n1=False), control).keep_out == ()


def test_a_host_outside_the_job_is_never_probed_as_its_suspect(patterns: PatternSet) -> None:
    judged = judge_job(SUSPECT_END, patterns)
    assert suspects_to_probe(judged, [N[0], N[2]]) == ((), N[0])


def test_a_pbs_block_ended_by_its_lead_nodes_crash_blames_that_node(patterns: PatternSet) -> None:
    """Real OpenPBS record of a non-rerunnable 2-node block whose lead (p1) was crashed: Exit_status -20, the
    comment unchanged, no output delivered; with pbsnodes saying p1 down (p2 free), only p1 is kept out, and the
    -20 is never read as a signal (it was: rc 148, SIGTSTP)."""
    facts = parse_qstat_json((DATA / "pbs-bed" / "qstat-xf-mom-crashed-norerun.json").read_text())["9.pbshead"]
    end = JobEnd("9.pbshead", facts.hosts, facts, {Host("p1"): "down", Host("p2"): "free"}, b"", None, ())
    judged = judge_job(end, patterns, state="COMPLETED")
    assert judged.node_lost and judged.keep_out == ((Host("p1"), QuarantineReason.SCHEDULER),)
    assert judged.exit_code is None and "SIGTSTP" not in judged.verdict.reason
