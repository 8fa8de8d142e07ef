"""FailoverPBSCluster on the real OpenPBS bed: real dask-jobqueue PBSCluster jobs (real qsub), real dask workers
on the bed's MOMs, a MOM crashed under a stream of tasks; the lost job is judged from real ``qstat -x -f -F json``
and ``pbsnodes``, its node quarantined, and the job comes back pinned (``select=1:host=H``) to the free node; and a
multi-node job (``tolerate_node_failures=all``) outlives a sister node's crash, its task's MPI run swapping in the
job's spare node."""

from __future__ import annotations

from pathlib import Path

from hotspare.sim.trainer import fault_free_checksum
from pbs_dask_flow import MPI_STEPS
from pbs_flow import run_flow
from testbed.pbs import Bed

FLOW = Path(__file__).with_name("pbs_dask_flow.py")


def test_a_crashed_moms_job_comes_back_pinned_to_the_free_node(pbs_bed: Bed, tmp_path: Path) -> None:
    """3 one-node jobs (select=1:ncpus=2: a whole node each) run a stream; one job's MOM is crashed. pbsnodes
    reports the node down, the job is judged a node fault and its node quarantined with the evidence; the job is
    resubmitted pinned to the one free node (``select=1:host=H`` in its real Resource_List) and runs there;
    every task completes; the crashed node's task deaths are not counted against the tasks."""
    result, took_s = run_flow(pbs_bed, FLOW, tmp_path, ",".join(pbs_bed.nodes))
    victim, before = result["victim"], result["before"]
    (spare,) = set(pbs_bed.nodes) - set(before.values())
    assert result["results_ok"]
    assert [q[:2] for q in result["quarantine"]] == [[victim, "scheduler"]]
    assert f"batch job {result['old_id']}" in result["quarantine"][0][2]
    assert result["new_job"]["Resource_List"]["select"].startswith(f"1:host={spare}:")
    assert result["new_job"]["exec_host"].split("/")[0] == spare
    assert victim not in result["after"].values()
    # Not rerunnable: PBS ends the lost job instead of running it again beside its replacement.
    assert result["old_job"]["Rerunable"] == "False" and result["new_job"]["Rerunable"] == "False"
    assert result["old_row_hosts"] == [victim]
    assert any(keys for name, keys, _ in result["spared"] if name.startswith(result["victim_job"]))
    assert not any(counted for *_, counted in result["spared"])
    print(f"quarantined {result['quarantine_s']:.1f} s, resubmitted {result['resubmit_s']:.1f} s, workers back "
          f"{result['back_s']:.1f} s after the crash; the workflow took {took_s:.1f} s")


def test_a_frozen_node_is_found_by_probe_jobs_placed_there_and_never_run(pbs_bed: Bed, tmp_path: Path) -> None:
    """PBS never marks a frozen MOM down (it stays ``free``), and no probe runs inside a job from outside. 3 one-cpu
    jobs under a stream; a node holding one of them is frozen (every process SIGSTOPped, sockets open). Its worker
    goes silent; the look pins a probe job to the node twice: PBS sends each there and the node never runs it,
    while the control's runs (or, on a full node, says nothing): two signals. The worker is removed from the
    scheduler, its tasks run elsewhere uncounted, the node quarantined on the probes' evidence, the job replaced
    off the node."""
    result, took_s = run_flow(pbs_bed, FLOW, tmp_path, ",".join(pbs_bed.nodes), "freeze", fault="freeze")
    victim = result["victim"]
    assert result["results_ok"]
    assert [q[:2] for q in result["quarantine"]] == [[victim, "probed"]]
    missed = [d for kind, host, d in result["observed"] if kind == "probe" and host == victim
              and "did not end within" in d and "said nothing" not in d]
    assert len(missed) >= 2, result["observed"]
    assert any(kind == "silence" and host == victim and d.startswith("node fault") for kind, host, d in
               result["observed"])
    assert result["new_job"]["exec_host"].split("/")[0] != victim
    assert not any(counted for *_, counted in result["spared"])
    print(f"froze {victim}: worker removed {result['removed_s']:.1f} s, quarantined {result['quarantined_s']:.1f} s "
          f"after the freeze; the workflow took {took_s:.1f} s")


def test_a_crashed_moms_job_is_replaced_by_the_spare_at_once(pbs_bed: Bed, tmp_path: Path) -> None:
    """spare_jobs=1 on PBS: 2 jobs and a spare (its worker connected, held paused: no task) under a stream; an
    active job's MOM is crashed. The spare's worker is running tasks again as the lost worker leaves; the lost
    job, judged a node fault, comes back as the new spare pinned to the one free node (``select=1:host=H``); the
    promotion is in the ledger, the dead node quarantined, every task completes, no death counted."""
    result, took_s = run_flow(pbs_bed, FLOW, tmp_path, ",".join(pbs_bed.nodes), "spare")
    victim, before, spare = result["victim"], result["before"], result["spare"]
    (free,) = set(pbs_bed.nodes) - set(before.values())
    assert result["spare_idle"] and result["results_ok"]
    assert result["running"] == sorted(set(before) - {result["victim_job"]})  # the spare took the victim's place
    assert result["spares"] == [result["victim_job"]]
    assert result["after"][result["victim_job"]] == free
    assert result["new_job"]["Resource_List"]["select"].startswith(f"1:host={free}:")
    assert result["quarantine"] == [victim]
    (note,) = result["notes"]
    assert note.startswith(f"spare {spare} (batch job ") and f"took the place of {result['victim_job']}" in note
    assert not any(counted for *_, counted in result["spared"])
    print(f"crashed {victim}: the spare ran tasks {result['promoted_s']:.1f} s after the crash; the new spare on "
          f"{free}; the workflow took {took_s:.1f} s")


#: How long the job is watched after its sister's crash: past the ~44 s at which PBS, without
#: tolerate_node_failures, killed such a job on this bed ($max_poll_downtime 15; /work/shared/research/openpbs.md).
SISTER_HOLD_S = 50


def test_a_multi_node_job_outlives_its_sister_nodes_crash(pbs_bed: Bed, tmp_path: Path) -> None:
    """A job_nodes=3 job (``select=3:...`` and ``-W tolerate_node_failures=all``, placed by PBS): a sister node
    of the job (not the lead, where the worker runs) is crashed; for SISTER_HOLD_S the job stays R with its one
    worker, nothing is judged lost or resubmitted, and a task still runs on it."""
    result, took_s = run_flow(pbs_bed, FLOW, tmp_path, ",".join(pbs_bed.nodes), f"sister:{SISTER_HOLD_S}")
    record = result["record"]
    assert record["tolerate_node_failures"] == "all" and record["Resource_List"]["nodect"] == 3
    assert result["victim"] in result["hosts"] and result["victim"] != result["lead"]
    assert {state for _, state, _ in result["seen"]} == {"R"} and {n for *_, n in result["seen"]} == {1}
    assert result["seen"][-1][0] >= SISTER_HOLD_S - 3
    assert record["job_state"] == "R" and result["answer"] == 49
    assert result["job_ids"] == [result["job"]] and result["quarantine"] == []
    print(f"the job lived {result['seen'][-1][0]:.0f} s past its sister's crash; the workflow took {took_s:.1f} s")


def test_a_tasks_mpi_job_swaps_in_its_jobs_spare_node(pbs_bed: Bed, tmp_path: Path) -> None:
    """One job_nodes=3 job; its task runs the trainer under run_mpi on 2 of the job's nodes (MPICH Hydra, its
    proxies started through pbs_tmrsh), the third a spare. The non-lead active node is crashed mid-run: the
    supervisor swaps in the spare, the task returns 0 with the fault-free checksum in the same batch job, and
    the crashed node is in the workflow's quarantine once the task's findings are folded."""
    result, took_s = run_flow(pbs_bed, FLOW, tmp_path, ",".join(pbs_bed.nodes), "mpi")
    victim, attempts = result["victim"], result["attempts"]
    assert result["rc"] == 0 and len(attempts) >= 2
    assert victim in attempts[0]["hosts"] and victim not in attempts[-1]["hosts"]
    assert f"checksum={fault_free_checksum(MPI_STEPS)}" in result["last_log"].split()
    assert result["job_ids"] == [result["job"]] and result["record"]["job_state"] == "R"
    assert result["quarantine"] == [victim]
    print(f"the task returned {result['done_s']:.1f} s after the crash; the workflow took {took_s:.1f} s")
