"""The PBS test bed on real OpenPBS: four free nodes, multi-node jobs that reach every node, node faults as PBS
reports them, and a teardown that leaves nothing behind. No mocks; every wait bounded."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from polling import wait_for as wait_until
from testbed.pbs import Bed
from testbed.pbs_layout import HOMES

NODES = {"p1", "p2", "p3", "p4"}


def submit(bed: Bed, tmp_path: Path, script: str, *options: str) -> tuple[str, Path]:
    """qsub ``script`` (as root, output joined into one file under tmp_path); the job id and the output path."""
    path = tmp_path / f"job-{time.monotonic_ns()}.sh"
    path.write_text(script)
    out = path.with_suffix(".out")
    return bed.run(["qsub", "-j", "oe", "-o", str(out), *options, str(path)]).strip(), out




def finished(bed: Bed, job: str, timeout_s: float = 60) -> dict[str, Any]:
    """The job's ``qstat -x -f -F json`` record once it is F (finished), and its output delivered."""

    def record() -> dict[str, Any] | None:
        done = bed.exec(["qstat", "-x", "-f", "-F", "json", job], 10)
        info = json.loads(done.stdout)["Jobs"][job] if done.returncode == 0 else {}
        return info if info.get("job_state") == "F" else None

    return dict(wait_until(f"job {job} finished", record, timeout_s))


def delivered(out: Path) -> str:
    return str(wait_until(f"{out} delivered", lambda: out.exists() and out.read_text(), 15))


def test_up_gives_four_free_nodes(pbs_bed: Bed) -> None:
    """After up, ``pbsnodes -av -F json`` lists p1..p4, each free, each its own MOM on its own port."""
    data = json.loads(pbs_bed.run(["pbsnodes", "-av", "-F", "json"]))["nodes"]
    assert {name: node["state"] for name, node in data.items()} == dict.fromkeys(sorted(NODES), "free")
    assert {node["Mom"] for node in data.values()} == NODES
    assert sorted(node["Port"] for node in data.values()) == [15011, 15013, 15015, 15017]


def test_commands_run_inside_the_private_network(pbs_bed: Bed) -> None:
    """What the bed runs sees only ``lo``, carrying the bed's addresses, and no route out."""
    addrs = pbs_bed.run(["ip", "-o", "-4", "addr", "show"])
    assert {line.split()[1] for line in addrs.splitlines()} == {"lo"}
    assert {"10.77.0.1/32", "10.77.0.11/32", "10.77.0.14/32"} <= set(addrs.split())
    assert "default" not in pbs_bed.run(["ip", "route", "show"])
    assert pbs_bed.run(["which", "qsub"]).strip() == str(pbs_bed.layout.prefix / "bin" / "qsub")


def test_scatter_job_reaches_all_four_nodes(pbs_bed: Bed, tmp_path: Path) -> None:
    """``select=4:ncpus=1 place=scatter``: $PBS_NODEFILE, pbsdsh and pbs_tmrsh name p1..p4; Exit_status 0."""
    bin_dir = pbs_bed.layout.prefix / "bin"  # a job's login shell resets PATH: call PBS's tools by full path
    script = f"cat $PBS_NODEFILE\necho ---\n{bin_dir}/pbsdsh hostname\necho ---\n{bin_dir}/pbs_tmrsh p4 hostname\n"
    job, out = submit(pbs_bed, tmp_path, script, "-l", "select=4:ncpus=1", "-l", "place=scatter")
    record = finished(pbs_bed, job)
    nodefile, dsh, tmrsh = delivered(out).split("---\n")
    assert record["Exit_status"] == 0
    assert nodefile.split() == ["p1", "p2", "p3", "p4"]
    assert sorted(dsh.split()) == ["p1", "p2", "p3", "p4"]
    assert tmrsh.split() == ["p4"]


def test_ended_job_keeps_its_exit_status_in_history(pbs_bed: Bed, tmp_path: Path) -> None:
    """``qstat -x -f -F json`` after a job ends gives its Exit_status (here the script's own 3)."""
    job, out = submit(pbs_bed, tmp_path, "hostname\nexit 3\n")
    record = finished(pbs_bed, job)
    assert record["Exit_status"] == 3
    assert record["exec_host"].split("/")[0] in NODES
    assert delivered(out).strip() in NODES


def test_crash_marks_the_node_down_and_start_brings_it_back(pbs_bed: Bed) -> None:
    """``crash p2`` (its namespace's init killed): p2 ``down`` within 10 s; ``start p2``: free again within 15 s."""
    mom = pbs_bed.pids["pbs_mom:p2"]
    pbs_bed.crash("p2")
    assert not Path(f"/proc/{mom}").exists()
    wait_until("p2 down", lambda: "down" in pbs_bed.node_states().get("p2", ""), 10)
    assert pbs_bed.free_nodes() == NODES - {"p2"}
    pbs_bed.start("p2")
    wait_until("p2 free", lambda: pbs_bed.free_nodes() == NODES, 15)
    assert pbs_bed.pids["pbs_mom:p2"] != mom


def test_freeze_goes_unnoticed_and_thaw_runs_jobs_again(pbs_bed: Bed, tmp_path: Path) -> None:
    """A frozen node (every process SIGSTOPped) stays ``free``: PBS never notices (the kernel still answers TCP
    for it); thawed, a job using every node runs to its end."""
    pbs_bed.freeze("p3")
    stopped = [Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] for pid in pbs_bed.node_pids("p3")]
    assert set(stopped) == {"T"}
    deadline = time.monotonic() + 8  # longer than a scheduler cycle (5 s)
    while time.monotonic() < deadline:
        assert pbs_bed.node_states()["p3"] == "free"
        time.sleep(1)
    pbs_bed.thaw("p3")
    job, _ = submit(pbs_bed, tmp_path, "true\n", "-l", "select=4:ncpus=1", "-l", "place=scatter")
    assert finished(pbs_bed, job)["Exit_status"] == 0


def test_down_leaves_nothing_behind(pbs_cluster: Any) -> None:
    """Teardown ends every recorded process and removes the network namespace, its hosts file and the PBS
    homes (the datastore with them); the next test gets a new bed."""
    bed = pbs_cluster.fresh()
    pids = [pid for name, pid in bed.pids.items() if name != "netns"]
    layout = bed.layout
    pbs_cluster.close()
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10, check=True)
    assert layout.netns not in namespaces.stdout
    assert not (Path("/etc/netns") / layout.netns).exists()
    assert not layout.homes.exists()
    assert not any(p.name == layout.netns for p in HOMES.glob("*"))
