"""The ``hotspare`` command: a thin face over the public API."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from hotspare.cli_launch import add_parser as add_launch_parser
from hotspare.cli_quarantine import add_parser as add_quarantine_parser
from hotspare.errors import EXIT_USAGE, HotspareError, InputError
from hotspare.evidence.classify import SchedulerFacts, Verdict, classify, refusals
from hotspare.evidence.patterns import PatternSet, Role, load_patterns
from hotspare.evidence.patterns.check import check_pack
from hotspare.evidence.records import Evidence, Progress, ScanResult
from hotspare.evidence.scan import BIG_INPUT_BYTES, MIN_WRAP_WIDTH, keep_freed_blocks, scan
from hotspare.hosts import Host, expand_hosts, read_hostfile

if TYPE_CHECKING:
    pass

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

    add_launch_parser(sub, _allocation_args)
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
