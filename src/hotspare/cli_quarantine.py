"""``hotspare quarantine RUN_DIR``: the hosts a run or workflow directory keeps out, and readmitting them by hand.

Kept apart from :mod:`hotspare.cli` (which only registers it): listing and readmitting open the directory's
ledger, which the running workflow may hold open too. SQLite's write lock and WAL make that safe on the host
that runs the workflow (never from another host: the WAL index is shared memory), and the workflow reads its
quarantine from the ledger at each placement, so a host readmitted here is placed on from the next job on.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hotspare.errors import HostError, InputError, UsageError
from hotspare.hosts import Host

if TYPE_CHECKING:
    from hotspare.record.quarantine import Entry

# The ledger, the quarantine and the life module are imported when the command runs: every other command
# registers this parser at start-up and must not pay for them (`hotspare scrape`'s start-up is benchmarked).

def add_parser(sub: Any) -> None:
    """Register ``quarantine`` on the CLI's subcommands."""
    p = sub.add_parser("quarantine", help="list the hosts a run or workflow directory keeps out, or readmit them "
                       "by hand")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--readmit", nargs="+", metavar="HOST",
                   help="let these quarantined hosts back in now, without a probe (recorded in the ledger); "
                        "run it on the host that runs the workflow")
    p.add_argument("--json", action="store_true", help="the entries left, as one JSON object")
    p.set_defaults(func=run)


def _row(entry: Entry) -> dict[str, Any]:
    return {"host": entry.host.raw, "reason": entry.reason.value, "since_s": entry.since_s,
            "expires_s": entry.expires_s, "detail": entry.detail}


def render(entries: list[Entry]) -> str:
    """The entries for people, one host a line (pure)."""
    from hotspare.decide.life import utc_clock  # noqa: PLC0415 -- see the imports

    if not entries:
        return "no host is quarantined\n"
    lines = []
    for e in entries:
        until = "until readmitted by hand" if e.expires_s is None else f"until {utc_clock(e.expires_s)}"
        lines.append(f"{e.host.raw}  {e.reason.value}  since {utc_clock(e.since_s)}, {until}: {e.detail}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from hotspare.act.life import READMIT  # noqa: PLC0415 -- see the imports
    from hotspare.record.ledger import LEDGER_NAME, Ledger  # noqa: PLC0415
    from hotspare.record.quarantine import SNAPSHOT_NAME, Quarantine  # noqa: PLC0415

    run_dir = Path(args.run_dir)
    if not (run_dir / LEDGER_NAME).is_file():
        raise InputError(args.run_dir, "not a run directory (no ledger.sqlite)")
    try:
        asked = [Host(h) for h in args.readmit or ()]
    except HostError as exc:
        raise UsageError(f"--readmit: {exc}") from exc
    ledger = Ledger.open(run_dir)
    try:
        quarantine = Quarantine.attach(ledger.connection, snapshot=run_dir / SNAPSHOT_NAME)
        kept = {e.host for e in quarantine.entries()}
        missing = [h.raw for h in asked if h not in kept]
        if missing:  # nothing is changed unless every host named is there to readmit
            held = ", ".join(sorted(h.raw for h in kept)) or "none"
            raise UsageError(f"not quarantined in {run_dir}: {', '.join(missing)} (quarantined: {held})")
        for host in asked:
            entry = quarantine.release(host)
            if entry is not None:
                ledger.observe(0, time.time(), READMIT, host.raw,
                               f"readmitted by hand (hotspare quarantine --readmit); it was kept out for "
                               f"{entry.reason.value}: {entry.detail}")
                print(f"readmitted {host.raw}")
        left = quarantine.entries()
    finally:
        ledger.close()
    if args.json:
        print(json.dumps({"entries": [_row(e) for e in left]}))
    elif not asked:
        print(render(left), end="")
    return 0
