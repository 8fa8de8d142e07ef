"""The probes of a look at a silent node, by scheduler: what the workflow adapters' watches run when a worker or a
block's manager goes quiet (the judging is :func:`hotspare.judge_look`'s, pure).

SLURM: a step inside the job that holds the node (``srun --jobid --overlap``: starts at once on a live node, beside
the job's own work). PBS has no way into a job from outside it (``pbs_tmrsh`` works only inside), so each probe is
a tiny job pinned to the node (:func:`hotspare.act.pbs_probe.probe_pbs_counted`): placed there and run, the node
answered; placed there and never run, it did not (a frozen MOM takes a job and never starts it, and PBS never marks
it down); never placed (the node full, the queue busy) says nothing and is kept apart, never counted. Any other
batch system: no probe from here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hotspare.act.pbs_probe import PBS_QUICK_PROBE_S, probe_pbs_counted
from hotspare.act.probe import QUICK_PROBE_S, ProbeResult, probe_in_jobs_slurm, probe_twice
from hotspare.act.runner import Completed
from hotspare.act.scheduler import SchedulerKind
from hotspare.hosts import Host


@dataclass(frozen=True, slots=True)
class LookProbes:
    """Two rounds of probes of a look, and the probes that said nothing of their node."""

    #: Each round's answers that count (the suspect's and the control's); empty when no probe can run from here.
    rounds: tuple[tuple[ProbeResult, ...], ...]
    #: Probes that said nothing of their node (PBS: a pinned job never placed): for the record, never counted.
    uncounted: tuple[ProbeResult, ...] = ()


def probe_look(jobs: Mapping[Host, str], kind: SchedulerKind | None, workdir: Path, *, timeout_s: float,
               run: Callable[[list[str], float], Completed],
               sleep: Callable[[float], None] = time.sleep) -> LookProbes:
    """Probe each node of ``jobs`` (``{host: the batch job holding it}``: the suspect and a control) twice, the
    rounds overlapping (:func:`hotspare.probe_twice`), the way ``kind``'s scheduler allows (see the module); each
    probe within ``timeout_s`` and at most :data:`QUICK_PROBE_S` (SLURM) or :data:`PBS_QUICK_PROBE_S` (PBS)."""
    if kind is SchedulerKind.SLURM:
        slurm_s = min(QUICK_PROBE_S, timeout_s)
        rounds = probe_twice(lambda: probe_in_jobs_slurm(jobs, workdir, timeout_s=slurm_s, run=run), sleep=sleep)
        return LookProbes(tuple(tuple(r) for r in rounds if r))
    if kind is SchedulerKind.PBS:
        pbs_s = min(PBS_QUICK_PROBE_S, timeout_s)
        uncounted: list[ProbeResult] = []

        def pinned() -> list[ProbeResult]:
            said, nothing = probe_pbs_counted(list(jobs), workdir, timeout_s=pbs_s, run=run)
            uncounted.extend(nothing)  # one call: atomic, the two rounds may add at once
            return said

        rounds = probe_twice(pinned, sleep=sleep)
        return LookProbes(tuple(tuple(r) for r in rounds if r), tuple(uncounted))
    return LookProbes(())


def look_answers(probes: LookProbes, control: Host | None, why: str) -> list[tuple[Host, str]]:
    """Each answer of a look in words, for the watches' ledgers (pure): ``(host, words)``, the rounds' answers
    first ("WHY, probe N: detail", the control marked), then the probes that said nothing of their node."""
    def who(host: Host) -> str:
        return " (control)" if host == control else ""

    said = [(r.host, f"{why}{who(r.host)}, probe {turn}: {r.detail}")
            for turn, answers in enumerate(probes.rounds, 1) for r in answers]
    return said + [(r.host, f"{why}{who(r.host)}: {r.detail} (said nothing of the node: not counted)")
                   for r in probes.uncounted]
