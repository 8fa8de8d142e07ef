"""How a block's hook is called (the lines before its ``worker_init``), where its files live in the workflow
directory, and reading back the record it wrote.

Shared by the block hook (which writes ``blocks/NAME/``, on the compute node) and the provider (which reads it,
in the workflow process). Kept apart from :mod:`hotspare_parsl.block` so that importing the provider does not
import the module ``python -m hotspare_parsl.block`` runs as a script.
"""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path

from hotspare import HOOK_EXIT, HOOK_FAILED, Host, HotspareError

log = logging.getLogger(__name__)


def block_dir(run_dir: Path, job_name: str) -> Path:
    """The block's own directory: the only place its hook writes."""
    return run_dir / "blocks" / "".join(c if c.isalnum() or c in "._-" else "_" for c in job_name)


def read_record(run_dir: Path, job_name: str) -> tuple[Host, ...]:
    """The hosts the block's hook recorded, lead first; () when there is no readable record (yet)."""
    path = block_dir(run_dir, job_name) / "record.json"
    try:
        return tuple(Host(h) for h in json.loads(path.read_text(encoding="utf-8"))["hosts"])
    except FileNotFoundError:
        return ()
    except (OSError, ValueError, KeyError, TypeError, HotspareError) as exc:
        # Read by the provider, in the workflow process: its log, and then the scheduler's word for the hosts.
        log.warning("hotspare: block %s: cannot read its record %s (%s); asking the scheduler", job_name, path, exc)
        return ()


def block_prologue(python: str, run_dir: Path, spares: int, job_name: str) -> str:
    """The lines put before a block's ``worker_init``: split the nodes, or stop the block, visibly.

    ``eval "$(helper)"`` alone would run the block on every node — quarantined ones included, with no
    spares — when the helper fails (``eval`` of nothing succeeds): the block exits ``HOOK_EXIT`` with
    a ``HOOK_FAILED`` line on its stderr instead, which the provider reads when it judges the block.
    """
    argv = [python, "-P", "-m", "hotspare_parsl.block", "--run-dir", str(run_dir), "--spares", str(spares),
            "--job-name", job_name]
    helper = " ".join(shlex.quote(a) for a in argv)
    failed = shlex.quote(f"{HOOK_FAILED}: python -m hotspare_parsl.block exited")
    return (f"hotspare_env=$({helper}) || {{ echo {failed} \"$?\" '(see above); the block stops rather than run "
            f"on unchecked nodes' >&2; exit {HOOK_EXIT}; }}\n"
            'eval "$hotspare_env"\n')
