"""The quarantine's life: when an entry ends, when a node is back in service, when the quarantine leaves no room.

Pure rules over what the scheduler says (its node states, its pending jobs); the adapters' look at the scheduler
(:mod:`hotspare.act.life`) asks, hands the answers here, and carries out what comes back.

**The default expiry**, :data:`DEFAULT_QUARANTINE_TTL_S`, is four hours. A node kept out for a fault is either
repaired and rebooted — then the scheduler shows it back in service and it comes back earlier, after a passing
probe (:func:`back_in_service`) — or it is still broken, and then the probe at expiry fails and it stays out
anyway. Four hours covers one working shift: within a workflow a flaky node is not retried every few minutes
(each retry can cost a lost job), while a workflow started the next day in the same directory does not inherit
yesterday's quarantine (the issue that asked for a default: two crashed-and-rebooted nodes, IDLE in SLURM, kept
a new cluster at half size). ``None`` still means "until readmitted by hand"; it must be asked for.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from hotspare.hosts import Host
from hotspare.record.quarantine import Entry

#: The expiry of a quarantine entry when none is given (seconds): see the module's docstring for why four hours.
DEFAULT_QUARANTINE_TTL_S = 4 * 3600.0

# SLURM base states (before any '+FLAG') of a node that takes jobs, and flags that say it does not. A trailing '*'
# is SLURM's "not responding".
_SLURM_SERVING = frozenset({"IDLE", "MIXED", "ALLOCATED", "COMPLETING"})
_SLURM_OUT = frozenset({"DRAIN", "DRAINED", "DRAINING", "DOWN", "NOT_RESPONDING", "NO_RESPOND", "FAIL", "FAILING",
                        "MAINT", "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERED_DOWN", "POWERING_DOWN",
                        "POWER_DOWN", "INVALID_REG", "RESERVED"})
# PBS node states (a comma-separated list) of a node that takes jobs.
_PBS_SERVING = frozenset({"free", "job-busy", "job-exclusive", "job-sharing", "resv-exclusive"})
# Words of a state that say the node was out of service (SLURM and PBS).
_DOWN_WORDS = ("DOWN", "NOT_RESPONDING", "NO_RESPOND", "FAIL", "UNKNOWN", "STATE-UNKNOWN", "OFFLINE")


def in_service(state: str) -> bool:
    """Whether a SLURM (``IDLE``, ``MIXED+PLANNED``) or PBS (``free``, ``job-busy``) node state takes jobs (pure).
    Unknown words mean no."""
    text = state.strip()
    if not text:
        return False
    if text[0].islower():  # PBS spells its states in lower case, SLURM in upper
        return all(word.strip() in _PBS_SERVING for word in text.split(","))
    if text.endswith("*"):
        return False
    base, *flags = text.upper().split("+")
    return base in _SLURM_SERVING and not any(flag in _SLURM_OUT for flag in flags)


def was_down(state: str) -> bool:
    """Whether a node state says the node was out of service: down, failed, not responding, unknown (pure)."""
    upper = state.strip().upper()
    return upper.endswith("*") or any(word in upper for word in _DOWN_WORDS)


def parse_slurm_time_s(text: str) -> float | None:
    """A time ``scontrol`` prints (``2026-12-02T03:40:12``, the controller's local time) as epoch seconds; None for
    ``None``/``Unknown``/garbage (pure). Read in this process's local time zone: the adapter runs beside the
    controller's site, and an hour's zone mistake would only delay a readmission to the expiry."""
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Sighting:
    """What the scheduler says of one quarantined node now: its state and when its node daemon last started
    (SLURM ``SlurmdStartTime``, or ``BootTime`` when later; None where not said, as on PBS)."""

    host: Host
    state: str
    started_s: float | None = None


class Look(enum.Enum):
    """What to do with a quarantined node the scheduler was asked about."""

    #: Back in service since it was quarantined: probe it now, readmit it if the probe passes.
    PROBE = "probe"
    #: Not back (still down, or never went down: the evidence that kept it out still stands): leave it out.
    WAIT = "wait"


@dataclass(frozen=True, slots=True)
class LifeLook:
    """The decision about one quarantined node, with its reason in words for the log and the ledger."""

    host: Host
    look: Look
    why: str


def utc_clock(at_s: float) -> str:
    """Epoch seconds as a UTC time for people (pure)."""
    return datetime.fromtimestamp(at_s, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def back_in_service(entry: Entry, sighting: Sighting | None, seen_down_s: float | None) -> LifeLook:
    """Whether a quarantined node is back in service since it was quarantined (pure).

    Back: the scheduler says it takes jobs now *and* either its node daemon started after the entry was made (a
    reboot or a restarted ``slurmd``) or it was seen out of service (``seen_down_s``: when, by an earlier look)
    after the entry was made. A node that stayed in service all along is not back: the evidence that kept it out
    (a log line naming it, two missed probes) has not been answered by anything the scheduler did.
    """
    host = entry.host
    if sighting is None:
        return LifeLook(host, Look.WAIT, "the scheduler did not describe it")
    if not in_service(sighting.state):
        return LifeLook(host, Look.WAIT, f"state {sighting.state}: not in service")
    if sighting.started_s is not None and sighting.started_s > entry.since_s:
        return LifeLook(host, Look.PROBE, f"state {sighting.state}, its node daemon started "
                        f"{utc_clock(sighting.started_s)} after it was quarantined ({utc_clock(entry.since_s)})")
    if seen_down_s is not None and seen_down_s >= entry.since_s:
        return LifeLook(host, Look.PROBE, f"state {sighting.state}, seen out of service at {utc_clock(seen_down_s)}"
                        f" after it was quarantined ({utc_clock(entry.since_s)})")
    return LifeLook(host, Look.WAIT, f"state {sighting.state} but not restarted since it was quarantined")


#: SLURM reasons of a pending job that more free nodes would start (``ReqNodeNotAvail, UnavailableNodes:n3`` too).
_WAITING_FOR_NODES = ("Resources", "ReqNodeNotAvail", "Nodes_required_for_job_are_DOWN")


@dataclass(frozen=True, slots=True)
class PendingJob:
    """A job of the workflow the scheduler holds back: its id, its reason, its partition ('' when not said)."""

    job_id: str
    reason: str
    partition: str = ""


@dataclass(frozen=True, slots=True)
class NoRoom:
    """A job waits only because the quarantine keeps it off every free node; said once, recorded once."""

    job_id: str
    reason: str
    #: The free nodes, every one quarantined, each with its entry.
    entries: tuple[Entry, ...]

    @property
    def hosts(self) -> frozenset[Host]:
        return frozenset(e.host for e in self.entries)

    def message(self) -> str:
        """One line: which job waits, which quarantined hosts it would run on, and how they come back."""
        kept = ", ".join(f"{e.host.raw} ({until_text(e)})" for e in self.entries)
        return (f"batch job {self.job_id} waits ({self.reason}): every free node is quarantined: {kept}; a host comes "
                "back at its expiry after a passing probe, or sooner once the scheduler shows it restarted and a "
                "probe passes; quarantine_ttl_s sets the expiry, and a new run_dir starts with no quarantine")


def until_text(entry: Entry) -> str:
    """How long an entry keeps its host out, in words (pure)."""
    return "until readmitted by hand" if entry.expires_s is None else f"until {utc_clock(entry.expires_s)}"


def no_room(pending: PendingJob, free: Mapping[Host, Collection[str]], entries: Collection[Entry]) -> NoRoom | None:
    """Whether ``pending`` waits only for want of nodes the quarantine keeps from it (pure): its reason is one of
    waiting for nodes, some nodes of its partition are free (``free``: {host: its partitions}), and every one of
    them is quarantined. No free node at all is a busy machine, not the quarantine's doing."""
    if not pending.reason.startswith(_WAITING_FOR_NODES):
        return None
    mine = [h for h, parts in free.items() if not pending.partition or not parts or pending.partition in parts]
    kept = {e.host: e for e in entries}
    if not mine or any(h not in kept for h in mine):
        return None
    return NoRoom(pending.job_id, pending.reason, tuple(kept[h] for h in sorted(mine, key=lambda h: h.name)))
