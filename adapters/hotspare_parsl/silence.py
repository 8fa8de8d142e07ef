"""A block's node found dead in seconds: its manager's silence is a lead, two signals of its own make a node fault
(pure).

HTEX's interchange knows when each manager last sent a heartbeat (read through :mod:`hotspare_parsl.interchange`).
A manager silent past a threshold (a few heartbeat periods, never below a floor), or a block node the scheduler
calls NOT_RESPONDING/DOWN, is a :class:`Lead`: the node is probed twice, inside the block's job, and the scheduler
asked (:mod:`hotspare_parsl.watch` does that). :func:`judge_node` reads what came back with the core's two-signal
rule (:func:`hotspare.two_signals`): two missed probes, or a missed probe and the scheduler's NOT_RESPONDING/DOWN,
make the node dead. The lead itself is never a signal: a manager starved of CPU misses heartbeats while its node
answers every probe, and is left alone. The rule is the core's, shared with the Dask clusters
(:func:`hotspare.judge_look`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hotspare import ANSWERED_RELOOK_S as ANSWERED_RELOOK_S  # noqa: PLC0414
from hotspare import RELOOK_S as RELOOK_S  # noqa: PLC0414
from hotspare import (
    Host,
    HostError,
    JobFacts,
    NodeFinding,
    NodeLook,
    ProbeResult,
    judge_look,
    unhealthy,
)

#: A manager's silence threshold is never below this (seconds): an interchange or a manager busy for a second or
#: two (a large result unpickled) is no lead worth two probes.
SILENCE_FLOOR_S = 3.0
#: The threshold is this many heartbeat periods: a live manager sends one every period.
SILENCE_PERIODS = 3.0
WHEN_SILENT = "while its block's manager was silent"
WHEN_REPORTED = "while the scheduler reported it unhealthy"


def silence_threshold_s(heartbeat_period_s: float, floor_s: float = SILENCE_FLOOR_S,
                        fixed_s: float | None = None) -> float:
    """How long a manager may be silent before its node is a lead (pure): ``fixed_s``, else a few heartbeat periods
    with a floor."""
    return fixed_s if fixed_s is not None else max(floor_s, SILENCE_PERIODS * heartbeat_period_s)


@dataclass(frozen=True, slots=True)
class ManagerBeat:
    """One manager as the interchange sees it."""

    manager: str
    block_id: str | None
    host: Host | None
    age_s: float
    tasks: int


def parse_managers(reply: Any) -> list[ManagerBeat]:
    """The interchange's ``HOTSPARE_MANAGERS`` reply as records (pure); malformed entries are left out."""
    found = []
    for entry in reply if isinstance(reply, list) else []:
        if not isinstance(entry, dict):
            continue
        try:
            host = Host(entry["hostname"]) if entry.get("hostname") else None
        except (HostError, TypeError):
            host = None
        try:
            block = entry.get("block_id")
            found.append(ManagerBeat(str(entry["manager"]), None if block is None else str(block), host,
                                     float(entry["heartbeat_age_s"]), int(entry.get("tasks", 0))))
        except (KeyError, TypeError, ValueError):
            continue
    return found


@dataclass(frozen=True, slots=True)
class Lead:
    """A reason to look at one block's node."""

    host: Host
    job_id: str
    block_id: str
    #: What made someone look, for the record.
    why: str
    #: How the verdict names the moment.
    when: str


def find_leads(beats: Sequence[ManagerBeat], threshold_s: float, blocks: Mapping[str, str],
               hosts: Mapping[str, Host], states: Mapping[Host, str]) -> list[Lead]:
    """The nodes to look at (pure): a silent manager's (its block's node), or a live block's node the scheduler
    calls unhealthy; one lead per node. ``blocks``: block id -> job id of the live blocks; ``hosts``: job id -> the
    block's (lead) node, from the provider; a manager's own hostname when the provider has none yet."""
    found: dict[Host, Lead] = {}
    for beat in sorted(beats, key=lambda b: -b.age_s):
        job_id = blocks.get(beat.block_id or "")
        host = hosts.get(job_id or "") or beat.host
        if beat.age_s > threshold_s and job_id is not None and host is not None and host not in found:
            found[host] = Lead(host, job_id, str(beat.block_id), f"block {beat.block_id}'s manager silent for "
                               f"{beat.age_s:.1f} s (threshold {threshold_s:.1f} s)", WHEN_SILENT)
    for block_id, job_id in sorted(blocks.items()):
        host = hosts.get(job_id)
        if host is not None and host not in found and unhealthy(states.get(host, "")):
            found[host] = Lead(host, job_id, block_id, f"the scheduler reports it {states[host]}", WHEN_REPORTED)
    return [found[h] for h in sorted(found)]


@dataclass(frozen=True, slots=True)
class NodeEvidence:
    """What a look at a lead's node brought back."""

    lead: Lead
    #: Each probe round's answers: the lead's host, and the control beside it when there was one.
    rounds: tuple[tuple[ProbeResult, ...], ...]
    #: A node of another live block, probed beside the lead's (None: there was none).
    control: Host | None
    #: The scheduler's state of the lead's host ("" when it could not be asked).
    node_state: str
    #: The scheduler's word on the block's job, asked after the probes (None: it could not be asked).
    job: JobFacts | None
    #: Probes that said nothing of their node (on PBS: a pinned probe job never placed, the node full or the queue
    #: busy): recorded, never counted.
    uncounted: tuple[ProbeResult, ...] = ()


def judge_node(evidence: NodeEvidence, earlier: Sequence[str] = ()) -> NodeFinding:
    """The core's two-signal rule on one look (:func:`hotspare.judge_look`, the Dask clusters' too), added to what
    ``earlier`` looks at the same silence found."""
    lead = evidence.lead
    return judge_look(NodeLook(lead.host, lead.job_id, lead.why, lead.when, evidence.rounds, evidence.control,
                               evidence.node_state, evidence.job, job_words="its block's job"), earlier)


def pick_control(suspect: Host, hosts: Mapping[str, Host], live: Sequence[str],
                 avoid: set[Host] | frozenset[Host] = frozenset()) -> tuple[Host, str] | None:
    """A node of another live block to probe beside ``suspect`` (pure), with its job id: its answer tells a dead
    node from a broken probe path. The first in host order that is not the suspect nor in ``avoid``."""
    found = sorted((h, j) for j, h in hosts.items() if j in live and h != suspect and h not in avoid)
    return found[0] if found else None
