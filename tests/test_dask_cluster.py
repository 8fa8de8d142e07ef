"""hotspare_dask over the real dask-jobqueue: the scripts the failover clusters submit (golden), a fresh spec per
job, processes always explicit (#691), the worker preload on a real worker, argument checks, the missing extra,
and a lost job judged, its node quarantined and the job resubmitted elsewhere (no batch system: submit faked)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import dask.config
import pytest
from distributed import Scheduler, Worker
from distributed.core import Server

from hotspare import (
    HOOK_FAILED,
    QUICK_PROBE_GAP_S,
    FailureClass,
    Host,
    HostError,
    JobEnd,
    JobFacts,
    JobJudgement,
    PatternSet,
    QuarantineReason,
    SchedulerQuery,
    judge_job,
    load_patterns,
)
from hotspare.act.life import NO_ROOM
from hotspare.act.runner import Completed
from hotspare.evidence.classify import Verdict
from hotspare_dask import (
    FailoverPBSCluster,
    FailoverPBSJob,
    FailoverSLURMCluster,
    FailoverSLURMJob,
    Placement,
    build_slurm_exclude,
    choose_pin,
    pin_pbs_header,
)
from hotspare_dask import jobs as jobs_module
from hotspare_dask.jobs import build_pbs_no_rerun
from hotspare_dask.loss import LostWorker, decide_replacement, judge_lost, settled, still_lost, within_budget
from hotspare_dask.placement import job_log_files, job_of
from hotspare_dask.preload import HOSTNAME_KEY, JOB_ID_KEY, node_identity
from hotspare_dask.settings import JUDGE_POLL_S, PRELOAD

#: The scheduler and its dashboard on loopback, on free ports: nothing in these tests listens beyond this host.
LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}


def normalise(script: str, tmp_path: Path, address: str) -> str:
    """A script with the run's own paths and scheduler address replaced by fixed words (for golden checks)."""
    return (script.replace(sys.executable, "PYTHON").replace(str(tmp_path), "TMP").replace(address, "SCHEDULER")
            .replace(PRELOAD[1], "PRELOAD.py"))


@pytest.fixture
def slurm(tmp_path: Path) -> Iterator[FailoverSLURMCluster]:
    cluster = FailoverSLURMCluster(cores=4, memory="4GB", run_dir=tmp_path / "run", log_directory=tmp_path / "logs",
                                   scheduler_options=LOOPBACK)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def pbs(tmp_path: Path) -> Iterator[FailoverPBSCluster]:
    cluster = FailoverPBSCluster(cores=4, memory="4GB", run_dir=tmp_path / "run", log_directory=tmp_path / "logs",
                                 hosts=["n1", "n2"], scheduler_options=LOOPBACK)
    try:
        yield cluster
    finally:
        cluster.close()


def submitted_script(cluster: Any) -> str:
    """The script of the next job exactly as SpecCluster would build it: ``cls(address, **options, name=)``."""
    name, spec = next(iter(cluster.new_worker_spec().items()))
    return str(spec["cls"](cluster.scheduler.address, **spec["options"], name=name).job_script())


SLURM_GOLDEN = textwrap.dedent("""\
    #!/usr/bin/env bash

    #SBATCH -J dask-worker
    #SBATCH -e TMP/logs/dask-worker-%J.err
    #SBATCH -o TMP/logs/dask-worker-%J.out
    #SBATCH -n 1
    #SBATCH --cpus-per-task=4
    #SBATCH --mem=4G
    #SBATCH -t 00:30:00{exclude}

    HOTSPARE_RUN_DIR=TMP/run PYTHON -m distributed.cli.dask_worker SCHEDULER --name {name} --nthreads 1 --memory-limit 0.93GiB --nworkers 4 --nanny --death-timeout 60 --preload PRELOAD.py
    """)


def test_slurm_script_has_no_exclude_line_while_the_quarantine_is_empty(slurm: FailoverSLURMCluster,
                                                                        tmp_path: Path) -> None:
    """The real job_script() and the script of the next job: dask-jobqueue's, --nworkers explicit, the preload."""
    address = slurm.scheduler.address
    assert normalise(slurm.job_script(), tmp_path, address) == SLURM_GOLDEN.format(exclude="", name="dummy-name")
    assert normalise(submitted_script(slurm), tmp_path, address) == SLURM_GOLDEN.format(
        exclude="", name="FailoverSLURMCluster-0")


def test_slurm_script_excludes_exactly_the_quarantined_hosts(slurm: FailoverSLURMCluster, tmp_path: Path) -> None:
    """After hosts are quarantined, each new job's script bans them (natural order), nothing else changes."""
    for name in ("n10", "n3"):
        slurm.quarantine.add(Host(name), QuarantineReason.SCRAPED, detail="test")
    address = slurm.scheduler.address
    expected = SLURM_GOLDEN.format(exclude="\n#SBATCH --exclude=n3,n10", name="FailoverSLURMCluster-0")
    assert normalise(submitted_script(slurm), tmp_path, address) == expected
    assert "#SBATCH --exclude=n3,n10\n" in slurm.job_script()
    assert slurm.job_header.endswith("\n#SBATCH --exclude=n3,n10")


PBS_GOLDEN = textwrap.dedent("""\
    #!/usr/bin/env bash

    #PBS -N dask-worker
    #PBS -l select=1:{pin}ncpus=4:mem=3815MB
    #PBS -l walltime=00:30:00
    #PBS -e TMP/logs/
    #PBS -o TMP/logs/
    #PBS -r n

    HOTSPARE_RUN_DIR=TMP/run PYTHON -m distributed.cli.dask_worker SCHEDULER --name FailoverPBSCluster-0 --nthreads 1 --memory-limit 0.93GiB --nworkers 4 --nanny --death-timeout 60 --preload PRELOAD.py
    """)


def test_pbs_script_is_pinned_to_a_good_host_once_one_is_quarantined(pbs: FailoverPBSCluster, tmp_path: Path) -> None:
    """PBS cannot exclude: unplaced while nothing is quarantined, then pinned to the first good host given."""
    address = pbs.scheduler.address
    assert normalise(submitted_script(pbs), tmp_path, address) == PBS_GOLDEN.format(pin="")
    pbs.quarantine.add(Host("n1"), QuarantineReason.SCHEDULER, detail="test")
    assert normalise(submitted_script(pbs), tmp_path, address) == PBS_GOLDEN.format(pin="host=n2:")


def test_a_pbs_job_with_no_host_known_good_is_left_to_pbs_and_that_is_said_once(pbs: FailoverPBSCluster,
                                                                                 tmp_path: Path,
                                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Every host the cluster knows is quarantined: the next job cannot be pinned and goes to PBS unplaced (PBS
    cannot exclude a host), and the cluster says so once, on its log and in the ledger, naming the hosts and how
    they come back; the next job does not say it again."""
    address = pbs.scheduler.address
    for host in ("n1", "n2"):
        pbs.quarantine.add(Host(host), QuarantineReason.SCHEDULER, ttl_s=3600, detail="test")
    with caplog.at_level("WARNING", logger="hotspare_dask.cluster"):
        assert normalise(submitted_script(pbs), tmp_path, address) == PBS_GOLDEN.format(pin="")
        submitted_script(pbs)
    with pbs._db_lock:
        said = [o.detail for o in pbs._ledger.observations() if o.kind == NO_ROOM]
    assert len(said) == 1 and said[0].startswith("a new batch job of this cluster is left to PBS to place: no host "
                                                 "known good to pin it to (quarantined: n1 (until ")
    assert "hotspare quarantine RUN_DIR --readmit HOST" in said[0]
    assert [r.getMessage() for r in caplog.records if "left to PBS" in r.getMessage()] == [f"hotspare: {said[0]}"]


@pytest.mark.parametrize(("header", "expected"), [
    ("#PBS -N w\n#PBS -l select=1:ncpus=4:mem=4GB\n#PBS -l walltime=1:00:00",
     "#PBS -N w\n#PBS -l select=1:host=n7:ncpus=4:mem=4GB\n#PBS -l walltime=1:00:00"),
    ("#PBS -l select=1", "#PBS -l select=1:host=n7"),
    ("#PBS -l nodes=1:ppn=4\n#PBS -q debug", "#PBS -l nodes=n7:ppn=4\n#PBS -q debug"),  # Torque
])
def test_pin_pbs_header(header: str, expected: str) -> None:
    """The one-chunk resource line names the host; everything else is kept."""
    assert pin_pbs_header(header, Host("n7")) == expected


@pytest.mark.parametrize(("header", "expected"), [
    ("#PBS -N w\n#PBS -l select=1:ncpus=4", "#PBS -N w\n#PBS -l select=1:ncpus=4\n#PBS -r n"),
    ("#PBS -N w\n#PBS -r y", "#PBS -N w\n#PBS -r y"),  # the user's own choice is kept
    ("#PBS  -r n", "#PBS  -r n"),
    ("#PBS -N rerun-me", "#PBS -N rerun-me\n#PBS -r n"),  # "-r" inside another directive is not one
])
def test_build_pbs_no_rerun(header: str, expected: str) -> None:
    """Every failover PBS job says ``-r n`` (PBS must not rerun a job the cluster replaces), unless told."""
    assert build_pbs_no_rerun(header) == expected


@pytest.mark.parametrize("header", ["#PBS -l select=2:ncpus=4", "#PBS -l ncpus=4", "#PBS -N w"])
def test_pin_pbs_header_refuses_what_it_cannot_pin(header: str) -> None:
    """A resource line of another shape raises with the fix, rather than send the job anywhere."""
    with pytest.raises(ValueError, match="give resource_spec='select=1:ncpus=N:mem=M'"):
        pin_pbs_header(header, Host("n7"))


@pytest.mark.parametrize(("candidates", "bad", "busy", "expected"), [
    (["n1", "n2", "n3"], ["n1"], [], "n2"),
    (["n1", "n2", "n3"], ["n1"], ["n2"], "n3"),
    (["n1", "n2"], ["n1"], ["n2"], None),  # only busy ones left: unplaced rather than queued behind a job
    (["n1"], ["n1"], [], None),
    ([], ["n1"], [], None),
])
def test_choose_pin(candidates: list[str], bad: list[str], busy: list[str], expected: str | None) -> None:
    """The first candidate neither quarantined nor busy, in the order given; else none."""
    got = choose_pin([Host(h) for h in candidates], [Host(h) for h in bad], [Host(h) for h in busy])
    assert got == (Host(expected) if expected else None)


def test_build_slurm_exclude_and_hostile_names() -> None:
    """Host names are validated before they reach a header line: shell and directive syntax is refused."""
    assert build_slurm_exclude(()) is None
    assert build_slurm_exclude(Placement.of(["n2", "n1", "N1"]).exclude) == "#SBATCH --exclude=n1,n2"
    for hostile in ("n1;rm -rf /", "n1 n2", "n1\n#SBATCH --uid=0", "'n1'", "nœud"):
        with pytest.raises(HostError):
            Placement.of([hostile])


def test_each_job_gets_a_spec_of_its_own(slurm: FailoverSLURMCluster) -> None:
    """Two successive specs are distinct dicts (dask's are one shared dict), and neither is dask's template."""
    first, second = slurm.new_worker_spec(), slurm.new_worker_spec()
    (a,), (b,) = first.values(), second.values()
    assert a is not b and a["options"] is not b["options"] and a["group"] is not b["group"]
    assert a["options"] is not slurm.new_spec["options"]
    a["options"]["placement"] = Placement.of(["n9"])
    assert b["options"]["placement"] == Placement() and "placement" not in slurm.new_spec["options"]


@pytest.mark.parametrize(("cores", "processes", "group"), [
    (4, None, ["-0", "-1", "-2", "-3"]),  # dask-jobqueue's own default for 4 cores, now explicit
    (2, None, ["-0", "-1"]),
    (1, None, None),
    (8, 2, ["-0", "-1"]),
])
def test_processes_always_explicit(tmp_path: Path, cores: int, processes: int | None,
                                   group: list[str] | None) -> None:
    """The default split is passed explicitly, so the spec carries the worker names (dask-jobqueue #691)."""
    kwargs = {} if processes is None else {"processes": processes}
    cluster = FailoverSLURMCluster(cores=cores, memory="1GB", run_dir=tmp_path, scheduler_options=LOOPBACK,
                                   **kwargs)
    try:
        assert cluster._job_kwargs["processes"] == (processes or len(group or [""]))
        assert cluster.new_spec.get("group") == group
        assert ("--nworkers" in cluster.job_script()) == bool(group)
    finally:
        cluster.close()


def test_users_worker_extra_args_are_kept_and_the_preload_added_once(tmp_path: Path) -> None:
    """worker_extra_args the user gave stay first; the preload is not added twice."""
    cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path, scheduler_options=LOOPBACK,
                                   worker_extra_args=["--lifetime", "55m", "--preload", "hotspare_dask.preload"])
    try:
        assert cluster._job_kwargs["worker_extra_args"] == ["--lifetime", "55m", "--preload", "hotspare_dask.preload"]
    finally:
        cluster.close()


@pytest.mark.parametrize(("kwargs", "fix"), [
    ({"max_submits": 0}, "max_submits=0: give a whole number >= 1"),
    ({"max_submits": 2.5}, "max_submits=2.5: give a whole number >= 1"),
    ({"window_s": 0}, "window_s=0: give seconds > 0"),
    ({"quarantine_ttl_s": -5}, "quarantine_ttl_s=-5: give seconds > 0, or None"),
    ({"run_dir": ""}, "run_dir='': give the workflow directory"),
    ({"judge_wait_s": -1}, "judge_wait_s=-1: give seconds >= 0"),
    ({"silence_s": 0}, "silence_s=0: give seconds > 0"),
    ({"silence_floor_s": -1}, "silence_floor_s=-1: give seconds > 0"),
])
def test_bad_failover_arguments_name_the_fix(tmp_path: Path, kwargs: dict[str, Any], fix: str) -> None:
    """Checked before dask starts anything."""
    settings = {"run_dir": tmp_path, **kwargs}
    with pytest.raises(ValueError, match=fix.replace("(", r"\(").replace("+", r"\+")):
        FailoverSLURMCluster(cores=1, memory="1GB", scheduler_options=LOOPBACK, **settings)


def test_pbs_hosts_must_be_a_list(tmp_path: Path) -> None:
    """hosts='n1' (a string) would be read as hosts n, 1: refused with the fix."""
    with pytest.raises(ValueError, match=r"hosts='n1': give a list of host names, e.g. hosts=\['n1'\]"):
        FailoverPBSCluster(cores=1, memory="1GB", run_dir=tmp_path, hosts="n1", scheduler_options=LOOPBACK)


def test_dask_jobqueues_own_keyword_errors_still_reach_the_user(tmp_path: Path) -> None:
    """An unknown keyword is refused by dask-jobqueue as before (the failover ones were popped first)."""
    with pytest.raises(ValueError, match="unexpected keyword argument 'nodes'"):
        FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path, nodes=3, scheduler_options=LOOPBACK)


def test_import_without_dask_jobqueue_names_the_extra() -> None:
    """The adapter without its extra says what to install."""
    code = "import sys; sys.modules['dask_jobqueue'] = None\nimport hotspare_dask"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "pip install 'hotspare[dask]'" in done.stderr


@pytest.mark.parametrize(("environ", "expected"), [
    ({"SLURMD_NODENAME": "n3", "SLURM_JOB_ID": "41"}, {HOSTNAME_KEY: "n3", JOB_ID_KEY: "41"}),
    ({"PBS_JOBID": "77.pbs01"}, {HOSTNAME_KEY: "kernel-name", JOB_ID_KEY: "77.pbs01"}),
    ({}, {HOSTNAME_KEY: "kernel-name"}),
])
def test_node_identity(environ: dict[str, str], expected: dict[str, str]) -> None:
    """SLURM's node name over the kernel's; the batch job id when one is set."""
    assert node_identity(environ, "kernel-name") == expected


@pytest.mark.parametrize("preload", ["hotspare_dask.preload", PRELOAD[1]], ids=["module", "file"])
def test_preload_reaches_the_scheduler_from_a_real_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          preload: str) -> None:
    """A real worker started with the preload, by module name or by the file path the clusters give (a worker in
    a directory holding folders named like the packages), registers its node and job on a real scheduler
    (loopback). The file imports nothing of hotspare's, so such folders cannot stand in for it."""
    (tmp_path / "hotspare").mkdir()
    (tmp_path / "hotspare_dask").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert Path(PRELOAD[1]).is_absolute() and "hotspare" not in PRELOAD[1].rsplit("/", 1)[1]
    assert "import hotspare" not in Path(PRELOAD[1]).read_text() and "from hotspare" not in Path(PRELOAD[1]).read_text()
    monkeypatch.setenv("SLURMD_NODENAME", "n3")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")

    async def run() -> dict[str, Any]:
        async with Scheduler(host="127.0.0.1", dashboard_address=None) as scheduler, \
                Worker(scheduler.address, host="127.0.0.1", preload=[preload]):
            (state,) = scheduler.workers.values()
            return dict(state.extra)

    extra = asyncio.run(asyncio.wait_for(run(), 60))
    assert extra[HOSTNAME_KEY] == "n3" and extra[JOB_ID_KEY] == "4242"


@pytest.mark.parametrize(("worker", "expected"), [
    ("C-0", "C-0"), ("C-0-1", "C-0"), ("C-1-0", "C-1"), ("C-10-0", "C-10"), ("C-2", None), ("other", None),
])
def test_job_of(worker: str, expected: str | None) -> None:
    """A grouped worker's name maps to its job; names of no planned job map to none."""
    assert job_of(worker, {"C-0": ["-0", "-1"], "C-1": ["-0"], "C-10": ["-0"]}) == expected


def test_job_log_files() -> None:
    """SLURM's and PBS's file names for job 123, not those of job 1234 or 12."""
    names = ["dask-worker-123.err", "dask-worker-123.out", "dask-worker.o123", "dask-worker-1234.out",
             "dask-worker-12.out", "notes.txt"]
    assert job_log_files(names, "123") == ["dask-worker-123.err", "dask-worker-123.out", "dask-worker.o123"]


def test_still_lost_and_budget() -> None:
    """Judged once per batch job, only while planned and not back; at most max_submits per window."""
    lost = LostWorker("tcp://127.0.0.1:1", "C-0-1", "C-0", "55", Host("n3"))
    assert still_lost(lost, ["C-0"], ["C-1-0"], [])
    assert not still_lost(lost, [], [], [])  # retired: scale() dropped the name first
    assert not still_lost(lost, ["C-0"], ["C-0-1"], [])  # a nanny restart brought the name back
    assert not still_lost(lost, ["C-0"], [], ["55"])  # its other worker already had the job judged
    assert within_budget([0.0, 1.0], 2.0, 3, 10.0) and not within_budget([0.0, 1.0, 2.0], 3.0, 3, 10.0)
    assert within_budget([0.0, 1.0, 2.0], 12.5, 3, 10.0)


def judgement(fclass: FailureClass, hosts: Sequence[Host] = (), *, hook_failed: bool = False) -> JobJudgement:
    verdict = Verdict(fclass, (), (), (), fclass.retryable, tuple(hosts), f"{fclass.value} here", ())
    keep = tuple((h, QuarantineReason.SCHEDULER) for h in hosts)
    return JobJudgement("55", verdict, keep, (), "NODE_FAIL", None, hook_failed=hook_failed)


@pytest.mark.parametrize(("judged", "budget", "resubmit"), [
    (judgement(FailureClass.NODE_LOSS, [Host("n3")]), True, True),
    (judgement(FailureClass.WALLTIME), True, True),
    (judgement(FailureClass.USER_ERROR), True, False),
    (judgement(FailureClass.UNKNOWN, hook_failed=True), True, False),
    (judgement(FailureClass.NODE_LOSS, [Host("n3")]), False, False),
])
def test_decide_replacement(judged: JobJudgement, budget: bool, resubmit: bool) -> None:
    """Node faults and ordinary ends are resubmitted; user errors and a spent budget are not."""
    assert decide_replacement("C-0", judged, budget_left=budget).resubmit is resubmit


# -- a lost job, end to end through the real cluster (submission faked: no batch system here) ----------------


class NoSubmitJob(FailoverSLURMJob):
    """Submits nothing: job ids from a counter; the scripts it would have submitted and the cancels are kept."""

    ids = itertools.count(7000)
    scripts: list[str] = []  # noqa: RUF012 -- shared by design: every job of the test's cluster writes here
    cancelled: list[str] = []  # noqa: RUF012

    async def _submit_job(self, script_filename: str) -> str:
        self.scripts.append(Path(script_filename).read_text())
        return f"Submitted batch job {next(self.ids)}"

    @classmethod
    async def _close_job(cls, job_id: str, cancel_command: str) -> None:
        cls.cancelled.append(job_id)


def scontrol(argv: Sequence[str], timeout_s: float) -> Completed:
    """scontrol as the bed answers after a node crash: the job NODE_FAIL, its node DOWN*."""
    if argv[:3] == ["scontrol", "show", "job"]:
        out = f"JobId={argv[-1]} JobState=NODE_FAIL Reason=NodeDown NodeList=n3 BatchHost=n3 ExitCode=0:0\n"
    else:
        out = "NodeName=n3 Arch=x86_64 CoresPerSocket=1 State=DOWN* ThreadsPerCore=1\n"
    return Completed(tuple(argv), 0, out, "", False)


def slurm_down_once(down: Any) -> Any:
    """SLURM as it is before its SlurmdTimeout passes: the node ALLOCATED and the job RUNNING until ``down()`` says
    so, then NODE_FAIL on a DOWN* node (:func:`scontrol`); every probe step fails (the control's too: they prove
    nothing)."""
    def run(argv: Sequence[str], timeout_s: float) -> Completed:
        if argv[0] != "scontrol":
            return Completed(tuple(argv), 1, "", "srun: error: timed out", False)
        if down():
            return scontrol(argv, timeout_s)
        out = (f"JobId={argv[-1]} JobState=RUNNING NodeList=n3 ExitCode=0:0\n" if argv[2] == "job"
               else "NodeName=n3 State=ALLOCATED\n")
        return Completed(tuple(argv), 0, out, "", False)
    return run


def wait_for(check: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def first_submit(cluster: Any, job_cls: Any = None) -> None:
    """Waits for the first job's submit and for the cluster to list the job: the submit runs inside the job's start,
    before SpecCluster adds the job to ``cluster.workers``, so the script can be there while the job is not yet."""
    scripts = (job_cls or NoSubmitJob).scripts
    wait_for(lambda: len(scripts) == 1 and all(n in cluster.workers for n in list(cluster.worker_spec)),
             "the first submit")


@pytest.fixture
def live_nanny() -> Iterator[str]:
    """A real distributed server on loopback answering ``identity``: a nanny that outlived its worker (it is
    restarting it), so the cluster submits no standby for the lost job and judges it as a job resubmitted by name."""
    loop = asyncio.new_event_loop()
    started: list[str] = []
    stop = asyncio.Event()

    async def serve() -> None:
        server = Server({})
        await server.listen("tcp://127.0.0.1:0")
        started.append(server.address)
        await stop.wait()
        await server.close()  # type: ignore[no-untyped-call]

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    wait_for(lambda: bool(started), "the nanny's server")
    try:
        yield started[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        loop.close()


def lose_job(cluster: Any, name: str, host: str = "n3", nanny: str | None = None) -> str:
    """Every worker of job ``name`` registers (with the preload's node and job, and ``nanny``: its nanny's address,
    None for one gone with the node) and then leaves, as when its node dies; a second remove of one address follows
    (distributed #5407). Returns the job's batch id."""
    # SpecCluster files the job under workers only after its start (the submit) returns: a submit seen is not yet
    # a job there (hit under load, two compat edges at once).
    wait_for(lambda: name in cluster.workers, f"job {name} to be started")
    job_id = str(cluster.workers[name].job_id)
    suffixes = cluster.worker_spec[name].get("group", [""])
    identities = {f"tcp://127.0.0.1:{9000 + k}": {"name": name + suffix, HOSTNAME_KEY: host, JOB_ID_KEY: job_id,
                                                  "nanny": nanny} for k, suffix in enumerate(suffixes)}

    async def lose() -> None:
        cluster._update_worker_status("add", {"workers": dict(identities)})
        for address in identities:
            cluster._update_worker_status("remove", address)
        cluster._update_worker_status("remove", next(iter(identities)))

    cluster.sync(lose)
    return job_id


def test_a_lost_job_is_judged_its_node_quarantined_and_the_job_resubmitted_elsewhere(tmp_path: Path, live_nanny: str) -> None:
    """Both workers of a processes=2 job leave (the #691 case dask never replaces): the scheduler's NODE_FAIL and
    DOWN* node quarantine n3 with the evidence, the job is cancelled and resubmitted under its name with
    --exclude=n3, and the workflow's record has both jobs."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    query = SchedulerQuery("slurm", None, run=scontrol)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.2s"}):
        cluster = FailoverSLURMCluster(cores=2, memory="1GB", processes=2, run_dir=tmp_path / "run",
                                       job_cls=NoSubmitJob, query=query, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            job_id = lose_job(cluster, name, nanny=live_nanny)
            wait_for(lambda: len(NoSubmitJob.scripts) == 2, "the replacement")
            assert "#SBATCH --exclude" not in NoSubmitJob.scripts[0]
            assert "#SBATCH --exclude=n3\n" in NoSubmitJob.scripts[1] and f"--name {name} " in NoSubmitJob.scripts[1]
            assert NoSubmitJob.cancelled == [job_id]
            assert list(cluster.worker_spec) == [name] and cluster.workers[name].job_id != job_id
            (entry,) = cluster.quarantine.entries()
            assert entry.host == Host("n3") and entry.reason is QuarantineReason.SCHEDULER
            assert f"batch job {job_id}" in entry.detail
            assert "n3" in (tmp_path / "run" / "quarantine.json").read_text()
            wait_for(lambda: len(cluster.record.jobs()) == 2, "the replacement's record")
            first, second = cluster.record.jobs()
            assert (first.job_id, first.hosts, first.scheduler_state) == (job_id, ("n3",), "NODE_FAIL")
            assert second.excluded == ("n3",)
        finally:
            cluster.close()


def test_a_retired_job_is_not_judged(tmp_path: Path) -> None:
    """Workers leaving because scale() dropped their job are no loss: nothing quarantined, nothing resubmitted."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    query = SchedulerQuery("slurm", None, run=scontrol)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       query=query, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            address = "tcp://127.0.0.1:9100"

            async def retire() -> None:
                cluster._update_worker_status("add", {"workers": {address: {"name": name, HOSTNAME_KEY: "n3"}}})
                cluster.worker_spec.clear()  # what scale(0) does before the workers go
                cluster._update_worker_status("remove", address)

            cluster.sync(retire)
            time.sleep(0.5)
            assert cluster.quarantine.entries() == [] and len(NoSubmitJob.scripts) == 1
        finally:
            cluster.close()


@contextlib.contextmanager
def _hook_failed_job(tmp_path: Path, lost_worker_timeout: str) -> Iterator[tuple[Any, str, str]]:
    """A cluster of one job (no submit, scheduler answers empty) whose log says its hotspare hook failed: the
    cluster, the job's name and its batch id; closed after."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    logs = tmp_path / "logs"
    query = SchedulerQuery("slurm", None, run=lambda argv, t: Completed(tuple(argv), 0, "", "", False))
    with dask.config.set({"distributed.deploy.lost-worker-timeout": lost_worker_timeout}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       log_directory=logs, query=query, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            job_id = str(cluster.workers[name].job_id)
            (logs / f"dask-worker-{job_id}.err").write_text(f"{HOOK_FAILED}: python -m setup exited 2\n")
            yield cluster, name, job_id
        finally:
            cluster.close()


def test_a_job_whose_hook_failed_is_not_resubmitted(tmp_path: Path, live_nanny: str) -> None:
    """The job's log (read from log_directory by its batch id) says its hotspare hook failed: a user error, so the
    job is dropped, not resubmitted, and no host is blamed."""
    with _hook_failed_job(tmp_path, "0.1s") as (cluster, name, _):
        lose_job(cluster, name, nanny=live_nanny)
        wait_for(lambda: not cluster.worker_spec, "the job dropped")
        time.sleep(0.3)
        assert len(NoSubmitJob.scripts) == 1 and cluster.quarantine.entries() == []
        (row,) = cluster.record.jobs()
        assert row.failure_class == "user_error" and "hook failed" in row.verdict


def _spare_notes(cluster: Any) -> list[str]:
    with cluster._db_lock:
        return [o.detail for o in cluster._ledger.observations() if o.kind == "spare"]


def test_a_lost_job_whose_nanny_is_gone_gets_a_standby_that_takes_its_place(tmp_path: Path) -> None:
    """A job's worker leaves and its nanny does not answer (gone with the node): a standby job is submitted at once,
    before the judging, as a spare kept off the node (--exclude=n3, HOTSPARE_SPARE=1); judged a node loss, the lost
    job is cancelled and the standby takes its place (no second submit), still starting: said in the ledger."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    cancelled_when_down: list[int] = []  # how many jobs were cancelled each time SLURM answered "down"

    def standby_in() -> bool:
        if len(NoSubmitJob.scripts) < 2:
            return False
        cancelled_when_down.append(len(NoSubmitJob.cancelled))
        return True

    query = SchedulerQuery("slurm", None, run=slurm_down_once(standby_in))
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.5s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       query=query, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            job_id = lose_job(cluster, name)
            wait_for(lambda: len(NoSubmitJob.scripts) == 2, "the standby")
            wait_for(lambda: name not in cluster.worker_spec, "the judgement")
            # The standby was in before anything could judge the node (SLURM said nothing until then), and the lost
            # job was cancelled only after SLURM's first "down".
            assert cancelled_when_down and cancelled_when_down[0] == 0
            time.sleep(0.3)
            standby = NoSubmitJob.scripts[1]
            (standby_name,) = cluster.worker_spec
            assert standby_name != name and not cluster.spares
            assert "#SBATCH --exclude=n3\n" in standby and f"--name {standby_name} " in standby
            assert "HOTSPARE_SPARE=1 " in standby and len(NoSubmitJob.scripts) == 2
            assert NoSubmitJob.cancelled == [job_id]
            submitted, took = _spare_notes(cluster)
            assert submitted == (f"standby {standby_name} submitted for {name}: its worker left the scheduler and no "
                                 "spare was ready; kept off n3")
            new_id = cluster.workers[standby_name].job_id
            assert took == (f"standby {standby_name} (batch job {new_id}) on its node once it starts took the place of "
                            f"{name} (batch job {job_id}): still starting")
            (entry,) = cluster.quarantine.entries()
            assert entry.host == Host("n3")
            wait_for(lambda: len(cluster.record.jobs()) == 2, "the standby's record")
            assert cluster.record.jobs()[1].excluded == ("n3",)
        finally:
            cluster.close()


def test_a_standby_is_cancelled_when_the_lost_job_is_not_replaced(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """The standby submitted for a lost job whose judgement replaces nothing (its hook failed: a user error) is
    cancelled, and the log says why; nothing is left planned."""
    with _hook_failed_job(tmp_path, "0.3s") as (cluster, name, job_id):
        with caplog.at_level(logging.WARNING, logger="hotspare_dask"):
            lose_job(cluster, name)
            wait_for(lambda: len(NoSubmitJob.scripts) == 2, "the standby")
            wait_for(lambda: not cluster.worker_spec and len(NoSubmitJob.cancelled) == 2, "both cancelled")
        assert job_id in NoSubmitJob.cancelled and len(set(NoSubmitJob.cancelled)) == 2 and cluster.spares == []
        assert any(f"for {name} cancelled: batch job {job_id} is not replaced" in r.getMessage()
                   for r in caplog.records), caplog.text


#: A job whose program hit its own bug after progress lines, then Open MPI's banner (mpirun 4.1's words).
USER_BUG = ("step 1 loss=0.93\nstep 2 loss=0.88\nTraceback (most recent call last):\n"
            '  File "train.py", line 40, in <module>\n    batch = shards[rank]\n'
            "IndexError: list index out of range\n"
            "Primary job  terminated normally, but 1 process returned\n"
            "a non-zero exit code. Per user-direction, the job has been aborted.\n")


def test_a_job_lost_to_its_own_bug_is_judged_a_user_error_and_not_resubmitted(patterns: PatternSet) -> None:
    """From the job's real output (not a hand-made judgement): judge_lost says user_error, keeps nobody out, and
    the decision is not to resubmit, even with budget left."""
    end = JobEnd("56", (Host("n3"),), JobFacts("56", "FAILED", (Host("n3"),), 1), {Host("n3"): "IDLE"},
                 USER_BUG.encode())
    judged = judge_lost(end, patterns)
    assert judged.verdict.failure_class is FailureClass.USER_ERROR and judged.keep_out == (), judged.verdict.reason
    decided = decide_replacement("C-0", judged, budget_left=True)
    assert not decided.resubmit and decided.why == "not resubmitted: a user error"


def test_a_job_whose_program_failed_on_its_own_bug_is_not_resubmitted(tmp_path: Path, live_nanny: str) -> None:
    """The job's log (read from log_directory by its batch id) ends in an IndexError after progress lines and the
    scheduler says FAILED with exit 1: a user error, so the job is dropped, not resubmitted, nobody is blamed, and
    the workflow's record says user_error with the programming error named."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    logs = tmp_path / "logs"

    def failed(argv: Sequence[str], timeout_s: float) -> Completed:
        if argv[:3] == ["scontrol", "show", "job"]:
            out = f"JobId={argv[-1]} JobState=FAILED Reason=NonZeroExitCode NodeList=n3 BatchHost=n3 ExitCode=1:0\n"
        else:
            out = "NodeName=n3 Arch=x86_64 CoresPerSocket=1 State=IDLE ThreadsPerCore=1\n"
        return Completed(tuple(argv), 0, out, "", False)

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       log_directory=logs, query=SchedulerQuery("slurm", None, run=failed),
                                       scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            job_id = str(cluster.workers[name].job_id)
            (logs / f"dask-worker-{job_id}.err").write_text(USER_BUG)
            lose_job(cluster, name, nanny=live_nanny)
            wait_for(lambda: not cluster.worker_spec, "the job dropped")
            time.sleep(0.3)
            assert len(NoSubmitJob.scripts) == 1 and cluster.quarantine.entries() == []
            (row,) = cluster.record.jobs()
            assert row.failure_class == "user_error" and "IndexError" in (row.verdict or ""), row.verdict
        finally:
            cluster.close()


def test_a_scheduler_that_cannot_be_asked_is_recorded_and_the_job_replaced_as_before(tmp_path: Path, live_nanny: str) -> None:
    """scontrol failing (the real message of a machine without SLURM configuration): the failure is an observation in
    the ledger, nobody is blamed without evidence, and the job is resubmitted with the same (empty) exclusions."""
    NoSubmitJob.scripts.clear()
    failing = Completed(("scontrol",), 1, "", "scontrol: fatal: Could not establish a configuration source\n", False)
    query = SchedulerQuery("slurm", None, run=lambda argv, t: failing)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       query=query, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            lose_job(cluster, name, nanny=live_nanny)
            wait_for(lambda: len(NoSubmitJob.scripts) == 2, "the replacement")
            assert "--exclude" not in NoSubmitJob.scripts[1] and cluster.quarantine.entries() == []
            errors = [o for o in cluster._ledger.observations() if o.kind == "scheduler-error"]
            assert errors and all("configuration source" in o.detail for o in errors)
        finally:
            cluster.close()


def test_adapt_submits_each_job_with_its_own_spec(tmp_path: Path) -> None:
    """adapt(minimum_jobs=2) goes through new_worker_spec: two jobs, two spec dicts, both scripts placed."""
    NoSubmitJob.scripts.clear()
    cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                   scheduler_options=LOOPBACK)
    try:
        cluster.quarantine.add(Host("n4"), QuarantineReason.PROBED, detail="test")
        cluster.adapt(minimum_jobs=2, maximum_jobs=2, interval="100ms")
        wait_for(lambda: len(NoSubmitJob.scripts) == 2, "two jobs")
        first, second = cluster.worker_spec.values()
        assert first is not second and first["options"] is not second["options"]
        assert all("#SBATCH --exclude=n4\n" in script for script in NoSubmitJob.scripts)
    finally:
        cluster.close()


def end(job_state: str | None, node_state: str) -> JobEnd:
    facts = None if job_state is None else JobFacts("55", job_state, (Host("n3"),), None, "")
    return JobEnd("55", (Host("n3"),), facts, {Host("n3"): node_state}, b"", None, ())


def requeued(restarts: int, state: str = "PENDING", reason: str = "BeginTime") -> JobEnd:
    """A lost job SLURM put back in its queue (as it does for a batch job whose node failed and came back)."""
    return JobEnd("55", (Host("n3"),), JobFacts("55", state, (), None, reason, restarts), {Host("n3"): "IDLE"}, b"",
                  None, ())


@pytest.mark.parametrize(("lost", "judged_now", "blamed"), [
    (requeued(1), True, True),  # the node rebooted within SlurmdTimeout: never DOWN, but the job was requeued
    (requeued(2, "REQUEUE_HOLD"), True, True),
    (requeued(0), False, False),  # a job that has not started yet is no requeue
    (requeued(1, "RUNNING"), False, False),  # restarted before and running: the requeue says nothing of this loss
    (requeued(1, reason="JobHeldAdmin Preempted"), False, False),  # a preemption is no node fault
])
def test_a_job_slurm_requeued_after_its_workers_were_lost_is_a_node_fault(patterns: PatternSet, lost: JobEnd,
                                                                         judged_now: bool, blamed: bool) -> None:
    """Found by benchmarks/dask_recovery.py --reboot-after 5: the crashed node came back before SLURM marked it
    DOWN, SLURM requeued the job (PENDING, Restarts=1), and the cluster waited judge_wait_s, judged 'unknown' and
    resubmitted onto the same node. The requeue is the scheduler's word that the run ended: judged at once, the
    worker's node kept out (the workers' loss is the second signal)."""
    assert settled(lost) is judged_now
    judged = judge_lost(lost, patterns)
    assert judged.keep_out == (((Host("n3"), QuarantineReason.SCHEDULER),) if blamed else ())
    if blamed:
        assert "requeued the job (Restarts=" in judged.verdict.reason


@pytest.mark.parametrize(("lost", "blamed"), [
    (end("RUNNING", "DOWN*"), True),  # judged before SLURM ended the job NODE_FAIL: the node's state decides
    (end("NODE_FAIL", "DOWN*"), True),
    (end(None, "IDLE+NOT_RESPONDING"), True),  # the scheduler forgot the job, but not the node
    (end("RUNNING", "MIXED"), False),  # a healthy node: a worker that left is not a node fault
    (end("COMPLETED", "IDLE"), False),
])
def test_judge_lost(patterns: PatternSet, lost: JobEnd, blamed: bool) -> None:
    """A lost job's host is blamed when the scheduler reports it down, whatever the job's state yet."""
    judged = judge_lost(lost, patterns)
    assert judged.node_lost is blamed
    assert judged.keep_out == (((Host("n3"), QuarantineReason.SCHEDULER),) if blamed else ())


def test_a_nanny_restart_is_not_a_loss(tmp_path: Path) -> None:
    """A worker that comes back under its name (the nanny restarting it in place) is no lost job: nothing
    judged, cancelled, quarantined or resubmitted."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    query = SchedulerQuery("slurm", None, run=scontrol)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       query=query, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec

            async def restart() -> None:
                cluster._update_worker_status("add", {"workers": {"tcp://127.0.0.1:9200": {"name": name}}})
                cluster._update_worker_status("remove", "tcp://127.0.0.1:9200")
                cluster._update_worker_status("add", {"workers": {"tcp://127.0.0.1:9201": {"name": name}}})

            cluster.sync(restart)
            time.sleep(0.5)
            assert (len(NoSubmitJob.scripts), NoSubmitJob.cancelled, cluster.quarantine.entries()) == (1, [], [])
        finally:
            cluster.close()


def test_a_lost_single_process_job_under_adapt_is_cancelled_once_and_replaced_elsewhere(tmp_path: Path, live_nanny: str) -> None:
    """processes=1 under adapt(): the lost job is cancelled once (by this cluster, not dask's timer too) and
    the replacement, not the old spec, is what adapt() keeps running."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    query = SchedulerQuery("slurm", None, run=scontrol)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       query=query, scheduler_options=LOOPBACK)
        try:
            cluster.adapt(minimum_jobs=1, maximum_jobs=1, interval="50ms")
            first_submit(cluster)
            (name,) = cluster.worker_spec
            job_id = lose_job(cluster, name, nanny=live_nanny)
            wait_for(lambda: len(NoSubmitJob.scripts) == 2, "the replacement")
            time.sleep(0.3)  # several adapt rounds
            assert len(NoSubmitJob.scripts) == 2 and NoSubmitJob.cancelled == [job_id]
            assert "#SBATCH --exclude=n3\n" in NoSubmitJob.scripts[1]
        finally:
            cluster.close()


@pytest.mark.parametrize(("cls", "out", "expected"), [
    (FailoverPBSJob, "4711.pbs01\n", "4711.pbs01"),  # PBS Pro: qstat -F json keys jobs by the whole id
    (FailoverPBSJob, "4711\n", "4711"),  # slurm-wlm-torque's qsub
    (FailoverSLURMJob, "Submitted batch job 4711\n", "4711"),
])
def test_job_ids_are_what_the_scheduler_is_asked_with(cls: Any, out: str, expected: str) -> None:
    """The id kept from the submit command's answer."""
    job = cls("tcp://127.0.0.1:1", name="x", cores=1, memory="1GB")
    assert job._job_id_from_submit_output(out) == expected


class NoSubmitPBSJob(FailoverPBSJob):
    """NoSubmitJob for PBS: qsub's answer carries the server name."""

    ids = itertools.count(4711)
    scripts: list[str] = []  # noqa: RUF012 -- shared by design, as NoSubmitJob's

    async def _submit_job(self, script_filename: str) -> str:
        self.scripts.append(Path(script_filename).read_text())
        return f"{next(self.ids)}.pbs01\n"

    @classmethod
    async def _close_job(cls, job_id: str, cancel_command: str) -> None:
        pass


def pbs_commands(argv: Sequence[str], timeout_s: float) -> Completed:
    """PBS Pro as it answers after a node died under job 4711.pbs01: the job still R, its node down."""
    if argv[0] == "qstat":
        out = '{"Jobs": {"4711.pbs01": {"job_state": "R", "exec_host": "n1/0*1"}}}'
    else:
        out = "n1\n     Mom = n1\n     state = down\n     pcpus = 4\n"
    return Completed(tuple(argv), 0, out, "", False)


def test_a_pbs_job_lost_with_its_node_is_resubmitted_pinned_to_another(tmp_path: Path, live_nanny: str) -> None:
    """PBS: qstat (by the whole job id) and pbsnodes say the node is down; n1 is quarantined and the job comes
    back pinned to n2, the other host the user named."""
    NoSubmitPBSJob.scripts.clear()
    query = SchedulerQuery("pbs", None, run=pbs_commands)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverPBSCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", hosts=["n1", "n2"],
                                     job_cls=NoSubmitPBSJob, query=query, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster, NoSubmitPBSJob)
            (name,) = cluster.worker_spec
            assert lose_job(cluster, name, host="n1", nanny=live_nanny) == "4711.pbs01"
            wait_for(lambda: len(NoSubmitPBSJob.scripts) == 2, "the replacement")
            assert "host=" not in NoSubmitPBSJob.scripts[0]
            assert "#PBS -l select=1:host=n2:ncpus=1:mem=954MB\n" in NoSubmitPBSJob.scripts[1]
            (entry,) = cluster.quarantine.entries()
            # Judged by the look at the closed connection's node: PBS calls it down (two signals, no probe needed).
            assert entry.host == Host("n1") and ("was reported unhealthy by the scheduler after its worker's connection "
                                                 "closed") in entry.detail, entry.detail
        finally:
            cluster.close()



@pytest.mark.parametrize(("lost", "done"), [
    (end("RUNNING", "ALLOCATED"), False),  # SLURM has not noticed yet: ask again
    (end("R", "job-busy"), False),  # PBS likewise
    (end("RUNNING", "DOWN*"), True),
    (end("NODE_FAIL", "DOWN*"), True),
    (end("COMPLETED", "IDLE"), True),
    (end("F", "free"), True),
    (end(None, "IDLE"), False),  # the job forgotten but its node looks fine: ask the node again
    (end(None, "down"), True),
    (JobEnd("55", (Host("n3"),), None, {}, b"", None, ()), True),  # nothing can be asked: nothing more will come
])
def test_settled(lost: JobEnd, done: bool) -> None:
    """A lost job is judged once the scheduler ended it or reports its node down."""
    assert settled(lost) is done


def test_judging_waits_for_the_scheduler_to_conclude(tmp_path: Path, live_nanny: str) -> None:
    """scontrol first still says RUNNING on an ALLOCATED node (SlurmdTimeout not yet passed), then NODE_FAIL and
    DOWN*: the job is judged on the later answer, so its node is quarantined rather than trusted. (Before the
    judging, the look at the lost worker's node found it answering both probes: the judging went on as before.)"""
    NoSubmitJob.scripts.clear()
    asked: list[str] = []
    naps: list[float] = []

    def slow_slurm(argv: Sequence[str], timeout_s: float) -> Completed:
        if argv[0] == "srun":  # the look's probes: the node answers
            return Completed(tuple(argv), 0, "", "", False)
        asked.append(argv[2])
        if naps.count(JUDGE_POLL_S) < 2:  # two rounds of (job, node) before SLURM concludes
            out = (f"JobId={argv[-1]} JobState=RUNNING NodeList=n3 ExitCode=0:0\n" if argv[2] == "job"
                   else "NodeName=n3 State=ALLOCATED\n")
            return Completed(tuple(argv), 0, out, "", False)
        return scontrol(argv, timeout_s)

    query = SchedulerQuery("slurm", None, run=slow_slurm)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       query=query, sleep=naps.append, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            lose_job(cluster, name, nanny=live_nanny)
            wait_for(lambda: len(NoSubmitJob.scripts) == 2, "the replacement")
            # The look: the node asked beside two probes (1 s apart; for a closed connection, again while they run
            # and once after), then the job; then the judging's rounds.
            assert naps == [QUICK_PROBE_GAP_S, JUDGE_POLL_S, JUDGE_POLL_S]
            first_job = asked.index("job")
            assert first_job >= 2 and set(asked[:first_job]) == {"node"}
            assert asked[first_job:first_job + 7] == ["job"] + ["job", "node"] * 3
            # Then, placing the replacement, the quarantine's look at its node (is n3 back in service?).
            assert asked[first_job + 7:] and set(asked[first_job + 7:]) == {"node"}
            assert "#SBATCH --exclude=n3\n" in NoSubmitJob.scripts[1]
        finally:
            cluster.close()


def test_close_does_not_wait_out_a_judging_in_progress(tmp_path: Path, live_nanny: str) -> None:
    """A lost job whose scheduler never concludes (RUNNING on an ALLOCATED node) is being judged for up to
    judge_wait_s; close() stops that wait instead of hanging for it, and cancels the job."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    asked: list[str] = []

    def undecided(argv: Sequence[str], timeout_s: float) -> Completed:
        asked.append(argv[2])
        out = (f"JobId={argv[-1]} JobState=RUNNING NodeList=n3 ExitCode=0:0\n" if argv[2] == "job"
               else "NodeName=n3 State=ALLOCATED\n")
        return Completed(tuple(argv), 0, out, "", False)

    query = SchedulerQuery("slurm", None, run=undecided)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.1s"}):
        cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                       query=query, judge_wait_s=600, scheduler_options=LOOPBACK)
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            job_id = lose_job(cluster, name, nanny=live_nanny)
            wait_for(lambda: asked, "the judging to start")
        finally:
            started = time.monotonic()
            cluster.close()
    assert time.monotonic() - started < 15
    assert NoSubmitJob.cancelled == [job_id] and len(NoSubmitJob.scripts) == 1


def test_an_unlistable_log_directory_is_said_in_the_judgement(slurm: FailoverSLURMCluster, tmp_path: Path) -> None:
    """When the job's log directory cannot be listed the job is still judged, and its verdict says what could not
    be read (it used to be judged without its logs, silently)."""
    shutil.rmtree(tmp_path / "logs")
    (tmp_path / "logs").write_text("not a directory")
    end = slurm._read_once(LostWorker("tcp://127.0.0.1:1", "w-0", "w-0", "7", Host("n1")))
    assert len(end.unread) == 1 and str(tmp_path / "logs") in end.unread[0]
    assert "could not read" in judge_job(end, load_patterns()).verdict.reason


def test_expired_quarantine_comes_back_only_after_a_passing_probe(tmp_path: Path) -> None:
    """Two quarantined hosts expire: at the next state correction each is probed with a one-task srun (through
    the cluster's scheduler runner); n3 answers and is readmitted, n4 does not and stays out of the next script,
    and n4 is not probed again on every adapt tick (only after window_s)."""
    NoSubmitJob.scripts.clear()
    probed: list[str] = []

    def run(argv: Sequence[str], timeout_s: float) -> Completed:
        if argv[0] != "srun":
            return Completed(tuple(argv), 1, "", "not asked in this test\n", False)
        host = next(a.split("=", 1)[1] for a in argv if a.startswith("--nodelist="))
        probed.append(host)
        rc = 0 if host == "n3" else 1
        return Completed(tuple(argv), rc, "", "" if rc == 0 else "srun: error: Unable to allocate resources\n", False)

    cluster = FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path / "run", job_cls=NoSubmitJob,
                                   query=SchedulerQuery("slurm", None, run=run), quarantine_ttl_s=0.01,
                                   scheduler_options=LOOPBACK)
    try:
        for name in ("n3", "n4"):
            cluster.quarantine.add(Host(name), QuarantineReason.SCRAPED, ttl_s=0.01, detail="test")
        time.sleep(0.05)
        cluster.adapt(minimum_jobs=1, maximum_jobs=1, interval="100ms")
        first_submit(cluster)
        time.sleep(0.5)  # several adapt ticks
        assert [e.host.name for e in cluster.quarantine.entries()] == ["n4"]
        assert "#SBATCH --exclude=n4\n" in NoSubmitJob.scripts[0], NoSubmitJob.scripts[0]
        assert sorted(probed) == ["n3", "n4"]  # once each: n4 waits window_s before its next probe
    finally:
        cluster.close()


def test_probe_timeout_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="probe_timeout_s"):
        FailoverSLURMCluster(cores=1, memory="1GB", run_dir=tmp_path, probe_timeout_s=0, scheduler_options=LOOPBACK)


def test_a_cancel_that_never_returns_is_killed_and_forced(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    """PBS's qdel of a job whose MOM is frozen never returns: the cancel is bounded (CANCEL_S), killed, and the
    force command tried; when that returns the job is deleted, when it hangs too the log says the job may remain.
    Real processes: ``sleep`` stands for the hanging qdel."""
    monkeypatch.setattr(jobs_module, "CANCEL_S", 0.5)

    class Forced(jobs_module.FailoverPBSJob):
        force_cancel = ("true",)

    class Stuck(jobs_module.FailoverPBSJob):
        force_cancel = ("sh", "-c", "sleep 30")  # the job id after it is the shell's $0

    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="hotspare_dask.jobs"):
        asyncio.run(Forced._close_job("7.head", "sh -c 'sleep 30'"))
        asyncio.run(Stuck._close_job("8.head", "sh -c 'sleep 30'"))
    assert time.monotonic() - started < 10  # two bounded cancels, never the 30 s of either
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("hotspare: sh -c sleep 30 7.head did not return within 0 s") and m.endswith("true deleted it")
               for m in said), said
    assert any("batch job 8.head may remain, delete it by hand" in m for m in said), said
    asyncio.run(Forced._close_job("9.head", "true"))  # a cancel that returns: nothing more, nothing said
    assert len(caplog.records) == 2
    with caplog.at_level(logging.INFO, logger="hotspare_dask.jobs"):
        asyncio.run(Forced._close_job("10.head", "false"))  # one that fails (the job gone): said, not forced
    assert [r.getMessage() for r in caplog.records[2:]] == [
        "hotspare: false 10.head exited 1 (the job may have ended already)"]


def test_a_half_started_standby_that_takes_a_place_has_its_connected_worker_woken(tmp_path: Path) -> None:
    """A standby of a job of two worker processes takes the lost job's place when only one of its workers is in (on a
    slow machine the second registers later): that worker, paused as a spare while it waited, is running once the
    standby is the job (it stayed paused, and the cluster one worker short, when only a whole standby was woken)."""
    NoSubmitJob.scripts.clear()
    NoSubmitJob.cancelled.clear()
    release = threading.Event()  # SLURM says "down" (the judgement may conclude) only once the worker is in

    query = SchedulerQuery("slurm", None, run=slurm_down_once(release.is_set))
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.5s"}):
        cluster = FailoverSLURMCluster(cores=2, processes=2, memory="1GB", run_dir=tmp_path / "run",
                                       job_cls=NoSubmitJob, query=query, scheduler_options=LOOPBACK)
        worker = None
        try:
            cluster.scale(jobs=1)
            first_submit(cluster)
            (name,) = cluster.worker_spec
            lose_job(cluster, name)
            wait_for(lambda: len(NoSubmitJob.scripts) == 2, "the standby")
            (standby,) = cluster.spares
            worker = cluster.sync(Worker, cluster.scheduler.address, name=f"{standby}-1", host="127.0.0.1")
            scheduler = cluster.scheduler
            wait_for(lambda: any(str(ws.name) == f"{standby}-1" and ws.status.name == "paused"
                                 for ws in scheduler.workers.values()), "the standby's first worker, paused")
            release.set()
            wait_for(lambda: name not in cluster.worker_spec and standby in cluster.worker_spec, "the judgement")
            wait_for(lambda: any(str(ws.name) == f"{standby}-1" and ws.status.name == "running"
                                 for ws in scheduler.workers.values()), "the worker woken")
            assert cluster.spares == [] and _spare_notes(cluster)[-1].endswith(": still starting")
        finally:
            if worker is not None:
                cluster.sync(worker.close)
            cluster.close()
