"""Acting on a judgement, and recording it: the one place the supervisor's decisions take effect.

:class:`Actor` writes the attempt's end and the decision (with its reason) to the ledger, quarantines
the hosts the decision names, swaps the pool, claims shared spares and saves the progress that
``--resume`` continues from; it also settles an attempt a killed supervisor left behind.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hotspare.act.checkpoint import Checkpoint
from hotspare.act.claims import SpareClaims
from hotspare.act.probe import ProbeResult
from hotspare.act.runner import StopCause, kill_group
from hotspare.decide.judge import Judgement, Observations
from hotspare.decide.policy import Action, History
from hotspare.decide.pool import Pool
from hotspare.errors import InputError
from hotspare.evidence.patterns import PatternSet
from hotspare.evidence.records import ScanResult
from hotspare.evidence.scan import scan
from hotspare.failures import FailureClass, QuarantineReason
from hotspare.hosts import Host
from hotspare.record.ledger import Ledger
from hotspare.record.quarantine import Quarantine


class Actor:
    """Carries out and records what was decided for one run."""

    def __init__(self, ledger: Ledger, quarantine: Quarantine, wall: Callable[[], float], *,
                 claims: SpareClaims | None, own: Sequence[Host], quarantine_ttl_s: float | None) -> None:
        self.ledger = ledger
        self.quarantine = quarantine
        self.wall = wall
        self.claims = claims
        #: The allocation's own active hosts (never claimed from the shared spares).
        self.own = frozenset(own)
        self.quarantine_ttl_s = quarantine_ttl_s
        self._progressed: set[int] = set()

    def begin_attempt(self, number: int, pool: Pool, log_path: Path, ckpt: Checkpoint | None) -> None:
        """Record an attempt about to start: its hosts, spares, log and the checkpoint it resumes from."""
        self.ledger.begin_attempt(number, started_s=self.wall(), hosts=[h.raw for h in pool.active],
                                  spares=[h.raw for h in pool.spare], log_path=str(log_path),
                                  resumed_step=ckpt.step if ckpt else None,
                                  resumed_path=str(ckpt.path) if ckpt else None)

    def started(self, number: int, pgid: int) -> None:
        """Record the launcher's process group (a resumed supervisor ends it if it is still ours)."""
        self.ledger.set_pgid(number, pgid)

    def progress(self, number: int, at_s: float) -> None:
        """Record when the attempt first made progress (once; later calls change nothing)."""
        if number not in self._progressed:
            self._progressed.add(number)
            self.ledger.set_first_progress(number, at_s)

    def timeline(self, number: int, rows: Sequence[tuple[float, str, int | None]]) -> None:
        """Record progress samples and checkpoints (wall time, kind, step) of attempt ``number``."""
        self.ledger.add_timeline(number, rows)

    def end_run(self, state: str, exit_code: int) -> None:
        """Record the run's end."""
        self.ledger.end_run(state, exit_code, self.wall())

    def note(self, number: int, kind: str, host: str | None, detail: str) -> None:
        """Record an observation (a probe answer, a scheduler report or error) at once."""
        self.ledger.observe(number, self.wall(), kind, host, detail)

    def carry_out(self, number: int, judgement: Judgement, obs: Observations, pool: Pool,
                  history: History) -> tuple[Pool, History]:
        """End the attempt's record, record the decision, quarantine, swap, claim and save the progress."""
        self.end_attempt(number, judgement, obs)
        verdict, decision = judgement.verdict, judgement.decision
        self.ledger.add_decision(number, self.wall(), decision.action.value,
                                 hosts=[h.name for h in decision.swap_out], reason=decision.reason,
                                 delay_s=decision.delay_s,
                                 quarantine_reason=decision.quarantine_reason if decision.swap_out else None)
        for host in decision.swap_out:
            self.quarantine.add(host, decision.quarantine_reason or QuarantineReason.SCRAPED, attempt=number,
                                ttl_s=self.quarantine_ttl_s, detail=verdict.reason)
        new_pool = pool.swap(decision.swap_out) if decision.action is Action.SWAP else pool
        self.claim(number, new_pool)
        new_history = history.after(verdict, decision, pool)
        self.ledger.save_progress({"active": [h.raw for h in new_pool.active],
                                   "spare": [h.raw for h in new_pool.spare],
                                   "history": history_to_json(new_history)})
        return new_pool, new_history

    def retire_spares(self, number: int, dead: Sequence[Host], pool: Pool, history: History) -> Pool:
        """Spares that failed their check before use: quarantined (probed) and replaced by the next ones, with the
        decision recorded; the caller checks there are spares enough."""
        names = ", ".join(h.name for h in dead)
        why = f"{names}: spare(s) failed the check before use (no answer to two probes); replaced before the launch"
        for host in dead:
            self.quarantine.add(host, QuarantineReason.PROBED, attempt=number, ttl_s=self.quarantine_ttl_s,
                                detail=why)
        self.ledger.add_decision(number, self.wall(), Action.SWAP.value, hosts=[h.name for h in dead], reason=why,
                                 delay_s=0.0, quarantine_reason=QuarantineReason.PROBED)
        new_pool = pool.swap(dead)
        self.claim(number, new_pool)
        self.ledger.save_progress({"active": [h.raw for h in new_pool.active],
                                   "spare": [h.raw for h in new_pool.spare],
                                   "history": history_to_json(history)})
        return new_pool

    def end_attempt(self, number: int, judgement: Judgement, obs: Observations) -> None:
        """Record how the attempt ended and why."""
        result, checkpoint = obs.scan, obs.checkpoint
        ended = obs.ended_s if obs.ended_s is not None else self.wall()  # the launcher's exit, before any probe
        self.ledger.end_attempt(
            number, ended_s=ended, rc=obs.rc, stopped_by=obs.stopped_by,
            failure_class=judgement.verdict.failure_class.value, verdict=judgement.verdict.reason,
            last_step=result.progress.last_step if result.progress else None,
            checkpoint_step=checkpoint[0] if checkpoint else None,
            checkpoint_s=checkpoint[1] if checkpoint else None, evidence=result.evidence,
        )

    def readmit(self, number: int, results: Sequence[ProbeResult], pool: Pool) -> Pool:
        """Hosts whose quarantine expired come back as spares if their probe passed."""
        back = []
        for res in results:
            self.note(number, "readmit", res.host.name, res.detail)
            if self.quarantine.readmit(res.host, probe_passed=res.ok):
                back.append(res.host)
        return Pool(pool.active, (*pool.spare, *back)) if back else pool

    # -- shared spares -------------------------------------------------------
    def taken(self, number: int, spares: Sequence[Host]) -> set[Host]:
        """The ``spares`` another run sharing them has claimed (each noted in the ledger)."""
        taken = self.claims.taken(spares) if self.claims else set()
        for host in sorted(taken):
            self.note(number, "claims", host.name, "spare claimed by another run")
        return taken

    def unclaimed(self, number: int, pool: Pool) -> Pool:
        """The pool without the spares another run sharing them has claimed meanwhile."""
        taken = self.taken(number, pool.spare)
        return Pool(pool.active, tuple(h for h in pool.spare if h not in taken)) if taken else pool

    def claim(self, number: int, pool: Pool) -> None:
        """Claim every active host that came from the shared spares."""
        if self.claims is None:
            return
        for host in pool.active:
            if host not in self.own and not self.claims.claim(host):
                self.note(number, "claims", host.name, "spare claimed by another run at the same moment; used anyway")

    # -- a supervisor killed mid-attempt -----------------------------------------
    def settle_lost(self, run_dir: Path, patterns: PatternSet) -> None:
        """An attempt the previous supervisor never finished (it was SIGKILLed): end it and record that."""
        for row in self.ledger.attempts():
            if row.ended_s is not None:
                continue
            if row.pgid is not None and _ours(row.pgid, run_dir):
                kill_group(row.pgid, signal.SIGKILL)
            elif row.pgid is not None:
                self.note(row.number, "resume", None,
                          f"process group {row.pgid} is gone or no longer ours: not signalled")
            self.ledger.end_attempt(
                row.number, ended_s=self.wall(), rc=None, stopped_by=StopCause.SUPERVISOR_LOST,
                failure_class=FailureClass.UNKNOWN.value, verdict="the supervisor was killed during this attempt"
                + ("" if Path(row.log_path).is_file() else f"; its log {row.log_path} is missing"),
                last_step=None, checkpoint_step=None, checkpoint_s=None,
                evidence=_scan_log(Path(row.log_path), patterns).evidence,
            )
            self.ledger.add_decision(row.number, self.wall(), Action.RETRY.value, hosts=[],
                                     reason="the supervisor was killed during this attempt; resumed", delay_s=0.0)


def history_to_json(history: History) -> dict[str, Any]:
    return {
        "attempts": history.attempts, "unattributed": history.unattributed, "probed": history.probed,
        "in_place": {k.value: v for k, v in history.in_place.items()},
        "strikes": {h.raw: n for h, n in history.strikes.items()},
        "retried": list(history.retried) if history.retried is not None else None,
    }


def history_from_json(data: Mapping[str, Any]) -> History:
    return History(
        attempts=int(data["attempts"]), unattributed=int(data["unattributed"]), probed=bool(data["probed"]),
        in_place={FailureClass(k): int(v) for k, v in data["in_place"].items()},
        strikes={Host(h): int(n) for h, n in data["strikes"].items()},
        retried=(str(data["retried"][0]), int(data["retried"][1])) if data.get("retried") else None,
    )


def _ours(pgid: int, run_dir: Path) -> bool:
    """Whether ``pgid`` still leads a process this run started: the PID may have been reused since the
    supervisor died, and only our own launcher may be signalled."""
    try:
        environ = Path(f"/proc/{pgid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"HOTSPARE_RUN_DIR={run_dir}".encode() in environ


def _scan_log(path: Path, patterns: PatternSet) -> ScanResult:
    """The evidence in a log left by a lost attempt (none if the log is gone)."""
    try:
        return scan(path, patterns)
    except InputError:
        return ScanResult(evidence=(), lines=0, bytes_read=0)
