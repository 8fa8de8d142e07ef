#!/usr/bin/env python3
"""Benchmark: `hotspare scrape` against `grep -E -c` and single-threaded ripgrep with the same patterns on one big log.

Generates a synthetic log of a 10,000-rank job (interleaved, partly coloured
rank output with progress lines, a traceback from every rank, one root line,
then a teardown cascade from every rank), writes the shipped patterns as one
ERE file for grep and one file for ripgrep, and times the tools on the same
file after one warm-up read and one untimed run of each tool (hotspare's is the cold one: it compiles its
Hyperscan databases into an empty cache, and its figures are printed apart). Rounds alternate the tools
(and rotate which goes first) so that all see the same background load; the figures are medians.

What runs:

* ``hotspare scrape LOG``: the scanner plus the classifier, Python start-up and pattern loading included;
* ``grep -E -c -f patterns.ere LOG``: the patterns GNU ERE can express (named groups made plain, ``(?i)`` dropped);
* ``rg -j1 -c -f patterns.rg LOG``: every pattern as written (RE2 and Rust regex share the syntax), named groups
  made non-capturing because Rust rejects one name used in two alternatives.

Cores: the CPU seconds of each process (user + system, from ``wait4``) over its wall time, printed beside the
thread count it may use. Prints a table and, as the last line:

    ratio_rg=<hotspare MB/s / rg MB/s> ratio_grep=<hotspare MB/s / grep MB/s> rss_mb=<peak RSS of hotspare>

``--extra-rules N`` adds a pack of N site rules (each with words of its own) to every tool: the ratio
should hold whatever the rule count.

``--dense`` makes the log of the project's real corpus instead (every excerpt of ``tests/data/real``, in a
shuffled order, again and again to the size): a log that is failure text throughout, where most patterns'
words turn up in every block; hotspare's verdict is then not checked, only that it ran.

Usage: python benchmarks/scan_vs_grep.py [--size-mb 1024] [--rounds 3] [--extra-rules N] [--dense] [--no-grep]
       [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hotspare import Host, HostError, load_patterns
from hotspare.evidence.multi import CACHE_VAR, ENGINE_VAR, engine_note
from hotspare.evidence.patterns import ENV_VAR as PATTERNS_VAR
from hotspare.evidence.scan import SEARCH_THREADS

RANKS = 10_000
HOSTS = 834  # 12 ranks per node, Aurora-style
ROOT_HOST = "x4102c5s3b0n0"


def host(rank: int) -> str:
    return f"x4{100 + rank // 12 // 64:03d}c{(rank // 12) % 8}s{(rank // 12) % 7}b0n0"


def rank_line(rng: random.Random, step: int) -> str:
    rank = rng.randrange(RANKS)
    kind = rng.randrange(6)
    if kind == 0:
        return f"[2026-11-29 10:00:{step % 60:02d}][I][ezpz/history:1765:log_metrics] \x1b[36miter\x1b[0m={step} loss={rng.random():.6f} dt=0.3729 rank={rank}\n"
    if kind == 1:
        return f"{host(rank)}.hsn.cm.aurora.alcf.anl.gov {rank}: [rank{rank}] data loader worker {rank % 8} prefetched {rng.randrange(10**6)} bytes\n"
    if kind == 2:
        return f"[rank{rank}]: grad_norm={rng.random():.4f} lr=0.000{rng.randrange(100)} tokens/s={rng.randrange(10**5)} mem={rng.random() * 64:.2f}GB\n"
    if kind == 3:
        return f"2026-11-29T10:00:00.{rng.randrange(1000):03d} INFO  torch.distributed [rank{rank}] all-reduce bucket {rng.randrange(500)} done in {rng.random():.3f} ms\n"
    if kind == 4:
        return f"\x1b[32m[rank{rank}]\x1b[0m checkpoint shard {rng.randrange(1000)} of step {step} written to /lus/flare/projects/x/ckpt/step-{step}/shard-{rank}.pt\n"
    return f"[rank{rank}]: {'#' * rng.randrange(10, 60)} {rng.randrange(100)}% |{'=' * rng.randrange(30)}>\n"


def traceback(rank: int) -> str:
    return (
        f"[rank{rank}]: Traceback (most recent call last):\n"
        f'[rank{rank}]:   File "/lus/flare/projects/x/train.py", line 812, in <module>\n'
        f"[rank{rank}]:     main()\n"
        f'[rank{rank}]:   File "/lus/flare/projects/x/train.py", line 640, in train_step\n'
        f"[rank{rank}]:     dist.all_reduce(t)\n"
        f"[rank{rank}]: RuntimeError: Connection reset by peer (rank {rank} lost its neighbour)\n"
    )


def generate(path: Path, size: int) -> None:
    rng = random.Random(42)
    written = 0
    step = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        body_target = size - RANKS * 420
        while written < body_target:
            block = "".join(rank_line(rng, step + i // 64) for i in range(4096))
            step += 64
            out.write(block)
            written += len(block.encode())
        out.write(f"{ROOT_HOST}.hsn.cm.aurora.alcf.anl.gov: rank 1234 died from signal 9\n")
        for rank in range(RANKS):
            out.write(traceback(rank))
        for rank in range(RANKS):
            out.write(f"{host(rank)}.hsn.cm.aurora.alcf.anl.gov: rank {rank} died from signal 15\n")


CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "real"


def generate_dense(path: Path, size: int) -> None:
    """A log of the real corpus's excerpts, shuffled, repeated until ``size`` bytes are written."""
    texts = [excerpt["text"].rstrip("\n") + "\n" for toml in sorted(CORPUS.glob("*.toml"))
             for excerpt in tomllib.loads(toml.read_text(encoding="utf-8")).get("excerpt", [])]
    if not texts:
        raise SystemExit(f"error: no excerpts under {CORPUS}")
    rng = random.Random(42)
    written = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        while written < size:
            rng.shuffle(texts)
            for text in texts:
                out.write(text)
                written += len(text.encode())
                if written >= size:
                    break


def site_pack(count: int) -> str:
    """A pack of ``count`` site rules: health-check and daemon messages naming a node, each with its own words
    (what a site adds for its own tools), none of which the generated log holds."""
    rng = random.Random(7)
    syllables = ["ka", "lo", "mi", "ren", "tu", "vas", "qel", "dor", "shi", "pra", "nex", "bul"]
    rows = ['[pack]\nname = "site"\ndoc = "Synthetic site rules for the benchmark."\n']
    for i in range(count):
        tool = "".join(rng.choice(syllables) for _ in range(3))
        check = "".join(rng.choice(syllables) for _ in range(2))
        rows.append(
            f'[[pattern]]\nname = "rule_{i}"\nregex = \'{tool}d\\[[0-9]+\\]: {check} check failed on '
            f'(?P<host>[a-z][a-z0-9-]*)\'\nhost = "host"\nclass = "node_loss"\nrole = "root"\n'
            f'doc = "site rule {i}"\nexamples = ["{tool}d[42]: {check} check failed on n{i}"]\n'
        )
    return "\n".join(rows)


def _add_site_rules(workdir: Path, count: int) -> None:
    site = workdir / "site-packs"
    site.mkdir(exist_ok=True)
    (site / "site.toml").write_text(site_pack(count))
    os.environ[PATTERNS_VAR] = str(site)  # hotspare reads it; grep and rg are given the same regexes


def ere(regex: str) -> str | None:
    """An RE2 pattern as GNU ERE, or None when it cannot be written in ERE."""
    text = regex.replace("(?i)", "")
    text = re.sub(r"\(\?P<[A-Za-z_]\w*>", "(", text).replace("(?:", "(")
    return None if "(?" in text else text


def rust(regex: str) -> str:
    """An RE2 pattern for ripgrep: the same syntax, named groups made non-capturing (Rust rejects a name
    used twice in one alternation, and rg joins its pattern file into one)."""
    return re.sub(r"\(\?P<[A-Za-z_]\w*>", "(?:", regex)


@dataclass(frozen=True, slots=True)
class Run:
    """One timed run of one tool."""

    wall_s: float
    cpu_s: float
    rss_mb: float
    stdout: str


def run(argv: list[str], path: Path) -> Run:
    """Wall and CPU seconds, peak RSS in MB, and stdout of one run.

    Peak RSS is the child's own VmHWM, polled from /proc until it exits:
    wait4's ru_maxrss would also count this (larger) Python parent's pages,
    which the child carries until its exec. CPU time is wait4's (the child's
    threads, user and system).
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*argv, str(path)], stdout=out, stderr=err)
        peak_kb = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak_kb = max(peak_kb, _hwm_kb(proc.pid))
            time.sleep(0.005)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"error: {argv[0]} failed ({proc.returncode}): {stderr[:200]}")
    return Run(elapsed, usage.ru_utime + usage.ru_stime, peak_kb / 1024, stdout.strip())


def _hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass  # the process has just exited
    return 0


def _names_root(output: str) -> bool:
    try:
        return [Host(line) for line in output.splitlines()] == [Host(ROOT_HOST)]
    except HostError:
        return False


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write the log (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--extra-rules", type=int, default=0, metavar="N",
                        help="add N site rules (a pack of its own, given to every tool) to see the cost of more rules")
    parser.add_argument("--dense", action="store_true",
                        help="a log of the real corpus's failure text, shuffled and repeated, not a job's output")
    parser.add_argument("--no-grep", action="store_true",
                        help="leave GNU grep out (minutes per run with ~300 patterns): ratio_grep is then nan")
    return parser.parse_args()


def main() -> int:
    args = _args()

    workdir = Path(args.dir or tempfile.mkdtemp(prefix="hotspare-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / ("dense.log" if args.dense else "job.log")
    size = int(args.size_mb * (1 << 20))
    if not log.exists() or log.stat().st_size < size:
        print(f"generating {args.size_mb:g} MB {'dense ' if args.dense else ''}log in {log} ...", flush=True)
        (generate_dense if args.dense else generate)(log, size)
    size_mb = log.stat().st_size / (1 << 20)

    if args.extra_rules:
        _add_site_rules(workdir, args.extra_rules)
    regexes = [p.regex for p in load_patterns().patterns]
    converted = [e for e in map(ere, regexes) if e]
    patfile = workdir / "patterns.ere"
    patfile.write_text("\n".join(converted) + "\n")
    rgfile = workdir / "patterns.rg"
    rgfile.write_text("\n".join(map(rust, regexes)) + "\n")
    hotspare = str(Path(sys.executable).with_name("hotspare"))
    tools = {
        "hotspare": [hotspare, "scrape"],
        "grep": ["grep", "-E", "-c", "-f", str(patfile)],
        "rg": ["rg", "-j1", "-c", "-f", str(rgfile)],
    }
    if args.no_grep:
        del tools["grep"]
    threads = {"hotspare": f"{_hotspare_threads()}", "grep": "1", "rg": "1 (-j1)"}
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    # hotspare keeps its compiled Hyperscan databases between runs; a fresh cache here makes the untimed
    # first run below the cold one (it compiles), and the timed runs warm, as on a machine that ran it before.
    cache = Path(tempfile.mkdtemp(prefix="hotspare-cache-"))
    os.environ[CACHE_VAR] = str(cache)
    first = {name: run(argv, log) for name, argv in tools.items()}  # untimed warm-up of each tool
    runs: dict[str, list[Run]] = {name: [] for name in tools}
    names = list(tools)
    for round_no in range(args.rounds):
        for name in names[round_no % len(names) :] + names[: round_no % len(names)]:
            runs[name].append(run(tools[name], log))

    kind = "the real corpus's excerpts, repeated" if args.dense else f"{RANKS} ranks"
    print(f"log: {size_mb:.3g} MB, {kind}; patterns: {len(regexes)} shipped, "
          f"{len(converted)} as ERE for grep, {len(regexes)} for rg; {os.cpu_count()} CPUs; "
          f"median of {args.rounds} alternating rounds")
    print(f"{'tool':<10} {'median s':>9} {'MB/s':>8} {'cores used':>11} {'threads':>9} {'peak RSS MB':>12}  output")
    rate, rss = {}, {}
    for name in tools:
        med = statistics.median(r.wall_s for r in runs[name])
        cores = statistics.median(r.cpu_s / r.wall_s for r in runs[name])
        rate[name] = size_mb / med
        rss[name] = max(r.rss_mb for r in runs[name])
        out = runs[name][-1].stdout
        print(f"{name:<10} {med:>9.2f} {rate[name]:>8.1f} {cores:>11.2f} {threads[name]:>9} {rss[name]:>12.1f}  {out[:60]!r}")
    cold = first["hotspare"]
    print(f"hotspare first run, compiling its databases into an empty cache (untimed): {cold.wall_s:.2f} s, "
          f"{size_mb / cold.wall_s:.1f} MB/s, peak RSS {cold.rss_mb:.1f} MB")
    print(f"rg ran: {' '.join(tools['rg'])} {log}")
    print(f"hotspare engine: {_hotspare_engine()}")
    if not args.dense and not _names_root(runs["hotspare"][-1].stdout):
        print(f"error: hotspare scrape named {runs['hotspare'][-1].stdout!r}, expected {ROOT_HOST!r}", file=sys.stderr)
        return 1
    shutil.rmtree(cache, ignore_errors=True)
    if not args.keep and not args.dir:
        shutil.rmtree(workdir)  # the log, the pattern files, the site pack: all generated here
    ratio_grep = rate["hotspare"] / rate["grep"] if "grep" in rate else float("nan")
    print(f"ratio_rg={rate['hotspare'] / rate['rg']:.2f} ratio_grep={ratio_grep:.2f} "
          f"rss_mb={rss['hotspare']:.1f}")
    return 0


def _hotspare_threads() -> str:
    """The reading and recording thread plus the helpers searching blocks (it may keep that many cores busy)."""
    return f"1+{SEARCH_THREADS}"


def _hotspare_engine() -> str:
    engine = os.environ.get(ENGINE_VAR, "auto")
    return engine_note() if engine == "auto" else f"{engine} (from {ENGINE_VAR})"


if __name__ == "__main__":
    raise SystemExit(main())
