"""How ``hotspare launch`` ends, run for real with the local launcher (issue 20's table).

| the job                                   | attempts | exit | why                                        |
|-------------------------------------------|----------|------|--------------------------------------------|
| raises IndexError (a deterministic bug)   | 1        | 3    | user_error, not retryable                  |
| dies of an unrecognised fatal message     | 2        | 3    | same failure on healthy hosts (1 and 2)    |
| fails differently every attempt           | 3        | 3    | budget spent, every host answered a probe  |
| a host is down, a spare is left           | 2        | 0    | the host swapped out for the spare         |
| a host is down, no spare                  | 1        | 93   | node evidence and nothing to swap in       |
| a worker "lost" on one host, same again   | 2        | 3    | that host probed first, answered: the code |

Every run is a real supervisor over real processes (the ``local`` launcher simulates the hosts on this
machine; a host in ``$HOTSPARE_LOCAL_FAULTS``'s ``down`` list is unreachable, as a dead node is).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from hotspare import EXIT_NO_RETRY, EXIT_OK, EXIT_RETRY_ELSEWHERE, Ledger

INDEX_ERROR = "print('step=1'); l = []; l[3]"
# A failure no line explains (the classifier's "unknown"), the same every attempt or changing between attempts.
SAME_FATAL = "import sys; print('step=1'); sys.exit('table train has no column 7')"
CHANGING = ("import os, sys; print('step=1'); "
            "sys.exit('phase ' + ['alpha', 'bravo', 'charlie', 'delta'][int(os.environ['HOTSPARE_ATTEMPT']) - 1])")
# A program's own error line, nothing else said: the last resort reads it as the program's stop at once.
OWN_ERROR_LINE = "import sys; print('step=1'); sys.exit('fatal: table train has no column 7')"


def launch(tmp: Path, hosts: str, nhosts: int, code: str, *, down: tuple[str, ...] = ()) -> tuple[int, Path, str]:
    """Run ``python3 -c code`` under ``hotspare launch --launcher local``; its exit code, run dir and stderr."""
    faults = tmp / "faults.json"
    faults.write_text(json.dumps({"down": list(down)}))
    run = tmp / "run"
    env = dict(os.environ, HOTSPARE_LOCAL_FAULTS=str(faults))
    result = run_cli("launch", "--launcher", "local", "--hosts", hosts, "--nhosts", str(nhosts), "--backoff", "0.1",
                     "--backoff-max", "0.2", "--scheduler", "none", "--run-dir", str(run), "--", "python3", "-c", code,
                     env=env)
    return result.returncode, run, result.stdout + result.stderr


def decisions(run: Path) -> list[tuple[str, str]]:
    ledger = Ledger.open(run)
    try:
        return [(d.action, d.reason) for d in ledger.decisions()]
    finally:
        ledger.close()


@pytest.mark.parametrize(("code", "want_exit", "actions", "reason"), [
    (INDEX_ERROR, EXIT_NO_RETRY, ["stop"], "IndexError: list index out of range"),
    (SAME_FATAL, EXIT_NO_RETRY, ["retry", "stop"], "same failure on healthy hosts (attempts 1 and 2)"),
    (CHANGING, EXIT_NO_RETRY, ["retry", "retry", "stop"], "every host answered its probe"),
    (OWN_ERROR_LINE, EXIT_NO_RETRY, ["stop"], "no other line says why: fatal: table train has no column 7"),
], ids=["index-error", "same-fatal", "changing", "own-error-line"])
def test_a_programs_own_failure_ends_with_3(tmp_path: Path, code: str, want_exit: int, actions: list[str],
                                            reason: str) -> None:
    """A bug is stopped after at most one retry in place when it repeats; a failure that changes is retried as
    before; none of them ends with 93, which would tell a workflow to try other nodes."""
    rc, run, said = launch(tmp_path, "h[1-3]", 2, code)
    assert rc == want_exit, said
    got = decisions(run)
    logs = {p.name: p.read_text(errors="replace") for p in sorted(run.glob("attempt-*.log"))}
    assert [a for a, _ in got] == actions, (got, logs)
    assert reason in got[-1][1]
    assert len(list(run.glob("attempt-*.log"))) == len(actions)
    # The user is told why, on stderr, without opening the ledger.
    assert f"stopped after attempt {len(actions)}: {got[-1][1]} (exit {want_exit};" in said


def test_a_dead_host_with_a_spare_left_is_swapped(tmp_path: Path) -> None:
    rc, run, said = launch(tmp_path, "h[1-3]", 2, "print('step=1')", down=("h2",))
    assert rc == EXIT_OK, said
    got = decisions(run)
    assert got[0][0] == "swap" and "h2" in got[0][1]


def test_a_dead_host_with_no_spare_is_93(tmp_path: Path) -> None:
    rc, run, said = launch(tmp_path, "h[1-2]", 2, "print('step=1')", down=("h2",))
    assert rc == EXIT_RETRY_ELSEWHERE, said
    assert decisions(run)[-1][0] == "stop"


# A failure of unknown cause that names where it happened (Parsl's WorkerLost, printed by the rank on the second
# host with that host's name), the same every attempt.
WORKER_LOST = ("import os, sys; print('step=1'); host = os.environ['HOTSPARE_HOST']; "
               "os.environ['HOTSPARE_HOST_INDEX'] == '1' and sys.exit("
               "'parsl.executors.high_throughput.errors.WorkerLost: Task failure due to loss of worker 0 on host '"
               " + host)")


def test_where_a_failure_of_unknown_cause_happened_is_probed_first_never_swapped(tmp_path: Path) -> None:
    """The host an unknown failure names is a suspect: probed first, beside a control host nothing accuses, and
    not swapped out on the log's word (a spare is free); every probe answers, so the same failure again is the
    program's, exit 3, never 93."""
    rc, run, said = launch(tmp_path, "h[1-3]", 2, WORKER_LOST)
    assert rc == EXIT_NO_RETRY, said
    got = decisions(run)
    assert [a for a, _ in got] == ["retry", "stop"], got
    assert "naming h2 only as a suspect (every host answered its probe)" in got[0][1]
    assert "same failure on healthy hosts (attempts 1 and 2)" in got[1][1]
    ledger = Ledger.open(run)
    try:
        probes = [(o.attempt, o.host, o.detail) for o in ledger.observations() if o.kind == "probe"]
        hosts = [a.hosts for a in ledger.attempts()]
    finally:
        ledger.close()
    first = [(h, d) for a, h, d in probes if a == 1]
    assert [h for h, _ in first][:1] == ["h2"] and {h for h, _ in first} == {"h1", "h2"}, probes
    assert any("(control)" in d for h, d in first if h == "h1"), probes
    assert all("answered" in d for _, d in first), probes
    assert all("h3" not in list(map(str, hs)) for hs in hosts), hosts  # the spare never used

