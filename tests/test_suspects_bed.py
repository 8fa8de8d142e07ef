"""Hosts a launcher names without proof are suspects, on the real SLURM bed: probed at once, retired only when the
probe fails too.

The fault comes exactly when the first attempt's ``srun`` starts: ``--launcher-cmd`` is a wrapper that, on its first
call only, freezes or crashes the chosen nodes and then runs srun (the probes, later calls, run plain srun). srun then
reports ``Task launch for StepId=... failed on node nX``: a lead, not evidence.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HOTSPARE, read_run
from hotspare.errors import EXIT_OK
from hotspare.sim.trainer import fault_free_checksum
from testbed.cluster import end_session

STEPS = 20

#: On its first call (the marker does not exist yet): SIGSTOP or SIGKILL the given PIDs, thaw a frozen node after a
#: delay from a detached helper, then become srun. Every later call is plain srun.
WRAPPER = """#!{python}
import os, signal, subprocess, sys
marker, action, delay, pids = sys.argv[1], sys.argv[2], float(sys.argv[3]), [int(p) for p in sys.argv[4].split(",")]
try:
    os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    first = True
except FileExistsError:
    first = False
if first:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP if action == "freeze" else signal.SIGKILL)
    if action == "freeze":
        subprocess.Popen([sys.executable, "-c", "import os, signal, sys, time; time.sleep(float(sys.argv[1]));"
                          " [os.kill(int(p), signal.SIGCONT) for p in sys.argv[2:]]", str(delay), *map(str, pids)],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
os.execvp("srun", ["srun", *sys.argv[5:]])
"""


def _wrapper(tmp: Path, action: str, delay_s: float, pids: list[int]) -> Path:
    """A launcher command: the wrapper with its fault baked into the arguments srun never sees."""
    script = tmp / "fault-then-srun.py"
    script.write_text(WRAPPER.format(python=sys.executable))
    script.chmod(0o755)
    launcher = tmp / "srun-with-fault"
    launcher.write_text(f"#!/bin/sh\nexec {script} {tmp / 'fault-done'} {action} {delay_s} "
                        f"{','.join(map(str, pids))} \"$@\"\n")
    launcher.chmod(0o755)
    return launcher


def _run(bed, tmp: Path, launcher: Path, nhosts: int) -> tuple[int, str, Path]:  # type: ignore[no-untyped-def]
    run, ckpt = tmp / "run", tmp / "ckpt"
    cmd = ["salloc", "-N4", "--no-kill", str(HOTSPARE), "launch", "--launcher", "srun", "--launcher-cmd",
           str(launcher), "--nhosts", str(nhosts), "--checkpoint-dir", str(ckpt), "--run-dir", str(run),
           "--backoff", "0.5", "--probe-timeout", "5",
           "--", sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(STEPS), "--ckpt-every", "5",
           "--ckpt-dir", str(ckpt), "--step-s", "0.1", "--sync"]
    proc = subprocess.Popen(cmd, env=bed.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=240)
    finally:
        end_session(proc)  # salloc and the supervisor under it (their own session)
    return proc.returncode, out.decode(errors="replace"), run


def _launch_failed_on(log: Path) -> set[str]:
    """The nodes srun's own words name as the ones a task launch failed on."""
    text = log.read_text(errors="replace")
    return {n for n in ("n1", "n2", "n3", "n4") if f"failed on node {n}:" in text}


def test_a_briefly_frozen_node_is_kept(slurm_bed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """n2 frozen as the first srun starts and thawed 2 s later: nobody is swapped or quarantined and the job succeeds.
    (SLURM 22.05's srun rides the freeze out: a launch onto a node frozen for 2 s, and for 9 s, measured on this bed,
    still starts, so no lead arises here; if one does, n2 must have answered its probe.)"""
    pids = slurm_bed.node_pids("n2")
    try:
        code, out, run = _run(slurm_bed, tmp_path, _wrapper(tmp_path, "freeze", 2.0, pids), 3)
    finally:
        slurm_bed.thaw("n2")
    assert code == EXIT_OK, out[-3000:]
    attempts, decisions, entries, observations = read_run(run)
    assert (tmp_path / "fault-done").exists()  # the freeze did happen, as the first srun started
    assert entries == [] and all(d.hosts == () for d in decisions)
    assert all(a.hosts == attempts[0].hosts for a in attempts)
    if "n2" in _launch_failed_on(Path(attempts[0].log_path)):
        assert any(o.kind == "probe" and o.host == "n2" and o.detail.endswith("answered") for o in observations)
    assert f"checksum={fault_free_checksum(STEPS)}" in Path(attempts[-1].log_path).read_text().split()


@pytest.mark.parametrize("victims", [("n2",), ("n1", "n2")], ids=["one", "two-together"])
def test_crashed_suspects_fail_their_probe_and_are_swapped(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                           victims: tuple[str, ...]) -> None:
    """Nodes crashed as the first srun starts: srun names them only as launch failures; each fails its probe (the
    second signal) and is swapped (reason probed); the job resumes on the spares. Two active nodes crashed together
    (every active host accused) are both swapped: the spare answering as the control shows the probe path works."""
    inits = [slurm_bed.pids[f"node:{v}"] for v in victims]
    slurm_bed.disturbed = True  # the wrapper crashes them: the next test gets a rebuilt bed
    nhosts = 2
    code, out, run = _run(slurm_bed, tmp_path, _wrapper(tmp_path, "crash", 0, inits), nhosts)
    assert code == EXIT_OK, out[-3000:]
    attempts, _, entries, observations = read_run(run)
    named = set().union(*(_launch_failed_on(Path(a.log_path)) for a in attempts))
    assert named & set(victims), [Path(a.log_path).read_text()[-1500:] for a in attempts]
    assert sorted((e.host.name, e.reason) for e in entries) == [(v, "probed") for v in victims]
    assert not set(victims) & set(attempts[-1].hosts) and len(attempts[-1].hosts) == nhosts
    for victim in victims:  # both signals: the lead in the evidence, the failed probe in the observations
        assert any(o.kind == "probe" and o.host == victim and not o.detail.endswith("answered") for o in observations)
    assert f"checksum={fault_free_checksum(STEPS)}" in Path(attempts[-1].log_path).read_text().split()
