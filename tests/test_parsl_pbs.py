"""Parsl on the real OpenPBS bed: a real HighThroughputExecutor over ``FailoverProvider(PBSProProvider(...))``,
real qsub; the node under a running task is crashed, the task finishes on a new block away from it, and the
node is quarantined from PBS's own record (``qstat -x -f -F json``, ``pbsnodes``)."""

from __future__ import annotations

from pathlib import Path

from pbs_flow import run_flow
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
