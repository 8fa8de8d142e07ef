"""The ``hotspare`` command: a thin face over the public API."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from hotspare.act.scheduler import SCHEDULER_CHOICES
from hotspare.cli_quarantine import add_parser as add_quarantine_parser
from hotspare.errors import EXIT_USAGE, HotspareError, InputError, UsageError
from hotspare.evidence.classify import SchedulerFacts, Verdict, classify, refusals
from hotspare.evidence.patterns import PatternSet, Role, load_patterns
from hotspare.evidence.patterns.check import check_pack
from hotspare.evidence.records import Evidence, Progress, ScanResult
from hotspare.evidence.scan import BIG_INPUT_BYTES, MIN_WRAP_WIDTH, keep_freed_blocks, scan
from hotspare.hosts import Host, expand_hosts, read_hostfile

if TYPE_CHECKING:
    from hotspare.supervisor import Supervisor

# The launch, postmortem and demo commands import what they need when run: `hotspare scrape` and `classify`
# start in a fraction of the time without the supervisor, the ledger and the reports.


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except HotspareError as exc:
        _error(str(exc))
        return exc.exit_code
    except BrokenPipeError:
        # `hotspare scrape big.log | head -1` closed the pipe: not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _error(message: str) -> None:
    print(f"error: {message.splitlines()[0] if message else 'unknown error'}", file=sys.stderr)


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked (the metadata costs
    start-up time every other command would pay)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 -- see the docstring

        try:
            print(f"hotspare {version('hotspare')}")
        except PackageNotFoundError:
            print("hotspare (not installed: no version recorded)")
        parser.exit(0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hotspare", description="Failover for multi-node HPC jobs.")
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("classify", help="classify how a job ended and name the failed host")
    p.add_argument("logs", nargs="+", metavar="LOG", help="launcher log file(s); '-' reads stdin")
    p.add_argument("--rc", type=int, help="the launcher's exit status (137/143 and negative signals understood)")
    _allocation_args(p)
    p.add_argument("--job-state", help="the scheduler's job state (e.g. NODE_FAIL, TIMEOUT)")
    p.add_argument("--down", metavar="LIST", help="hosts the scheduler reports DOWN/NOT_RESPONDING (hostlist)")
    p.add_argument("--json", action="store_true", help="one JSON object per log, one per line")
    p.add_argument("--explain", action="store_true",
                   help="also show the rule that decided, the lines it used (file:line) and the hosts not blamed, "
                        "each with the reason")
    _scan_args(p)
    p.set_defaults(func=_classify)

    p = sub.add_parser("scrape", help="print the failed hosts, one per line (drop-in for ezpz.failover)")
    p.add_argument("log", metavar="LOG", help="launcher log; '-' reads stdin")
    p.add_argument("--machine", help="accepted for ezpz compatibility; every pack applies on every machine")
    _allocation_args(p)
    _scan_args(p)
    p.set_defaults(func=_scrape)

    _launch_parser(sub)
    add_quarantine_parser(sub)
    p = sub.add_parser("postmortem", help="report a run (attempts, decisions, incidents) or a workflow directory "
                       "(its jobs, failed tries and quarantine)")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="FILE", help="also draw the run to FILE (.png or .svg; needs matplotlib)")
    p.set_defaults(func=_postmortem)
    p = sub.add_parser("demo", help="a failover end to end on an embedded local allocation")
    p.add_argument("--keep", action="store_true", help="keep the run directory (printed at the end)")
    p.add_argument("--dir", metavar="DIR", help="run in DIR (new or empty; kept)")
    p.set_defaults(func=_demo)

    p = sub.add_parser("patterns", help="list or test the pattern packs")
    psub = p.add_subparsers(dest="action", required=True)
    q = psub.add_parser("list", help="list packs by family: versions, source files, example counts")
    q.add_argument("-v", "--verbose", action="store_true", help="also list each pattern")
    _pattern_dir_arg(q)
    q.set_defaults(func=_patterns_list)
    q = psub.add_parser("test", help="check each pack's embedded examples")
    q.add_argument("pack", nargs="?", help="only this pack")
    _pattern_dir_arg(q)
    q.set_defaults(func=_patterns_test)
    return parser


def _launch_parser(sub: Any) -> None:
    p = sub.add_parser(
        "launch", help="run an MPI job, failing over to spares",
        description="Run CMD on the active hosts; on failure swap only hosts the evidence names. "
        "Exit codes: 0 success, 2 bad input, 3 failed (do not retry), 93 retry on another allocation, "
        "130 interrupted.",
    )
    _allocation_args(p)
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
    p.set_defaults(func=_launch)


def _allocation_args(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--hosts", help="the allocation as a hostlist (n[1-4] or n1,n2); others are foreign")
    group.add_argument("--hostfile", help="the allocation as a hostfile ($PBS_NODEFILE form)")


def _pattern_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--patterns", action="append", default=[], metavar="DIR",
        help="extra directory of pack files, NAME.toml (repeatable; also $HOTSPARE_PATTERNS)",
    )


def _scan_args(p: argparse.ArgumentParser) -> None:
    _pattern_dir_arg(p)
    p.add_argument(
        "--wrap-width", type=_wrap_width, metavar="N|auto",
        help="rejoin lines a terminal wrapped at exactly N columns ('auto': recognise the width from the log)",
    )


def _wrap_width(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        width = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a width (a number, or 'auto')") from None
    if width < MIN_WRAP_WIDTH:
        raise argparse.ArgumentTypeError(f"{width} is narrower than any terminal (use {MIN_WRAP_WIDTH} or more)")
    return width


def _allocation(args: argparse.Namespace) -> list[Host] | None:
    if args.hosts:
        return expand_hosts(args.hosts)
    if args.hostfile:
        return read_hostfile(args.hostfile)
    return None


def _scan_one(path: str, patterns: PatternSet, wrap_width: int | Literal["auto"] | None) -> ScanResult:
    if path == "-":
        return scan(sys.stdin.buffer, patterns, wrap_width=wrap_width)
    if Path(path).is_dir():
        raise InputError(path, "is a directory")
    try:
        if Path(path).stat().st_size >= BIG_INPUT_BYTES:
            keep_freed_blocks()
    except OSError:
        pass  # scan() says what is wrong with it
    return scan(path, patterns, wrap_width=wrap_width)


def _classify(args: argparse.Namespace) -> int:
    patterns = load_patterns(args.patterns)
    allocation = _allocation(args)
    facts = _facts(args)
    failed = 0
    for path in args.logs:
        try:
            result = _scan_one(path, patterns, args.wrap_width)
        except HotspareError as exc:
            _error(str(exc))
            failed = EXIT_USAGE
            continue
        verdict = classify(result, rc=args.rc, allocation=allocation, facts=facts)
        if args.json:
            record = verdict_json(path, verdict, result.progress)
            if args.explain:
                record["explain"] = explain_json(verdict)
            print(json.dumps(record, sort_keys=False), flush=True)
        else:
            _print_table(path, verdict, result.progress, sys.stdout)
            if args.explain:
                _print_explain(path, verdict, sys.stdout)
    return failed


def _facts(args: argparse.Namespace) -> SchedulerFacts | None:
    if not args.job_state and not args.down:
        return None
    down = {host: "DOWN" for host in expand_hosts(args.down)} if args.down else {}
    return SchedulerFacts(job_state=args.job_state, node_states=down)


def verdict_json(source: str, verdict: Verdict, progress: Progress | None = None) -> dict[str, Any]:
    """The ``--json`` record of one verdict."""
    return {
        "source": source,
        "failure_class": verdict.failure_class.value,
        "blamed_hosts": [h.name for h in verdict.blamed_hosts],
        "mentioned_hosts": [h.name for h in verdict.mentioned_hosts],
        "foreign_hosts": [h.name for h in verdict.foreign_hosts],
        "retryable": verdict.retryable,
        "exclude_hosts": [h.name for h in verdict.exclude_hosts],
        "suspect_hosts": [h.name for h in verdict.suspect_hosts],
        "reason": verdict.reason,
        "progress": None if progress is None else {
            "first_line": progress.first_line, "last_line": progress.last_line, "last_step": progress.last_step,
        },
        "blame": [
            {"host": b.host.name, "reason": b.reason, "lines": [e.line for e in b.evidence]}
            for b in verdict.blamed
        ],
        "evidence": [
            {
                "line": e.line,
                "pattern": e.pattern,
                "role": e.role.value,
                "host": e.host.name if e.host else None,
                "host_text": e.host_text,
                "count": e.count,
            }
            for e in verdict.evidence
        ],
    }


def _used(verdict: Verdict) -> list[Evidence]:
    """The lines the verdict rests on: the blamed hosts' lines, else the root and cascade lines."""
    lines = [e for b in verdict.blamed for e in b.evidence]
    if not lines:
        lines = [e for e in verdict.evidence if e.role in (Role.ROOT, Role.CASCADE)][:5]
    return sorted(set(lines), key=lambda e: e.line)


def explain_json(verdict: Verdict) -> dict[str, Any]:
    """The ``--explain`` part of a ``--json`` record."""
    return {
        "rule": verdict.reason,
        "lines": [{"line": e.line, "pattern": e.pattern, "host_means": e.host_means.value, "text": e.text}
                  for e in _used(verdict)],
        "refused": [{"host": r.host_text, "line": r.line, "pattern": r.pattern, "why": r.why}
                    for r in refusals(verdict)],
    }


def _print_explain(source: str, verdict: Verdict, out: TextIO) -> None:
    out.write(f"why        {verdict.reason}\n")
    for e in _used(verdict):
        out.write(f"  used     {source}:{e.line}  [{e.pattern}, host {e.host_means.value}]  {e.text[:160]}\n")
    for r in refusals(verdict):
        out.write(f"  refused  {r.host_text} ({source}:{r.line}, {r.pattern}): {r.why}\n")
    out.write("\n")


def _names(hosts: Sequence[Host]) -> str:
    return ", ".join(h.name for h in hosts) or "-"


def _print_table(source: str, verdict: Verdict, progress: Progress | None, out: TextIO) -> None:
    rows = [
        ("source", source),
        ("class", verdict.failure_class.value),
        ("retryable", "yes" if verdict.retryable else "no"),
        ("blamed", _names(verdict.blamed_hosts)),
        ("exclude", _names(verdict.exclude_hosts)),
        ("suspect", _names(verdict.suspect_hosts)),
        ("mentioned", _names(verdict.mentioned_hosts)),
        ("foreign", _names(verdict.foreign_hosts)),
        ("reason", verdict.reason),
        ("progress", _progress_text(progress)),
    ]
    for key, value in rows:
        out.write(f"{key:<10} {value}\n")
    if verdict.evidence:
        out.write(f"{'line':>8}  {'role':<8} {'x':>5}  {'host':<16} pattern\n")
        for e in verdict.evidence:
            host = e.host.name if e.host else (f"?{e.host_text}" if e.host_text else "-")
            out.write(f"{e.line:>8}  {e.role.value:<8} {e.count:>5}  {host[:16]:<16} {e.pattern}\n")
    out.write("\n")


def _progress_text(progress: Progress | None) -> str:
    if progress is None:
        return "none seen"
    step = f"step {progress.last_step}" if progress.last_step is not None else "progress"
    return f"last {step} at line {progress.last_line} (first at line {progress.first_line})"


def _scrape(args: argparse.Namespace) -> int:
    patterns = load_patterns(args.patterns)
    allocation = _allocation(args)
    result = _scan_one(args.log, patterns, args.wrap_width)
    verdict = classify(result, allocation=allocation)
    # Print each host as the allocation writes it, so a string compare against
    # the hostfile works (ezpz's "swapped 0" came from printing another form).
    as_written = {h: h.raw for h in allocation or ()}
    for blame in verdict.blamed:
        if blame.host in verdict.exclude_hosts:  # where a failure started is not always a node to drop
            print(as_written.get(blame.host, blame.evidence[0].host_text if blame.evidence else blame.host.raw))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from hotspare.sim.demo import main as demo_main  # noqa: PLC0415 -- see the imports

    return demo_main(keep=args.keep, directory=args.dir)


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


def _launch(args: argparse.Namespace) -> int:
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


def _postmortem(args: argparse.Namespace) -> int:
    from hotspare.record.ledger import LEDGER_NAME, Ledger  # noqa: PLC0415 -- see the imports
    from hotspare.record.plot import FORMATS as PLOT_FORMATS  # noqa: PLC0415
    from hotspare.record.plot import draw  # noqa: PLC0415
    from hotspare.record.postmortem import build_report, render  # noqa: PLC0415
    from hotspare.record.workflow_report import build_workflow_report, render_workflow  # noqa: PLC0415

    if not (Path(args.run_dir) / LEDGER_NAME).is_file():
        raise InputError(args.run_dir, "not a run directory (no ledger.sqlite)")
    if args.plot and Path(args.plot).suffix.lower() not in PLOT_FORMATS:
        raise InputError(args.plot, f"a plot is written as {' or '.join(PLOT_FORMATS)}")
    ledger = Ledger.open(args.run_dir)
    try:
        # A workflow directory (the Parsl provider's, a Dask cluster's) records jobs, not attempts.
        workflow = build_workflow_report(ledger) if ledger.run_state() is None else None
        report = build_report(ledger) if workflow is None else None
    finally:
        ledger.close()
    if args.json:
        print(json.dumps(workflow.to_json() if workflow is not None else report.to_json() if report else {}))
    else:
        print(render_workflow(workflow) if workflow is not None else render(report) if report else "", end="")
    if args.plot:
        if report is None:
            raise InputError(args.run_dir, "--plot draws a run directory; this is a workflow directory")
        written = draw(report, args.plot)
        print(f"plot written to {written}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _patterns_list(args: argparse.Namespace) -> int:
    patterns = load_patterns(args.patterns)
    print(f"{'family':<12} {'pack':<12} {'patterns':>8} {'examples':>8}  project and versions")
    for pack in sorted(patterns.packs.values(), key=lambda p: (p.family, p.name)):
        where = "; ".join(x for x in (pack.project, pack.versions) if x) or pack.source
        print(f"{pack.family:<12} {pack.name:<12} {len(pack.patterns):>8} {pack.example_count:>8}  {where}")
        if args.verbose:
            if pack.derived_from:
                print(f"    derived from: {', '.join(pack.derived_from)}")
            for pat in pack.patterns:
                fclass = pat.failure_class.value if pat.failure_class else "-"
                print(f"    {pat.name:<34} {pat.role.value:<8} {fclass:<12} {pat.host_means.value:<8} "
                      f"{len(pat.examples):>2} ex  {pat.doc}")
    print("host meanings: origin = the failure started there; dead = the launcher or scheduler says the node "
          "failed; suspect = named by a lost connection or a peer (a lead, never proof); cascade = hurt by a "
          "failure elsewhere; mention = named in passing")
    return 0


def _patterns_test(args: argparse.Namespace) -> int:
    patterns = load_patterns(args.patterns)
    packs = [patterns.pack(args.pack)] if args.pack else list(patterns.packs.values())
    failures = 0
    for pack in packs:
        problems, checked = check_pack(pack)
        status = "ok" if not problems else f"{len(problems)} FAILED"
        print(f"{pack.name:<12} {checked:>3} examples  {status}")
        for problem in problems:
            print(f"  {problem}")
        failures += len(problems)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
