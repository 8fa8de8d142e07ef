"""The supervisor end to end with the real local launcher and the synthetic trainer (real processes)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import HOTSPARE, fake_slurm
from hotspare import Host
from hotspare.act.runner import Completed
from hotspare.act.scheduler import SchedulerQuery
from hotspare.decide.policy import Budgets
from hotspare.decide.pool import Pool
from hotspare.errors import EXIT_INTERRUPTED, EXIT_NO_RETRY, EXIT_OK, EXIT_RETRY_ELSEWHERE
from hotspare.record.ledger import Ledger
from hotspare.record.quarantine import Quarantine
from hotspare.sim.demo import crash_when
from hotspare.sim.trainer import advance, fault_free_checksum
from hotspare.supervisor import RunConfig, Supervisor

HOSTS = ("n1", "n2", "n3", "n4")
STEPS = 30


def trainer(ckpt: Path, *extra: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(STEPS), "--ckpt-every", "5",
            "--ckpt-dir", str(ckpt), "--step-s", "0.03", *extra)


def config(tmp: Path, *extra: str, idle_s: float = 20.0) -> RunConfig:
    return RunConfig(command=trainer(tmp / "ckpt", *extra), allocation=HOSTS, nhosts=3, launcher="local", ppn=2,
                     checkpoint_dir=str(tmp / "ckpt"), idle_timeout_s=idle_s, grace_s=2, probe_timeout_s=3,
                     budgets=Budgets(backoff_base_s=0.05, backoff_max_s=0.1))


def final_checksum(run_dir: Path) -> str | None:
    ledger = Ledger.open(run_dir)
    try:
        last = ledger.attempts()[-1]
    finally:
        ledger.close()
    words = Path(last.log_path).read_text(errors="replace").split()
    return next((w.split("=", 1)[1] for w in reversed(words) if w.startswith("checksum=")), None)


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[Path]:
    """Kill any launcher group a test left behind (by the pgids the ledger recorded), even on failure."""
    yield tmp_path
    for ledger_path in tmp_path.rglob("ledger.sqlite"):
        ledger = Ledger.open(ledger_path.parent)
        for row in ledger.attempts():
            if row.pgid:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(row.pgid, signal.SIGKILL)
        ledger.close()


@pytest.mark.parametrize("k", [0, 1, 2])
def test_crashed_host_k_is_exactly_the_one_evicted(leftovers: Path, k: int) -> None:
    """The seed's discriminating test for every k: crash active[k]; that host and no other is swapped out,
    the run resumes from a checkpoint and ends with the fault-free checksum."""
    victim = HOSTS[k]

    def on_attempt(number: int, pool: Pool, log: Path) -> None:
        if number == 1:
            crash_when(log, victim, step=12)

    run = leftovers / "run"
    code = Supervisor(config(leftovers), run, on_attempt=on_attempt).run()
    assert code == EXIT_OK
    ledger = Ledger.open(run)
    attempts, decisions = ledger.attempts(), ledger.decisions()
    entries = Quarantine.attach(ledger.connection).entries()
    ledger.close()
    assert [a.failure_class for a in attempts] == ["rank_killed", "success"]
    assert (decisions[0].action, decisions[0].hosts, decisions[0].quarantine_reason) == ("swap", (victim,), "scraped")
    assert [(e.host.name, e.reason) for e in entries] == [(victim, "scraped")]
    assert attempts[1].hosts == tuple(h if h != victim else "n4" for h in HOSTS[:3])
    assert attempts[1].resumed_step is not None and attempts[1].resumed_step >= 10
    assert final_checksum(run) == fault_free_checksum(STEPS)


def test_enospc_retries_in_place_without_spending_a_spare(leftovers: Path) -> None:
    """ENOSPC raised by the trainer: transient_io, retried on the same hosts, no quarantine, success."""
    run = leftovers / "run"
    assert Supervisor(config(leftovers, "--enospc-at", "8"), run).run() == EXIT_OK
    ledger = Ledger.open(run)
    attempts = ledger.attempts()
    assert [a.failure_class for a in attempts] == ["transient_io", "success"]
    assert attempts[0].hosts == attempts[1].hosts and attempts[1].spares == ("n4",)
    assert Quarantine.attach(ledger.connection).entries() == []
    ledger.close()
    assert final_checksum(run) == fault_free_checksum(STEPS)


def test_user_error_is_not_retried(leftovers: Path) -> None:
    """A missing module at start: user_error, one attempt, the 'do not retry' exit code."""
    run = leftovers / "run"
    assert Supervisor(config(leftovers, "--import-error"), run).run() == EXIT_NO_RETRY
    ledger = Ledger.open(run)
    assert [a.failure_class for a in ledger.attempts()] == ["user_error"]
    assert ledger.run_state() == ("failed", EXIT_NO_RETRY)
    ledger.close()


def test_truncated_newest_checkpoint_is_skipped(leftovers: Path) -> None:
    """With step-20 truncated (manifest size mismatch), the first attempt resumes from step-10."""
    ckpt = leftovers / "ckpt"
    for step in (10, 20):
        d = ckpt / f"step-{step}"
        d.mkdir(parents=True)
        state = "seed"
        for s in range(1, step + 1):
            state = advance(state, s)
        (d / "state.json").write_text(json.dumps({"step": step, "state": state}))
        (d / "manifest.json").write_text(json.dumps({"step": step, "files": {"state.json": (d / "state.json").stat().st_size}}))
    (ckpt / "step-20" / "state.json").write_text("{")  # truncated by a full disk
    run = leftovers / "run"
    assert Supervisor(config(leftovers), run).run() == EXIT_OK
    ledger = Ledger.open(run)
    assert ledger.attempts()[0].resumed_step == 10
    ledger.close()
    assert final_checksum(run) == fault_free_checksum(STEPS)


def test_hung_host_is_found_by_the_probe(leftovers: Path) -> None:
    """A frozen host (SIGSTOPped, and new processes there hang too) goes silent: the idle watchdog ends the
    attempt, the probe names the host (reason 'probed'), it is swapped and the run completes."""
    faults = leftovers / "faults.json"
    faults.write_text("{}")
    victim = "n2"

    def freeze(number: int, pool: Pool, log: Path) -> None:
        if number != 1:
            return

        def go() -> None:
            pids = log.with_suffix(".pids")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (pids.exists() and b"step=12 " in log.read_bytes()):
                time.sleep(0.02)
            faults.write_text(json.dumps({"frozen": [victim]}))
            os.killpg(json.loads(pids.read_text())[victim], signal.SIGSTOP)

        threading.Thread(target=go, daemon=True).start()

    os.environ["HOTSPARE_LOCAL_FAULTS"] = str(faults)
    try:
        run = leftovers / "run"
        code = Supervisor(config(leftovers, idle_s=2.0), run, on_attempt=freeze).run()
    finally:
        del os.environ["HOTSPARE_LOCAL_FAULTS"]
    ledger = Ledger.open(run)
    attempts, entries = ledger.attempts(), Quarantine.attach(ledger.connection).entries()
    probes = [o for o in ledger.observations(1) if o.kind == "probe"]
    ledger.close()
    assert code == EXIT_OK
    assert attempts[0].stopped_by == "idle"
    assert [(e.host.name, e.reason) for e in entries] == [(victim, "probed")]
    assert {o.host for o in probes} == {"n1", "n2", "n3"}
    assert final_checksum(run) == fault_free_checksum(STEPS)


def _launch_cli(tmp: Path, run: Path) -> subprocess.Popen[bytes]:
    cmd = [str(HOTSPARE), "launch", "--hosts", ",".join(HOSTS), "--nhosts", "3", "--launcher", "local", "--ppn", "2",
           "--checkpoint-dir", str(tmp / "ckpt"), "--run-dir", str(run), "--", *trainer(tmp / "ckpt")]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _wait_for_step(log: Path, step: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and f"step={step} ".encode() in log.read_bytes():
            return
        time.sleep(0.02)
    raise AssertionError(f"step {step} never appeared in {log}")


def test_sigterm_cancels_cleanly(leftovers: Path) -> None:
    """SIGTERM to `hotspare launch`: the launcher's ranks are ended, the run is recorded cancelled, exit 130."""
    run = leftovers / "run"
    proc = _launch_cli(leftovers, run)
    try:
        _wait_for_step(run / "attempt-1.log", 5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == EXIT_INTERRUPTED
    finally:
        proc.kill()
        proc.wait()
    ledger = Ledger.open(run)
    assert ledger.run_state() == ("cancelled", EXIT_INTERRUPTED)
    pgid = ledger.attempts()[0].pgid
    ledger.close()
    assert pgid is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    for group in json.loads((run / "attempt-1.pids").read_text()).values():
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)


def test_supervisor_sigkill_then_resume(leftovers: Path) -> None:
    """SIGKILL the supervisor mid-attempt; `--resume` ends the orphaned attempt, keeps its log, numbers on, finishes."""
    run = leftovers / "run"
    proc = _launch_cli(leftovers, run)
    try:
        _wait_for_step(run / "attempt-1.log", 8)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    first_log = (run / "attempt-1.log").read_bytes()
    resumed = subprocess.run([str(HOTSPARE), "launch", "--resume", str(run)], capture_output=True, timeout=120, check=False)
    assert resumed.returncode == EXIT_OK, resumed.stderr
    assert (run / "attempt-1.log").read_bytes().startswith(first_log)
    ledger = Ledger.open(run)
    attempts = ledger.attempts()
    ledger.close()
    assert [a.number for a in attempts] == [1, 2]
    assert attempts[0].stopped_by == "supervisor lost"
    assert attempts[1].resumed_step is not None
    assert final_checksum(run) == fault_free_checksum(STEPS)


@pytest.mark.parametrize("hosts", ["n1;rm -rf /,n2", "n1,$(reboot)", "n1,nœud", "a" * 300])
def test_hostile_allocation_is_refused_before_anything_runs(tmp_path: Path, hosts: str) -> None:
    """Hostile host text in the allocation: one error line, exit 2, no run directory written."""
    run = tmp_path / "run"
    result = subprocess.run([str(HOTSPARE), "launch", "--hosts", hosts, "--nhosts", "1", "--launcher", "local",
                             "--run-dir", str(run), "--", "true"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert not run.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--hosts", "n[1-2]", "--nhosts", "3"], "more than the 2 hosts of the allocation"),
    (["--hostfile", "/nonexistent/hosts"], "cannot read"),
    (["--hosts", "n1"], "no command"),
])
def test_bad_allocation_exits_2_and_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    """Impossible allocations and missing commands: one error line naming the problem, exit 2, nothing written."""
    run = tmp_path / "run"
    tail = [] if "no command" in message else ["--", "true"]
    result = subprocess.run([str(HOTSPARE), "launch", *args, "--run-dir", str(run), *tail],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and message in result.stderr
    assert not run.exists()


def test_pool_excludes_quarantined_hosts() -> None:
    """A quarantined host of the allocation is neither active nor spare."""
    hosts = [Host(h) for h in HOSTS]
    assert Pool.split(hosts, 2, exclude={Host("n1")}) == Pool((Host("n2"), Host("n3")), (Host("n4"),))


def test_scheduler_report_plus_failed_probe_ends_a_stalled_attempt(leftovers: Path) -> None:
    """A frozen node the scheduler reports DOWN, confirmed by a failed probe, ends the attempt long before the
    idle timeout; it is swapped with reason 'scheduler'."""
    faults = leftovers / "faults.json"
    faults.write_text(json.dumps({"frozen": ["n1"]}))
    victim = "n1"  # rank 0's host: freezing it silences the job

    def freeze(number: int, pool: Pool, log: Path) -> None:
        if number == 1:
            threading.Thread(target=_freeze_at, args=(log, victim, 10), daemon=True).start()

    cfg = replace(config(leftovers, idle_s=300.0), stall_s=1.0, scheduler_poll_s=0.5)
    os.environ["HOTSPARE_LOCAL_FAULTS"] = str(faults)
    try:
        code = Supervisor(cfg, leftovers / "run", on_attempt=freeze, scheduler=fake_slurm({victim})).run()
    finally:
        del os.environ["HOTSPARE_LOCAL_FAULTS"]
    ledger = Ledger.open(leftovers / "run")
    attempts, entries = ledger.attempts(), Quarantine.attach(ledger.connection).entries()
    kinds = {(o.kind, o.host) for o in ledger.observations(1)}
    ledger.close()
    assert code == EXIT_OK
    assert attempts[0].stopped_by == "scheduler"
    assert [(e.host.name, e.reason) for e in entries] == [(victim, "scheduler")]
    assert ("scheduler", victim) in kinds and ("probe", victim) in kinds
    assert ("watch", None) in kinds  # which scheduler watches the attempt, and the stall threshold, are recorded


def test_scheduler_alone_never_evicts_a_node_making_progress(leftovers: Path) -> None:
    """The scheduler calls n2 DOWN all along, but the job keeps printing progress: nothing is swapped."""
    cfg = replace(config(leftovers), stall_s=1.0, scheduler_poll_s=0.2)
    code = Supervisor(cfg, leftovers / "run", scheduler=fake_slurm({"n2"})).run()
    ledger = Ledger.open(leftovers / "run")
    attempts, entries = ledger.attempts(), Quarantine.attach(ledger.connection).entries()
    ledger.close()
    assert code == EXIT_OK and len(attempts) == 1 and entries == []


def _freeze_at(log: Path, host: str, step: int) -> None:
    pids = log.with_suffix(".pids")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (pids.exists() and f"step={step} ".encode() in log.read_bytes()):
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, FileNotFoundError):  # the attempt may already be over
        os.killpg(json.loads(pids.read_text())[host], signal.SIGSTOP)


def test_expired_quarantine_is_readmitted_after_a_passing_probe(leftovers: Path) -> None:
    """With a zero quarantine TTL, the first crashed host (probed healthy again) becomes the spare that
    replaces the second crashed host, instead of the run giving up for want of spares."""
    crashes = {1: "n2", 2: "n4"}

    def on_attempt(number: int, pool: Pool, log: Path) -> None:
        if number in crashes:
            crash_when(log, crashes[number], step=8 if number == 1 else 18)

    cfg = replace(config(leftovers), quarantine_ttl_s=0.0)
    code = Supervisor(cfg, leftovers / "run", on_attempt=on_attempt).run()
    ledger = Ledger.open(leftovers / "run")
    attempts = ledger.attempts()
    readmits = [o for o in ledger.observations() if o.kind == "readmit"]
    ledger.close()
    assert code == EXIT_OK
    assert [a.hosts for a in attempts] == [("n1", "n2", "n3"), ("n1", "n4", "n3"), ("n1", "n2", "n3")]
    assert readmits and readmits[0].host == "n2"
    assert final_checksum(leftovers / "run") == fault_free_checksum(STEPS)


def _script(tmp: Path, body: str) -> tuple[str, ...]:
    path = tmp / "job.py"
    path.write_text(body)
    return (sys.executable, str(path))


def test_walltime_retries_only_if_time_reaches_the_next_checkpoint(leftovers: Path) -> None:
    """A time-limit kill is retried when the scheduler's remaining walltime covers a checkpoint interval,
    and stops with 'do not retry' when it does not."""
    ckpt = leftovers / "ckpt"
    for step, age in ((5, 20.0), (10, 10.0)):
        (ckpt / f"step-{step}").mkdir(parents=True)
        (ckpt / f"step-{step}" / "COMPLETE").write_text("")
        os.utime(ckpt / f"step-{step}", (time.time() - age, time.time() - age))
    job = _script(leftovers, "import sys\nprint('step=11', flush=True)\n"
                  "print('slurmstepd-n1: error: *** JOB 9 ON n1 CANCELLED AT 2026-11-29T09:34:47 DUE TO TIME LIMIT ***')\n"
                  "sys.exit(143)\n")

    def query(left: str) -> SchedulerQuery:
        def run(argv: Sequence[str], timeout_s: float) -> Completed:
            return Completed(tuple(argv), 0, left if argv[0] == "squeue" else "", "", False)
        return SchedulerQuery("slurm", "9", run=run)

    base = replace(config(leftovers), command=job, budgets=Budgets(max_attempts=2, backoff_base_s=0, backoff_max_s=0))
    for left, first_action, code in (("10:00", "retry", EXIT_NO_RETRY), ("0:05", "stop", EXIT_NO_RETRY)):
        run = leftovers / f"run-{first_action}"
        assert Supervisor(base, run, scheduler=query(left)).run() == code
        ledger = Ledger.open(run)
        first = ledger.decisions()[0]
        ledger.close()
        assert first.action == first_action, first.reason


def test_hostile_host_in_a_log_never_reaches_a_hostfile(leftovers: Path) -> None:
    """A job printing `Node failure on n1;rm -rf /`: nobody is blamed or swapped, hostfiles hold only allocation hosts."""
    job = _script(leftovers, "import sys\nprint('srun: error: Node failure on n1;rm${IFS}-rf${IFS}/', flush=True)\n"
                  "sys.exit(1)\n")
    cfg = replace(config(leftovers), command=job, budgets=Budgets(max_attempts=2, backoff_base_s=0, backoff_max_s=0))
    Supervisor(cfg, leftovers / "run").run()
    ledger = Ledger.open(leftovers / "run")
    assert Quarantine.attach(ledger.connection).entries() == []
    assert all(not d.hosts for d in ledger.decisions())
    ledger.close()
    for hostfile in (leftovers / "run").glob("attempt-*.hosts"):
        assert hostfile.read_text().split() == ["n1", "n2", "n3"]


def test_resume_never_signals_a_reused_process_group(leftovers: Path) -> None:
    """On --resume, a recorded launcher group that is not this run's any more (PID reused) is left alone."""
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        run = leftovers / "run"
        ledger = Ledger.open(run)
        ledger.start_run(config(leftovers).to_json(), time.time())
        ledger.begin_attempt(1, started_s=time.time(), hosts=["n1", "n2", "n3"], spares=["n4"],
                             log_path=str(run / "attempt-1.log"), resumed_step=None, resumed_path=None)
        ledger.set_pgid(1, stranger.pid)
        ledger.close()
        assert Supervisor(config(leftovers), run).run() == EXIT_OK
        assert stranger.poll() is None  # still running: not ours, not signalled
        ledger = Ledger.open(run)
        notes = [o.detail for o in ledger.observations(1) if o.kind == "resume"]
        lost = ledger.attempts()[0]
        ledger.close()
        assert lost.stopped_by == "supervisor lost" and "not signalled" in notes[0]
    finally:
        stranger.kill()
        stranger.wait()


def test_a_probe_no_host_answers_blames_nobody(leftovers: Path) -> None:
    """A launcher option that breaks every launch breaks every probe too: the probe is suspect, not the
    nodes. No host is quarantined; the run stops (attempt limit) with every node still in the pool."""
    cfg = replace(config(leftovers), launcher_args=("--no-such-option",),
                  budgets=Budgets(max_attempts=3, backoff_base_s=0.05, backoff_max_s=0.1))
    run = leftovers / "run"
    code = Supervisor(cfg, run).run()
    ledger = Ledger.open(run)
    try:
        entries = Quarantine.attach(ledger.connection).entries()
        notes = [o.detail for o in ledger.observations() if o.kind == "probe" and o.host is None]
        decisions = ledger.decisions()
    finally:
        ledger.close()
    assert code == EXIT_NO_RETRY
    assert entries == []
    assert any("probed again with the full timeout" in n for n in notes)  # the quick probes were in doubt too
    assert any("no host is blamed" in n for n in notes)
    assert all(not d.hosts for d in decisions)


def test_a_shared_spare_is_used_by_the_run_that_claims_it_first(leftovers: Path) -> None:
    """Two runs (a Parsl block's two MPI tasks) share spare s1 through a claims directory. Run A loses n2 and
    takes s1; run B then loses n4: s1 is A's, so B has no spare and asks to be retried elsewhere (93) instead
    of putting a second job on s1."""
    claims = leftovers / "claims"

    def crash(victim: str):  # type: ignore[no-untyped-def]
        def on_attempt(number: int, pool: Pool, log: Path) -> None:
            if number == 1:
                crash_when(log, victim, step=12)
        return on_attempt

    base = replace(config(leftovers), nhosts=2, spare_claims=str(claims))
    run_a, run_b = leftovers / "a", leftovers / "b"
    code_a = Supervisor(replace(base, allocation=("n1", "n2", "s1")), run_a, on_attempt=crash("n2")).run()
    code_b = Supervisor(replace(base, allocation=("n3", "n4", "s1"), command=trainer(leftovers / "ckpt-b"),
                                checkpoint_dir=str(leftovers / "ckpt-b")),
                        run_b, on_attempt=crash("n4")).run()
    assert code_a == EXIT_OK and code_b == EXIT_RETRY_ELSEWHERE
    assert (claims / "s1").read_text() == str(run_a)
    ledger = Ledger.open(run_b)
    try:
        assert all("s1" not in a.hosts for a in ledger.attempts())
        assert ("claims", "s1") in {(o.kind, o.host) for o in ledger.observations()}
    finally:
        ledger.close()
