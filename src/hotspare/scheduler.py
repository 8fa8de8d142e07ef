"""What the batch scheduler says: node states and remaining walltime (SLURM, PBS).

Parsers are pure (``parse_*``) and tested on captured output; :class:`SchedulerQuery`
asks the real commands through the runner, bounded by a timeout, and answers
None/empty when the scheduler cannot be asked — a missing answer is never
read as a fault.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hotspare.errors import HostError
from hotspare.hosts import Host
from hotspare.runner import Completed, capture

# Words in SLURM (DOWN*, IDLE+NOT_RESPONDING, FAIL) and PBS (down, offline, state-unknown)
# node states that mean the node is not healthy. A trailing '*' is SLURM's "not responding".
_UNHEALTHY = ("DOWN", "NOT_RESPONDING", "NO_RESPOND", "FAIL", "OFFLINE", "UNKNOWN", "STATE-UNKNOWN")


def unhealthy(state: str) -> bool:
    """Whether a scheduler node state means the node is down or not responding."""
    upper = state.upper()
    return upper.rstrip().endswith("*") or any(word in upper for word in _UNHEALTHY)


def parse_duration_s(text: str) -> float | None:
    """SLURM/PBS durations: ``[D-]HH:MM:SS``, ``MM:SS``, ``SS`` or plain seconds; None for UNLIMITED etc."""
    match = re.fullmatch(r"\s*(?:(\d+)-)?(?:(\d+):)?(?:(\d+):)?(\d+)\s*", text)
    if not match:
        return None
    days, a, b, secs = match.groups()
    parts = [int(p) for p in (a, b) if p is not None]
    hours, minutes = [0, 0, *parts][-2:]
    return float(int(days or 0) * 86400 + hours * 3600 + minutes * 60 + int(secs))


def parse_squeue_time_left(text: str) -> float | None:
    """``squeue -h -j ID -o %L`` output."""
    return parse_duration_s(text.strip().splitlines()[0]) if text.strip() else None


def parse_qstat_time_left(text: str) -> float | None:
    """``qstat -f ID``: ``Walltime.Remaining`` (PBS Pro) or ``Resource_List.walltime`` minus the used walltime."""
    fields = dict(re.findall(r"^\s*([\w.]+) = (.*)$", text, re.MULTILINE))
    if "Walltime.Remaining" in fields:
        return parse_duration_s(fields["Walltime.Remaining"])
    limit = parse_duration_s(fields.get("Resource_List.walltime", ""))
    used = parse_duration_s(fields.get("resources_used.walltime", "0"))
    return None if limit is None else max(0.0, limit - (used or 0.0))


def parse_scontrol_nodes(text: str) -> dict[Host, str]:
    """``scontrol show node [NAMES]``: each block's NodeName and State."""
    states: dict[Host, str] = {}
    for block in re.split(r"\n(?=NodeName=)", text):
        name = re.search(r"NodeName=(\S+)", block)
        state = re.search(r"\bState=(\S+)", block)
        if name and state:
            _put(states, name.group(1), state.group(1))
    return states


def parse_pbsnodes(text: str) -> dict[Host, str]:
    """``pbsnodes [-a] [NAMES]``: a node name line, then indented ``state = ...``."""
    states: dict[Host, str] = {}
    for name, state in re.findall(r"^(\S+)\n(?:\s+\S.*\n)*?\s+state = (\S+)", text + "\n", re.MULTILINE):
        _put(states, name, state)
    return states


def _put(states: dict[Host, str], name: str, state: str) -> None:
    with contextlib.suppress(HostError):  # a name we cannot use is not a node we run on
        states[Host(name)] = state


@dataclass(frozen=True, slots=True)
class SchedulerQuery:
    """Asks SLURM or PBS (whichever runs this job) about nodes and walltime."""

    kind: str | None
    job_id: str | None
    timeout_s: float = 10.0
    run: Callable[[Sequence[str], float], Completed] = lambda argv, t: capture(argv, timeout_s=t)

    @classmethod
    def detect(cls, environ: Mapping[str, str] | None = None) -> SchedulerQuery:
        """SLURM inside a SLURM job, PBS inside a PBS job, otherwise a query that knows nothing."""
        env = os.environ if environ is None else environ
        if env.get("SLURM_JOB_ID"):
            return cls("slurm", env["SLURM_JOB_ID"])
        if env.get("PBS_JOBID"):
            return cls("pbs", env["PBS_JOBID"])
        return cls(None, None)

    def node_states(self, hosts: Sequence[Host]) -> dict[Host, str]:
        """States of ``hosts`` as the scheduler reports them (empty when it cannot be asked)."""
        if not hosts or self.kind is None:
            return {}
        names = [h.raw for h in hosts]
        if self.kind == "slurm":
            done = self.run(["scontrol", "show", "node", ",".join(names)], self.timeout_s)
            return parse_scontrol_nodes(done.stdout) if done.ok else {}
        done = self.run(["pbsnodes", *names], self.timeout_s)
        return parse_pbsnodes(done.stdout) if done.ok else {}

    def walltime_left_s(self) -> float | None:
        """Seconds left before the scheduler ends the job (None: unknown or unlimited)."""
        if self.kind is None or self.job_id is None:
            return None
        if self.kind == "slurm":
            done = self.run(["squeue", "-h", "-j", self.job_id, "-o", "%L"], self.timeout_s)
            return parse_squeue_time_left(done.stdout) if done.ok else None
        done = self.run(["qstat", "-f", self.job_id], self.timeout_s)
        return parse_qstat_time_left(done.stdout) if done.ok else None
