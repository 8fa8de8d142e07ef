"""The real SLURM test bed itself, and hotspare's scheduler queries against it."""

from __future__ import annotations

import subprocess

from hotspare import Host
from hotspare.act.node_states import unhealthy
from hotspare.act.runner import capture
from hotspare.act.scheduler import SchedulerQuery


def _srun_hostnames(bed, n: int) -> list[str]:  # type: ignore[no-untyped-def]
    done = subprocess.run(["srun", f"-N{n}", "hostname"], capture_output=True, text=True, env=bed.env, timeout=60,
                          check=True)
    return sorted(done.stdout.split())


def _query(bed) -> SchedulerQuery:  # type: ignore[no-untyped-def]
    """A SLURM query that talks to this bed (its SLURM_CONF)."""
    return SchedulerQuery("slurm", "0", run=lambda argv, t: capture(argv, timeout_s=t, env=bed.env))


def test_bed_nodes_are_separate_hosts(slurm_bed) -> None:  # type: ignore[no-untyped-def]
    """Four idle nodes; tasks on two nodes see two different hostnames (own UTS namespaces)."""
    assert slurm_bed.idle_nodes() == {"n1", "n2", "n3", "n4"}
    assert _srun_hostnames(slurm_bed, 2) == ["n1", "n2"]


def test_crash_is_seen_by_the_scheduler_and_a_restart_brings_it_back(slurm_bed) -> None:  # type: ignore[no-untyped-def]
    """A crashed node turns NOT_RESPONDING/DOWN in `scontrol show node` as hotspare reads it (the scheduler
    corroboration the supervisor uses), while the others stay healthy; `start` returns it to service."""
    query = _query(slurm_bed)
    hosts = [Host(n) for n in ("n1", "n2", "n3")]
    assert not any(unhealthy(s) for s in query.node_states(hosts).values())
    slurm_bed.crash("n2")

    def n2_unhealthy() -> dict[Host, str] | None:
        states = query.node_states(hosts)
        return states if unhealthy(states.get(Host("n2"), "")) else None

    states = slurm_bed.wait_for(n2_unhealthy, "n2 unhealthy", 60)
    assert not unhealthy(states[Host("n1")]) and not unhealthy(states[Host("n3")])
    slurm_bed.start("n2")
    slurm_bed.wait_for(lambda: "n2" in slurm_bed.idle_nodes(), "n2 back to idle", 60)
    assert _srun_hostnames(slurm_bed, 4) == ["n1", "n2", "n3", "n4"]


def test_freeze_and_thaw(slurm_bed) -> None:  # type: ignore[no-untyped-def]
    """A frozen node (every process SIGSTOPped) is reported unhealthy; thawed, it answers again."""
    query = _query(slurm_bed)
    slurm_bed.freeze("n3")
    slurm_bed.wait_for(lambda: unhealthy(query.node_states([Host("n3")]).get(Host("n3"), "")), "n3 unhealthy", 60)
    slurm_bed.thaw("n3")
    slurm_bed.wait_for(lambda: "n3" in slurm_bed.idle_nodes(), "n3 idle again", 60)
