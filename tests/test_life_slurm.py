"""The quarantine's life on the real SLURM bed (issue 22 item 4): a workflow directory whose earlier run quarantined
nodes that have since crashed and been restarted gets them back after their probe; nodes still quarantined that
leave a job no free node are said once, on the log, in the ledger and in ``hotspare postmortem WF_DIR``."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from distributed import Client
from parsl.jobs.states import JobState
from parsl.providers import SlurmProvider

from conftest import run_cli
from hotspare import DEFAULT_QUARANTINE_TTL_S, Host, Ledger, Quarantine, QuarantineReason
from hotspare.act.life import NO_ROOM, READMIT, parse_scontrol_sightings
from hotspare_dask import FailoverSLURMCluster
from hotspare_dask.preload import HOSTNAME_KEY
from hotspare_parsl import FailoverProvider

#: The scheduler and its dashboard on loopback: the bed's nodes share this host's network.
LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}


def _earlier_workflow(wf: Path, hosts: tuple[str, ...]) -> float:
    """What a workflow run earlier in ``wf`` left: ``hosts`` quarantined with the default expiry. Its time."""
    ledger = Ledger.open(wf)
    try:
        quarantine = Quarantine.attach(ledger.connection, snapshot=wf / "quarantine.json")
        for host in hosts:
            quarantine.add(Host(host), QuarantineReason.PROBED, ttl_s=DEFAULT_QUARANTINE_TTL_S,
                           detail="an earlier workflow: missed two probes")
        return quarantine.entries()[0].since_s
    finally:
        ledger.close()


def _crash_and_restart(bed, node: str, since_s: float) -> None:  # type: ignore[no-untyped-def]
    """Power ``node`` off, then on again, and wait until SLURM shows it IDLE with a slurmd started after
    ``since_s`` (SlurmdStartTime has whole seconds: the restart waits for the next one)."""
    bed.crash(node)
    time.sleep(max(0.0, since_s + 1.1 - time.time()))
    bed.start(node)

    def back() -> bool:
        seen = parse_scontrol_sightings(bed.scontrol("show", "node", node)).get(Host(node))
        return seen is not None and seen.state == "IDLE" and (seen.started_s or 0.0) > since_s

    bed.wait_for(back, f"{node} to come back IDLE with a new slurmd", 60)


def _worker_hosts(cluster: FailoverSLURMCluster) -> set[str]:
    return {w.get(HOSTNAME_KEY, "") for w in cluster.scheduler_info["workers"].values()}


def _observations(wf: Path, kind: str) -> list[tuple[str | None, str]]:
    ledger = Ledger.open(wf)
    try:
        return [(o.host, o.detail) for o in ledger.observations() if o.kind == kind]
    finally:
        ledger.close()


def test_dask_a_restarted_node_is_readmitted_after_its_probe(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: an earlier workflow in the same directory quarantined n3 and n4, then both crashed; n3
    was restarted (IDLE, slurmd started after its entry), n4 is still off. A new 3-job cluster (a whole node
    each) probes n3 at its first placement, readmits it, and gets its 3 workers on n1, n2 and n3; n4 stays out.
    The readmission, with its evidence, is in the ledger and in ``hotspare postmortem WF_DIR``."""
    monkeypatch.chdir(tmp_path)  # sbatch's and dask's stray files land here, never in the checkout
    monkeypatch.setenv("SLURM_CONF", slurm_bed.env["SLURM_CONF"])
    wf = tmp_path / "wf"
    since = _earlier_workflow(wf, ("n3", "n4"))
    slurm_bed.crash("n4")
    _crash_and_restart(slurm_bed, "n3", since)
    cluster = FailoverSLURMCluster(cores=2, processes=1, memory="500MB", walltime="00:10:00",
                                   job_extra_directives=["--exclusive"], run_dir=wf, log_directory=tmp_path / "logs",
                                   scheduler_options=LOOPBACK)
    client = None
    try:
        cluster.scale(jobs=3)
        client = Client(cluster, timeout=60)
        client.wait_for_workers(3, timeout=120)
        assert _worker_hosts(cluster) == {"n1", "n2", "n3"}
        assert [e.host.name for e in cluster.quarantine.entries()] == ["n4"]
    finally:
        if client is not None:
            client.close()
        cluster.close()
    (row,) = _observations(wf, READMIT)
    assert row[0] == "n3" and "back in service" in row[1] and "probe: answered; readmitted" in row[1], row
    shown = run_cli("postmortem", str(wf))
    assert shown.returncode == 0, shown.stderr
    assert "readmit" in shown.stdout and "n3: back in service" in shown.stdout, shown.stdout


def test_dask_no_room_is_said_once_in_the_log_the_ledger_and_postmortem(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """An earlier workflow quarantined n3 and n4, which never went down (the evidence stands: no probe, no
    readmission). A new 3-job cluster (a whole node each) gets 2 workers; the third job waits in PENDING, and
    the cluster says why once: a WARNING naming n3 and n4 with their expiry, one ``no-room`` row in the ledger,
    shown by ``hotspare postmortem WF_DIR``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_CONF", slurm_bed.env["SLURM_CONF"])
    caplog.set_level(logging.WARNING, logger="hotspare_dask.cluster")
    wf = tmp_path / "wf"
    _earlier_workflow(wf, ("n3", "n4"))
    cluster = FailoverSLURMCluster(cores=2, processes=1, memory="500MB", walltime="00:10:00",
                                   job_extra_directives=["--exclusive"], run_dir=wf, log_directory=tmp_path / "logs",
                                   scheduler_options=LOOPBACK)
    client = None

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if "every free node is quarantined" in r.getMessage()]

    try:
        cluster.scale(jobs=3)
        client = Client(cluster, timeout=60)
        client.wait_for_workers(2, timeout=120)
        slurm_bed.wait_for(said, "the no-room warning", 60)
        time.sleep(12)  # at least one more look at the scheduler: the warning is not repeated
        assert _worker_hosts(cluster) == {"n1", "n2"}
    finally:
        if client is not None:
            client.close()
        cluster.close()
    (line,) = said()
    assert "n3 (until " in line and "n4 (until " in line and "waits (" in line, line
    assert [row[1] for row in _observations(wf, NO_ROOM)] == [line.removeprefix("hotspare: ")]
    assert _observations(wf, READMIT) == []
    shown = run_cli("postmortem", str(wf))
    assert shown.returncode == 0, shown.stderr
    assert "no-room" in shown.stdout and "every free node is quarantined" in shown.stdout, shown.stdout


def test_parsl_a_restarted_node_is_readmitted_and_no_room_is_said(slurm_bed, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """The same rules in the Parsl provider: n2, n3 and n4 were quarantined by an earlier workflow; n2 crashed
    and was restarted, so the first submit probes and readmits it. Two exclusive one-node blocks then fill n1
    and n2; a third waits, and its status poll says once that every free node (n3, n4) is quarantined."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_CONF", slurm_bed.env["SLURM_CONF"])
    caplog.set_level(logging.WARNING, logger="hotspare_parsl.provider")
    wf = tmp_path / "wf"
    since = _earlier_workflow(wf, ("n2", "n3", "n4"))
    _crash_and_restart(slurm_bed, "n2", since)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    inner = SlurmProvider(nodes_per_block=1, walltime="00:05:00", exclusive=True)
    inner.script_dir = str(scripts)
    provider = FailoverProvider(inner, run_dir=wf, probe_timeout_s=20)
    jobs: list[object] = []
    try:
        jobs = [provider.submit("sleep 120", 1) for _ in range(3)]
        assert [e.host.name for e in provider.quarantine.entries()] == ["n3", "n4"]

        def said() -> list[str]:
            time.sleep(1)  # a status poll a second, as Parsl's own poller would at most
            provider.status(jobs)
            return [r.getMessage() for r in caplog.records if "every free node is quarantined" in r.getMessage()]

        slurm_bed.wait_for(said, "the no-room warning", 60)
        states = [s.state for s in provider.status(jobs)]
        assert states.count(JobState.PENDING) == 1, states
    finally:
        provider.cancel(jobs)
        provider.close()
    (row,) = _observations(wf, READMIT)
    assert row[0] == "n2" and row[1].endswith("readmitted"), row
    (line,) = [r.getMessage() for r in caplog.records if "every free node is quarantined" in r.getMessage()]
    assert "n3 (until " in line and "n4 (until " in line, line
    assert len(_observations(wf, NO_ROOM)) == 1
