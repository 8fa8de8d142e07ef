"""Gathering observations: probes and scheduler questions, each answer recorded as it comes.

An :class:`Observer` asks (through the run's :class:`~hotspare.act.gateway.Runner`) and notes what it saw in the
ledger at once, so a supervisor killed a moment later leaves the evidence behind; it decides nothing. A
scheduler command that fails is an observation too (``scheduler-error``), and is said once on stderr:
otherwise a wrong ``SLURM_CONF`` would switch the scheduler watch off without a word.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from hotspare.act.checkpoint import parse_step
from hotspare.act.gateway import ProbeHow, Runner
from hotspare.act.node_states import unhealthy
from hotspare.act.probe import QUICK_PROBE_GAP_S, QUICK_PROBE_S, ProbeResult, probe_twice
from hotspare.act.scheduler import QueryFailure, SchedulerQuery
from hotspare.decide.judge import (
    PROBE_WHY_SUSPECT,
    SIGNAL_PROBE,
    SIGNAL_SCHEDULER,
    Ask,
    Observations,
    no_host_answered,
    probe_why,
    signals_why,
    two_signals,
)
from hotspare.decide.policy import Decision
from hotspare.decide.pool import Pool
from hotspare.evidence.scan import Scanner
from hotspare.failures import QuarantineReason
from hotspare.hosts import Host

#: Records one observation: (attempt, kind, host or None, detail).
Note = Callable[[int, str, str | None, str], None]

#: The observation kind of a scheduler command that did not answer.
SCHEDULER_ERROR = "scheduler-error"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def scheduler_warning(failure: QueryFailure) -> str:
    """The one stderr line a run prints when the scheduler cannot be asked."""
    return (f"hotspare: warning: cannot ask the scheduler ({failure}); "
            "the scheduler watch is off until it answers")


#: How often a running attempt's checkpoint directory is looked at for a new complete checkpoint (seconds).
CHECKPOINT_POLL_S = 2.0
#: The longest a probe made while output stalls may take (seconds; shorter if the probe timeout is).
STALL_PROBE_S = QUICK_PROBE_S
#: The second probe of a stall look starts this long after the first (seconds): two samples of the node, apart.
STALL_PROBE_GAP_S = QUICK_PROBE_GAP_S
#: After a stall probe found a silent host, the next look comes this soon (seconds), not a scheduler poll later.
STALL_RECHECK_S = 1.0
#: Above this many active hosts a stall look probes only the hosts the scheduler calls unhealthy (probing every host
#: of a 2,000-node job twice a look would take minutes through the launcher).
STALL_PROBE_ALL_MAX = 64
#: A learned stall threshold is this many times the median gap between progress lines...
STALL_FACTOR = 5.0
#: ...and never below this (seconds).
STALL_FLOOR_S = 2.0
#: Until a few progress lines have come (a job starting up, loading its checkpoint), the threshold is this.
STALL_STARTUP_S = 10.0
#: Progress gaps kept for the learned threshold (the most recent ones).
STALL_GAPS = 32
#: Progress samples are at least this far apart at an attempt's start (seconds)...
SAMPLE_MIN_S = 0.2
#: ...and at least this share of the attempt's age later on: a week-long attempt keeps ~1,100 samples.
SAMPLE_SHARE = 0.01


@dataclass(slots=True)
class Watch:
    """What is learnt while an attempt runs (from its output and from the scheduler)."""

    scanner: Scanner
    last_output_s: float
    #: When (wall clock) the attempt started.
    started_wall_s: float = 0.0
    first_progress_s: float | None = None
    #: When (wall clock) the latest progress line arrived, and the step it named.
    last_progress_s: float | None = None
    last_step: int | None = None
    #: Lines seen when the supervisor itself ended the attempt: what follows is teardown it caused.
    stop_line: int | None = None
    #: Hosts that gave two independent signals of death while output stalled, how, and the quarantine reason.
    scheduler_blamed: tuple[Host, ...] = ()
    stall_why: str = ""
    stall_reason: QuarantineReason = QuarantineReason.SCHEDULER
    #: Progress samples (wall time, step) not yet recorded; see :meth:`take_samples`.
    samples: list[tuple[float, int | None]] = field(default_factory=list)
    #: Signals of death per active host seen during the current stall ("probe", "scheduler"); cleared when
    #: progress resumes.
    stall_signals: dict[Host, list[str]] = field(default_factory=dict)
    #: Monotonic gaps between successive progress lines (the most recent :data:`STALL_GAPS`).
    progress_gaps: list[float] = field(default_factory=list)
    _progress_mono_s: float | None = None
    #: When (monotonic) the stall is next looked at.
    next_look_s: float | None = None
    #: The newest checkpoint this attempt wrote (step, write time) and when (monotonic) it was last looked for.
    checkpoint_seen: tuple[int, float] | None = None
    checkpoint_polled_s: float = float("-inf")
    #: The checkpoint directory could not be listed (said once in the ledger).
    checkpoint_unlisted: bool = False
    _progress_line: int = -1
    _sampled_s: float | None = None

    def seen(self, chunk: bytes, now_s: float, wall_s: float) -> None:
        """Output arrived at ``now_s`` (monotonic) / ``wall_s`` (wall clock)."""
        self.scanner.feed(chunk)
        self.last_output_s = now_s
        progress = self.scanner.progress
        if progress is None or progress.last_line == self._progress_line:
            return
        self._progress_line = progress.last_line
        self.last_progress_s, self.last_step = wall_s, progress.last_step
        if self._progress_mono_s is not None:
            self.progress_gaps = [*self.progress_gaps[-(STALL_GAPS - 1):], now_s - self._progress_mono_s]
        self._progress_mono_s = now_s
        self.stall_signals.clear()
        self.next_look_s = None
        if self.first_progress_s is None:
            self.first_progress_s = wall_s
        gap = max(SAMPLE_MIN_S, SAMPLE_SHARE * (wall_s - self.started_wall_s))
        if self._sampled_s is None or wall_s - self._sampled_s >= gap:
            self._sampled_s = wall_s
            self.samples.append((wall_s, progress.last_step))

    def take_samples(self, *, final: bool = False) -> list[tuple[float, int | None]]:
        """The progress samples not yet taken; ``final`` adds the last progress line (the work before a fault)."""
        if final and self.last_progress_s is not None and self.last_progress_s != self._sampled_s:
            self._sampled_s = self.last_progress_s
            self.samples.append((self.last_progress_s, self.last_step))
        taken, self.samples = self.samples, []
        return taken

    def stall_s(self, fixed: float | None) -> float:
        """Silence that counts as a stall: ``fixed`` if given, else learned from this attempt's step cadence."""
        if fixed is not None:
            return fixed
        if len(self.progress_gaps) < 3:
            return STALL_STARTUP_S
        return max(STALL_FLOOR_S, STALL_FACTOR * statistics.median(self.progress_gaps))

    def due(self, now_s: float) -> bool:
        """Whether the stalled attempt may be looked at again (at once the first time; then see :meth:`looked`)."""
        return self.next_look_s is None or now_s >= self.next_look_s

    def looked(self, now_s: float, poll_s: float) -> None:
        """A stall look was made at ``now_s``; the next comes sooner while some host has one signal."""
        self.next_look_s = now_s + (STALL_RECHECK_S if self.stall_signals else poll_s)


class Observer:
    """Asks hosts and the scheduler for one run, noting every answer (and every failure to answer)."""

    def __init__(self, runner: Runner, scheduler: SchedulerQuery, how: ProbeHow, note: Note, *,
                 warn: Callable[[str], None] = _stderr, sleep: Callable[[float], None] = time.sleep) -> None:
        self.runner = runner
        self.sleep = sleep
        self.how = how
        self.note = note
        self.warn = warn
        self._failures: list[QueryFailure] = []
        self._warned = False
        theirs = scheduler.on_failure

        def both(failure: QueryFailure) -> None:
            theirs(failure)
            self._failures.append(failure)

        self.scheduler = replace(scheduler, on_failure=both)

    def _quick_how(self) -> ProbeHow:
        """This run's probe with the short stall deadline (or the whole probe timeout, if that is shorter)."""
        return replace(self.how, timeout_s=min(self.how.timeout_s, STALL_PROBE_S))

    def _probe_full(self, number: int, hosts: Sequence[Host], why: str, active: Sequence[Host], *,
                    control: Host | None) -> tuple[ProbeResult, ...]:
        """Probe ``hosts`` (of the ``active`` ones, and a ``control``) once with the whole ``--probe-timeout``;
        each answer noted, and a probe no host answered (see :func:`~hotspare.decide.judge.unanswered`)."""
        results = tuple(self.runner.probe(hosts, self.how))
        for res in results:
            detail = f"{why}{' (control)' if res.host == control else ''}: {res.detail}"
            self.note(number, "probe", res.host.name, detail)
        failed = [r.host for r in results if not r.ok]
        self._note_doubt(number, failed, active, control)
        return results

    def probe_quick(self, number: int, hosts: Sequence[Host], why: str, active: Sequence[Host], *,
                    control: Host | None = None) -> tuple[ProbeResult, ...]:
        """Probe ``hosts`` (and a ``control``) at once, twice, the second :data:`STALL_PROBE_GAP_S` after the
        first, each with the short stall deadline: a host has failed only when it missed both (a slow but live
        node answers one), so a dead node is known ~3 s after the question instead of after a whole
        ``--probe-timeout``. Every answer of both rounds is noted; the result per host is its answer if it gave
        one, else its second miss. When the quick round itself is in doubt (the control, or every host asked,
        missed both: a site whose launcher takes longer than the short deadline to start a probe), the hosts
        are probed once more with the full ``--probe-timeout`` and that round decides."""
        quick = self._quick_how()
        asked = [*hosts, *([control] if control is not None and control not in hosts else [])]
        first, second = self._two_probes(asked, quick)
        merged = [one if one.ok else two for one, two in zip(first, second, strict=True)]
        failed = [r.host for r in merged if not r.ok]
        # In doubt: the control missed, or every host asked did (one host alone proves nothing of the path).
        in_doubt = control in failed if control is not None else bool(failed) and len(failed) == len(asked)
        if in_doubt and self.how.timeout_s > quick.timeout_s:
            self.note(number, "probe", None, f"{why}: no answer to two quick probes from "
                      f"{', '.join(h.name for h in failed)}: probed again with the full timeout")
            return self._probe_full(number, hosts, why, active, control=control)
        for one, two in zip(first, second, strict=True):
            for res, turn in ((one, "first"), (two, "second")):
                extra = " (control)" if res.host == control else ""
                self.note(number, "probe", res.host.name, f"{why}{extra}, {turn} probe: {res.detail}")
        self._note_doubt(number, failed, active, control)
        return tuple(merged)

    def _note_doubt(self, number: int, failed: Sequence[Host], active: Sequence[Host], control: Host | None) -> None:
        """Say so when a probe round is in doubt: the control failed, or (no control) every active host did."""
        if control is not None and control in failed:
            self.note(number, "probe", None, f"the control {control.name} did not answer either: the probe or "
                      "launcher is suspect, so no host is blamed on it")
        elif control is None and no_host_answered(failed, active):
            self.note(number, "probe", None,
                      "no active host answered: the probe or launcher is suspect, so no host is blamed on it")

    def readmission(self, hosts: Sequence[Host]) -> list[ProbeResult]:
        """Probe quarantined hosts whose time is up (noted by the caller, which readmits them)."""
        return self.runner.probe(hosts, self.how)

    def stalled(self, number: int, pool: Pool, signals: dict[Host, list[str]]) -> tuple[Host, ...]:
        """Output stalled: probe the active hosts twice, the second probe :data:`STALL_PROBE_GAP_S` after the
        first (both with a short deadline, overlapping), and ask the scheduler about them, all at once.

        Each failed probe and each scheduler report of an unhealthy node is a signal, noted with its time and
        added to ``signals`` (kept by the caller until output resumes). Returns the hosts with two independent
        signals: two failed probes, or a failed probe and the scheduler's report. One signal never evicts: a
        slow node misses one probe, and SLURM calls a node NOT_RESPONDING while its tasks still run. When every
        active host fails a probe at once, the probe path is in doubt (the controller is down, the launcher is
        broken): none of that probe's failures counts.
        """
        how = self._quick_how()
        if len(pool.active) > STALL_PROBE_ALL_MAX:
            # A big job: probing every host each look would take minutes; probe those the scheduler doubts.
            states = self.scheduler.node_states(pool.active)
            targets = [h for h in pool.active if h in states and unhealthy(states[h])]
            rounds = self._two_probes(targets, how) if targets else []
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hotspare-stall") as ex:
                asked = ex.submit(self.scheduler.node_states, pool.active)
                rounds = self._two_probes(pool.active, how)
                states = asked.result()
        self.failures(number)
        for results in rounds:
            failed = [r for r in results if not r.ok]
            if failed and no_host_answered([r.host for r in failed], pool.active):
                self.note(number, "probe", None, "stall: no active host answered the probe: the probe or launcher "
                          "is suspect, so none of these failures counts")
                continue
            for res in failed:
                self.note(number, "probe", res.host.name, f"output stalled: {res.detail}")
                signals.setdefault(res.host, []).append(SIGNAL_PROBE)
        for host in self._note_unhealthy(number, pool.active, states, "while output stalled"):
            if SIGNAL_SCHEDULER not in signals.get(host, []):
                signals.setdefault(host, []).append(SIGNAL_SCHEDULER)
        dead = tuple(h for h in pool.active if two_signals(signals.get(h, [])))
        silent = sorted({r.host.name for results in rounds for r in results if not r.ok})
        self.note(number, "stall", None, f"output stalled: probed {len(pool.active)} active host(s) twice; "
                  + (f"no answer from {', '.join(silent)}" if silent else "all answered")
                  + (f"; two signals: {', '.join(h.name for h in dead)}" if dead else "; nobody has two signals"))
        return dead

    def _note_unhealthy(self, number: int, hosts: Sequence[Host], states: Mapping[Host, str], when: str,
                        ) -> list[Host]:
        """Note each of ``hosts`` the scheduler reports unhealthy (kind ``scheduler``); those hosts."""
        sick = [h for h in hosts if h in states and unhealthy(states[h])]
        for host in sick:
            self.note(number, "scheduler", host.name, f"reported {states[host]} {when}")
        return sick

    def _two_probes(self, hosts: Sequence[Host], how: ProbeHow) -> list[list[ProbeResult]]:
        """Probe ``hosts`` twice, the second :data:`STALL_PROBE_GAP_S` after the first started (overlapping)."""
        return list(probe_twice(lambda: self.runner.probe(hosts, how), gap_s=STALL_PROBE_GAP_S, sleep=self.sleep))

    def spares_dead(self, number: int, incoming: Sequence[Host], control: Host | None) -> tuple[Host, ...]:
        """Spares about to replace a dead node, checked before the launch: probed once with a short deadline
        (beside ``control``, an active host staying on); one that does not answer is probed again
        :data:`STALL_PROBE_GAP_S` later. Two failures: dead, not launched on. A healthy spare costs one probe.
        If the control fails too, the probe path is in doubt and no spare is blamed."""
        how = self._quick_how()
        asked = [*incoming, *([control] if control is not None and control not in incoming else [])]
        first = {r.host for r in self.runner.probe(asked, how) if not r.ok}
        if not first or (control is not None and control in first):
            return ()
        self.sleep(STALL_PROBE_GAP_S)
        again = [h for h in incoming if h in first]
        second = {r.host for r in self.runner.probe(again, how) if not r.ok}
        dead = tuple(h for h in again if h in second)
        for host in dead:
            self.note(number, "probe", host.name, "spare checked before use: no answer to two probes")
        return dead

    def answer(self, ask: Ask, number: int, obs: Observations, pool: Pool, checkpoint_dir: str | None, *,
               decision: Decision | None = None) -> Observations:
        """``obs`` with the answer to ``ask`` (a PROBE ``decision`` may name the hosts to probe)."""
        if ask is Ask.PROBE:
            if decision is not None and decision.probe:
                probes = self.probe_quick(number, decision.probe, PROBE_WHY_SUSPECT, pool.active,
                                          control=decision.probe_control)
                return replace(obs, probes=probes, probe_why=PROBE_WHY_SUSPECT, probe_control=decision.probe_control)
            why = probe_why(obs)
            # The scheduler is asked beside the probes (on PBS a crashed MOM is "down" within a second, while
            # Hydra only says a proxy's connection closed): its word on a host that missed its probe is a second
            # signal (see judge._verdict).
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hotspare-ask") as ex:
                asked = ex.submit(self.scheduler.node_states, pool.active)
                probes = self.probe_quick(number, pool.active, why, pool.active)
                down = self._note_unhealthy(number, pool.active, asked.result(), f"after the attempt ended ({why})")
            self.failures(number)
            return replace(obs, probes=probes, probe_why=why, scheduler_down=tuple(down))
        left = self.scheduler.walltime_left_s()
        self.failures(number)
        every = checkpoint_interval_s(checkpoint_dir)
        self.note(number, "walltime", None, f"left {left} s, checkpoint every {every} s")
        return replace(obs, walltime_asked=True, walltime_left_s=left, checkpoint_eta_s=every)

    def failures(self, number: int) -> None:
        """Note each scheduler command that failed since the last call; say it once per run on stderr."""
        failed, self._failures[:] = list(self._failures), []
        for failure in failed:
            self.note(number, SCHEDULER_ERROR, None, _error_detail(failure))
        if failed and not self._warned:
            self._warned = True
            self.warn(scheduler_warning(failed[0]))


def stall_why(seen: Sequence[str]) -> str:
    """How a host's two signals read in the verdict."""
    return signals_why(seen, "while output stalled")


def checkpoint_interval_s(directory: str | None) -> float | None:
    """Seconds between the two newest checkpoint directories (how long the next one will take)."""
    if directory is None or not Path(directory).is_dir():
        return None
    dirs = [p for p in Path(directory).iterdir() if p.is_dir() and parse_step(p.name) is not None]
    times = sorted(p.stat().st_mtime for p in dirs)
    return times[-1] - times[-2] if len(times) >= 2 else None


def _error_detail(failure: QueryFailure) -> str:
    """A failed scheduler command as recorded: the command, how it ended, what it said (first line first)."""
    how = f"timed out after {failure.timeout_s:g} s" if failure.timed_out else f"rc {failure.rc}"
    return f"{failure.command}: {how}: {failure.stderr_tail.strip() or '(nothing on stderr)'}"
