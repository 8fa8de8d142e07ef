"""Allocations: where hosts come from, and how they split into active and spare."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotspare import Host
from hotspare.decide.pool import Pool, resolve_allocation
from hotspare.errors import EXIT_RETRY_ELSEWHERE, EXIT_USAGE, AllocationError, HostsExhausted


def names(hosts: list[Host]) -> list[str]:
    return [h.name for h in hosts]


def test_sources_in_order(tmp_path: Path) -> None:
    """--hosts beats --hostfile beats $PBS_NODEFILE (deduplicated, order kept) beats $SLURM_JOB_NODELIST."""
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("x3005c0s7b0n0\nx3005c0s7b0n0\nx3005c0s13b0n0\nx3005c0s7b0n0\n")
    env = {"PBS_NODEFILE": str(nodefile), "SLURM_JOB_NODELIST": "nid[001-003]"}
    assert names(resolve_allocation(hosts="n1,n2", environ=env)) == ["n1", "n2"]
    assert names(resolve_allocation(hostfile=nodefile, environ={})) == ["x3005c0s7b0n0", "x3005c0s13b0n0"]
    assert names(resolve_allocation(environ=env)) == ["x3005c0s7b0n0", "x3005c0s13b0n0"]
    assert names(resolve_allocation(environ={"SLURM_JOB_NODELIST": "nid[001-003]"})) == ["nid001", "nid002", "nid003"]


def test_no_allocation_is_an_error() -> None:
    """Outside a job with no hosts given: an AllocationError saying what to give."""
    with pytest.raises(AllocationError, match="--hosts or --hostfile"):
        resolve_allocation(environ={})


@pytest.mark.parametrize(("n", "message"), [(0, "at least one"), (5, "more than the 4 hosts of the allocation")])
def test_split_refuses_impossible_sizes(n: int, message: str) -> None:
    """--nhosts 0 or more than the allocation: an error naming the numbers."""
    with pytest.raises(AllocationError, match=message):
        Pool.split([Host(f"n{i}") for i in range(1, 5)], n)


def test_split_and_swap() -> None:
    """The first N are active, the rest spare; a swap replaces in place and spends spares in order."""
    pool = Pool.split([Host(f"n{i}") for i in range(1, 6)], 3)
    assert names(list(pool.active)) == ["n1", "n2", "n3"] and names(list(pool.spare)) == ["n4", "n5"]
    swapped = pool.swap({Host("n2"), Host("n3")})
    assert names(list(swapped.active)) == ["n1", "n4", "n5"] and swapped.spare == ()
    with pytest.raises(AllocationError):
        swapped.swap({Host("n1")})


def test_too_few_healthy_hosts_is_node_evidence_not_bad_input() -> None:
    """More active hosts than the allocation holds is bad input (exit 2); enough hosts, but too few left once the
    quarantine is left out, is the allocation's fault (exit 93: resubmit elsewhere), as a Parsl retry on a block
    whose spares are spent meets it."""
    hosts = [Host(f"n{i}") for i in range(1, 4)]
    with pytest.raises(AllocationError) as bad:
        Pool.split(hosts, 4)
    assert bad.value.exit_code == EXIT_USAGE and not isinstance(bad.value, HostsExhausted)
    with pytest.raises(HostsExhausted, match=r"\(1 quarantined or claimed\): resubmit on a new allocation") as spent:
        Pool.split(hosts, 3, exclude={Host("n2")})
    assert spent.value.exit_code == EXIT_RETRY_ELSEWHERE
