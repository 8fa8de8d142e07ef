"""``hotspare launch``: its arguments and the supervisor built from them. Kept apart from :mod:`hotspare.cli`,
which registers it; the supervisor, the ledger and the launchers are imported only when the command runs
(``hotspare scrape`` and ``classify`` start without them)."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hotspare.act.node_states import SCHEDULER_CHOICES
from hotspare.errors import InputError, UsageError
from hotspare.hosts import expand_hosts

if TYPE_CHECKING:
    from hotspare.supervisor import Supervisor


def add_parser(sub: Any, allocation_args: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``launch`` on the CLI's subcommands (``allocation_args`` adds ``--hosts``/``--hostfile``)."""
    p = sub.add_parser(
        "launch", help="run an MPI job, failing over to spares",
        description="Run CMD on the active hosts; on failure swap only hosts the evidence names. "
        "Exit codes: 0 success, 2 bad input, 3 failed (do not retry), 93 retry on another allocation, "
        "130 interrupted.",
    )
    allocation_args(p)
    p.add_argument("--nhosts", type=int, help="active hosts (the rest are spares)")
    p.add_argument("--spare-hosts", metavar="LIST",
                   help="more spares beyond the allocation (hostlist; may be empty), e.g. a Parsl block's spares")
    p.add_argument("--quarantine", metavar="FILE",
                   help="a quarantine snapshot another process publishes (a workflow's quarantine.json): its hosts "
                   "are kept out; it is only read (this run's own findings go to RUN_DIR/quarantine.json)")
    p.add_argument("--spare-claims", metavar="DIR",
                   help="a directory shared with other runs holding the same spares: first claim wins")
    p.add_argument("--launcher", choices=("mpiexec", "srun", "mpirun", "local"), default="mpiexec")
    p.add_argument("--launcher-cmd", metavar="PROG",
                   help="the launcher's executable, when not its name (e.g. mpiexec.mpich, mpirun.openmpi)")
    p.add_argument("--launcher-rsh", metavar="PROG",
                   help="MPICH Hydra only: start its proxies with PROG as the remote shell (pbs_tmrsh in a PBS job "
                   "without PALS); probes start the same way")
    p.add_argument("--ppn", type=int, default=1, help="ranks per host")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   help="extra option for the launcher, before the command (repeatable)")
    p.add_argument("--checkpoint-dir", help="resume each attempt from the newest complete checkpoint here")
    p.add_argument("--min-free-gb", type=float, help="refuse to start with less free space (per OST on Lustre)")
    p.add_argument("--idle-timeout", type=float, default=600.0, help="seconds without output before a hang")
    p.add_argument("--probe-timeout", type=float, default=30.0,
                   help="seconds a probe of one host may take; one that has not answered by then failed")
    p.add_argument("--stall", type=float, default=None,
                   help="seconds without output before the active hosts are probed and the scheduler asked, both at "
                   "once (default: learned per attempt, 5x the median gap between progress lines, at least 2 s)")
    p.add_argument("--scheduler", choices=SCHEDULER_CHOICES, default="auto",
                   help="who is asked about the nodes: auto (SLURM in a SLURM job, else PBS in a PBS job), slurm, "
                   "pbs, or none (probes alone)")
    p.add_argument("--scheduler-poll", type=float, default=5.0,
                   help="seconds between looks (probe + scheduler) while output stays stalled")
    p.add_argument("--max-attempts", type=int, default=10, help="attempts in all, whatever their cause (then exit 3)")
    p.add_argument("--retries", type=int, default=2,
                   help="in-place retries for storage/network trouble and preemption, and for failures that name no "
                   "host when every host answered a probe (then exit 93)")
    p.add_argument("--blind-rotation", action="store_true", help="allow swapping a host without evidence")
    p.add_argument("--backoff", type=float, default=5.0, help="first retry delay in seconds (doubles, jittered)")
    p.add_argument("--backoff-max", type=float, default=60.0, help="cap on the retry delay in seconds")
    p.add_argument("--run-dir", help="where the ledger and attempt logs go (default: hotspare-run-<time>)")
    p.add_argument("--resume", metavar="RUN_DIR", help="carry on a run whose supervisor was killed")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    p.set_defaults(func=launch)


def _say_how_it_ended(run_dir: Path, code: int) -> None:
    """One line on stderr: the run's last decision and its exit code (the ledger has the rest)."""
    from hotspare.record.ledger import Ledger  # noqa: PLC0415 -- see the imports

    ledger = Ledger.open(run_dir)
    try:
        decisions = ledger.decisions()
    finally:
        ledger.close()
    if code != 0 and decisions:
        last = decisions[-1]
        print(f"hotspare: stopped after attempt {last.attempt}: {last.reason} (exit {code}; "
              f"'hotspare postmortem {run_dir}' tells the whole run)", file=sys.stderr, flush=True)


def launch(args: argparse.Namespace) -> int:
    """``hotspare launch``: the supervisor built from the arguments (bad input exits 2 before anything is written),
    run to its end; SIGTERM/SIGINT end it cleanly."""
    supervisor = _supervisor(args)
    # SIGTERM/SIGINT end the attempt cleanly (launcher group first) and record the run as cancelled.
    stop_signals = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda *_: supervisor.request_stop()) for sig in stop_signals}
    try:
        print(f"hotspare: run directory {supervisor.run_dir}", file=sys.stderr, flush=True)
        code = supervisor.run()
        _say_how_it_ended(supervisor.run_dir, code)
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _supervisor(args: argparse.Namespace) -> Supervisor:
    """Everything checked before anything is written: bad input exits 2 with nothing recorded."""
    from hotspare.act.preflight import check_free_space, default_lfs  # noqa: PLC0415 -- see the imports
    from hotspare.decide.policy import Budgets  # noqa: PLC0415
    from hotspare.decide.pool import Pool, resolve_allocation  # noqa: PLC0415
    from hotspare.record.ledger import Ledger  # noqa: PLC0415
    from hotspare.supervisor import RunConfig, Supervisor  # noqa: PLC0415

    if args.resume:
        ledger = Ledger.open(args.resume)
        try:
            saved = ledger.run_config()
        finally:
            ledger.close()
        if saved is None:
            raise InputError(args.resume, "no run recorded there to resume")
        return Supervisor(RunConfig.from_json(saved), args.resume)
    command = tuple(args.command[1:] if args.command[:1] == ["--"] else args.command)
    if not command:
        raise UsageError("no command: hotspare launch [options] -- CMD ARGS...")
    allocation = resolve_allocation(hosts=args.hosts, hostfile=args.hostfile)
    nhosts = args.nhosts or len(allocation)
    if args.spare_hosts and args.spare_hosts.strip(","):
        allocation = list(dict.fromkeys([*allocation, *expand_hosts(args.spare_hosts.strip(","))]))
    Pool.split(allocation, nhosts)
    if args.min_free_gb is not None:
        check_free_space(args.checkpoint_dir or ".", args.min_free_gb, lfs=default_lfs)
    try:
        budgets = Budgets(max_attempts=args.max_attempts, in_place_retries=args.retries,
                          blind_rotation=args.blind_rotation, backoff_base_s=args.backoff,
                          backoff_max_s=args.backoff_max)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    program = args.launcher_cmd or {"local": sys.executable}.get(args.launcher, args.launcher)
    if shutil.which(program) is None:
        raise UsageError(f"launcher program {program!r} not found on PATH: install it or name it with --launcher-cmd")
    rsh = shutil.which(args.launcher_rsh) if args.launcher_rsh else None
    if args.launcher_rsh and rsh is None:
        raise UsageError(f"remote shell {args.launcher_rsh!r} not found: give pbs_tmrsh's path to --launcher-rsh")
    try:
        config = RunConfig(
            command=command, allocation=tuple(h.raw for h in allocation), nhosts=nhosts, launcher=args.launcher,
            launcher_args=tuple(args.launcher_arg), launcher_cmd=args.launcher_cmd,
            launcher_rsh=str(Path(rsh).resolve()) if rsh else None,
            ppn=args.ppn, checkpoint_dir=args.checkpoint_dir, idle_timeout_s=args.idle_timeout,
            probe_timeout_s=args.probe_timeout, stall_s=args.stall, scheduler_poll_s=args.scheduler_poll,
            spare_claims=args.spare_claims or None, shared_quarantine=_snapshot(args.quarantine),
            budgets=budgets, scheduler=args.scheduler,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    run_dir = args.run_dir or f"hotspare-run-{time.strftime('%Y%m%d-%H%M%S')}"
    return Supervisor(config, run_dir)


def _snapshot(path: str | None) -> str | None:
    """A shared quarantine snapshot, checked readable now (a wrong path must not mean 'nothing kept out')."""
    from hotspare.record.quarantine import read_snapshot  # noqa: PLC0415 -- see the imports

    if not path:
        return None
    read_snapshot(path)
    return str(Path(path).resolve())
