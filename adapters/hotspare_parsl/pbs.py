"""What PBS needs of a Parsl block, apart from SLURM: submitted not rerunnable and, with spares, tolerant of a
sister's death; pinned to named hosts once a host is quarantined (PBS Pro cannot exclude one); its state read one
job at a time and with ``F`` read as finished whatever the Parsl release. All pure but the one feature check of
the installed Parsl (:data:`PBS_KNOWS_FINISHED`)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from parsl.providers.pbspro import pbspro as _pbspro_module

from hotspare import Host, pin_pbs_hosts

#: Blocks are not rerunnable: PBS would otherwise requeue a block whose mother superior died (after the server's
#: ``node_fail_requeue``) and run it again under the same job id, so the provider never saw it end and the dead
#: node was never judged (seen on the bed). Ended instead (F, ``Exit_status -20``), the block is judged and
#: replaced by Parsl's strategy, placed off the node. slurm-wlm-torque's sbatch ignores ``#PBS`` lines.
PBS_NO_RERUN = "\n#PBS -r n\n"
#: A PBS Pro block with spares outlives a sister node (SLURM's ``--no-kill``): the spare takes the node's place.
#: Without it PBS ends the job (``Exit_status -14``, a sister failed) once the sister's MOM has been silent past
#: ``$max_poll_downtime``, killing the task that moved to the spare: 106 s after a node crash on the bed (whose
#: MOMs have it at 15 s; the default is 300 s), while with it the job was still running at 140 s. A dead mother
#: superior still ends the block (PBS tolerates sister nodes only). Torque has no such attribute.
PBS_TOLERATE = "#PBS -W tolerate_node_failures=all\n"


def pin_pbs_select(template: str, hosts: Sequence[str]) -> str:
    """A PBS template asking for exactly ``hosts`` (:func:`hotspare.pin_pbs_hosts`: PBS Pro ``select=1:host=H:…``
    chunks, Torque ``nodes=H:…``); hosts are validated first; a template with neither line is returned unchanged."""
    pinned = pin_pbs_hosts(template, [Host(h) for h in hosts])
    return template if pinned is None else pinned


def split_qstat_json(cmd: str) -> list[str] | None:
    """``qstat ... -F json ID1 ID2 ...`` as one command per job id, or None for any other command (pure).

    OpenPBS 23.06 answers ``qstat -f -F json A B`` with job A alone (rc 0; the text format lists both; seen on the
    bed), and PBSProProvider asks about every block it ever submitted in one such command, so every block but
    the first read as missing, i.e. COMPLETED: a replacement block was judged and replaced again at each poll.
    """
    words = shlex.split(cmd)
    if not words or words[0] != "qstat" or "json" not in words:
        return None
    ids = [w for w in words[1:] if not w.startswith("-") and w != "json"]
    if len(ids) < 2:
        return None
    options = [w for w in words if w not in ids]
    return [shlex.join([*options, job]) for job in ids]


def merge_qstat_json(answers: Sequence[tuple[int, str, str]]) -> tuple[int, str, str]:
    """One ``(rc, stdout, stderr)`` from several ``qstat -F json`` calls: their jobs in one ``Jobs`` object (pure).
    A job qstat no longer knows is left out (the provider reads it as ended); when no call answered, the first
    failure is returned as it was, so the caller keeps its last known states."""
    jobs: dict[str, Any] = {}
    answered = [a for a in answers if a[0] == 0]
    if not answered:
        return answers[0]
    for _, stdout, _ in answered:
        try:
            found = json.loads(stdout).get("Jobs", {})
        except (ValueError, AttributeError):
            continue
        jobs.update(found if isinstance(found, dict) else {})
    return 0, json.dumps({"Jobs": jobs}), ""


#: Whether PBSProProvider reads PBS Pro's finished state ``F`` (``qstat -x``) as COMPLETED. Parsl releases
#: before 2026.4.13 have no ``F`` in the state table it reads: a finished block stays UNKNOWN, so it is never
#: judged nor replaced. The table itself is checked (the feature, not the version); where it lacks ``F``,
#: the provider is shown ``F`` spelt as TORQUE's ``C``, which every Parsl reads COMPLETED.
PBS_KNOWS_FINISHED = "F" in getattr(_pbspro_module, "translate_table", {"F": None})


def finished_as_completed(answer: tuple[int, str, str]) -> tuple[int, str, str]:
    """A ``qstat -F json`` answer with each job in state ``F`` given state ``C`` (pure); any other answer (a
    failure, TORQUE's text output) unchanged."""
    rc, stdout, stderr = answer
    try:
        doc = json.loads(stdout)
    except ValueError:
        return answer
    jobs = doc.get("Jobs") if isinstance(doc, dict) else None
    if rc != 0 or not isinstance(jobs, dict):
        return answer
    for job in jobs.values():
        if isinstance(job, dict) and job.get("job_state") == "F":
            job["job_state"] = "C"
    return rc, json.dumps(doc), stderr


def qsub_with_output(cmd: str) -> tuple[str, str | None, str | None]:
    """``qsub [OPTS] SCRIPT`` with ``-o SCRIPT.stdout -e SCRIPT.stderr`` put before the script, and those paths.

    Parsl's Torque template names these files in ``#PBS -o/-e`` lines, but slurm-wlm-torque's ``qsub`` passes
    sbatch relative ``-o/-e`` of its own that win, so the block's output lands in the workflow's working
    directory and the provider (TorqueProvider records no output paths) would judge the block blind. Given
    on the command line they hold for every qsub. Any other command is returned unchanged.
    """
    words = shlex.split(cmd)
    if len(words) < 2 or words[0] != "qsub" or any(w in ("-o", "-e") for w in words):
        return cmd, None, None
    script = words[-1]
    out, err = f"{script}.stdout", f"{script}.stderr"
    return shlex.join([*words[:-1], "-o", out, "-e", err, script]), out, err
