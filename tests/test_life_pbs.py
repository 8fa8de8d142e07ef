"""The quarantine's life on the real OpenPBS bed (issue 22 item 4, PBS): the look of :class:`hotspare.QuarantineLife`
with real ``pbsnodes``, ``qsub``, ``qstat`` and ``qdel``. A quarantined node seen down and then back ``free`` is
probed with a job pinned to it and readmitted; one still down is not probed; an expired entry's healthy node is
readmitted after its probe; a frozen node (PBS never marks it down) is not: its probe job never ends, is deleted,
and the node stays out."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from hotspare import Host, Ledger, Quarantine, QuarantineLife, QuarantineReason, SchedulerQuery
from hotspare.act.life import READMIT
from hotspare.act.runner import Completed
from testbed.pbs import Bed


def _runner(bed: Bed):  # type: ignore[no-untyped-def]
    """The look's scheduler runner: each command inside the bed, a timeout reported as the core's runner does."""
    def run(argv: list[str], timeout_s: float) -> Completed:
        try:
            done = bed.exec(list(argv), timeout_s)
        except subprocess.TimeoutExpired as exc:
            return Completed(tuple(argv), None, str(exc.stdout or ""), str(exc.stderr or ""), True)
        return Completed(tuple(argv), done.returncode, done.stdout, done.stderr, False)
    return run


def _life(bed: Bed, wf: Path, probe_timeout_s: float) -> tuple[Ledger, Quarantine, QuarantineLife, list[str]]:
    ledger = Ledger.open(wf)
    quarantine = Quarantine.attach(ledger.connection, snapshot=wf / "quarantine.json")
    said: list[str] = []
    query = SchedulerQuery("pbs", None, run=_runner(bed))
    life = QuarantineLife(quarantine, ledger, query, wf / "probes", probe_timeout_s=probe_timeout_s,
                          retry_s=0, look_every_s=0, warn=said.append)
    return ledger, quarantine, life, said


def _readmits(ledger: Ledger) -> list[tuple[str | None, str]]:
    return [(o.host, o.detail) for o in ledger.observations() if o.kind == READMIT]


def test_a_node_seen_down_then_free_is_readmitted_after_its_pinned_probe(pbs_bed: Bed, tmp_path: Path) -> None:
    """p3 and p4 quarantined, then both crash; the look sees them down and probes neither. p3 is booted again:
    the next look sees it ``free`` after down, submits a job pinned to p3, which runs there and exits 0, and p3
    is readmitted, with the probe's evidence in the ledger and on the log. p4 is still down: not probed, kept."""
    ledger, quarantine, life, said = _life(pbs_bed, tmp_path / "wf", probe_timeout_s=30)
    # Probe jobs of earlier tests on this bed stay in PBS's history (qselect -x): only this test's count here.
    earlier = set(pbs_bed.run(["qselect", "-x", "-N", "hotspare-probe"]).split())
    try:
        for node in ("p3", "p4"):
            quarantine.add(Host(node), QuarantineReason.SCHEDULER, ttl_s=4 * 3600, detail="pbsnodes: down")
        for node in ("p3", "p4"):
            pbs_bed.crash(node)
        pbs_bed.wait_for(lambda: all("down" in pbs_bed.node_states().get(n, "") for n in ("p3", "p4")),
                         "p3 and p4 to be marked down", 60)
        assert life.tick(placing=True) == []
        assert quarantine.hosts() == {Host("p3"), Host("p4")}

        pbs_bed.start("p3")
        pbs_bed.wait_for(lambda: pbs_bed.node_states().get("p3") == "free", "p3 to be free again", 60)
        turns = life.tick(placing=True)
        assert [(t.probe.host.raw, t.probe.ok, t.readmitted) for t in turns] == [("p3", True, True)]
        assert "back in service: state free, seen out of service at" in turns[0].why
        assert "ran on p3 and exited 0" in turns[0].probe.detail
        assert quarantine.hosts() == {Host("p4")}
        ((host, detail),) = _readmits(ledger)
        assert host == "p3" and detail.endswith("readmitted")
        assert any(line.startswith("hotspare: quarantined host p3: back in service") for line in said)
        # The probe was a real PBS job pinned to p3, and it is over.
        jobs = [j for j in pbs_bed.run(["qselect", "-x", "-N", "hotspare-probe"]).split() if j not in earlier]
        assert len(jobs) == 1
        record = pbs_bed.run(["qstat", "-x", "-f", jobs[0]])
        assert "exec_host = p3/" in record and "Exit_status = 0" in record
    finally:
        ledger.close()


def test_an_expired_entry_of_a_frozen_node_is_kept_out_and_its_probe_deleted(pbs_bed: Bed, tmp_path: Path) -> None:
    """p1 and p2 quarantined with entries that have expired; p1 is frozen (PBS keeps it ``free``: a stopped MOM
    is never marked down). Both are probed: p2's pinned job runs and p2 is readmitted; p1's job never ends, is
    deleted at the deadline, and p1 stays out, the probe's words in the ledger."""
    ledger, quarantine, life, _ = _life(pbs_bed, tmp_path / "wf", probe_timeout_s=8)
    try:
        for node in ("p1", "p2"):
            quarantine.add(Host(node), QuarantineReason.PROBED, ttl_s=0.5, detail="missed two probes")
        time.sleep(0.6)
        pbs_bed.freeze("p1")
        turns = {t.probe.host.raw: t for t in life.tick(placing=True)}
        assert sorted(turns) == ["p1", "p2"]
        assert turns["p2"].readmitted and turns["p2"].why.startswith("its quarantine expired at")
        assert not turns["p1"].readmitted and not turns["p1"].probe.ok
        assert "deleted" in turns["p1"].probe.detail
        assert quarantine.hosts() == {Host("p1")}
        assert {h for h, d in _readmits(ledger) if d.endswith("kept out")} == {"p1"}
        # The deleted probe job is not left queued or running on PBS.
        live = pbs_bed.run(["qselect", "-N", "hotspare-probe"]).split()
        assert live == []
    finally:
        ledger.close()
