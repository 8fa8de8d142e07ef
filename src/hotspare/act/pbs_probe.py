"""A node probed from outside any job on PBS: a tiny job pinned to it (``select=1:host=H``), watched to its end.

SLURM's probe from outside a job is ``srun --immediate``: run now on that node or fail. PBS has no such thing
(``pbs_tmrsh`` works only inside a job), so the readmission probe of :mod:`hotspare.act.life` on PBS is a job of
its own: ``qsub -l select=1:host=H:ncpus=1 -- /bin/true``, not rerunnable, one minute of walltime. It passes when
``qstat -x`` shows it finished with ``Exit_status`` 0 on ``H``. It fails when it finished otherwise, or when it
did not finish within the probe's deadline: it is then deleted (``qdel -W force``), and the failure says
whether it ever started. A probe that waited in the queue says nothing of the node (the queue was busy, or the
node was not free); the caller keeps the node out either way and tries again later, so a busy queue only
delays a readmission and never readmits a dead node.

Every command goes through the caller's runner (the adapters' scheduler runner); host names are validated
:class:`~hotspare.hosts.Host` values, passed as single arguments, never through a shell.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hotspare.act.probe import ProbeResult
from hotspare.act.runner import Completed
from hotspare.errors import HostError
from hotspare.hosts import Host

#: How often the probe jobs' states are read while waiting for them (seconds).
POLL_S = 0.5
#: A probe job's deadline in a look at a silent node (seconds): a pinned job on a live node is queued, placed,
#: run and recorded as finished within a few seconds (1-2 s on the test bed; a site's prologue hooks add theirs).
PBS_QUICK_PROBE_S = 8.0
#: The probe job's name, as ``qstat`` lists it.
PROBE_JOB_NAME = "hotspare-probe"

Run = Callable[[list[str], float], Completed]


def probe_job_argv(host: Host, output: Path) -> list[str]:
    """The ``qsub`` that runs ``/bin/true`` on ``host`` alone (pure): one cpu, one minute, not rerunnable,
    output and error joined into ``output``."""
    return ["qsub", "-N", PROBE_JOB_NAME, "-r", "n", "-j", "oe", "-o", str(output),
            "-l", f"select=1:host={host.raw}:ncpus=1", "-l", "walltime=00:01:00", "--", "/bin/true"]


@dataclass(frozen=True, slots=True)
class ProbeJob:
    """What ``qstat -x -f -F json`` says of one probe job: its state, exit status and where it ran."""

    state: str
    exit_status: int | None
    exec_host: str

    @property
    def finished(self) -> bool:
        return self.state in ("F", "X")

    @property
    def started(self) -> bool:
        return self.state not in ("Q", "H", "W", "T") or bool(self.exec_host)


def parse_probe_job(text: str, job_id: str) -> ProbeJob | None:
    """``qstat -x -f -F json JOB``'s record of ``job_id`` (pure); None when it is not there or not JSON."""
    try:
        jobs = json.loads(text).get("Jobs")
    except (ValueError, AttributeError):
        return None
    if not isinstance(jobs, dict):
        return None
    record = jobs.get(job_id)
    if record is None:  # the server may spell the id longer (42.server.domain) than qsub printed it
        number = job_id.partition(".")[0]
        record = next((r for k, r in jobs.items() if k.partition(".")[0] == number), None)
    if not isinstance(record, dict):
        return None
    raw_exit = record.get("Exit_status")
    try:
        exit_status = int(raw_exit) if raw_exit is not None else None
    except (TypeError, ValueError):
        exit_status = None
    return ProbeJob(str(record.get("job_state", "")), exit_status, str(record.get("exec_host", "")))


def judge_probe_job(host: Host, job_id: str, job: ProbeJob | None, *, timed_out: bool, waited_s: float) -> ProbeResult:
    """The probe's answer for ``host`` from its job's last record (pure)."""
    ran_on = job.exec_host.split("/")[0].split("+")[0] if job is not None else ""
    if job is not None and job.finished:
        if job.exit_status == 0 and (not ran_on or _same(ran_on, host)):
            return ProbeResult(host, True, f"pbs probe job {job_id} ran on {host.raw} and exited 0")
        return ProbeResult(host, False, f"pbs probe job {job_id} ended with Exit_status {job.exit_status}"
                           + (f" on {ran_on}" if ran_on else ""))
    if not timed_out:
        return ProbeResult(host, False, f"pbs probe job {job_id}: qstat no longer describes it")
    if job is not None and job.started:
        return ProbeResult(host, False, f"pbs probe job {job_id} started on {ran_on or host.raw} but did not end "
                           f"within {waited_s:.0f} s: deleted")
    return ProbeResult(host, False, f"pbs probe job {job_id} did not start within {waited_s:.0f} s (the node, or a "
                       "busy queue): deleted; tried again later")


def _same(name: str, host: Host) -> bool:
    """Whether ``name`` (from qstat's exec_host) is ``host``; a name we cannot read is not."""
    try:
        return Host(name) == host
    except HostError:
        return False


def probe_pbs_hosts(hosts: Sequence[Host], workdir: Path, *, timeout_s: float, run: Run,
                    clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep) -> list[ProbeResult]:
    """Probe each host with a pinned job (see the module), all at once; results in the order of ``hosts``.
    Returns within about ``timeout_s`` (plus one ``qdel``) whatever PBS does."""
    return [result for result, _ in _probe(hosts, workdir, timeout_s=timeout_s, run=run, clock=clock, sleep=sleep)]


def probe_pbs_counted(hosts: Sequence[Host], workdir: Path, *, timeout_s: float, run: Run,
                      clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep) -> tuple[list[ProbeResult], list[ProbeResult]]:
    """:func:`probe_pbs_hosts` for a look at a silent node, whose answers are signals of the two-signal rule:
    (the answers that say something of their node, the probes that said nothing), each in the order of ``hosts``.

    A probe job says something of its node when PBS placed it there: it ran and ended (exit 0: the node answered;
    anything else: the node failed it), or it was sent to the node and never ended within ``timeout_s`` (a MOM
    that takes a job and never runs it: how a frozen node, which PBS never marks down, shows). A job that was
    never placed (the node full, the queue busy) or never submitted says nothing, and must not count as a
    missed probe."""
    said: list[ProbeResult] = []
    nothing: list[ProbeResult] = []
    for result, placed in _probe(hosts, workdir, timeout_s=timeout_s, run=run, clock=clock, sleep=sleep):
        (said if placed else nothing).append(result)
    return said, nothing


def _probe(hosts: Sequence[Host], workdir: Path, *, timeout_s: float, run: Run, clock: Callable[[], float],
           sleep: Callable[[float], None]) -> list[tuple[ProbeResult, bool]]:
    """Each host's answer and whether its probe job was placed on it (it started or ended there)."""
    workdir.mkdir(parents=True, exist_ok=True)
    # Each probe writes its job's output under a directory of its own: two looks may probe at once.
    outdir = Path(tempfile.mkdtemp(prefix="pbs-probe-", dir=workdir))
    started = clock()
    deadline = started + timeout_s
    jobs: dict[Host, str] = {}
    results: dict[Host, ProbeResult] = {}
    for index, host in enumerate(hosts):
        done = run(probe_job_argv(host, outdir / f"{index}.out"), max(1.0, deadline - clock()))
        job_id = done.stdout.strip().splitlines()[-1].strip() if done.ok and done.stdout.strip() else ""
        if job_id:
            jobs[host] = job_id
        else:
            why = (done.stderr.strip().splitlines() or [f"rc {done.rc}"])[-1]
            results[host] = ProbeResult(host, False, f"pbs probe job not submitted: {why}")
    last: dict[Host, ProbeJob | None] = dict.fromkeys(jobs)
    while True:  # bounded by the deadline
        for host, job_id in jobs.items():
            if host in results:
                continue
            out = run(["qstat", "-x", "-f", "-F", "json", job_id], max(1.0, min(10.0, deadline - clock())))
            job = parse_probe_job(out.stdout, job_id) if out.ok else None
            last[host] = job if job is not None else last[host]
            if job is not None and job.finished:
                results[host] = judge_probe_job(host, job_id, job, timed_out=False, waited_s=clock() - started)
        if len(results) == len(hosts) or clock() >= deadline:
            break
        sleep(POLL_S)
    left = [h for h in jobs if h not in results]
    if left:
        deleted = run(["qdel", "-W", "force", *(jobs[h] for h in left)], 10.0)
        # A probe job qdel could not delete is said in every result it concerns: it may still hold a node.
        failed = "" if deleted.ok else (f"; qdel -W force failed ({'timed out' if deleted.timed_out else deleted.rc}: "
                                        f"{deleted.stderr.strip()[-200:]}): the job may remain, delete it by hand")
        for host in left:
            judged = judge_probe_job(host, jobs[host], last[host], timed_out=True, waited_s=clock() - started)
            results[host] = ProbeResult(host, judged.ok, judged.detail + failed)
    placed = {h for h, job in last.items() if job is not None and (job.finished or job.started)}
    return [(results[h], h in placed) for h in hosts]
