"""Parsl on the real OpenPBS bed: real executors over ``FailoverProvider(PBSProProvider(...))``, real qsub. The
node under a running task is crashed: a block's lead (the task finishes on a new block away from it, the node
quarantined from PBS's own record, ``qstat -x -f -F json`` and ``pbsnodes``), or the sister node of an MPI task
(the task finishes on the block's own spare, and the next block is placed off the node)."""

from __future__ import annotations

from pathlib import Path

from hotspare.sim.trainer import fault_free_checksum
from pbs_flow import run_flow
from pbs_parsl_flow import MPI_STEPS
from testbed.pbs import Bed

FLOW = Path(__file__).with_name("pbs_parsl_flow.py")


def test_a_crashed_blocks_task_finishes_on_a_new_block_off_the_node(pbs_bed: Bed, tmp_path: Path) -> None:
    """One 2-node block (select=2:ncpus=2: one node active, one spare); its lead node, where the task runs, is
    crashed. The manager is lost, the task is retried at no cost; PBS ends the block (``-r n``: not requeued)
    and the provider judges it a node fault from qstat and pbsnodes, quarantines the node, reports the block
    FAILED; the next block is pinned (select=1:host=A:...+1:host=B:...) to hosts given as ``hosts=`` other than
that node, and the task finishes there."""
    result, took_s = run_flow(pbs_bed, FLOW, tmp_path, ",".join(pbs_bed.nodes))
    victim = result["victim"]
    assert result["host"] != victim
    assert [q[:2] for q in result["quarantine"]] == [[victim, "scheduler"]]
    blocks = sorted(result["blocks"].items(), key=lambda kv: int(kv[0].split(".")[0]))
    assert len(blocks) == 2, blocks
    (_, first), (second_id, second) = blocks
    assert victim in first["hosts"] and victim not in second["hosts"]
    # The block itself judged from PBS's record (Exit_status -20, -r n) and pbsnodes: a node loss, the victim named.
    assert first["verdict"].startswith(f"node_loss: {victim} reported down"), first["verdict"]
    assert second["excluded"] == [victim]
    assert victim not in result["jobs"][second_id]["exec_host"]
    # Pinned away from it, among the hosts given (hosts=p1..p4) that no live block holds, not merely placed by PBS
    # off a node that is down.
    pinned = result["jobs"][second_id]["Resource_List"]["select"]
    assert pinned.startswith("1:host=") and pinned.count("host=") == 2 and f"host={victim}:" not in pinned, pinned
    assert result["fail_count"] == 1
    print(f"quarantined {result['quarantine_s']:.1f} s, task done {result['done_s']:.1f} s after the crash; the "
          f"workflow took {took_s:.1f} s")


def test_a_sister_crash_mid_task_is_repaired_with_the_blocks_spare(pbs_bed: Bed, tmp_path: Path) -> None:
    """The PBS analogue of test_parsl_slurm's spare test: a 2+1-node block (select=3) under an MPIExecutor, an MPI
    bash app (mpi_launch: MPICH Hydra over pbs_tmrsh) running the trainer on the block's two active nodes under
    the supervisor. The active sister is crashed after step 10: the supervisor swaps in the block's spare,
    resumes from the checkpoint and the task returns 0 with the fault-free checksum in the same block, which PBS
    keeps (tolerate_node_failures=all); the node reaches the workflow's quarantine from the task's findings, and
    once the idle block is scaled in, the next block is pinned to hosts other than the node."""
    result, took_s = run_flow(pbs_bed, FLOW, tmp_path, ",".join(pbs_bed.nodes), "mpi")
    victim, lead, attempts = result["victim"], result["lead"], result["attempts"]
    assert result["rc"] == 0 and len(attempts) >= 2, attempts
    assert victim != lead and victim in attempts[0]["hosts"] and victim not in attempts[-1]["hosts"]
    (spare,) = set(attempts[-1]["hosts"]) - set(attempts[0]["hosts"])
    assert result["claims"] == {spare: result["task_run"]}  # the block's spare, claimed for this task
    assert attempts[-1]["resumed"] is not None and attempts[-1]["resumed"] >= 10
    assert f"checksum={fault_free_checksum(MPI_STEPS)}" in attempts[-1]["log"].split()
    first = result["jobs"][result["first_block"]]
    assert first["tolerate_node_failures"] == "all" and result["state_at_done"] == "R"
    # From the task's findings, on two signals: its probes and pbsnodes (PBS's bin on the block's PATH).
    ((host, reason, detail),) = result["quarantine"]
    assert (host, reason) == (victim, "probed") and f"the scheduler reports {victim} down" in detail, detail
    # The next block: pinned (select=1:host=A:...+...) to three of the hosts given, none of them the victim.
    blocks = sorted(result["blocks"].items(), key=lambda kv: int(kv[0].split(".")[0]))
    assert len(blocks) == 2, blocks
    (_, first_row), (second_id, second_row) = blocks
    assert victim in first_row["hosts"] and victim not in second_row["hosts"] and second_row["excluded"] == [victim]
    pinned = result["jobs"][second_id]["Resource_List"]["select"]
    assert pinned.count("host=") == 3 and f"host={victim}:" not in pinned, pinned
    assert result["rc2"] == 0 and all(victim not in a["hosts"] for a in result["next_attempts"])
    print(f"the task returned {result['done_s']:.1f} s after the crash; the workflow took {took_s:.1f} s")
