"""hotspare_parsl pieces that need no cluster: the provider over a real LocalProvider under real HTEX, the
resubmission bound, PBS host pinning, scheduler job records, and the retry costs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import parsl
import pytest
from parsl.app.errors import BashExitFailure
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.executors.high_throughput.errors import ManagerLost
from parsl.jobs.states import JobState
from parsl.providers import LocalProvider, PBSProProvider, TorqueProvider

from conftest import run_cli
from hotspare import (
    HOOK_EXIT,
    HOOK_FAILED,
    SNAPSHOT_NAME,
    Host,
    JobEnd,
    Quarantine,
    QuarantineReason,
    judge_job,
    load_patterns,
)
from hotspare.act.life import NO_ROOM
from hotspare.act.runner import Completed
from hotspare.act.scheduler import SchedulerQuery, parse_qstat_json, parse_scontrol_job
from hotspare_parsl import (
    FailoverProvider,
    ResubmissionLimit,
    RetryHandler,
    block_error_handler,
    block_prologue,
    mpi_launch,
    pin_pbs_select,
    retry_handler,
)
from hotspare_parsl.block import exports, split_block
from hotspare_parsl.judging import Block
from hotspare_parsl.layout import read_record
from hotspare_parsl.pbs import finished_as_completed, merge_qstat_json, qsub_with_output, split_qstat_json

DATA = Path(__file__).parent / "data"


@parsl.python_app
def square(x: int) -> int:
    return x * x


def test_htex_over_failover_local_provider_runs_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-line change: HTEX with FailoverProvider(LocalProvider) runs tasks as with LocalProvider, and
    the DFK's script_dir reaches the wrapped provider."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    inner = LocalProvider(init_blocks=1, max_blocks=1)
    provider = FailoverProvider(inner, run_dir=tmp_path / "wf")
    config = Config(executors=[HighThroughputExecutor(label="htex", address="127.0.0.1", loopback_address="127.0.0.1",
                                                      max_workers_per_node=2, provider=provider)],
                    run_dir=str(tmp_path / "runinfo"))
    with parsl.load(config):
        assert [f.result(timeout=120) for f in [square(i) for i in range(20)]] == [i * i for i in range(20)]
    assert inner.script_dir is not None and provider.script_dir == inner.script_dir
    provider.close()


def test_resubmission_is_bounded(tmp_path: Path) -> None:
    """More blocks than max_submits in the window: submit refuses with a one-line reason, nothing started."""
    inner = LocalProvider()
    inner.script_dir = str(tmp_path)
    provider = FailoverProvider(inner, run_dir=tmp_path / "wf", max_submits=2, window_s=3600)
    ids = [provider.submit("sleep 30", 1) for _ in range(2)]
    try:
        with pytest.raises(ResubmissionLimit, match="max_submits=2"):
            provider.submit("sleep 30", 1)
        assert len(inner.resources) == 2
        statuses = provider.status(ids)
        assert all(s is not inner.resources[j]["status"] for s, j in zip(statuses, ids, strict=True))
    finally:
        provider.cancel(ids)
        provider.close()


def test_pbs_select_line_pinned_to_known_good_hosts() -> None:
    template = "#!/bin/bash\n#PBS -S /bin/bash\n#PBS -l select=${nodes_per_block}:ncpus=${ncpus}\n#PBS -l walltime=1\n"
    pinned = pin_pbs_select(template, ["x1001c0s0b0n0", "x1001c0s1b0n0"])
    assert "#PBS -l select=1:host=x1001c0s0b0n0:ncpus=${ncpus}+1:host=x1001c0s1b0n0:ncpus=${ncpus}\n" in pinned
    assert pinned.replace(pinned.splitlines()[2], "") == template.replace(template.splitlines()[2], "")
    with pytest.raises(Exception, match="host"):
        pin_pbs_select(template, ["n1;rm -rf /"])


def test_scheduler_job_records() -> None:
    """scontrol show job -o (captured on the bed) and PBS Pro qstat -x -f -F json: state, hosts, exit. The failed
    and finished PBS jobs are hand-written in PBS Pro's format (no PBS Pro here); the running one is real."""
    running = parse_scontrol_job((DATA / "slurm-testbed" / "scontrol-job-running-2nodes.txt").read_text())
    assert running is not None and running.state == "RUNNING"
    assert running.hosts == (Host("n1"), Host("n2")) and running.exit_code == 0
    assert parse_scontrol_job("JobId=7 JobState=NODE_FAIL NodeList=n[1-3] ExitCode=0:9 Reason=NodeDown").node_failed
    pbs = parse_qstat_json((DATA / "pbs-qstat-xf-json-node-fail.json").read_text())
    failed, ok = pbs["4711.pbs01"], pbs["4712.pbs01"]
    assert failed.state == "F" and failed.exit_code == -3 and "failed" in failed.reason
    assert failed.hosts == (Host("x3001c0s7b0n0"), Host("x3001c0s7b1n0"))
    assert ok.exit_code == 0 and ok.hosts == (Host("x3001c0s9b0n0"),)
    assert parse_qstat_json("not json") == {}
    # A real `qstat -xf -F json` capture (PBS Pro 19.0.0 at MetaCentrum, published with the swrap project;
    # Variable_List and credential fields left out): a running two-node job.
    real = parse_qstat_json((DATA / "pbs-qstat-xf-json-metacentrum-running.json").read_text())
    job = real["12860476.meta-pbs.metacentrum.cz"]
    assert (job.state, job.exit_code) == ("R", None)
    assert job.hosts == (Host("charon24"), Host("charon21"))
    assert job.reason.startswith("Job run at Tue Oct 04 at 21:23 on (charon24")


def test_block_split_keeps_the_lead_and_leaves_quarantined_out() -> None:
    hosts = [Host(h) for h in ("n1", "n2", "n3", "n4")]
    assert split_block(hosts, 1, frozenset()) == (hosts[:3], hosts[3:])
    assert split_block(hosts, 1, frozenset({Host("n2")})) == ([hosts[0], hosts[2]], [hosts[3]])
    assert split_block(hosts[:1], 2, frozenset()) == (hosts[:1], [])


def _record(tmp_path: Path, out: bytes, task_id: int = 1) -> dict[str, object]:
    stdout = tmp_path / f"t{task_id}.out"
    with stdout.open("ab") as f:
        f.write(out)
    return {"id": task_id, "kwargs": {"stdout": str(stdout)}, "dfk": _dfk(), "executor": "x"}


def _dfk(run_id: str = "wf-1", provider: FailoverProvider | None = None) -> SimpleNamespace:
    return SimpleNamespace(config=SimpleNamespace(retries=2), run_id=run_id,
                           executors={"x": SimpleNamespace(provider=provider)})


def test_retry_costs(tmp_path: Path) -> None:
    """Node failures are free up to their own bound; a user error costs more than the retries; other failures
    cost 1; each try's output is read once (the file is appended across tries)."""
    handler = RetryHandler(node_failures=2)
    lost = ManagerLost(b"abc", "n7")
    rec = _record(tmp_path, b"")
    assert [handler(lost, rec) for _ in range(3)] == [0.0, 0.0, 1.0]
    user = _record(tmp_path, b"Traceback (most recent call last):\nModuleNotFoundError: No module named 'torchh'\n", 2)
    assert handler(BashExitFailure("train", 1), user) == 3.0
    node = _record(tmp_path, b"srun: error: Node failure on n2\n", 3)
    assert handler(BashExitFailure("train", 143), node) == 0.0
    # The next try of task 3 printed nothing new: the old node line is not read again.
    assert handler(BashExitFailure("train", 1), _record(tmp_path, b"", 3)) == 1.0
    # Task ids restart at 0 in every workflow: another workflow's task 1 has its own node-failure count.
    other = {**_record(tmp_path, b"", 1), "dfk": _dfk("wf-2")}
    assert handler(lost, other) == 0.0
    # `hotspare launch` spent the block's spares and asked to be retried elsewhere (exit 93): a node failure.
    assert handler(BashExitFailure("train", 93), _record(tmp_path, b"", 4)) == 0.0


def test_a_supervisors_exit_3_is_an_ordinary_retry_never_free(tmp_path: Path) -> None:
    """Exit 3 from a task's supervisor (a user error, the same failure on healthy hosts, a limit: the code does not
    say which) costs 1, so Parsl's own ``retries`` decide; it never rides on the free node-failure allowance, before
    or after that allowance is spent (issue 20: it used to cost retries + 1, or read as a node failure)."""
    handler = RetryHandler(node_failures=2)
    lost = ManagerLost(b"abc", "n7")
    assert handler(BashExitFailure("train", 3), _record(tmp_path, b"", 1)) == 1.0
    assert [handler(lost, _record(tmp_path, b"", 1)) for _ in range(2)] == [0.0, 0.0]
    assert handler(BashExitFailure("train", 3), _record(tmp_path, b"", 1)) == 1.0
    assert handler(lost, _record(tmp_path, b"", 1)) == 1.0  # the allowance is spent...
    assert handler(BashExitFailure("train", 3), _record(tmp_path, b"", 1)) == 1.0  # ...and 3 still costs 1
    # Whatever the supervisor's log says (it may quote a node's failure it then got past), 3 is its last word.
    node_line = _record(tmp_path, b"srun: error: Node failure on n2\n", 2)
    assert handler(BashExitFailure("train", 3), node_line) == 1.0


#: A bash app's own output (no supervisor): a programming error after progress, as Open MPI's mpirun prints it.
INDEX_ERROR = (b"step 1 loss=0.93\nstep 2 loss=0.88\nTraceback (most recent call last):\n"
               b'  File "train.py", line 40, in <module>\n    batch = shards[rank]\n'
               b"IndexError: list index out of range\n"
               b"Primary job  terminated normally, but 1 process returned\n"
               b"a non-zero exit code. Per user-direction, the job has been aborted.\n")
#: One rank's own segfault, then srun tearing the others down: a crash, not a node fault.
SEGFAULT = b"srun: error: n2: task 3: Segmentation fault (core dumped)\nsrun: error: n1: task 0: Terminated\n"


@pytest.mark.parametrize(("output", "rc", "cost", "fault"), [
    (INDEX_ERROR, 1, 3.0, "user"),  # retries + 1: it would fail the same way again
    (SEGFAULT, 139, 1.0, "other"),  # an ordinary retry; n2 is not kept out on its own crash
])
def test_a_bash_apps_own_output_is_costed_by_its_meaning(tmp_path: Path, output: bytes, rc: int, cost: float,
                                                         fault: str) -> None:
    """Without a supervisor the handler reads the try's output: a traceback ending in a programming error after
    progress lines is a user error at any point of the run; a rank's own segfault before the teardown costs 1 and
    keeps nobody out. Judged through a real FailoverProvider, whose record and quarantine are read back."""
    inner = LocalProvider()
    inner.script_dir = str(tmp_path)
    provider = FailoverProvider(inner, run_dir=tmp_path / "wf")
    try:
        record = {**_record(tmp_path, output), "dfk": _dfk(provider=provider)}
        assert RetryHandler()(BashExitFailure("train", rc), record) == cost
        (row,) = provider.retries()
        assert (row.fault.value, row.cost) == (fault, cost), row.reason
        assert provider.quarantine.entries() == []
    finally:
        provider.close()


@parsl.bash_app
def supervised_index_error(base: str, stdout: str = "", stderr: str = "") -> str:
    """A program that fails on its own bug after a progress line, under ``hotspare launch`` on 2 of 3 simulated
    hosts (the embedded local launcher); each try writes a run directory of its own under ``base``."""
    import shlex  # noqa: PLC0415 -- runs in the worker
    import sys  # noqa: PLC0415

    program = "print('step 1', flush=True); l = []; l[3]"
    run_dir = f"{shlex.quote(base)}/try-$$-$(date +%s%N)"
    return (f"{shlex.quote(sys.executable)} -m hotspare launch --launcher local --hosts 'h[1-3]' --nhosts 2 "
            f"--scheduler none --run-dir {run_dir} -- {shlex.quote(sys.executable)} -c {shlex.quote(program)}")


def test_a_supervised_user_error_is_tried_as_often_as_parsl_retries_say(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Real HTEX over FailoverProvider(LocalProvider), retries=2, the hotspare retry handler: the task's
    supervisor stops the IndexError at its first attempt (exit 3), each try costs 1, so Parsl tries it exactly 3
    times, one supervisor attempt each: 3 launches of the program in all (issue 20 saw 18). The final exception
    is exit 3; the workflow's record has 3 ordinary retries, each saying so; nobody is kept out."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    provider = FailoverProvider(LocalProvider(init_blocks=1, max_blocks=1), run_dir=tmp_path / "wf")
    executor = HighThroughputExecutor(label="htex", address="127.0.0.1", loopback_address="127.0.0.1",
                                      max_workers_per_node=1, provider=provider,
                                      block_error_handler=block_error_handler)
    config = Config(executors=[executor], run_dir=str(tmp_path / "runinfo"), retries=2,
                    retry_handler=RetryHandler())
    tries = tmp_path / "tries"
    tries.mkdir()
    try:
        with parsl.load(config):
            future = supervised_index_error(str(tries), stdout=str(tmp_path / "t.out"), stderr=str(tmp_path / "t.err"))
            with pytest.raises(BashExitFailure) as failure:
                future.result(timeout=180)
            fail_count = future.task_record["fail_count"]
        assert failure.value.exitcode == 3
        assert fail_count == 3
        runs = sorted(tries.iterdir())
        assert len(runs) == 3 and all(sorted(p.name for p in r.glob("attempt-*.log")) == ["attempt-1.log"]
                                      for r in runs), [list(r.iterdir()) for r in runs]
        assert all(b"IndexError: list index out of range" in (r / "attempt-1.log").read_bytes() for r in runs)
        retries = provider.retries()
        assert [(r.fault.value, r.cost) for r in retries] == [("other", 1.0)] * 3
        assert all("an ordinary retry, never free" in r.reason for r in retries)
        assert provider.quarantine.entries() == []
    finally:
        provider.close()


@pytest.mark.parametrize("broken", [{"executor": "no-such-executor"}, {"dfk": SimpleNamespace(run_id="wf")}])
def test_retry_handler_does_not_swallow_its_own_bugs(tmp_path: Path, broken: dict[str, object]) -> None:
    """A task record the handler cannot make sense of (an executor the DFK does not have, a DFK without its
    config) raises: Parsl then fails the task with the handler's exception, visibly. The handler used to
    swallow AttributeError/KeyError/TypeError and carry on without the provider (issue 9, defect 4)."""
    record = {**_record(tmp_path, b"srun: error: Node failure on n2\n", 9), **broken}
    with pytest.raises((KeyError, AttributeError)):
        RetryHandler()(BashExitFailure("train", 1), record)


@parsl.python_app
def where(marker: str, seconds: float) -> str:
    import os  # noqa: PLC0415 -- runs in the worker
    import pathlib  # noqa: PLC0415
    import time  # noqa: PLC0415

    pathlib.Path(marker).write_text(os.environ.get("HOTSPARE_HOST", ""))
    time.sleep(seconds)
    return os.environ.get("HOTSPARE_HOST", "")


def test_local_block_killed_is_a_lost_simulated_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LocalProvider with simulated hosts, real HTEX: kill the running block's process group (its host
    "powers off"). The task is lost with the manager and retried at no cost (retries=0); the block is judged a
    node loss of sim1, which is quarantined; the block error handler does not put the executor into a bad
    state although init_blocks=1 (Parsl's default handler would); the replacement block is sim2's."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    inner = LocalProvider(init_blocks=1, min_blocks=0, max_blocks=1)
    provider = FailoverProvider(inner, run_dir=tmp_path / "wf", simulated_hosts=["sim1", "sim2"])
    executor = HighThroughputExecutor(label="htex", address="127.0.0.1", loopback_address="127.0.0.1",
                                      max_workers_per_node=1, heartbeat_period=1, heartbeat_threshold=4,
                                      provider=provider, block_error_handler=block_error_handler)
    config = Config(executors=[executor], run_dir=str(tmp_path / "runinfo"), retries=0, retry_handler=retry_handler,
                    strategy="simple", strategy_period=1)
    marker = tmp_path / "started"
    with parsl.load(config):
        future = where(str(marker), 6)
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline, "the task never started"
            time.sleep(0.1)
        assert marker.read_text() == "sim1"
        marker.unlink()
        (job,) = list(inner.resources)
        group = os.getpgid(inner.resources[job]["remote_pid"])
        assert group != os.getpgid(0)
        os.killpg(group, signal.SIGKILL)
        assert future.result(timeout=120) == "sim2"
        assert not executor.bad_state_is_set
    assert [(e.host.name, e.reason) for e in provider.quarantine.entries()] == [("sim1", "scheduler")]
    provider.close()


def test_pipeline_driver_survives_its_block_by_whole_job_retry(tmp_path: Path) -> None:
    """examples/parsl_pipeline.py: the driver owns its block; kill the block after stage 2. The lost manager is
    recorded as a whole-job retry (cost 0, the failed try's seconds), the rerun on d2 skips stages 1-2."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    try:
        import parsl_pipeline  # noqa: PLC0415 -- the example, as a user runs it
    finally:
        sys.path.pop(0)
    done, retries = parsl_pipeline.run(tmp_path, stages=5, stage_s=0.5, kill_after_stage=2)
    assert [s.split("@")[0] for s in done] == ["1", "2", "3", "4", "5"]
    assert done[:2] == ["1@d1", "2@d1"] and done[-1] == "5@d2"
    assert [(r.scope, r.fault.value, r.cost) for r in retries] == [("whole_job", "node", 0.0)]
    assert retries[0].try_s is not None and retries[0].try_s > 0.5
    # The workflow directory reads back through `hotspare postmortem`: the lost block, the free retry, d1 kept out.
    shown = run_cli("postmortem", str(tmp_path / "hotspare-run"))
    assert shown.returncode == 0, shown.stderr
    assert "whole_job  node       0" in shown.stdout and "d1 (scheduler)" in shown.stdout, shown.stdout
    data = json.loads(run_cli("postmortem", "--json", str(tmp_path / "hotspare-run")).stdout)
    assert [(r["scope"], r["fault"]) for r in data["retries"]] == [("whole_job", "node")]
    assert [q["host"] for q in data["quarantine"]] == ["d1"]


@pytest.mark.parametrize("python", ["/bin/false", "/nonexistent/python3"])
def test_a_failing_block_hook_stops_the_block_visibly(tmp_path: Path, python: str) -> None:
    """The block prologue when its helper fails (hotspare missing on the compute node, an unreadable quarantine
    snapshot): the block script exits HOOK_EXIT before its work, with the HOOK_FAILED line on stderr, and the
    core judges it a hook failure, not a node fault. The old ``eval "$(helper)"`` ran the work on every node,
    quarantined ones included, with no spares (issue 9, defect 2)."""
    script = block_prologue(python, tmp_path / "wf", 1, "parsl.block-0") + "echo the work ran\n"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == HOOK_EXIT and "work ran" not in done.stdout, (done.stdout, done.stderr)
    assert HOOK_FAILED in done.stderr
    judged = judge_job(JobEnd("7", output=done.stderr.encode(), rc=done.returncode), load_patterns())
    assert judged.hook_failed and not judged.node_lost and "hook failed" in judged.verdict.reason
    old = 'eval "$(' + python + ' -m hotspare_parsl.block)"\necho the work ran\n'
    assert "work ran" in subprocess.run(["bash", "-c", old], capture_output=True, text=True, timeout=30,
                                        check=False).stdout  # what the defect was


def test_block_hook_reads_the_snapshot_and_writes_only_its_own_directory(tmp_path: Path) -> None:
    """The hook leaves quarantined hosts out using the workflow's published snapshot and writes only under
    blocks/NAME/; with no snapshot it fails (exit 2, one line) rather than run on unchecked nodes."""
    wf = tmp_path / "wf"
    owner = Quarantine.open(wf / "ledger.sqlite", snapshot=wf / SNAPSHOT_NAME)
    env = {"SLURM_JOB_NODELIST": "n[1-4]", "SLURMD_NODENAME": "n1", "PATH": os.environ["PATH"]}
    hook = [sys.executable, "-m", "hotspare_parsl.block", "--run-dir", str(wf), "--spares", "1", "--job-name", "b0"]
    missing = subprocess.run(hook, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "quarantine" in missing.stderr
    owner.add(Host("n2"), "probed", detail="test")
    before = {p: p.stat().st_mtime_ns for p in wf.iterdir() if p.is_file()}
    done = subprocess.run(hook, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "export SLURM_NODELIST=n1,n3\n" in done.stdout and "export HOTSPARE_BLOCK_SPARES=n4\n" in done.stdout
    assert {p: p.stat().st_mtime_ns for p in wf.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in (wf / "blocks").iterdir()) == ["b0"]


def test_a_block_hook_run_beside_folders_named_like_the_packages_imports_the_installed_ones(tmp_path: Path) -> None:
    """A workflow's working directory may hold a folder named ``hotspare`` (a natural run directory) or a stray
    ``hotspare_dask``: the block prologue's hook still imports the installed packages (``python -P``: the working
    directory is not put first on ``sys.path``). Run the old way, the same folder is named in one line."""
    work = tmp_path / "work"
    (work / "hotspare").mkdir(parents=True)
    (work / "hotspare_dask").mkdir()
    wf = tmp_path / "wf"
    owner = Quarantine.open(wf / "ledger.sqlite", snapshot=wf / SNAPSHOT_NAME)
    owner.add(Host("n2"), "probed", detail="test")
    env = {"SLURM_JOB_NODELIST": "n[1-4]", "SLURMD_NODENAME": "n1", "PATH": os.environ["PATH"]}
    script = block_prologue(sys.executable, wf, 1, "b0") + 'echo "active=$SLURM_NODELIST spares=$HOTSPARE_BLOCK_SPARES"\n'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=work, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "active=n1,n3 spares=n4" in done.stdout
    old = subprocess.run([sys.executable, "-m", "hotspare_parsl.block", "--run-dir", str(wf), "--spares", "1",
                          "--job-name", "b1"], capture_output=True, text=True, env=env, cwd=work, timeout=60, check=False)
    assert old.returncode != 0
    assert f"ImportError: the folder {work / 'hotspare'} hides the installed hotspare package" in old.stderr, old.stderr


def test_import_without_parsl_names_the_extra() -> None:
    """In an environment without Parsl, ``import hotspare_parsl`` says which extra to install."""
    code = "import sys; sys.modules['parsl'] = None\nimport hotspare_parsl"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "pip install 'hotspare[parsl]'" in done.stderr, done.stderr


@pytest.mark.parametrize(("cmd", "expected"), [
    ("qsub  /wf/scripts/parsl.b.1.submit", "qsub -o /wf/scripts/parsl.b.1.submit.stdout -e /wf/scripts/parsl.b.1.submit.stderr "
     "/wf/scripts/parsl.b.1.submit"),
    ("qsub  -q debug -A proj '/wf/my scripts/b.submit'", "qsub -q debug -A proj -o '/wf/my scripts/b.submit.stdout' -e "
     "'/wf/my scripts/b.submit.stderr' '/wf/my scripts/b.submit'"),
    ("qsub -o /elsewhere/out /wf/b.submit", "qsub -o /elsewhere/out /wf/b.submit"),  # the user's own choice stays
    ("qstat -f 12", "qstat -f 12"),
])
def test_qsub_is_told_where_the_block_output_goes(cmd: str, expected: str) -> None:
    """PBS submits name the block's output files on qsub's command line (slurm-wlm-torque's qsub overrides the
    template's #PBS -o/-e with relative paths in the working directory; TorqueProvider records none)."""
    assert qsub_with_output(cmd)[0] == expected


def test_a_scheduler_that_cannot_be_asked_is_recorded_and_said_once(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Blocks judged while scontrol fails (the real message of a machine with no SLURM configuration): each
    failure is an observation in the workflow's ledger, the warning is said once on stderr, and the block is
    still judged from its output (issue 9, defect 4)."""
    failing = Completed(("scontrol",), 1, "", "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: "
                        "Unknown host\nscontrol: fatal: Could not establish a configuration source\n", False)
    inner = LocalProvider()
    inner.script_dir = str(tmp_path)
    query = SchedulerQuery("slurm", None, run=lambda argv, t: replace(failing, argv=tuple(argv)))
    provider = FailoverProvider(inner, run_dir=tmp_path / "wf", query=query)
    jobs = [provider.submit("true", 1), provider.submit("true", 1)]
    try:
        deadline = time.monotonic() + 60
        while not all(s.terminal for s in provider.status(jobs)):
            assert time.monotonic() < deadline, "the blocks never ended"
            time.sleep(0.2)
        provider.status(jobs)
        errors = [o for o in provider._ledger.observations() if o.kind == "scheduler-error"]
        assert len(errors) >= 2 and all("res_nsearch error" in o.detail for o in errors)
        assert [r.failure_class for r in provider.record.jobs()] == ["success", "success"]
    finally:
        provider.cancel(jobs)
        provider.close()
    assert capsys.readouterr().err.count("cannot ask the scheduler") == 1


def test_an_unreadable_block_record_is_logged_and_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A block's record that is not JSON (a half-copied file, a hostile host): no hosts from it, and the
    provider's log says why (the provider then asks the scheduler); a record not written yet is silent."""
    wf = tmp_path / "wf"
    assert read_record(wf, "b0") == () and not caplog.records
    (wf / "blocks" / "b0").mkdir(parents=True)
    (wf / "blocks" / "b0" / "record.json").write_text('{"hosts": ["n1; rm -rf /"]}')
    with caplog.at_level("WARNING"):
        assert read_record(wf, "b0") == ()
    assert "cannot read its record" in caplog.text and "b0" in caplog.text


@pytest.mark.parametrize(("cmd", "expected"), [
    ("qstat -x -f -F json 9.pbshead 10.pbshead",
     ["qstat -x -f -F json 9.pbshead", "qstat -x -f -F json 10.pbshead"]),
    ("qstat -x -f -F json 9.pbshead", None),  # one job: asked as it is
    ("qstat -x 9.pbshead 10.pbshead", None),  # text output lists every job
    ("qsub script.sh", None),
])
def test_split_qstat_json(cmd: str, expected: list[str] | None) -> None:
    """OpenPBS 23.06 answers ``qstat -F json A B`` with A alone (seen on the bed): one command per job."""
    assert split_qstat_json(cmd) == expected


def test_merge_qstat_json() -> None:
    """Jobs of several answers in one; a job qstat forgot is left out; no answer at all: the first failure."""
    one = (0, json.dumps({"Jobs": {"9.s": {"job_state": "F"}}}), "")
    two = (0, json.dumps({"Jobs": {"10.s": {"job_state": "R"}}}), "")
    gone = (153, "", "qstat: Unknown Job Id 11.s")
    rc, out, _ = merge_qstat_json([one, gone, two])
    assert rc == 0 and json.loads(out) == {"Jobs": {"9.s": {"job_state": "F"}, "10.s": {"job_state": "R"}}}
    assert merge_qstat_json([gone, (2, "", "down")]) == gone


def test_pbs_pins_to_given_hosts_neither_quarantined_nor_held(tmp_path: Path) -> None:
    """FailoverProvider(PBSProProvider, hosts=...): pin candidates are the given hosts first, minus quarantined
    hosts and those a live block holds; fewer than a block needs: no pin. Bad ``hosts=`` is refused in one line."""
    provider = FailoverProvider(PBSProProvider(), run_dir=tmp_path / "wf", hosts=["p1", "p2", "p3", "p4"])
    try:
        provider.quarantine.add(Host("p1"), QuarantineReason.SCHEDULER, detail="test")
        provider._blocks["7.s"] = Block("7.s", "b", hosts=(Host("p3"),))  # live: not judged
        assert provider._known_good(2) == ["p2", "p4"]
        assert provider._known_good(3) == []
    finally:
        provider.close()
    with pytest.raises(ValueError, match="give a list of host names"):
        FailoverProvider(PBSProProvider(), run_dir=tmp_path / "wf2", hosts="p1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hosts= is for PBS"):
        FailoverProvider(LocalProvider(), run_dir=tmp_path / "wf3", hosts=["p1"])


def _recording_qsub(inner_cls: type[TorqueProvider], tmp_path: Path) -> tuple[TorqueProvider, list[str]]:
    """A PBS provider whose scripts go under ``tmp_path`` and whose ``qsub`` only records the command (the job ids
    it answers are 1.s, 2.s, ...)."""
    inner = inner_cls()
    inner.script_dir = str(tmp_path / "scripts")
    os.mkdir(inner.script_dir)
    asked: list[str] = []

    def qsub(cmd: str, timeout: int = 10) -> tuple[int, str, str]:
        asked.append(cmd)
        return 0, f"{len(asked)}.s\n", ""

    inner.execute_wait = qsub  # type: ignore[method-assign]
    return inner, asked


def test_a_pbs_block_with_no_host_known_good_is_left_to_pbs_and_that_is_said_once(tmp_path: Path) -> None:
    """Every host given is quarantined: a PBS block cannot be pinned and is submitted unplaced, and the provider
    says so once in the workflow's ledger, naming the hosts and how they come back."""
    inner, asked = _recording_qsub(PBSProProvider, tmp_path)
    provider = FailoverProvider(inner, run_dir=tmp_path / "wf", hosts=["p1", "p2"])
    try:
        for host in ("p1", "p2"):
            provider.quarantine.add(Host(host), QuarantineReason.SCHEDULER, ttl_s=3600, detail="test")
        provider.submit("sleep 1", 1, job_name="b0")
        provider.submit("sleep 1", 1, job_name="b1")
        said = [o.detail for o in provider._ledger.observations() if o.kind == NO_ROOM]
    finally:
        provider.close()
    assert len(asked) == 2 and not any("host=" in Path(c.split()[-1]).read_text() for c in asked)
    assert len(said) == 1 and said[0].startswith("block b0 is left to PBS to place: no host known good to pin it "
                                                 "to (quarantined: p1 (until ")


@pytest.mark.parametrize(("inner", "spares", "tolerant"), [
    (PBSProProvider, 1, True),
    (PBSProProvider, 0, False),  # no spare to take a lost node's place: PBS may end the block
    (TorqueProvider, 1, False),  # Torque has no tolerate_node_failures
])
def test_a_pbs_pro_block_with_spares_outlives_a_sister_node(tmp_path: Path, inner: type[TorqueProvider],
                                                            spares: int, tolerant: bool) -> None:
    """The script a PBS Pro block with spares is submitted with asks PBS to tolerate a sister node's failure (by
    default PBS ends the job, on the bed 106 s after the crash, taking the task on the spare with it); every PBS
    block is not rerunnable."""
    provider_inner, asked = _recording_qsub(inner, tmp_path)
    provider = FailoverProvider(provider_inner, spares_per_block=spares, run_dir=tmp_path / "wf")
    try:
        provider.submit("sleep 1", 1)
    finally:
        provider.close()
    (cmd,) = asked
    script = Path(cmd.split()[-1]).read_text()
    assert "#PBS -r n\n" in script
    assert ("#PBS -W tolerate_node_failures=all\n" in script) is tolerant, script


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"launcher": "srun"}, "--launcher srun --"),
    ({"launcher": "mpiexec", "launcher_cmd": "mpiexec.hydra", "launcher_rsh": "/opt/pbs/bin/pbs_tmrsh"},
     "--launcher mpiexec --launcher-cmd mpiexec.hydra --launcher-rsh /opt/pbs/bin/pbs_tmrsh --"),
    ({"launcher": "mpiexec", "launcher_rsh": "/opt/my pbs/pbs_tmrsh"}, "--launcher-rsh '/opt/my pbs/pbs_tmrsh' --"),
])
def test_mpi_launch_line(kwargs: dict[str, str], expected: str) -> None:
    """The line a bash app returns: hotspare launch with the launcher's options, the command quoted word by word,
    the job's own node file handed back first inside a PBS block."""
    line = mpi_launch(["train.py", "a b;c"], python="/venv/python", **kwargs)
    assert line.startswith('${HOTSPARE_JOB_NODEFILE:+env PBS_NODEFILE="$HOTSPARE_JOB_NODEFILE"} /venv/python -P -m '
                           "hotspare launch ")
    assert expected in line and line.endswith("-- train.py 'a b;c'")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"launcher": "srun", "launcher_rsh": "pbs_tmrsh"}, "is for MPICH Hydra: give launcher='mpiexec'"),
    ({"launcher": "mpiexec", "launcher_rsh": " pbs_tmrsh"}, "empty or padded"),
    ({"launcher": "mpiexec", "launcher_rsh": ""}, "empty or padded"),
    ({"launcher": "aprun"}, "use one of"),
])
def test_mpi_launch_refuses_bad_options_in_the_workflow(kwargs: dict[str, str], message: str) -> None:
    """A bad launcher or remote shell fails when the app is called, in the workflow, not later on a node."""
    with pytest.raises(ValueError, match=message):
        mpi_launch(["train.py"], **kwargs)


@pytest.mark.parametrize("job_nodefile", ["", "/var/spool/pbs/aux/7.s"])
def test_the_supervisor_gets_the_jobs_own_node_file_back(tmp_path: Path, job_nodefile: str) -> None:
    """Run by a shell, the line's first word gives the supervisor the job's PBS_NODEFILE (pbs_tmrsh finds a host's
    TM node by its line there) when the block hook set HOTSPARE_JOB_NODEFILE, and changes nothing otherwise."""
    line = mpi_launch(["ignored"], launcher="mpiexec", python=sys.executable)
    show = line.split(" -m hotspare ")[0] + ' -c "import os; print(os.environ.get(\'PBS_NODEFILE\'))"'
    env = {"PATH": os.environ["PATH"], "PBS_NODEFILE": "/narrowed"}
    if job_nodefile:
        env["HOTSPARE_JOB_NODEFILE"] = job_nodefile
    done = subprocess.run(["sh", "-c", show], capture_output=True, text=True, env=env, timeout=30, check=True)
    assert done.stdout.strip() == (job_nodefile or "/narrowed")


def test_a_pbs_blocks_hook_keeps_the_jobs_node_file_for_pbs_tmrsh(tmp_path: Path) -> None:
    """In a PBS block the hook narrows PBS_NODEFILE to the active nodes (for Parsl's MPI scheduler) and exports the
    job's own as HOTSPARE_JOB_NODEFILE: pbs_tmrsh maps a host to its TM node by its line in PBS_NODEFILE, so with
    the narrowed file a spare is "not a node in job" and a host after a quarantined one maps to the wrong node."""
    wf = tmp_path / "wf"
    owner = Quarantine.open(wf / "ledger.sqlite", snapshot=wf / SNAPSHOT_NAME)
    owner.add(Host("p2"), "probed", detail="test")
    nodefile = tmp_path / "aux" / "7.s"
    nodefile.parent.mkdir()
    nodefile.write_text("p1\np2\np3\np4\n")
    lines = exports(wf, 1, "b0", {"PBS_NODEFILE": str(nodefile), "PBS_JOBID": "7.s"})
    assert f"export HOTSPARE_JOB_NODEFILE={nodefile}\n" in lines
    assert f"export PBS_NODEFILE={wf / 'blocks' / 'b0' / 'active'}\n" in lines
    assert (wf / "blocks" / "b0" / "active").read_text() == "p1\np3\n"
    assert "export HOTSPARE_BLOCK_SPARES=p4\n" in lines


@pytest.mark.parametrize(("answer", "expected"), [
    ((0, '{"Jobs": {"9.s": {"job_state": "F"}, "10.s": {"job_state": "R"}}}', ""),
     (0, '{"Jobs": {"9.s": {"job_state": "C"}, "10.s": {"job_state": "R"}}}', "")),
    ((153, "", "qstat: Unknown Job Id 11.s"), (153, "", "qstat: Unknown Job Id 11.s")),
    ((0, "9.s  b0  root  00:00:01 F batch\n", ""), (0, "9.s  b0  root  00:00:01 F batch\n", "")),  # not JSON
    ((0, '["F"]', ""), (0, '["F"]', "")),
])
def test_finished_as_completed(answer: tuple[int, str, str], expected: tuple[int, str, str]) -> None:
    """Only the job_state of JSON jobs in F changes (to C); failures and text output pass unchanged."""
    assert finished_as_completed(answer) == expected


def test_a_finished_pbs_pro_block_reads_completed_with_any_parsl_in_range(tmp_path: Path) -> None:
    """PBS Pro's F (finished) reaches Parsl as COMPLETED, also from Parsl releases whose state table lacks F
    (before 2026.4.13: there the block stayed UNKNOWN, never judged nor replaced)."""
    inner = PBSProProvider()
    inner.resources["9.s"] = {"job_id": "9.s", "status": None, "job_stdout_path": "o", "job_stderr_path": "e"}
    inner.execute_wait = lambda cmd, timeout=10: (0, json.dumps({"Jobs": {"9.s": {"job_state": "F"}}}), "")  # type: ignore[method-assign]
    provider = FailoverProvider(inner, run_dir=tmp_path / "wf")
    try:
        (answer,) = provider.status(["9.s"])
    finally:
        provider.close()
    assert answer.state == JobState.COMPLETED
