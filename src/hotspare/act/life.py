"""The workflow adapters' look at their quarantine's nodes: readmit the ones that came back, say when none is left.

A :class:`QuarantineLife` belongs to one quarantine owner (the Dask cluster, the Parsl provider). At each
placement, and at most every :data:`LOOK_EVERY_S` between, it

1. asks SLURM about every quarantined node (one ``scontrol show node``), and hands each answer to the pure
   rule :func:`hotspare.decide.life.back_in_service`;
2. probes the nodes that are back in service and those whose entry expired (a one-task ``srun --immediate``
   each, in parallel), readmits those that answer, and records every probe in the ledger (``readmit``
   observations: why the node was probed, what the probe said, readmitted or kept out). A node that does not
   answer stays out and is not probed again for ``retry_s``;
3. for the workflow's jobs SLURM holds back, asks which nodes are free (``squeue``, ``sinfo``); when every free
   node is quarantined (:func:`hotspare.decide.life.no_room`) it says so once on the adapter's log and once in
   the ledger (a ``no-room`` observation, shown by ``hotspare postmortem WF_DIR``).

On PBS the look is the same with PBS's words. A node is back in service when ``pbsnodes`` shows it taking jobs
after one of these looks saw it out of service (down, ``state-unknown``, offline) since it was quarantined: PBS
gives no MOM start time, and a node that went from ``job-busy`` to ``free`` was never out. The probe is a job
pinned to the node (:mod:`hotspare.act.pbs_probe`), because PBS has no "start now or fail": a probe job that
waited in a busy queue fails, and the node stays out until its next try. PBS's "no room" is of another
kind: the adapters pin PBS jobs to hosts known good, so a job PBS holds back waits for one of those, not for
the quarantine; but a job with no host known good to pin it to is left to PBS to place, perhaps on a quarantined
node, and :meth:`QuarantineLife.unpinned` says that once.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from hotspare.act.launchers import LauncherKind
from hotspare.act.pbs_probe import probe_pbs_hosts
from hotspare.act.probe import ProbeResult, probe_hosts
from hotspare.act.runner import Completed
from hotspare.act.scheduler import QueryFailure, SchedulerKind, SchedulerQuery, parse_pbsnodes
from hotspare.decide.life import (
    Look,
    PendingJob,
    Sighting,
    back_in_service,
    no_room,
    parse_slurm_time_s,
    until_text,
    utc_clock,
    was_down,
)
from hotspare.errors import HostError
from hotspare.hosts import Host
from hotspare.record.ledger import Ledger
from hotspare.record.quarantine import Quarantine

log = logging.getLogger(__name__)

#: Between placements, the scheduler is asked about the quarantined nodes at most this often (seconds).
LOOK_EVERY_S = 10.0
#: A node whose readmission probe failed is not probed again for this long (seconds).
PROBE_RETRY_S = 60.0
#: The observation kinds this module records: a readmission probe (passed or not), and a job left without room.
READMIT, NO_ROOM = "readmit", "no-room"


def parse_scontrol_sightings(text: str) -> dict[Host, Sighting]:
    """``scontrol show node NAMES``: each node's State and when its node daemon last started — the later of
    ``SlurmdStartTime`` and ``BootTime`` (a reboot restarts both; on the test bed only slurmd restarts) (pure)."""
    found: dict[Host, Sighting] = {}
    for block in re.split(r"\n(?=NodeName=)", text):
        fields = dict(re.findall(r"\b(NodeName|State|SlurmdStartTime|BootTime)=(\S+)", block))
        if "NodeName" not in fields or "State" not in fields:
            continue
        times = [t for t in (parse_slurm_time_s(fields.get(k, "")) for k in ("SlurmdStartTime", "BootTime"))
                 if t is not None]
        try:
            host = Host(fields["NodeName"])
        except HostError:
            continue  # a name we cannot use is not a node we run on
        found[host] = Sighting(host, fields["State"], max(times) if times else None)
    return found


def parse_squeue_pending(text: str) -> list[PendingJob]:
    """``squeue -h -t PD -o %i|%r|%P`` lines: each pending job's id, reason and partition (pure)."""
    jobs = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0]:
            jobs.append(PendingJob(parts[0], parts[1], parts[2]))
    return jobs


def parse_sinfo_free(text: str) -> dict[Host, set[str]]:
    """``sinfo -h -N -t idle -o %N|%P`` lines: each free node and its partitions (the default one's '*' dropped)
    (pure)."""
    free: dict[Host, set[str]] = {}
    for line in text.splitlines():
        name, _, partition = line.strip().partition("|")
        try:
            host = Host(name)
        except HostError:
            continue
        free.setdefault(host, set()).add(partition.rstrip("*"))
    return free


@dataclass(frozen=True, slots=True)
class ProbeTurn:
    """One node probed for readmission: why it was probed, what it said, and whether it came back."""

    why: str
    probe: ProbeResult
    readmitted: bool

    def describe(self) -> str:
        return (f"{self.why}; probe: {self.probe.detail}; "
                f"{'readmitted' if self.readmitted else 'kept out'}")


def _nothing(line: str) -> None:
    """The default ``warn``: nobody to tell."""


class QuarantineLife:
    """One quarantine owner's look at its nodes (see the module). ``lock`` guards the quarantine's database and
    the ledger (held to read and write, never while asking or probing); ``warn`` takes each line for the
    adapter's log; ``clock`` is monotonic (when to look again), ``wall`` the ledger's time."""

    def __init__(self, quarantine: Quarantine, ledger: Ledger, query: SchedulerQuery, workdir: Path, *,
                 probe_timeout_s: float, lock: AbstractContextManager[object] | None = None,
                 retry_s: float = PROBE_RETRY_S, look_every_s: float = LOOK_EVERY_S,
                 warn: Callable[[str], None] = _nothing, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        if not probe_timeout_s > 0 or not retry_s >= 0 or not look_every_s >= 0:
            raise ValueError(f"probe_timeout_s={probe_timeout_s!r} must be > 0, retry_s={retry_s!r} and "
                             f"look_every_s={look_every_s!r} >= 0")
        self.quarantine, self.ledger, self.query, self.workdir = quarantine, ledger, query, workdir
        self.probe_timeout_s, self.retry_s, self.look_every_s = probe_timeout_s, retry_s, look_every_s
        self._guard = lock if lock is not None else nullcontext()
        self._warn, self._clock, self._wall = warn, clock, wall
        self._next_look_s = float("-inf")
        #: When a failed probe's node may be probed again (monotonic).
        self._probe_after: dict[Host, float] = {}
        #: When each quarantined node was last seen out of service (wall clock).
        self._seen_down: dict[Host, float] = {}
        #: The pending jobs at the last tick: a new one is looked at without waiting.
        self._pending_seen: set[str] = set()
        self._ticking = threading.Lock()
        #: The sets of hosts a "no room" was said for (each said once).
        self._said: set[frozenset[Host]] = set()

    def tick(self, *, placing: bool = False, pending: Collection[str] = ()) -> list[ProbeTurn]:
        """Look now if a job is being placed (``placing``), a job of ``pending`` (the workflow's jobs not yet
        running) was not there at the last look, or the last look is ``look_every_s`` old: readmit the nodes that
        came back, and check the pending jobs for want of room. The probes run here."""
        # One look at a time (an adapter may tick from its placement and from a periodic callback): a placement
        # waits for the look under way (bounded by its probes' timeout), a periodic tick skips.
        if not self._ticking.acquire(blocking=placing):
            return []
        try:
            return self._tick(placing, pending)
        finally:
            self._ticking.release()

    def _tick(self, placing: bool, pending: Collection[str]) -> list[ProbeTurn]:
        now = self._clock()
        fresh = not set(pending) <= self._pending_seen
        self._pending_seen = set(pending)
        if not placing and not fresh and now < self._next_look_s:
            return []
        self._next_look_s = now + self.look_every_s
        turns = self._readmit(now)
        if pending and not self._pbs:
            self._check_room(set(pending))
        return turns

    # -- readmission -----------------------------------------------------------------------------------
    def _readmit(self, now: float) -> list[ProbeTurn]:
        with self._guard:
            entries, due = self.quarantine.entries(), {e.host: e for e in self.quarantine.due()}
        if not entries:
            return []
        sightings = self._sight([e.host for e in entries])
        for s in sightings.values():
            if was_down(s.state):
                self._seen_down[s.host] = self._wall()
        looks = [back_in_service(e, sightings.get(e.host), self._seen_down.get(e.host))
                 for e in entries if e.host not in due]
        why = {h: f"its quarantine expired at {utc_clock(e.expires_s or 0.0)}" for h, e in due.items()}
        why.update({look.host: f"back in service: {look.why}" for look in looks if look.look is Look.PROBE})
        asked = [h for h in why if self._probe_after.get(h, float("-inf")) <= now]
        return self._probe(asked, why, due, now) if asked else []

    @property
    def _pbs(self) -> bool:
        return self.query.kind is SchedulerKind.PBS

    def _sight(self, hosts: Sequence[Host]) -> dict[Host, Sighting]:
        if self._pbs:  # state only: PBS does not say when a MOM started
            out = self._ask(["pbsnodes", *(h.raw for h in hosts)])
            return {} if out is None else {h: Sighting(h, state) for h, state in parse_pbsnodes(out).items()}
        out = self._ask(["scontrol", "show", "node", ",".join(h.raw for h in hosts)])
        return {} if out is None else parse_scontrol_sightings(out)

    def _probe(self, hosts: list[Host], why: dict[Host, str], due: Collection[Host], now: float) -> list[ProbeTurn]:
        if self._pbs:
            results = probe_pbs_hosts(hosts, self.workdir, timeout_s=self.probe_timeout_s, run=self.query.run)
        else:
            immediate = f"--immediate={max(1, int(self.probe_timeout_s / 2))}"
            results = probe_hosts(hosts, LauncherKind.SRUN, self.workdir, timeout_s=self.probe_timeout_s,
                                  extra_args=(immediate,), run=self.query.run)
        turns = []
        with self._guard:
            for r in results:
                back = self.quarantine.readmit(r.host, probe_passed=r.ok, early=r.host not in due)
                turn = ProbeTurn(why[r.host], r, back)
                self.ledger.observe(0, self._wall(), READMIT, r.host.raw, turn.describe())
                turns.append(turn)
        for turn in turns:
            if not turn.readmitted:
                self._probe_after[turn.probe.host] = now + self.retry_s
            self._warn(f"hotspare: quarantined host {turn.probe.host.raw}: {turn.describe()}")
        return turns

    # -- no room -----------------------------------------------------------------------------------------
    def _check_room(self, ours: set[str]) -> None:
        out = self._ask(["squeue", "-h", "--me", "-t", "PD", "-o", "%i|%r|%P"])
        waiting = [j for j in parse_squeue_pending(out or "") if j.job_id in ours]
        if not waiting:
            return
        free_text = self._ask(["sinfo", "-h", "-N", "-t", "idle", "-o", "%N|%P"])
        if free_text is None:
            return
        free = parse_sinfo_free(free_text)
        with self._guard:
            entries = self.quarantine.entries()
        for job in waiting:
            found = no_room(job, free, entries)
            if found is None or found.hosts in self._said:
                continue
            self._said.add(found.hosts)
            line = found.message()
            with self._guard:
                self.ledger.observe(0, self._wall(), NO_ROOM, None, line)
            self._warn(f"hotspare: {line}")

    def unpinned(self, what: str, known: Collection[Host], busy: Collection[Host]) -> str | None:
        """PBS's "no room": ``what`` (a job or block about to be submitted) cannot be pinned, because every host
        the adapter knows (``known``) is quarantined or held by its other jobs (``busy``), and PBS, which cannot
        exclude a host, will place it, perhaps on a quarantined node. Said once per set of quarantined hosts, on
        the adapter's log and in the ledger (a ``no-room`` observation); the line, or None when already said or
        when no known host is quarantined (then the others are only busy: a full machine)."""
        with self._guard:
            entries = {e.host: e for e in self.quarantine.entries()}
        kept = sorted((h for h in known if h in entries), key=lambda h: h.name)
        if not kept or frozenset(kept) in self._said:
            return None
        self._said.add(frozenset(kept))
        held = sorted((h for h in busy if h not in entries), key=lambda h: h.name)
        quarantined = ", ".join(f"{h.raw} ({until_text(entries[h])})" for h in kept)
        others = f"; the rest run its other jobs: {', '.join(h.raw for h in held)}" if held else ""
        line = (f"{what} is left to PBS to place: no host known good to pin it to (quarantined: {quarantined}"
                f"{others}); PBS cannot exclude a host and may place it on a quarantined one; name more hosts the "
                "workflow may use (hosts=), or readmit one (hotspare quarantine RUN_DIR --readmit HOST)")
        with self._guard:
            self.ledger.observe(0, self._wall(), NO_ROOM, None, line)
        self._warn(f"hotspare: {line}")
        return line

    def _ask(self, argv: list[str]) -> str | None:
        """The command's stdout, or None (the failure handed to the query's ``on_failure``)."""
        done: Completed = self.query.run(argv, self.query.timeout_s)
        if done.ok:
            return done.stdout
        self.query.on_failure(QueryFailure.of(done, self.query.timeout_s))
        return None

