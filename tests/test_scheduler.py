"""Scheduler facts: parsers on captured real output, and queries that fail soft."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from hotspare import Host, pin_pbs_hosts
from hotspare.act.node_states import unhealthy
from hotspare.act.runner import Completed
from hotspare.act.scheduler import (
    SchedulerKind,
    SchedulerQuery,
    parse_duration_s,
    parse_pbsnodes,
    parse_qstat_json,
    parse_qstat_time_left,
    parse_scontrol_job,
    parse_scontrol_nodes,
    parse_squeue_time_left,
)
from hotspare.supervisor import RunConfig

DATA = Path(__file__).parent / "data" / "slurm-testbed"


@pytest.mark.parametrize(("text", "seconds"), [
    ("1-02:03:04", 93784), ("02:03:04", 7384), ("3:04", 184), ("45", 45), ("0:00", 0),
    ("UNLIMITED", None), ("INVALID", None), ("NOT_SET", None), ("", None),
])
def test_durations(text: str, seconds: float | None) -> None:
    """SLURM %L and PBS walltime strings become seconds; UNLIMITED and friends become None."""
    assert parse_duration_s(text) == seconds


def test_squeue_and_qstat_time_left() -> None:
    """Remaining walltime from squeue %L and from qstat -f (PBS Pro's Walltime.Remaining or limit minus used)."""
    assert parse_squeue_time_left("  1:02:00\n") == 3720
    assert parse_qstat_time_left("Job Id: 7.pbs\n    Walltime.Remaining = 3540\n") == 3540
    text = "Job Id: 7.pbs\n    Resource_List.walltime = 01:00:00\n    resources_used.walltime = 00:10:30\n"
    assert parse_qstat_time_left(text) == 2970


def test_scontrol_show_node_from_the_test_bed() -> None:
    """The crashed node's block in a real capture reads DOWN+NOT_RESPONDING: unhealthy."""
    text = (DATA / "a2-crash-node.log").read_text()
    block = text[text.index("NodeName=n2"):]
    block = block[: block.index("###")]
    states = parse_scontrol_nodes(block)
    assert states == {Host("n2"): "DOWN+NOT_RESPONDING"}
    assert unhealthy(states[Host("n2")])


def test_pbsnodes_from_the_torque_wrappers() -> None:
    """pbsnodes output (slurm-wlm-torque) gives each node's state; free is healthy."""
    states = parse_pbsnodes((DATA / "t3-torque-wrappers.log").read_text())
    assert {h.name for h in states} >= {"n1", "n2", "n3", "n4"}
    assert not any(unhealthy(s) for s in states.values())


@pytest.mark.parametrize(("state", "sick"), [
    ("DOWN*", True), ("IDLE+NOT_RESPONDING", True), ("ALLOCATED*", True), ("FAIL", True), ("down,offline", True),
    ("state-unknown", True), ("ALLOCATED", False), ("MIXED", False), ("free", False), ("job-exclusive", False),
    ("DRAINING", False),
])
def test_unhealthy_states(state: str, sick: bool) -> None:
    """SLURM '*'/DOWN/NOT_RESPONDING/FAIL and PBS down/offline/unknown are unhealthy; busy or draining nodes are not."""
    assert unhealthy(state) is sick


def test_queries_fail_soft() -> None:
    """Outside a job, or when the command fails, the query knows nothing rather than inventing a fault."""
    assert SchedulerQuery.detect({}).node_states([Host("n1")]) == {}
    assert SchedulerQuery.detect({}).walltime_left_s() is None

    def broken(argv: Sequence[str], timeout_s: float) -> Completed:
        return Completed(tuple(argv), None, "", "", True)

    slurm = SchedulerQuery("slurm", "9", run=broken)
    assert slurm.node_states([Host("n1")]) == {} and slurm.walltime_left_s() is None
    assert SchedulerQuery.detect({"SLURM_JOB_ID": "9"}).kind == "slurm"
    assert SchedulerQuery.detect({"PBS_JOBID": "9.pbs"}).kind == "pbs"


def test_slurm_query_asks_the_right_commands() -> None:
    """node_states asks scontrol for exactly the active hosts (raw forms); walltime asks squeue %L."""
    asked: list[tuple[str, ...]] = []

    def run(argv: Sequence[str], timeout_s: float) -> Completed:
        asked.append(tuple(argv))
        return Completed(tuple(argv), 0, "5:00\n" if argv[0] == "squeue" else "NodeName=n1 State=IDLE\n", "", False)

    query = SchedulerQuery("slurm", "77", run=run)
    assert query.node_states([Host("n1"), Host("n2")]) == {Host("n1"): "IDLE"}
    assert query.walltime_left_s() == 300
    assert asked == [("scontrol", "show", "node", "n1,n2"), ("squeue", "-h", "-j", "77", "-o", "%L")]


def test_scheduler_kind_is_a_value() -> None:
    """"slurm"/"pbs" become SchedulerKind members (equal to the names); any other kind is refused."""
    assert SchedulerQuery("pbs", None).kind is SchedulerKind.PBS and SchedulerKind.PBS == "pbs"
    with pytest.raises(ValueError, match="use one of slurm, pbs or None"):
        SchedulerQuery("lsf", None)


@pytest.mark.parametrize(("script", "hosts", "expected"), [
    ("#PBS -l select=${nodes_per_block}:ncpus=${ncpus}\n", ["x1001c0s0b0n0", "x1001c0s1b0n0"],
     "#PBS -l select=1:host=x1001c0s0b0n0:ncpus=${ncpus}+1:host=x1001c0s1b0n0:ncpus=${ncpus}\n"),
    ("#!/bin/bash\n#PBS -l select=1:ncpus=4:mem=8GB\n#PBS -l walltime=1:00:00\n", ["n3"],
     "#!/bin/bash\n#PBS -l select=1:host=n3:ncpus=4:mem=8GB\n#PBS -l walltime=1:00:00\n"),
    ("#PBS -l select=2\n", ["n3", "n4"], "#PBS -l select=1:host=n3+1:host=n4\n"),
    ("#PBS -l nodes=${nodes_per_block}:ppn=${tasks_per_node}\n", ["n2", "n4"], "#PBS -l nodes=n2:ppn=${tasks_per_node}+n4:ppn=${tasks_per_node}\n"),
    ("#PBS -l nodes=1:ppn=2 # spare\n", ["n4-hsn0.example"], "#PBS -l nodes=n4-hsn0.example:ppn=2 # spare\n"),
    ("#PBS -l walltime=1:00:00\n", ["n3"], None),  # nothing to pin
    ("#PBS -l select=1:ncpus=4\n", [], None),
])
def test_pin_pbs_hosts(script: str, hosts: list[str], expected: str | None) -> None:
    """PBS Pro select chunks and Torque nodes= lines ask for exactly the given hosts (PBS cannot exclude one)."""
    assert pin_pbs_hosts(script, [Host(h) for h in hosts]) == expected


def test_scontrol_restarts_are_read() -> None:
    """SLURM's Restarts= (a requeued job) reaches JobFacts; a job never restarted reads 0."""
    facts = parse_scontrol_job("JobId=1 JobName=dask-worker JobState=PENDING Reason=BeginTime Dependency=(null) "
                               "Requeue=1 Restarts=1 BatchFlag=1 ExitCode=0:0 NodeList=(null)")
    assert facts is not None and facts.restarts == 1 and facts.requeued and facts.hosts == ()
    fresh = parse_scontrol_job("JobId=2 JobState=RUNNING Restarts=0 NodeList=n1 ExitCode=0:0")
    assert fresh is not None and fresh.restarts == 0 and not fresh.requeued


def test_describe_names_who_is_asked() -> None:
    """The ledger's "watch" note says which scheduler is asked about the nodes, and how (or that none is)."""
    assert SchedulerQuery("slurm", "42").describe() == "slurm job 42 (scontrol show node)"
    assert SchedulerQuery("pbs", "9.pbs").describe() == "pbs job 9.pbs (pbsnodes)"
    assert SchedulerQuery.detect({}).describe() == "none: hosts are judged by probes alone"


def test_the_scheduler_can_be_named() -> None:
    """--scheduler: auto prefers SLURM's job, a named scheduler wins over the environment, none asks nobody, and a
    wrong name is refused in one line."""
    both = {"SLURM_JOB_ID": "42", "PBS_JOBID": "9.pbs"}
    assert SchedulerQuery.detect(both).describe() == "slurm job 42 (scontrol show node)"
    assert SchedulerQuery.detect(both, choice="pbs").describe() == "pbs job 9.pbs (pbsnodes)"
    assert SchedulerQuery.detect(both, choice="none").kind is None
    assert SchedulerQuery.detect({}, choice="slurm").describe() == "slurm no job id (scontrol show node)"
    with pytest.raises(ValueError, match="scheduler 'lsf': use one of auto, slurm, pbs, none"):
        SchedulerQuery.detect({}, choice="lsf")


def test_the_run_config_keeps_and_checks_its_scheduler() -> None:
    """RunConfig.scheduler survives the ledger's JSON (so --resume asks the same scheduler); a wrong one is refused."""
    config = RunConfig(command=("train",), allocation=("n1",), nhosts=1, scheduler="pbs")
    assert RunConfig.from_json(config.to_json()).scheduler == "pbs"
    with pytest.raises(ValueError, match="scheduler 'lsf': use one of auto, slurm, pbs, none"):
        RunConfig(command=("train",), allocation=("n1",), nhosts=1, scheduler="lsf")


PBS_BED = Path(__file__).parent / "data" / "pbs-bed"


@pytest.mark.parametrize(("capture", "job", "expected"), [
    ("qstat-xf-finished.json", "0.pbshead", ("F", 0, False, ("p1", "p2"))),
    ("qstat-xf-finished-exit3.json", "1.pbshead", ("F", 3, False, None)),
    # A non-rerunnable job whose mother superior's node was crashed: ended after node_fail_requeue, Exit_status -20,
    # its comment unchanged ("Job run at ... on (p1:ncpus=2)+(p2:ncpus=2)").
    ("qstat-xf-mom-crashed-norerun.json", "9.pbshead", ("F", -20, True, ("p1", "p2"))),
])
def test_parse_qstat_json_on_real_openpbs(capture: str, job: str, expected: tuple[object, ...]) -> None:
    """Real OpenPBS 23.06 ``qstat -x -f -F json`` from the bed: Exit_status -20 (JOB_EXEC_RERUN_MS_FAIL: the job's
    mother superior went down) is read as a node failure; the comment does not say so."""
    state, exit_code, node_failed, hosts = expected
    facts = parse_qstat_json((PBS_BED / capture).read_text())[job]
    assert (facts.state, facts.exit_code, facts.node_failed) == (state, exit_code, node_failed)
    if hosts is not None:
        assert facts.hosts == tuple(Host(h) for h in hosts)  # type: ignore[attr-defined]
    if node_failed:
        assert facts.reason.startswith("Job run at") and "down" not in facts.reason
