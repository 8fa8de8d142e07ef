"""hotspare_dask.mpi and multi-node jobs: the supervisor's argv, argument checks, the exit statuses raised, the
multi-node headers (SLURM, PBS Pro, Torque), the run directory passed to the jobs, the tasks' findings folded into
the workflow's quarantine; and on the real SLURM bed, a Dask task's MPI job surviving a node crash in its job."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import dask.config
import pytest
from distributed import Client

from hotspare import SNAPSHOT_NAME, Host, Ledger, Quarantine, QuarantineReason, expand_hosts, read_snapshot
from hotspare.act.runner import Outcome
from hotspare.sim.trainer import fault_free_checksum
from hotspare_dask import FailoverPBSCluster, FailoverSLURMCluster, MPIRunFailed, SparesSpent, run_mpi
from hotspare_dask.jobs import (
    FailoverPBSJob,
    FailoverSLURMJob,
    build_pbs_nodes_header,
    build_slurm_nodes_header,
    run_dir_on_worker,
)
from hotspare_dask.mpi import RUN_DIR_ENV, SUPERVISOR_LOG, build_launch_argv, check_exit, workflow_dir
from hotspare_dask.placement import Placement

LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
#: Paths and words a user may well give: spaces, quotes, a shell separator, unicode.
HOSTILE = "/tmp/my dir/it's; rm -rf ~/ünï"  # noqa: S108 -- a path used as a word, never created


# -- the supervisor's argv ---------------------------------------------------------------------------
def test_the_argv_runs_the_supervisor_on_nhosts_with_the_workflows_quarantine() -> None:
    """The command follows ``--``; the quarantine snapshot, the task's run dir and nhosts are passed as flags."""
    argv = build_launch_argv(["python", "train.py"], nhosts=2, launcher="srun", quarantine=Path("/wf/quarantine.json"),
                             run_dir=Path("/wf/tasks/t1"), python="PY")
    assert argv == ["PY", "-P", "-m", "hotspare", "launch", "--launcher", "srun", "--nhosts", "2",
                    "--quarantine", "/wf/quarantine.json", "--run-dir", "/wf/tasks/t1", "--", "python", "train.py"]


def test_the_argv_carries_hostile_words_verbatim_one_argument_each() -> None:
    """Paths and words with spaces, quotes, ';' and unicode stay single arguments (an argv list, never a shell)."""
    argv = build_launch_argv([HOSTILE, "--out", Path(HOSTILE)], nhosts=1, launcher="mpiexec",  # type: ignore[list-item]
                             quarantine=Path(HOSTILE) / SNAPSHOT_NAME, run_dir=Path(HOSTILE),
                             checkpoint_dir=Path(HOSTILE), options=["--launcher-cmd", "mpiexec.mpich"])
    assert argv[argv.index("--checkpoint-dir") + 1] == HOSTILE
    assert argv[argv.index("--quarantine") + 1] == f"{HOSTILE}/{SNAPSHOT_NAME}"
    assert argv[argv.index("--launcher-cmd") + 1] == "mpiexec.mpich"
    assert argv[argv.index("--") + 1:] == [HOSTILE, "--out", HOSTILE]


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"command": []}, "command is empty"),
    ({"command": "python train.py"}, "give a list of words"),
    ({"command": ["python", 3]}, "3 is not a string"),
    ({"nhosts": 0}, "nhosts=0"),
    ({"nhosts": True}, "nhosts=True"),
    ({"nhosts": "2"}, "nhosts='2'"),
    ({"launcher": "local"}, "launcher='local': use one of mpiexec, srun, mpirun"),
    ({"launcher": "srun; reboot"}, "launcher='srun; reboot'"),
    ({"options": "--idle-timeout 5"}, "options='--idle-timeout 5': give a list of words"),
])
def test_bad_arguments_are_refused_in_one_line_naming_the_fix(kwargs: dict[str, Any], says: str) -> None:
    """Each bad argument raises ValueError with a one-line message that names it."""
    given: dict[str, Any] = {"command": ["python"], "nhosts": 1, "launcher": "srun", **kwargs}
    with pytest.raises(ValueError, match=None) as caught:
        build_launch_argv(quarantine=Path("q"), run_dir=Path("r"), **given)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_the_workflow_dir_comes_from_the_job_or_the_caller() -> None:
    """$HOTSPARE_RUN_DIR (set by the clusters' job scripts) unless run_dir is given; neither: a one-line error."""
    assert workflow_dir(None, {RUN_DIR_ENV: "/wf"}) == Path("/wf")
    assert workflow_dir("/other", {RUN_DIR_ENV: "/wf"}) == Path("/other")
    with pytest.raises(ValueError, match=r"HOTSPARE_RUN_DIR is not set .* run_dir= was not given$"):
        workflow_dir(None, {})


# -- the exit statuses ---------------------------------------------------------------------------------
def test_exit_0_is_success() -> None:
    assert check_exit(0, Path("/wf/tasks/t")) == 0


def test_exit_3_raises_with_the_status_the_last_line_and_the_run_dir() -> None:
    """A failed run (3: do not retry) names its status, what the supervisor said last and where the evidence is."""
    with pytest.raises(MPIRunFailed) as caught:
        check_exit(3, Path("/wf/tasks/t"), b"attempt 1 ...\nhotspare: failed: user error (exit 1)\n")
    assert not isinstance(caught.value, SparesSpent)
    assert caught.value.exit_code == 3 and caught.value.run_dir == Path("/wf/tasks/t")
    assert str(caught.value) == "hotspare launch exited 3: hotspare: failed: user error (exit 1) (evidence: /wf/tasks/t)"


def test_exit_93_says_the_spares_are_spent_and_to_retry_in_another_job() -> None:
    """93 is SparesSpent (an MPIRunFailed): the task should run again in another job."""
    with pytest.raises(MPIRunFailed) as caught:
        check_exit(93, Path("/wf/tasks/t"), b"no spare left\n")
    assert isinstance(caught.value, SparesSpent) and caught.value.exit_code == 93
    assert "spares are spent; retry the task in another job" in str(caught.value) and "/wf/tasks/t" in str(caught.value)


@pytest.mark.parametrize("rc", [3, 93])
def test_the_exceptions_survive_the_trip_from_worker_to_client(rc: int) -> None:
    """Dask pickles a task's exception on the worker: the class, fields and message come back whole."""
    with pytest.raises(MPIRunFailed) as caught:
        check_exit(rc, Path("/wf/tasks/t"), b"last words\n")
    back = pickle.loads(pickle.dumps(caught.value))  # noqa: S301 -- our own bytes, made one line above
    assert type(back) is type(caught.value) and str(back) == str(caught.value)
    assert (back.exit_code, back.run_dir) == (rc, Path("/wf/tasks/t"))


class _Started:
    def __init__(self, rc: int) -> None:
        self.rc = rc

    def finish(self) -> Outcome:
        return Outcome(self.rc, 0.1, b"hotspare: no spare left\n", None)


class _Runner:
    """A process gateway that records what it was asked to start."""

    def __init__(self, rc: int) -> None:
        self.rc = rc
        self.started: list[tuple[list[str], Path]] = []

    def launch(self, argv: Sequence[str], log_path: Path, on_output: Any, *, env: Any) -> _Started:
        self.started.append((list(argv), log_path))
        return _Started(self.rc)


@pytest.mark.parametrize(("rc", "raised"), [(0, None), (3, MPIRunFailed), (93, SparesSpent)])
def test_run_mpi_starts_the_supervisor_in_a_fresh_task_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rc: int,
                                                           raised: type[Exception] | None) -> None:
    """run_mpi reads the workflow dir from the job's environment, gives each task its own run dir under tasks/
    (created), logs the supervisor there, and returns 0 or raises by the exit status."""
    monkeypatch.setenv(RUN_DIR_ENV, str(tmp_path / "w f"))
    runner = _Runner(rc)
    for _ in range(2):
        if raised is None:
            assert run_mpi(["prog"], nhosts=2, runner=runner) == 0  # type: ignore[arg-type]
        else:
            with pytest.raises(raised):
                run_mpi(["prog"], nhosts=2, runner=runner)  # type: ignore[arg-type]
    (first, log1), (second, _) = runner.started
    task = Path(first[first.index("--run-dir") + 1])
    assert task.parent == tmp_path / "w f" / "tasks" and task.is_dir() and log1 == task / SUPERVISOR_LOG
    assert first[first.index("--quarantine") + 1] == str(tmp_path / "w f" / SNAPSHOT_NAME)
    assert second[second.index("--run-dir") + 1] != str(task)


def test_a_tasks_own_bug_stops_run_mpi_at_once_with_exit_3(slurm: FailoverSLURMCluster, tmp_path: Path) -> None:
    """The real supervisor on 2 of 3 simulated hosts (its embedded local launcher): the program prints progress
    and then fails on an IndexError; the supervisor stops after its first attempt (a user error, exit 3) and
    run_mpi raises MPIRunFailed (not SparesSpent) at once, the task's run dir holding that one attempt and the
    supervisor's one decision, and the task's findings keep nobody out of the workflow."""
    program = "print('step 1', flush=True); l = []; l[3]"
    # run_mpi refuses the local launcher for real jobs; a later --launcher flag is the supervisor's to honour
    # (argparse keeps the last), and --hosts stands in for the job's SLURM_JOB_NODELIST.
    local = ["--launcher", "local", "--hosts", "h[1-3]", "--scheduler", "none"]
    with pytest.raises(MPIRunFailed) as caught:
        run_mpi([sys.executable, "-c", program], nhosts=2, run_dir=tmp_path / "wf", options=local)
    failed = caught.value
    assert type(failed) is MPIRunFailed and failed.exit_code == 3, str(failed)
    assert failed.run_dir.parent == tmp_path / "wf" / "tasks"
    assert sorted(p.name for p in failed.run_dir.glob("attempt-*.log")) == ["attempt-1.log"]
    assert b"IndexError: list index out of range" in (failed.run_dir / "attempt-1.log").read_bytes()
    ledger = Ledger.open(failed.run_dir)
    try:
        (decision,) = ledger.decisions()
        assert ledger.run_state() == ("failed", 3)
    finally:
        ledger.close()
    assert (decision.action, decision.hosts) == ("stop", ()) and "user_error" in decision.reason, decision.reason
    assert slurm.fold_task_findings() == [] and slurm.quarantine.entries() == []


def test_run_mpi_refuses_bad_arguments_before_making_a_run_dir(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nhosts=0"):
        run_mpi(["prog"], nhosts=0, run_dir=tmp_path)
    assert not (tmp_path / "tasks").exists()


# -- multi-node headers ----------------------------------------------------------------------------------
SLURM_HEADER = "#SBATCH -J w\n#SBATCH -n 1\n#SBATCH --cpus-per-task=2\n#SBATCH --mem=1G"


@pytest.mark.parametrize(("header", "nodes", "expected"), [
    (SLURM_HEADER, 1, SLURM_HEADER),
    (SLURM_HEADER, 4, "#SBATCH -J w\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --no-kill\n"
                      "#SBATCH --cpus-per-task=2\n#SBATCH --mem=1G"),
    # job_directives_skip=["-n 1"]: the node lines are added at the end.
    ("#SBATCH -J w", 2, "#SBATCH -J w\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --no-kill"),
])
def test_slurm_multi_node_header(header: str, nodes: int, expected: str) -> None:
    """-n 1 becomes --nodes=N with one task a node (sbatch shrinks --nodes=4 -n 1 to one node) and --no-kill."""
    assert build_slurm_nodes_header(header, nodes) == expected


@pytest.mark.parametrize(("header", "expected"), [
    ("#PBS -N w\n#PBS -l select=1:ncpus=4:mem=4GB\n#PBS -l walltime=1:00:00",
     "#PBS -N w\n#PBS -l select=3:ncpus=4:mem=4GB\n#PBS -W tolerate_node_failures=all\n#PBS -l walltime=1:00:00"),
    ("#PBS -l select=1", "#PBS -l select=3\n#PBS -W tolerate_node_failures=all"),
    ("#PBS -N w\n#PBS -l nodes=1:ppn=2\n#PBS -l walltime=1:00:00", "#PBS -N w\n#PBS -l nodes=3:ppn=2\n#PBS -l walltime=1:00:00"),
])
def test_pbs_multi_node_header(header: str, expected: str) -> None:
    """PBS Pro: select=N (tolerating a sister node's failure); Torque: nodes=N (slurm-wlm-torque honours it)."""
    assert build_pbs_nodes_header(header, 3) == expected
    assert build_pbs_nodes_header(header, 1) == header


@pytest.mark.parametrize(("build", "header", "says"), [
    (build_slurm_nodes_header, "#SBATCH -n 1\n#SBATCH -N 2", "give the node count once"),
    (build_slurm_nodes_header, "#SBATCH -n 1\n#SBATCH --nodes=2", "give the node count once"),
    (build_pbs_nodes_header, "#PBS -l select=2:ncpus=4", "give resource_spec='select=1"),
    (build_pbs_nodes_header, "#PBS -l walltime=1:00:00", "give resource_spec='select=1"),
])
def test_multi_node_headers_refuse_what_they_cannot_scale(build: Any, header: str, says: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        build(header, 4)
    assert says in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "4"])
def test_bad_job_nodes_are_refused_by_the_cluster(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match=r"job_nodes=.*: give a whole number >= 1"):
        FailoverSLURMCluster(cores=1, memory="1GB", job_nodes=bad, run_dir=tmp_path / "wf", scheduler_options=LOOPBACK)


def test_slurm_jobs_reserve_job_nodes_and_keep_the_exclusion(tmp_path: Path) -> None:
    """A real FailoverSLURMJob of 4 nodes: one worker command, four nodes, --no-kill, the exclusion kept."""
    job = FailoverSLURMJob("tcp://127.0.0.1:1", name="j", cores=2, memory="1GB", processes=1, job_nodes=4,
                           placement=Placement.of(exclude=["n3"]))
    script = job.job_script()
    assert "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --no-kill\n#SBATCH --cpus-per-task=2\n" in script
    assert "#SBATCH -n 1" not in script and job.job_header.endswith("#SBATCH --exclude=n3")
    assert script.count("distributed.cli.dask_worker") == 1


def test_pbs_multi_node_jobs_are_placed_by_pbs_not_pinned() -> None:
    """A PBS job of 2 nodes asks for select=2 and is never pinned (its placement records no pin)."""
    job = FailoverPBSJob("tcp://127.0.0.1:1", name="j", cores=4, memory="4GB", processes=1, job_nodes=2,
                         placement=Placement.of(pin="n2"))
    assert "#PBS -l select=2:ncpus=4:mem=3815MB\n#PBS -W tolerate_node_failures=all\n" in job.job_script()
    assert "host=" not in job.job_script() and job.placement == Placement()


def test_the_worker_command_carries_the_workflow_dir_shell_quoted(tmp_path: Path) -> None:
    """Each job's worker command tells its tasks the cluster's run_dir (quoted: it is a path), before the python
    the user or the config named; the user's prologue is left exactly as given (no export is added to it)."""
    kwargs = run_dir_on_worker({"python": "/opt/py/bin/python3"}, "slurm", Path(HOSTILE))
    assert kwargs["python"] == """HOTSPARE_RUN_DIR='/tmp/my dir/it'"'"'s; rm -rf ~/ünï' /opt/py/bin/python3"""
    assert run_dir_on_worker({}, "slurm", Path("/wf"))["python"] == f"HOTSPARE_RUN_DIR=/wf {sys.executable}"
    with dask.config.set({"jobqueue.slurm.python": "srun python"}):
        assert run_dir_on_worker({}, "slurm", Path("/wf"))["python"] == "HOTSPARE_RUN_DIR=/wf srun python"
    cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "wf", scheduler_options=LOOPBACK,
                                   job_script_prologue=["module load mpi"])
    try:
        script = cluster.job_script()
        assert "module load mpi\n" in script and "export" not in script
        assert f"HOTSPARE_RUN_DIR={tmp_path / 'wf'} {sys.executable} -m distributed.cli.dask_worker " in script
    finally:
        cluster.close()


# -- the tasks' findings folded --------------------------------------------------------------------------
def _task_finds(wf: Path, task: str, host: str) -> None:
    """What a task's supervisor leaves: its own ledger and quarantine.json in wf/tasks/TASK/."""
    own = wf / "tasks" / task
    own.mkdir(parents=True)
    ledger = Ledger.open(own)
    try:
        Quarantine.attach(ledger.connection, snapshot=own / SNAPSHOT_NAME).add(
            Host(host), QuarantineReason.SCHEDULER, attempt=1, detail=f"{host} DOWN")
    finally:
        ledger.close()


@pytest.fixture
def slurm(tmp_path: Path) -> Iterator[FailoverSLURMCluster]:
    cluster = FailoverSLURMCluster(cores=1, memory="1GB", job_nodes=4, run_dir=tmp_path / "wf",
                                   scheduler_options=LOOPBACK)
    try:
        yield cluster
    finally:
        cluster.close()


def test_a_tasks_findings_keep_the_next_job_off_the_host(slurm: FailoverSLURMCluster, tmp_path: Path) -> None:
    """A host a task's supervisor quarantined is folded into the workflow's quarantine before the next job is
    placed (its script excludes it) and published; folding again adds nothing."""
    _task_finds(tmp_path / "wf", "task-a", "n3")
    assert "#SBATCH --exclude=n3" in slurm.job_script()
    (entry,) = slurm.quarantine.entries()
    assert entry.host == Host("n3") and "found by task-a" in entry.detail
    assert [e.host for e in read_snapshot(tmp_path / "wf" / SNAPSHOT_NAME)] == [Host("n3")]
    assert slurm.fold_task_findings() == []
    _task_finds(tmp_path / "wf", "task-b", "n1")
    assert [e.host for e in slurm.fold_task_findings()] == [Host("n1")]


def test_pbs_folds_before_placement_too(tmp_path: Path) -> None:
    """FailoverPBSCluster's own placement folds first: a task's finding makes the next one-node job pinned."""
    cluster = FailoverPBSCluster(cores=1, memory="1GB", hosts=["n1", "n2"], run_dir=tmp_path / "wf",
                                 scheduler_options=LOOPBACK)
    try:
        _task_finds(tmp_path / "wf", "task-a", "n1")
        assert cluster.placement() == Placement(pin=Host("n2"))
    finally:
        cluster.close()


def test_an_unreadable_task_snapshot_is_said_not_fatal(slurm: FailoverSLURMCluster, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "wf" / "tasks" / "t").mkdir(parents=True)
    (tmp_path / "wf" / "tasks" / "t" / SNAPSHOT_NAME).write_text("{half")
    assert slurm.fold_task_findings() == []
    assert "an MPI task's findings could not be read" in caplog.text


# -- on the real SLURM bed -------------------------------------------------------------------------------
STEPS = 30


def _make_train(ckpt: str) -> Any:
    def train() -> int:  # sent by value; run_mpi itself is imported on the worker
        from hotspare_dask import run_mpi  # noqa: PLC0415

        return run_mpi([sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(STEPS), "--ckpt-every", "3",
                        "--ckpt-dir", ckpt, "--step-s", "0.1", "--sync"], nhosts=2, launcher="srun",
                       checkpoint_dir=ckpt, options=["--backoff", "0.2", "--probe-timeout", "3"])

    return train


def test_a_tasks_mpi_job_survives_a_node_crash_in_its_job(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """One Dask job of 4 nodes (--no-kill); its task runs the trainer on 2 of them under the supervisor. A
    non-lead active node is crashed mid-run: the supervisor swaps in a spare and the task returns 0 with the
    fault-free checksum; the job and its worker live on (same batch job, no replacement); after folding, the
    crashed node is in the workflow's quarantine and the next job's script excludes it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_CONF", slurm_bed.env["SLURM_CONF"])
    wf = tmp_path / "wf"
    cluster = FailoverSLURMCluster(cores=1, processes=1, memory="500MB", walltime="00:10:00", job_nodes=4,
                                   run_dir=wf, log_directory=tmp_path / "logs", scheduler_options=LOOPBACK)
    client = None
    try:
        cluster.scale(jobs=1)
        client = Client(cluster, timeout=60)
        client.wait_for_workers(1, timeout=60)
        (job_id,) = [j.job_id for j in cluster.workers.values()]
        future = client.submit(_make_train(str(tmp_path / "ckpt")), pure=False)
        log = slurm_bed.wait_for(lambda: next(wf.glob("tasks/*/attempt-1.log"), None), "the task's first attempt", 30)
        slurm_bed.wait_for(lambda: b"step=6 " in log.read_bytes(), "the trainer to progress", 30)
        allocation = [h.raw for h in expand_hosts(_field(slurm_bed, job_id, "NodeList"))]
        lead = _field(slurm_bed, job_id, "BatchHost")
        victim = next(h for h in allocation[:2] if h != lead)  # the supervisor's active nodes: the first two
        slurm_bed.crash(victim)
        assert future.result(timeout=90) == 0
        ledger = Ledger.open(log.parent)
        try:
            attempts = ledger.attempts()
        finally:
            ledger.close()
        assert victim in attempts[0].hosts and victim not in attempts[-1].hosts and len(attempts) >= 2
        assert f"checksum={fault_free_checksum(STEPS)}" in Path(attempts[-1].log_path).read_text().split()
        assert [j.job_id for j in cluster.workers.values()] == [job_id]
        assert _field(slurm_bed, job_id, "JobState") == "RUNNING"
        assert "#SBATCH --exclude=" + victim in cluster.job_script()  # folded before placement
        assert Host(victim) in cluster.quarantine.hosts()
        assert [r.job_id for r in cluster.record.jobs()] == [str(job_id)]
    finally:
        if client is not None:
            client.close()
        cluster.close()


def _field(bed: Any, job_id: str, field: str) -> str:
    out = bed.scontrol("show", "job", "-o", str(job_id))
    return next((f.split("=", 1)[1] for f in out.split() if f.startswith(f"{field}=")), "")

