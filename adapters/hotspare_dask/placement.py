"""Where one Dask job may run: a frozen value per job, and the pure builders that turn it into header lines.

dask-jobqueue builds one batch script per job from the keyword arguments of the job's spec, so placement
travels as one more keyword (``placement=``) on a spec built fresh for each job. SLURM can ban hosts
(``#SBATCH --exclude=``); PBS Pro cannot ("not on host X" has no select syntax), so a PBS job is pinned to
one host known good (``select=1:host=H:...``), or left unplaced when none is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hotspare import Host, pin_pbs_hosts


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one job may run: hosts it must not get (SLURM) and the one host it is pinned to (PBS)."""

    exclude: tuple[Host, ...] = ()
    pin: Host | None = None

    @classmethod
    def of(cls, exclude: Iterable[Host | str] = (), pin: Host | str | None = None) -> Placement:
        """A placement from host names or :class:`hotspare.Host` values (validated; duplicates dropped, sorted)."""
        hosts = {h if isinstance(h, Host) else Host(h) for h in exclude}
        chosen = pin if isinstance(pin, Host) or pin is None else Host(pin)
        return cls(tuple(sorted(hosts)), chosen)


def build_slurm_exclude(hosts: Sequence[Host]) -> str | None:
    """The ``#SBATCH --exclude=`` line that keeps a job off ``hosts`` (None when there are none)."""
    if not hosts:
        return None
    return "#SBATCH --exclude=" + ",".join(h.raw for h in hosts)


_ONE_CHUNK = re.compile(r"^#PBS -l (?:select|nodes)=1(?=:|\s|$)", re.MULTILINE)


def pin_pbs_header(header: str, host: Host) -> str:
    """``header`` with its resource line asking for ``host`` (:func:`hotspare.pin_pbs_hosts`: ``select=1:host=H:…``
    for PBS Pro, ``nodes=H:…`` for Torque).

    A header with neither line (a resource_spec of another shape) raises ValueError naming the fix: pinning
    silently skipped would send the job anywhere, the dead node included.
    """
    # A dask-jobqueue job is one node: only a one-chunk request is ours to pin (select=2 would become one host).
    one_chunk = _ONE_CHUNK.search(header) is not None
    pinned = pin_pbs_hosts(header, [host]) if one_chunk else None
    if pinned is None:
        raise ValueError("cannot pin this PBS job to a host: its header has no '#PBS -l select=...' or "
                         "'#PBS -l nodes=...' line; give resource_spec='select=1:ncpus=N:mem=M' (or leave it unset)")
    return pinned


def choose_pin(candidates: Sequence[Host], bad: Iterable[Host], busy: Iterable[Host]) -> Host | None:
    """The host to pin the next PBS job to: the first candidate neither quarantined nor running another job of
    the cluster; None when there is none (the job then goes unplaced: pinned to a busy node it would queue
    behind that node's job, possibly for its whole walltime)."""
    out = set(bad) | set(busy)
    return next((h for h in candidates if h not in out), None)


def job_of(worker_name: str, groups: Mapping[str, Sequence[str]]) -> str | None:
    """The job (spec name) a scheduler-side worker name belongs to: ``X-0`` for ``X-0`` or, with
    ``--nworkers``, ``X-0-1``; None when it is none of ``groups`` ({spec name: group suffixes})."""
    if worker_name in groups:
        return worker_name
    for job, suffixes in groups.items():
        if any(worker_name == job + s for s in suffixes):
            return job
    return None


def job_log_files(names: Iterable[str], job_id: str) -> list[str]:
    """The names among ``names`` that belong to batch job ``job_id``: SLURM's ``<name>-<id>.out/.err``, PBS's
    ``<name>.o<id>``/``.e<id>`` (the id not part of a longer number), sorted."""
    pattern = re.compile(rf"(?<![0-9]){re.escape(job_id)}(?![0-9])")
    return sorted(n for n in names if pattern.search(n))
