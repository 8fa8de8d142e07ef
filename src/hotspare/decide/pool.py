"""The allocation split into active hosts and spares, and how a swap changes it."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hotspare.errors import AllocationError, HostsExhausted
from hotspare.hosts import Host, expand_hosts, read_hostfile


@dataclass(frozen=True, slots=True)
class Pool:
    """Active hosts (in launch order) and spares (in the order they will be used)."""

    active: tuple[Host, ...]
    spare: tuple[Host, ...]

    @classmethod
    def split(cls, hosts: Sequence[Host], nhosts: int, *, exclude: Collection[Host] = ()) -> Pool:
        """The first ``nhosts`` usable hosts active, the rest spare; quarantined hosts left out."""
        usable = [h for h in hosts if h not in exclude]
        if nhosts < 1:
            raise AllocationError(f"--nhosts {nhosts}: need at least one active host")
        if not hosts:
            raise AllocationError("empty allocation: give --hosts, --hostfile, or run inside a PBS/SLURM job")
        if nhosts > len(hosts):
            raise AllocationError(f"--nhosts {nhosts} is more than the {len(hosts)} hosts of the allocation")
        if nhosts > len(usable):
            raise HostsExhausted(
                f"--nhosts {nhosts} is more than the {len(usable)} usable hosts of the allocation "
                f"({len(hosts) - len(usable)} quarantined or claimed): resubmit on a new allocation"
            )
        return cls(tuple(usable[:nhosts]), tuple(usable[nhosts:]))

    def swap(self, bad: Collection[Host]) -> Pool:
        """Each bad active host replaced, in place, by the next spare."""
        spares = list(self.spare)
        if len([h for h in self.active if h in bad]) > len(spares):
            raise AllocationError(f"cannot swap {len(bad)} hosts with {len(spares)} spares")
        active = tuple(spares.pop(0) if h in bad else h for h in self.active)
        return Pool(active, tuple(spares))

    @property
    def hosts(self) -> tuple[Host, ...]:
        return self.active + self.spare


def resolve_allocation(
    *, hosts: str | None = None, hostfile: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> list[Host]:
    """The allocation from ``--hosts``, ``--hostfile``, ``$PBS_NODEFILE`` or ``$SLURM_JOB_NODELIST``, in that order."""
    env = os.environ if environ is None else environ
    if hosts:
        return expand_hosts(hosts)
    if hostfile:
        return read_hostfile(hostfile)
    if env.get("PBS_NODEFILE"):
        return read_hostfile(env["PBS_NODEFILE"])
    if env.get("SLURM_JOB_NODELIST"):
        return expand_hosts(env["SLURM_JOB_NODELIST"])
    raise AllocationError("no allocation: give --hosts or --hostfile, or run inside a PBS or SLURM job")
