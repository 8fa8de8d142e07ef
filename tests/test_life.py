"""The quarantine's life: the default expiry, a node back in service readmitted after its probe (and only then),
and a job the quarantine leaves without room said once — the pure rules from tables, the look with a fake runner
(the real SLURM bed: tests/test_life_slurm.py)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from hotspare import (
    DEFAULT_QUARANTINE_TTL_S,
    Host,
    Ledger,
    Quarantine,
    QuarantineLife,
    QuarantineReason,
    RunConfig,
    SchedulerQuery,
)
from hotspare.act.life import NO_ROOM, READMIT, parse_scontrol_sightings, parse_sinfo_free, parse_squeue_pending
from hotspare.act.runner import Completed
from hotspare.decide.life import Look, PendingJob, Sighting, back_in_service, in_service, no_room, was_down
from hotspare.record.quarantine import Entry
from hotspare.record.workflow import WorkflowRecord
from hotspare.record.workflow_report import build_workflow_report, render_workflow
from hotspare_dask.cluster import _Failover
from hotspare_parsl import FailoverProvider

SINCE = 1_800_000_000.0


def entry(host: str = "n3", since_s: float = SINCE, expires_s: float | None = SINCE + 3600) -> Entry:
    return Entry(Host(host), QuarantineReason.PROBED, None, since_s, expires_s, "missed two probes")


def test_entries_expire_by_default_after_four_hours() -> None:
    """Every owner of a quarantine expires its entries after DEFAULT_QUARANTINE_TTL_S unless told otherwise:
    the Dask clusters, the Parsl provider and ``hotspare launch``; None must be asked for."""
    assert DEFAULT_QUARANTINE_TTL_S == 4 * 3600
    for init in (_Failover.__init__, FailoverProvider.__init__):
        assert inspect.signature(init).parameters["quarantine_ttl_s"].default == DEFAULT_QUARANTINE_TTL_S
    assert RunConfig(command=("true",), allocation=("n1",), nhosts=1).quarantine_ttl_s == DEFAULT_QUARANTINE_TTL_S


def test_a_bad_expiry_is_refused_with_the_fix(tmp_path: Path) -> None:
    """The Parsl provider refuses an expiry that is not a positive number of seconds, naming None as the way to
    keep hosts out until readmitted by hand (the Dask clusters' check: test_dask_cluster)."""
    from parsl.providers import LocalProvider  # noqa: PLC0415 -- only this test needs it

    with pytest.raises(ValueError, match="quarantine_ttl_s=0: give seconds > 0, or None"):
        FailoverProvider(LocalProvider(), run_dir=tmp_path / "wf", quarantine_ttl_s=0)


@pytest.mark.parametrize(("state", "serving", "down"), [
    ("IDLE", True, False),
    ("MIXED", True, False),
    ("ALLOCATED+PLANNED", True, False),
    ("IDLE+DRAIN", False, False),
    ("IDLE*", False, True),
    ("DOWN*+NOT_RESPONDING", False, True),
    ("IDLE+NOT_RESPONDING", False, True),
    ("DOWN+REBOOT_ISSUED", False, True),
    ("FUTURE", False, False),
    ("free", True, False),
    ("job-busy", True, False),
    ("down", False, True),
    ("state-unknown,down", False, True),
    ("offline", False, True),
    ("", False, False),
])
def test_node_states_in_service_and_down(state: str, serving: bool, down: bool) -> None:
    """SLURM and PBS node states: which take jobs, which say the node was out of service."""
    assert (in_service(state), was_down(state)) == (serving, down)


@pytest.mark.parametrize(("sighting", "seen_down_s", "look"), [
    (Sighting(Host("n3"), "IDLE", SINCE + 60), None, Look.PROBE),  # rebooted (slurmd started) after the entry
    (Sighting(Host("n3"), "IDLE", SINCE - 60), SINCE + 30, Look.PROBE),  # seen DOWN after the entry, now IDLE
    (Sighting(Host("n3"), "MIXED", SINCE - 60), None, Look.WAIT),  # in service all along: the evidence stands
    (Sighting(Host("n3"), "IDLE", SINCE - 60), SINCE - 30, Look.WAIT),  # down before the entry: that was the fault
    (Sighting(Host("n3"), "DOWN*", SINCE + 60), None, Look.WAIT),  # restarted but not answering
    (Sighting(Host("n3"), "IDLE+DRAIN", SINCE + 60), None, Look.WAIT),  # an admin keeps it out
    (Sighting(Host("n3"), "free", None), SINCE + 30, Look.PROBE),  # PBS: down after the entry, now free
    (None, SINCE + 30, Look.WAIT),  # the scheduler did not describe it
])
def test_back_in_service_only_after_the_scheduler_shows_a_return(sighting: Sighting | None, seen_down_s: float | None,
                                                                  look: Look) -> None:
    """A quarantined node is probed early only if it takes jobs now and restarted, or was seen down, after its
    entry was made."""
    decided = back_in_service(entry(), sighting, seen_down_s)
    assert decided.look is look, decided.why
    assert decided.why


def _local(at_s: float) -> str:
    return datetime.fromtimestamp(at_s).strftime("%Y-%m-%dT%H:%M:%S")  # scontrol prints local time


def test_parse_scontrol_sightings_reads_state_and_the_later_start() -> None:
    """scontrol's node blocks (22.05 layout): the state and the later of SlurmdStartTime and BootTime; a node
    whose times are None is still seen; a name that is no host is skipped."""
    text = (f"NodeName=n3 Arch=x86_64 CoresPerSocket=1\n   State=IDLE ThreadsPerCore=1\n"
            f"   BootTime={_local(SINCE - 900)} SlurmdStartTime={_local(SINCE + 61)}\n"
            f"NodeName=n4 Arch=x86_64\n   State=DOWN*+NOT_RESPONDING\n   BootTime=None SlurmdStartTime=None\n"
            f"NodeName=bad;name State=IDLE\n")
    seen = parse_scontrol_sightings(text)
    assert seen[Host("n3")] == Sighting(Host("n3"), "IDLE", SINCE + 61)
    assert seen[Host("n4")] == Sighting(Host("n4"), "DOWN*+NOT_RESPONDING", None)
    assert len(seen) == 2


def test_parse_squeue_and_sinfo() -> None:
    """squeue's pending jobs (id|reason|partition) and sinfo's free nodes (name|partition, '*' dropped)."""
    jobs = parse_squeue_pending("7|Resources|debug\n8|ReqNodeNotAvail,_UnavailableNodes:n3|debug\nnoise\n")
    assert jobs == [PendingJob("7", "Resources", "debug"),
                    PendingJob("8", "ReqNodeNotAvail,_UnavailableNodes:n3", "debug")]
    assert parse_sinfo_free("n3|debug*\nn3|long\nn4|debug*\nx y;z|debug\n") == {
        Host("n3"): {"debug", "long"}, Host("n4"): {"debug"}}


@pytest.mark.parametrize(("job", "free", "said"), [
    (PendingJob("7", "Resources", "debug"), {"n3": {"debug"}, "n4": {"debug"}}, True),
    (PendingJob("7", "ReqNodeNotAvail,_UnavailableNodes:n3", "debug"), {"n3": {"debug"}}, True),
    (PendingJob("7", "Resources", "debug"), {"n3": {"debug"}, "n1": {"debug"}}, False),  # n1 free, not kept out
    (PendingJob("7", "Resources", "debug"), {}, False),  # nothing free: a busy machine, not the quarantine
    (PendingJob("7", "Priority", "debug"), {"n3": {"debug"}}, False),  # waits its turn, not for nodes
    (PendingJob("7", "Resources", "long"), {"n3": {"debug"}, "n1": {"long"}}, False),  # its partition has n1
    (PendingJob("7", "Resources", "long"), {"n3": {"long"}, "n1": {"debug"}}, True),  # n1 is not in its partition
])
def test_no_room_only_when_every_free_node_is_quarantined(job: PendingJob, free: dict[str, set[str]],
                                                          said: bool) -> None:
    """A pending job is said to lack room only when it waits for nodes and every free node of its partition is
    quarantined; the message names the job, the hosts with their expiry, and how they come back."""
    entries = [entry("n3"), entry("n4", expires_s=None)]
    found = no_room(job, {Host(h): p for h, p in free.items()}, entries)
    assert (found is not None) is said
    if found is not None:
        line = found.message()
        assert "batch job 7 waits" in line and "n3 (until " in line and "quarantine_ttl_s" in line
        assert "n4" not in line or "n4 (until readmitted by hand)" in line


class FakeSlurm:
    """scontrol/squeue/sinfo/srun answered from tables (the real parsers read them); each command kept."""

    def __init__(self, nodes: str, pending: str = "", free: str = "", answering: Sequence[str] = ()) -> None:
        self.nodes, self.pending, self.free, self.answering = nodes, pending, free, set(answering)
        self.asked: list[str] = []

    def __call__(self, argv: Sequence[str], timeout_s: float) -> Completed:
        self.asked.append(argv[0])
        if argv[0] == "srun":
            host = next(a.split("=", 1)[1] for a in argv if a.startswith("--nodelist="))
            ok = host in self.answering
            return Completed(tuple(argv), 0 if ok else 1, "", "" if ok else "srun: error: Unable to allocate\n", False)
        out = {"scontrol": self.nodes, "squeue": self.pending, "sinfo": self.free}[argv[0]]
        return Completed(tuple(argv), 0, out, "", False)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _life(tmp_path: Path, fake: FakeSlurm, wall: Clock) -> tuple[QuarantineLife, Quarantine, Ledger, list[str]]:
    ledger = Ledger.open(tmp_path / "wf")
    quarantine = Quarantine.attach(ledger.connection, clock=wall)
    said: list[str] = []
    life = QuarantineLife(quarantine, ledger, SchedulerQuery("slurm", None, run=fake), tmp_path / "probes",
                          probe_timeout_s=5, warn=said.append, clock=wall, wall=wall)
    return life, quarantine, ledger, said


def test_a_restarted_node_is_readmitted_after_its_probe_and_a_dead_one_stays(tmp_path: Path) -> None:
    """n3's slurmd restarted after it was quarantined and it is IDLE: probed, answers, readmitted before its expiry;
    n4 is still DOWN: not probed, kept out. The readmission is in the ledger with its evidence and on the log."""
    wall = Clock(SINCE)
    fake = FakeSlurm(f"NodeName=n3 State=IDLE SlurmdStartTime={_local(SINCE + 120)}\n"
                     "NodeName=n4 State=DOWN*+NOT_RESPONDING SlurmdStartTime=None\n", answering=["n3"])
    life, quarantine, ledger, said = _life(tmp_path, fake, wall)
    try:
        for host in ("n3", "n4"):
            quarantine.add(Host(host), "probed", ttl_s=DEFAULT_QUARANTINE_TTL_S, detail="missed two probes")
        wall.now += 300
        turns = life.tick(placing=True)
        assert [(t.probe.host.name, t.readmitted) for t in turns] == [("n3", True)]
        assert [e.host.name for e in quarantine.entries()] == ["n4"]
        (row,) = [o for o in ledger.observations() if o.kind == READMIT]
        assert row.host == "n3" and "back in service" in row.detail
        assert "node daemon started" in row.detail and row.detail.endswith("readmitted")
        assert said and "n3" in said[0]
        assert life.tick() == []  # no placement and the last look is recent: nothing asked
        assert fake.asked.count("scontrol") == 1
    finally:
        ledger.close()


def test_a_node_back_in_service_that_fails_its_probe_stays_out_and_waits_to_be_probed_again(tmp_path: Path) -> None:
    """n3 was seen DOWN after it was quarantined and is IDLE now, but its probe fails: kept out, the failed probe
    recorded; the next placements do not probe it again until retry_s has passed."""
    wall = Clock(SINCE)
    fake = FakeSlurm("NodeName=n3 State=DOWN* SlurmdStartTime=None\n")
    life, quarantine, ledger, _ = _life(tmp_path, fake, wall)
    try:
        quarantine.add(Host("n3"), "probed", ttl_s=DEFAULT_QUARANTINE_TTL_S)
        wall.now += 10
        assert life.tick(placing=True) == []  # down: nothing to probe, but seen down
        fake.nodes = "NodeName=n3 State=IDLE SlurmdStartTime=None\n"
        wall.now += 10
        (turn,) = life.tick(placing=True)
        assert not turn.readmitted and "seen out of service" in turn.why
        assert [o.detail.endswith("kept out") for o in ledger.observations() if o.kind == READMIT] == [True]
        wall.now += 10
        assert life.tick(placing=True) == []  # within retry_s
        wall.now += life.retry_s
        fake.answering.add("n3")
        (turn,) = life.tick(placing=True)
        assert turn.readmitted and quarantine.entries() == []
    finally:
        ledger.close()


def test_no_room_is_said_once_on_the_log_and_in_the_ledger_and_postmortem_shows_it(tmp_path: Path) -> None:
    """Job 7 waits (Resources) and the only free nodes, n3 and n4, are quarantined (not restarted): one WARNING
    line and one ledger row naming both and their expiry, not repeated at the next looks; the workflow's
    postmortem shows it beside each entry's expiry."""
    wall = Clock(SINCE)
    fake = FakeSlurm("NodeName=n3 State=IDLE\nNodeName=n4 State=IDLE\n", pending="7|Resources|debug\n",
                     free="n3|debug*\nn4|debug*\n")
    life, quarantine, ledger, said = _life(tmp_path, fake, wall)
    try:
        WorkflowRecord(ledger).submitted("7", "job-0", SINCE, [Host("n3"), Host("n4")])
        for host in ("n3", "n4"):
            quarantine.add(Host(host), "scraped", ttl_s=DEFAULT_QUARANTINE_TTL_S, detail="ECC error")
        for _ in range(3):
            wall.now += 11
            life.tick(pending=["7"])
        (line,) = said
        assert "batch job 7 waits (Resources)" in line and "n3 (until " in line and "n4 (until " in line
        rows = [o for o in ledger.observations() if o.kind == NO_ROOM]
        assert [r.detail for r in rows] == [line.removeprefix("hotspare: ")]
        report = build_workflow_report(ledger)
        assert report is not None
        text = render_workflow(report)
        assert "no-room" in text and "batch job 7 waits" in text and "(scraped): ECC error; kept out until " in text
        assert report.to_json()["life"][0]["kind"] == NO_ROOM
    finally:
        ledger.close()
