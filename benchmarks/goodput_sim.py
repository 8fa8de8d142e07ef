#!/usr/bin/env python3
"""Simulation: what the failover policy is worth at scale (ETTR of one training job on N nodes).

One synchronous training job runs on N nodes (8 GPUs each). Failures arrive as a Poisson process; the job
checkpoints every T seconds of work at a blocking cost C; after every failure a policy decides what happens
(detection, spares, relaunches, queue waits) and the job restarts at cost R from its last checkpoint. ETTR
(effective training time ratio) is the work that survived divided by the wall time, queue waits included.

Because failures are memoryless the simulation samples one up-period per failure (closed per-interval
sampling, no event queue): a failure trace (up periods, detection, relaunch and queue time) does not depend on
T or C, so one trace per (policy, scale, seed) is scored at every (T, C): an up period U yields
floor(U / (T + C)) finished segments of T useful seconds; the rest of U is lost work. Each policy gets its own
best T (a log grid, then golden section, on the pooled seeds); ETTR is reported as the mean over seeds with a
95 % confidence interval (Student t over seeds).

Policies:

* hotspare -- as built. Its detection/decision time and its attribution precision and recall are READ from
  the bed campaign JSON (``benchmarks/campaign.py --json``) and the attribution JSON
  (``benchmarks/attribution.py --json``); the stall timeout and probe timeout are read from the defaults of
  :class:`hotspare.supervisor.RunConfig`. A node fault is attributed right with probability recall, else one
  relaunch with the dead node in it is wasted and the probe (timing out on the dead node) finds it; an
  innocent node is retired with probability 1 - precision per failure (a spare wasted); a non-node failure is
  retried in place; a hang is seen after stall_s, the scheduler reports the node, the probe times out on it.
* blind -- rotation as in ezpz: every failure evicts active[0] and spends a spare, whatever failed. A dead
  node elsewhere in the list stays: the next launch fails and the rotation goes on until the dead node is
  evicted or the spares run out (then a queue wait for a new allocation). Hangs are seen by the watchdog.
* requeue -- SLURM ``--requeue`` / Parsl retries: every failure costs a queue wait and a restart; hangs are
  seen by the watchdog.
* oracle -- perfect attribution, zero detection and decision time; R is still paid, one spare per failed node,
  a queue wait when the spares run out.

Assumptions (every one is a flag):

* Failure rate (Llama 3 405B, "The Llama 3 Herd of Models", Meta 2024, section 3.3.4): 419 unexpected
  interruptions in 54 days on 16,384 GPUs (2,048 nodes) -> job MTBF 3.09 h, per-node MTBF = that x 2,048 =
  264 days. The per-node MTBF is held fixed at every scale, and every kind of failure (software included)
  scales with the node count.
* Kinds: non-node failures (software bugs, ENOSPC, NCCL timeouts without a bad node) 20 % of interruptions
  (the same table puts ~78 % on confirmed or suspected hardware); hangs (a node stalls without dying) 5 %: no
  public split, a guess; the rest are node faults, 5 % of them correlated (a switch or PSU: 2-8 nodes at once,
  uniform). Llama 3 lists network switch/cable at 8.4 %, not all of it multi-node.
* Restart R = 180 s at every scale (relaunch + checkpoint load + warm-up; Llama 3 reports cutting job startup
  and checkpoint time without a figure; no public scale curve, so R is not scaled: flattering to small jobs).
  The same R for every policy. Failures can strike during a restart (as in Daly's model), not during
  detection, failed launches or queue waits.
* Spares: 2 % of the nodes, at least 1 (1 at 512 GPUs, 41 at 16k), not counted in ETTR (they are idle
  allocation). A new allocation (after a queue wait) comes with fresh nodes and a fresh spare pool; there is
  no walltime limit otherwise. Queue wait 30 min.
* hotspare detection + decision = the mean recovery_s of the campaign's node-fault runs (crash, rankkill):
  fault -> first progress of the next attempt on a 4-node bed, so it includes a small bed relaunch, and R is
  paid on top (conservative). Its hang detection is the mean recovery of the campaign's freeze runs (frozen
  node -> first progress after), else the stall rule's own bound (the start-up stall threshold, two short
  probes and the re-check between them, read from hotspare.act.observe); --scheduler-hang-s adds to it. A
  wasted launch (a dead node still in the list) fails after 60 s.
* blind and requeue react to a crash or a software failure the moment the job exits (no detection time, which
  flatters them); a hang costs them the watchdog, 10 min (the order of the NCCL/torch collective timeouts). A
  hung node left in the list makes the next launch fail like a dead one (also flattering).
* ETTR = T x finished segments / wall time: checkpoint time, lost work, detection, relaunches and queue waits
  are the rest.

Validation (``--validate``): no spares limit, no hangs or correlation, zero detection, fixed R and C: the
simulator against Daly's expected run time T_wall = M e^(R/M) (e^((T+C)/M) - 1) W / T, and its best T against
Young's sqrt(2 C M) and Daly's higher-order optimum.

Prints the inputs, ETTR per policy and scale for each C, where the time goes at the largest scale, ETTR against
C at the largest scale; last:

    ettr_hotspare=0.xxxx ettr_oracle=0.xxxx ettr_blind=0.xxxx ettr_requeue=0.xxxx

Usage: python benchmarks/goodput_sim.py [--campaign FILE] [--attribution FILE] [--json FILE] [--plots [DIR]]
       [--validate] [--seeds 5] [--failures 12000] [--costs 1,2,5] [--headline-c 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotspare.act.observe import STALL_PROBE_GAP_S, STALL_PROBE_S, STALL_RECHECK_S, STALL_STARTUP_S
from hotspare.supervisor import RunConfig

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CAMPAIGN_CMD = "sudo .venv/bin/python benchmarks/campaign.py --runs 20 --json {path}"
ATTRIBUTION_CMD = "python benchmarks/attribution.py --json {path}"

# Llama 3 405B pre-training snapshot (public figures).
LLAMA3_GPUS = 16_384
LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
GPUS_PER_NODE = 8
JOB_MTBF_S = LLAMA3_DAYS * 86_400 / LLAMA3_INTERRUPTIONS
NODE_MTBF_S = JOB_MTBF_S * LLAMA3_GPUS / GPUS_PER_NODE
BYTEROBUST = (9_600, 0.97)  # reported ETTR of a three-month job on 9,600 GPUs

POLICIES = ("hotspare", "oracle", "blind", "requeue")
NODE_FAULT_KINDS = ("crash", "rankkill")
GOAL_ETTR = 0.97
GOAL_GAP_PP = 0.5
T_QUANTILE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


class InputError(Exception):
    """A measured-figures file is missing or unusable; the message is one line naming the fix."""


# -- inputs ---------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    """hotspare's own figures, read from files and from RunConfig's defaults."""

    recovery_s: float  # mean over the campaign's node-fault runs
    runs: int  # node-fault runs behind recovery_s
    freeze_recovery_s: float | None  # the campaign's hang (freeze) runs, shown for comparison only
    campaign_correct: float
    precision: float
    recall: float
    #: Hang (frozen node) -> first progress after: the campaign's freeze runs, else the stall rule's own bound.
    hang_s: float
    probe_timeout_s: float  # what finding a missed dead node by probe costs (two quick probes)
    campaign: str
    attribution: str


def run_config_defaults() -> dict[str, object]:
    """RunConfig's field defaults (the ones a plain ``hotspare launch`` gets)."""
    return {f.name: f.default for f in dataclasses.fields(RunConfig) if f.default is not dataclasses.MISSING}


def _read_json(path: Path, cmd: str) -> object:
    if not path.is_file():
        raise InputError(f"{path}: no such file; produce it with: {cmd.format(path=path)}")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable ({exc}); produce it again with: {cmd.format(path=path)}") from exc


def load_measured(campaign: Path, attribution: Path) -> Measured:
    """The campaign's recovery times and the attribution figures, or InputError naming the command to run."""
    runs = _read_json(campaign, CAMPAIGN_CMD)
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise InputError(f"{campaign}: not a list of runs; produce it with: {CAMPAIGN_CMD.format(path=campaign)}")
    node = [float(r["recovery_s"]) for r in runs if r.get("kind") in NODE_FAULT_KINDS and r.get("recovery_s") is not None]
    if not node:
        raise InputError(f"{campaign}: no crash/rankkill run with a recovery_s; produce it with: "
                         f"{CAMPAIGN_CMD.format(path=campaign)}")
    freeze = [float(r["recovery_s"]) for r in runs if r.get("kind") == "freeze" and r.get("recovery_s") is not None]
    figures = _read_json(attribution, ATTRIBUTION_CMD)
    if not isinstance(figures, dict) or not all(isinstance(figures.get(k), int | float) for k in ("precision", "recall")):
        raise InputError(f"{attribution}: no precision/recall; produce it with: {ATTRIBUTION_CMD.format(path=attribution)}")
    defaults = run_config_defaults()
    return Measured(
        recovery_s=statistics.fmean(node), runs=len(node),
        freeze_recovery_s=statistics.fmean(freeze) if freeze else None,
        campaign_correct=sum(bool(r.get("correct")) for r in runs) / len(runs),
        precision=float(figures["precision"]), recall=float(figures["recall"]),
        hang_s=statistics.fmean(freeze) if freeze else STALL_STARTUP_S + 2 * STALL_PROBE_S + STALL_RECHECK_S,
        # The probe after a launch that missed the dead node: two quick probes 1 s apart, each with the stall
        # deadline (or the whole --probe-timeout, if that is shorter).
        probe_timeout_s=STALL_PROBE_GAP_S + min(float(defaults["probe_timeout_s"]), STALL_PROBE_S),  # type: ignore[arg-type]
        campaign=str(campaign), attribution=str(attribution),
    )


@dataclass(frozen=True)
class Model:
    """One job at one scale and everything around it that is not the policy's own."""

    gpus: int
    node_mtbf_s: float = NODE_MTBF_S
    restart_s: float = 180.0
    spare_share: float = 0.02
    queue_s: float = 1800.0
    watchdog_s: float = 600.0
    failed_launch_s: float = 60.0
    scheduler_hang_s: float = 0.0
    non_node: float = 0.20
    hang: float = 0.05
    correlated: float = 0.05
    corr_nodes: tuple[int, int] = (2, 8)
    spares_limited: bool = True

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // GPUS_PER_NODE)

    @property
    def spares(self) -> int:
        return max(1, round(self.spare_share * self.nodes))

    @property
    def job_mtbf_s(self) -> float:
        return self.node_mtbf_s / self.nodes


# -- the trace --------------------------------------------------------------------
@dataclass
class Trace:
    """What one simulated run went through; independent of T and C."""

    ups: list[float] = field(default_factory=list)  # work-time between a (re)start and the next failure
    detection: float = 0.0
    relaunch: float = 0.0  # restarts at cost R (and the part of one a failure cut short)
    failed_launch: float = 0.0  # launches with a failed node still in them
    queue: float = 0.0
    failures: int = 0
    spares_spent: int = 0
    allocations: int = 1
    failed_launches: int = 0
    innocents: int = 0

    def __post_init__(self) -> None:
        self._up: float | None = None

    @property
    def up(self) -> float:
        if self._up is None:
            self._up = math.fsum(self.ups)
        return self._up

    def wall(self) -> float:
        return self.up + self.detection + self.relaunch + self.failed_launch + self.queue

    def segments(self, t: float, c: float) -> float:
        period = t + c
        return float(sum(u // period for u in self.ups))

    def ettr(self, t: float, c: float) -> float:
        return t * self.segments(t, c) / self.wall()

    def breakdown(self, t: float, c: float) -> dict[str, float]:
        """Shares of wall time: useful, checkpoint, lost work, detection, restart, failed launches, queue."""
        n, wall = self.segments(t, c), self.wall()
        return {"useful": n * t / wall, "checkpoint": n * c / wall, "lost_work": (self.up - n * (t + c)) / wall,
                "detection": self.detection / wall, "restart": self.relaunch / wall,
                "failed_launch": self.failed_launch / wall, "queue": self.queue / wall}


def pooled(traces: Sequence[Trace]) -> Trace:
    out = Trace(ups=[u for tr in traces for u in tr.ups])
    for name in ("detection", "relaunch", "failed_launch", "queue", "failures", "spares_spent", "allocations", "failed_launches",
                 "innocents"):
        setattr(out, name, sum(getattr(tr, name) for tr in traces))
    return out


# -- policies: each handles one failure and returns the spares left -----------------
@dataclass
class Run:
    """What a policy sees while it handles a failure."""

    model: Model
    measured: Measured | None
    trace: Trace
    rng: random.Random


Handler = Callable[[str, int, int, Run], int]


def _take(spares: int, need: int, model: Model, trace: Trace) -> int:
    """Spend ``need`` spares, or wait for a new allocation (fresh nodes, fresh spares) when there are too few."""
    if not model.spares_limited or need <= spares:
        trace.spares_spent += need
        return spares - need if model.spares_limited else spares
    trace.queue += model.queue_s
    trace.allocations += 1
    return model.spares


def _hotspare(kind: str, k: int, spares: int, run: Run) -> int:
    model, measured, trace, rng = run.model, run.measured, run.trace, run.rng
    assert measured is not None
    need = 0
    trace.detection += measured.hang_s + model.scheduler_hang_s if kind == "hang" else measured.recovery_s
    if kind == "hang":
        need = 1
    elif kind == "node":
        need = k
        if rng.random() >= measured.recall:  # missed: one launch with the dead node, then the probe names it
            trace.failed_launches += 1
            trace.failed_launch += model.failed_launch_s
            trace.detection += measured.probe_timeout_s
    if rng.random() >= measured.precision:  # an innocent node retired too
        trace.innocents += 1
        need += 1
    return _take(spares, need, model, trace)


def _blind(kind: str, k: int, spares: int, run: Run) -> int:
    model, trace = run.model, run.trace
    if kind == "hang":
        trace.detection += model.watchdog_s
    if kind == "soft":
        return _take(spares, 1, model, trace)
    # The failed nodes sit at random places in the active list; each rotation evicts the head.
    rotations = max(run.rng.sample(range(model.nodes), k)) + 1
    used = min(rotations, spares)
    trace.spares_spent += used
    wasted = rotations - 1 if used == rotations else used  # every launch with a failed node left in it
    trace.failed_launches += wasted
    trace.failed_launch += wasted * model.failed_launch_s
    if used == rotations:
        return spares - used
    trace.queue += model.queue_s
    trace.allocations += 1
    return model.spares


def _requeue(kind: str, k: int, spares: int, run: Run) -> int:
    if kind == "hang":
        run.trace.detection += run.model.watchdog_s
    run.trace.queue += run.model.queue_s
    run.trace.allocations += 1
    return spares


def _oracle(kind: str, k: int, spares: int, run: Run) -> int:
    return _take(spares, 0 if kind == "soft" else k, run.model, run.trace)


def _plain(kind: str, k: int, spares: int, run: Run) -> int:
    return spares  # Daly's model: a failure costs the restart and the lost work, nothing else


HANDLERS: dict[str, Handler] = {"hotspare": _hotspare, "oracle": _oracle, "blind": _blind, "requeue": _requeue,
                                "plain": _plain}


def draw_kind(model: Model, rng: random.Random) -> tuple[str, int]:
    """(kind, failed nodes): soft (no node at fault), hang (one node stalls), node (k nodes die)."""
    u = rng.random()
    if u < model.non_node:
        return "soft", 0
    if u < model.non_node + model.hang:
        return "hang", 1
    if rng.random() < model.correlated:
        lo, hi = model.corr_nodes
        return "node", min(model.nodes, rng.randint(lo, hi))
    return "node", 1


def simulate(policy: str, model: Model, measured: Measured | None, failures: int, seed: int) -> Trace:
    """``failures`` failures of one job under ``policy``: restart (exposed to failures), work, fail, handle."""
    rng = random.Random(seed)  # a simulation, not secrets
    handle = HANDLERS[policy]
    rate = 1.0 / model.job_mtbf_s
    trace = Trace()
    run = Run(model, measured, trace, rng)
    spares = model.spares
    for _ in range(failures):  # each pass ends in exactly one failure
        first = rng.expovariate(rate)
        if first < model.restart_s:
            trace.relaunch += first
        else:
            trace.relaunch += model.restart_s
            trace.ups.append(rng.expovariate(rate))
        trace.failures += 1
        kind, k = draw_kind(model, rng)
        spares = handle(kind, k, spares, run)
    return trace


# -- the best interval --------------------------------------------------------------
def young_s(c: float, m: float) -> float:
    return math.sqrt(2 * c * m)


def daly_opt_s(c: float, m: float) -> float:
    """Daly's higher-order optimum (2006), valid for C < 2M."""
    x = c / (2 * m)
    return math.sqrt(2 * c * m) * (1 + math.sqrt(x) / 3 + x / 9) - c if c < 2 * m else m


def daly_ettr(t: float, c: float, r: float, m: float) -> float:
    """W / T_wall from Daly's expected run time T_wall = M e^(R/M) (e^((T+C)/M) - 1) W / T."""
    return t / (m * math.exp(r / m) * math.expm1((t + c) / m))


def best_interval(trace: Trace, c: float, m: float) -> tuple[float, float]:
    """(T, ETTR) maximising the trace's ETTR: a log grid around Young's interval, then golden section."""
    centre = young_s(max(c, 1e-3), m)
    grid = [centre * 2 ** (i / 4) for i in range(-16, 17)]
    scores = [trace.ettr(t, c) for t in grid]
    i = max(range(len(grid)), key=scores.__getitem__)
    lo, hi = math.log(grid[max(0, i - 1)]), math.log(grid[min(len(grid) - 1, i + 1)])
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = trace.ettr(math.exp(a), c), trace.ettr(math.exp(b), c)
    for _ in range(24):
        if fa >= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = trace.ettr(math.exp(a), c)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = trace.ettr(math.exp(b), c)
    best = max([(fa, math.exp(a)), (fb, math.exp(b)), (scores[i], grid[i])])
    return best[1], best[0]


def ci_half(values: Sequence[float]) -> float | None:
    """Half-width of the 95 % confidence interval of the mean (Student t), None from one seed."""
    if len(values) < 2:
        return None
    return T_QUANTILE.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))


# -- the study ------------------------------------------------------------------------
@dataclass
class Study:
    """Traces for every (policy, scale), scored at every C asked for."""

    models: dict[int, Model]
    measured: Measured
    seeds: int
    failures: int
    traces: dict[tuple[str, int], list[Trace]] = field(default_factory=dict)

    def run(self) -> None:
        for gpus, model in self.models.items():
            for p, policy in enumerate(POLICIES):
                self.traces[policy, gpus] = [simulate(policy, model, self.measured, self.failures,
                                                      seed=1000 * s + 10 * p + gpus % 7) for s in range(self.seeds)]

    def point(self, policy: str, gpus: int, c: float) -> dict[str, object]:
        traces = self.traces[policy, gpus]
        whole = pooled(traces)
        m = self.models[gpus].job_mtbf_s
        t, _ = best_interval(whole, c, m)
        per_seed = [tr.ettr(t, c) for tr in traces]
        return {
            "policy": policy, "gpus": gpus, "c_s": c, "best_t_s": round(t, 1),
            "ettr": statistics.fmean(per_seed), "ci95": ci_half(per_seed),
            "breakdown": whole.breakdown(t, c),
            "failures": whole.failures, "spares_per_failure": whole.spares_spent / whole.failures,
            "allocations_per_1000": 1000 * (whole.allocations - len(traces)) / whole.failures,
            "failed_launches_per_failure": whole.failed_launches / whole.failures,
            "simulated_days": whole.wall() / 86_400,
        }


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def _pm(ci: float | None) -> str:
    return "" if ci is None else f"±{100 * ci:.2f}"


def report(points: dict[tuple[str, int, float], dict[str, object]], scales: Sequence[int], costs: Sequence[float],
           headline_c: float, sweep: Sequence[float]) -> list[str]:
    out = []
    for c in costs:
        out.append(f"\nETTR % (95 % CI over seeds) at each policy's best checkpoint interval T (s), C = {c:g} s")
        rows = [["GPUs", *[f"{p} (T)" for p in POLICIES], "hotspare-oracle pp"]]
        for g in scales:
            cells = [f"{pct(points[p, g, c]['ettr'])}{_pm(points[p, g, c]['ci95'])} "  # type: ignore[arg-type]
                     f"({points[p, g, c]['best_t_s']:.0f})" for p in POLICIES]
            gap = 100 * (points["hotspare", g, c]["ettr"] - points["oracle", g, c]["ettr"])  # type: ignore[operator]
            rows.append([str(g), *cells, f"{gap:+.2f}"])
        out += table(rows)
    top = max(scales)
    out.append(f"\nWhere the time goes at {top} GPUs, C = {headline_c:g} s (% of wall time)")
    keys = ("useful", "checkpoint", "lost_work", "detection", "restart", "failed_launch", "queue")
    rows = [["policy", *keys, "spares/failure", "allocs/1000 failures", "failed launches/failure"]]
    for p in POLICIES:
        pt = points[p, top, headline_c]
        b: dict[str, float] = pt["breakdown"]  # type: ignore[assignment]
        rows.append([p, *[pct(b[k]) for k in keys], f"{pt['spares_per_failure']:.2f}",
                     f"{pt['allocations_per_1000']:.1f}", f"{pt['failed_launches_per_failure']:.2f}"])
    out += table(rows)
    out.append(f"\nETTR % at {top} GPUs against the checkpoint cost C (goal {100 * GOAL_ETTR:.0f} %)")
    rows = [["C (s)", *POLICIES]]
    for c in sweep:
        rows.append([f"{c:g}", *[pct(points[p, top, c]["ettr"]) + ("*" if points[p, top, c]["ettr"] >= GOAL_ETTR  # type: ignore[operator]
                                                                      else "") for p in POLICIES]])
    out += table(rows)
    for p in ("oracle", "hotspare"):
        met = [c for c in sweep if points[p, top, c]["ettr"] >= GOAL_ETTR]  # type: ignore[operator]
        out.append(f"{p}: {GOAL_ETTR:.0%} at {top} GPUs " + (f"met for C <= {max(met):g} s" if met
                                                              else f"not met for any C in {', '.join(f'{c:g}' for c in sweep)} s"))
    return out


# -- validation against the closed form ------------------------------------------------
VALIDATION_POINTS = ((JOB_MTBF_S, 5.0, 180.0, None), (JOB_MTBF_S, 60.0, 600.0, None), (3600.0, 30.0, 300.0, 400.0),
                     (86_400.0, 120.0, 900.0, None))


def validate(failures: int, seed: int = 7) -> tuple[list[str], list[dict[str, float]]]:
    """Daly's model in the simulator (policy 'plain'): ETTR at T and the best T, against the closed forms."""
    rows = [["M (s)", "C (s)", "R (s)", "T (s)", "sim ETTR %", "Daly ETTR %", "diff pp", "sim best T", "Young T",
             "Daly T"]]
    figures = []
    for i, (m, c, r, t_given) in enumerate(VALIDATION_POINTS):
        model = Model(gpus=GPUS_PER_NODE, node_mtbf_s=m, restart_s=r, non_node=0.0, hang=0.0, correlated=0.0,
                      spares_limited=False)
        trace = simulate("plain", model, None, failures, seed + i)
        t = t_given or daly_opt_s(c, m)
        sim, closed = trace.ettr(t, c), daly_ettr(t, c, r, m)
        best_t, _ = best_interval(trace, c, m)
        figures.append({"m_s": m, "c_s": c, "r_s": r, "t_s": t, "sim_ettr": sim, "daly_ettr": closed,
                        "diff_pp": 100 * (sim - closed), "sim_best_t_s": best_t, "young_t_s": young_s(c, m),
                        "daly_t_s": daly_opt_s(c, m)})
        rows.append([f"{m:.0f}", f"{c:g}", f"{r:g}", f"{t:.0f}", pct(sim), pct(closed), f"{100 * (sim - closed):+.3f}",
                     f"{best_t:.0f}", f"{young_s(c, m):.0f}", f"{daly_opt_s(c, m):.0f}"])
    return table(rows), figures


# -- plots ------------------------------------------------------------------------------
COLOURS = {"hotspare": "tab:blue", "oracle": "black", "blind": "tab:orange", "requeue": "tab:red"}
MARKERS = {"hotspare": "o", "oracle": "s", "blind": "^", "requeue": "v"}
STYLES = {"hotspare": "-", "oracle": "--", "blind": "-", "requeue": "-"}


def plot(study: Study, points: dict[tuple[str, int, float], dict[str, object]], headline_c: float,
         out: Path) -> list[Path]:
    """The three PNGs: ETTR against scale, ETTR against T at the largest scale, the breakdown there."""
    import matplotlib  # noqa: PLC0415 - only --plots needs it (the 'plot' extra)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    return [_plot_scale(plt, study, points, headline_c, out / "goodput_vs_scale.png"),
            _plot_interval(plt, study, points, headline_c, out / "goodput_vs_interval.png"),
            _plot_breakdown(plt, study, points, headline_c, out / "goodput_breakdown.png")]


Points = dict[tuple[str, int, float], dict[str, object]]


def _plot_scale(plt: Any, study: Study, points: Points, headline_c: float, path: Path) -> Path:
    scales = sorted(study.models)
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    for p in POLICIES:
        ys = [100 * points[p, g, headline_c]["ettr"] for g in scales]  # type: ignore[operator]
        es = [100 * (points[p, g, headline_c]["ci95"] or 0.0) for g in scales]  # type: ignore[operator]
        ax.errorbar(scales, ys, yerr=es, label=p, color=COLOURS[p], marker=MARKERS[p], capsize=3,
                    linestyle=STYLES[p], markersize=7 if p == "hotspare" else 5, zorder=3 if p == "hotspare" else 2)
        ax.annotate(f"{ys[-1]:.1f}", (scales[-1], ys[-1]), textcoords="offset points", fontsize=9, color=COLOURS[p],
                    xytext=(8, -12 if p == "hotspare" else 4))
    ax.axhline(100 * GOAL_ETTR, color="grey", linestyle="--", linewidth=1)
    ax.annotate(f"goal {GOAL_ETTR:.0%}", (scales[0], 100 * GOAL_ETTR), textcoords="offset points", xytext=(0, -13),
                color="grey", fontsize=9)
    ax.plot([BYTEROBUST[0]], [100 * BYTEROBUST[1]], marker="*", markersize=12, color="tab:green", linestyle="none",
            label="ByteRobust, reported (9,600 GPUs)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(scales, [f"{g:,}" for g in scales])
    ax.set_xlim(scales[0] / 1.3, scales[-1] * 1.6)
    ax.set_xlabel("GPUs in the job (8 per node; log scale)")
    ax.set_ylabel("ETTR (% of wall time training)")
    ax.set_title(f"Effective training time ratio vs job size\nLlama 3 failure rate, C = {headline_c:g} s, each policy at "
                 "its best checkpoint interval", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=9)
    return _save(plt, fig, path)


def _plot_interval(plt: Any, study: Study, points: Points, headline_c: float, path: Path) -> Path:
    top = max(study.models)
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    m = study.models[top].job_mtbf_s
    ts = [young_s(headline_c, m) * 2 ** (i / 4) for i in range(-12, 17)]
    for p in POLICIES:
        whole = pooled(study.traces[p, top])
        ax.plot(ts, [100 * whole.ettr(t, headline_c) for t in ts], label=p, color=COLOURS[p], linestyle=STYLES[p])
        best = points[p, top, headline_c]
        ax.plot([best["best_t_s"]], [100 * best["ettr"]], marker=MARKERS[p], color=COLOURS[p])  # type: ignore[operator]
    ax.axvline(young_s(headline_c, m), color="grey", linestyle=":",
               label=f"Young sqrt(2CM) = {young_s(headline_c, m):.0f} s")
    ax.axvline(daly_opt_s(headline_c, m), color="grey", linestyle="-.",
               label=f"Daly optimum = {daly_opt_s(headline_c, m):.0f} s")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval T (seconds of work between checkpoints; log scale)")
    ax.set_ylabel("ETTR (% of wall time training)")
    ax.set_title(f"ETTR vs checkpoint interval at {top:,} GPUs\nC = {headline_c:g} s, job MTBF {m / 3600:.1f} h; "
                 "markers: each policy's best T", fontsize=11)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(plt, fig, path)


def _plot_breakdown(plt: Any, study: Study, points: Points, headline_c: float, path: Path) -> Path:
    top = max(study.models)
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    parts = (("checkpoint", "checkpoint writes", "tab:purple"), ("lost_work", "lost work (since checkpoint)", "tab:olive"),
             ("detection", "detection + decision", "tab:cyan"), ("restart", "restart R", "tab:brown"),
             ("failed_launch", "launches failing on a dead node", "tab:pink"), ("queue", "queue wait", "tab:red"))
    bottom = [0.0] * len(POLICIES)
    for key, label, colour in parts:
        vals = [100 * points[p, top, headline_c]["breakdown"][key] for p in POLICIES]  # type: ignore[index]
        ax.bar(POLICIES, vals, bottom=bottom, label=label, color=colour, width=0.6)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    for i, total in enumerate(bottom):
        ax.text(i, total + 0.3, f"{total:.1f} % lost", ha="center", fontsize=9)
    ax.set_ylim(0, max(bottom) * 1.12)
    ax.set_ylabel("share of wall time not training (%)")
    ax.set_title(f"Where the time goes at {top:,} GPUs\nC = {headline_c:g} s, each policy at its best checkpoint interval",
                 fontsize=11)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, axis="y", alpha=0.3)
    return _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def inputs(args: argparse.Namespace, study: Study, points: dict[tuple[str, int, float], dict[str, object]]) -> list[str]:
    """What the run assumed and what it read, with where from."""
    scales = sorted(study.models)
    top, measured = scales[-1], study.measured
    freeze = "none" if measured.freeze_recovery_s is None else f"{measured.freeze_recovery_s:.2f} s"
    return [
        "Inputs",
        f"  job: {GPUS_PER_NODE} GPUs/node, per-node MTBF {args.node_mtbf_h / 24:.0f} days (Llama 3: "
        f"{LLAMA3_INTERRUPTIONS} interruptions in {LLAMA3_DAYS} days on {LLAMA3_GPUS:,} GPUs); job MTBF "
        + ", ".join(f"{g:,} GPUs {study.models[g].job_mtbf_s / 3600:.1f} h" for g in scales),
        f"  R={args.restart_s:g} s  queue={args.queue_s:g} s  watchdog={args.watchdog_s:g} s  failed launch="
        f"{args.failed_launch_s:g} s  spares={args.spare_share:.0%} ("
        + ", ".join(f"{study.models[g].spares}" for g in scales)
        + f")  non-node={args.non_node:.0%} hang={args.hang:.0%} correlated={args.correlated:.0%} of node faults",
        f"  hotspare, read: recovery {measured.recovery_s:.2f} s (mean of {measured.runs} node-fault runs in "
        f"{measured.campaign}; freeze runs {freeze}; campaign correct {measured.campaign_correct:.0%}), precision "
        f"{measured.precision} recall {measured.recall} ({measured.attribution}), hang {measured.hang_s:.2f} s, "
        f"probe {measured.probe_timeout_s:g} s (two quick probes; RunConfig's probe timeout caps them)",
        f"  {study.seeds} seeds x {study.failures} failures per policy and scale; "
        f"{points['oracle', top, args.headline_c]['simulated_days']:.0f} simulated days at {top:,} GPUs",
    ]


# -- main --------------------------------------------------------------------------------
def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaign", type=Path, default=RESULTS / "campaign.json", help="bed campaign JSON")
    parser.add_argument("--attribution", type=Path, default=RESULTS / "attribution.json", help="attribution JSON")
    parser.add_argument("--gpus", default="512,2048,8192,16384", help="job sizes (comma-separated)")
    parser.add_argument("--costs", default="1,2,5", help="checkpoint costs C in s (comma-separated)")
    parser.add_argument("--headline-c", type=float, default=5.0, help="C of the breakdown, plots and last line")
    parser.add_argument("--sweep", default="0.25,0.5,1,2,5,10", help="C values for ETTR against C at the top scale")
    parser.add_argument("--restart-s", type=float, default=180.0, help="restart cost R (relaunch+load+warm-up)")
    parser.add_argument("--spare-share", type=float, default=0.02, help="spares as a share of the job's nodes (>= 1)")
    parser.add_argument("--queue-s", type=float, default=1800.0, help="queue wait for a new allocation")
    parser.add_argument("--watchdog-s", type=float, default=600.0, help="collective/watchdog timeout seeing a hang")
    parser.add_argument("--failed-launch-s", type=float, default=60.0, help="a launch with a dead node fails after")
    parser.add_argument("--scheduler-hang-s", type=float, default=0.0,
                        help="extra time before the scheduler reports a frozen node to hotspare")
    parser.add_argument("--non-node", type=float, default=0.20, help="share of failures with no node at fault")
    parser.add_argument("--hang", type=float, default=0.05, help="share of failures that are hangs")
    parser.add_argument("--correlated", type=float, default=0.05, help="share of node faults taking 2-8 nodes")
    parser.add_argument("--node-mtbf-h", type=float, default=NODE_MTBF_S / 3600, help="per-node MTBF (h)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--failures", type=int, default=12_000, help="failures simulated per seed, policy and scale")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--plots", type=Path, nargs="?", const=ROOT / "docs", help="write the PNGs here (default docs/)")
    parser.add_argument("--validate", action="store_true", help="only: the simulator against Daly's closed form")
    args = parser.parse_args(argv)

    if args.validate:
        lines, figures = validate(max(args.failures, 100_000))
        print("Simulator (Daly's model: no spares limit, hangs or correlation; zero detection) vs closed form")
        print("\n".join(lines))
        worst = max(abs(f["diff_pp"]) for f in figures)
        if args.json:
            args.json.write_text(json.dumps({"validation": figures}, indent=1) + "\n")
        print(f"validation_max_diff_pp={worst:.3f} points={len(figures)}")
        return 0

    try:
        measured = load_measured(args.campaign, args.attribution)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    scales = sorted(int(g) for g in _floats(args.gpus))
    costs, sweep = _floats(args.costs), _floats(args.sweep)
    model_args = {"node_mtbf_s": args.node_mtbf_h * 3600, "restart_s": args.restart_s, "spare_share": args.spare_share,
                  "queue_s": args.queue_s, "watchdog_s": args.watchdog_s, "failed_launch_s": args.failed_launch_s,
                  "scheduler_hang_s": args.scheduler_hang_s, "non_node": args.non_node, "hang": args.hang,
                  "correlated": args.correlated}
    study = Study({g: Model(gpus=g, **model_args) for g in scales}, measured, args.seeds, args.failures)
    study.run()
    top = scales[-1]
    wanted = {(g, c) for g in scales for c in [*costs, args.headline_c]} | {(top, c) for c in sweep}
    points = {(p, g, c): study.point(p, g, c) for p in POLICIES for g, c in sorted(wanted)}

    print("\n".join(inputs(args, study, points)))
    print("\n".join(report(points, scales, costs, args.headline_c, sweep)))

    if args.json:
        args.json.write_text(json.dumps({
            "inputs": {**model_args, "gpus": scales, "costs_s": costs, "headline_c_s": args.headline_c, "seeds": args.seeds,
                       "failures_per_seed": args.failures, "measured": dataclasses.asdict(measured)},
            "points": list(points.values()),
        }, indent=1) + "\n")
    if args.plots:
        for path in plot(study, points, args.headline_c, args.plots):
            print(f"wrote {path}")
    print(" ".join(f"ettr_{p}={points[p, top, args.headline_c]['ettr']:.4f}" for p in POLICIES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
