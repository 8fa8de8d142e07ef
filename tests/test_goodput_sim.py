"""benchmarks/goodput_sim.py: the simulator against Daly's closed form, the policies' ordering and spare use, and
hotspare's figures read from the campaign and attribution JSON (never typed in). Fixed seeds; a few seconds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import load_benchmark

sim = load_benchmark("goodput_sim.py")

CAMPAIGN = [
    {"kind": "crash", "recovery_s": 20.0, "slurm_detect_s": 10.0, "correct": True, "healthy_retired": 0, "spares_wasted": 0},
    {"kind": "rankkill", "recovery_s": 4.0, "slurm_detect_s": None, "correct": True, "healthy_retired": 0, "spares_wasted": 0},
    {"kind": "freeze", "recovery_s": 14.0, "slurm_detect_s": 6.0, "correct": True, "healthy_retired": 0, "spares_wasted": 0},
    {"kind": "enospc", "recovery_s": None, "slurm_detect_s": None, "correct": True, "healthy_retired": 0, "spares_wasted": 0},
]


def _files(tmp_path: Path, *, recovery: float = 20.0, precision: float = 1.0, recall: float = 0.95) -> tuple[Path, Path]:
    runs = [dict(r, recovery_s=recovery) if r["kind"] == "crash" else r for r in CAMPAIGN]
    campaign, attribution = tmp_path / f"campaign-{recovery}.json", tmp_path / f"attribution-{precision}-{recall}.json"
    campaign.write_text(json.dumps(runs))
    attribution.write_text(json.dumps({"excerpts": 10, "precision": precision, "recall": recall, "innocent_blamed": 0}))
    return campaign, attribution


def _measured(tmp_path: Path, **kw: float):  # type: ignore[no-untyped-def]
    return sim.load_measured(*_files(tmp_path, **kw))


@pytest.mark.parametrize(("m", "c", "r", "t"), [(11_135.0, 5.0, 180.0, 330.0), (3600.0, 30.0, 300.0, 400.0),
                                                (86_400.0, 120.0, 900.0, 4000.0)])
def test_simulator_matches_daly_within_one_point(m: float, c: float, r: float, t: float) -> None:
    model = sim.Model(gpus=8, node_mtbf_s=m, restart_s=r, non_node=0.0, hang=0.0, correlated=0.0, spares_limited=False)
    trace = sim.simulate("plain", model, None, 40_000, seed=3)
    assert abs(trace.ettr(t, c) - sim.daly_ettr(t, c, r, m)) < 0.01


def test_best_interval_is_near_young_and_daly() -> None:
    m, c = 11_135.0, 5.0
    model = sim.Model(gpus=8, node_mtbf_s=m, restart_s=180.0, non_node=0.0, hang=0.0, correlated=0.0, spares_limited=False)
    best_t, best = sim.best_interval(sim.simulate("plain", model, None, 40_000, seed=5), c, m)
    assert abs(best_t / sim.daly_opt_s(c, m) - 1) < 0.2, (best_t, sim.daly_opt_s(c, m))
    assert abs(best_t / sim.young_s(c, m) - 1) < 0.2, (best_t, sim.young_s(c, m))
    assert abs(best - sim.daly_ettr(sim.daly_opt_s(c, m), c, 180.0, m)) < 0.01


def test_validate_mode_prints_sim_against_closed_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert sim.main(["--validate", "--failures", "100000"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    worst = float(last.split()[0].split("=")[1])
    assert last.startswith("validation_max_diff_pp=") and worst < 1.0, last


def test_policies_order_at_scale(tmp_path: Path) -> None:
    measured = _measured(tmp_path)
    model = sim.Model(gpus=8192)
    ettr = {}
    for p in ("oracle", "hotspare", "requeue"):
        trace = sim.simulate(p, model, measured, 4000, seed=11)
        _, ettr[p] = sim.best_interval(trace, 5.0, model.job_mtbf_s)
    assert ettr["oracle"] >= ettr["hotspare"] >= ettr["requeue"], ettr


def test_blind_rotation_spends_a_spare_on_every_failure(tmp_path: Path) -> None:
    # Software failures only, spares never short: one spare per failure, exactly; hotspare spends none.
    model = sim.Model(gpus=2048, non_node=1.0, hang=0.0, spare_share=100.0)
    blind = sim.simulate("blind", model, None, 2000, seed=1)
    assert blind.failures == 2000 and blind.spares_spent == blind.failures
    assert sim.simulate("hotspare", model, _measured(tmp_path, precision=1.0), 2000, seed=1).spares_spent == 0
    # With node faults a dead node off the head of the list costs more rotations (and failed launches).
    faults = sim.simulate("blind", sim.Model(gpus=2048, spare_share=100.0), None, 2000, seed=2)
    assert faults.spares_spent > faults.failures and faults.failed_launches > 0


def test_missing_campaign_json_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, attribution = _files(tmp_path)
    missing = tmp_path / "nope" / "campaign.json"
    with pytest.raises(sim.InputError, match=r"benchmarks/campaign\.py --runs 20 --json") as caught:
        sim.load_measured(missing, attribution)
    assert "\n" not in str(caught.value) and str(missing) in str(caught.value)
    assert sim.main(["--campaign", str(missing), "--attribution", str(attribution)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1 and "campaign.py" in err


def test_missing_attribution_json_names_its_command(tmp_path: Path) -> None:
    campaign, _ = _files(tmp_path)
    with pytest.raises(sim.InputError, match=r"benchmarks/attribution\.py --json"):
        sim.load_measured(campaign, tmp_path / "attribution.json")


def test_figures_are_read_not_typed_in(tmp_path: Path) -> None:
    measured = _measured(tmp_path, recovery=20.0, precision=0.9, recall=0.8)
    assert measured.recovery_s == pytest.approx(12.0)  # mean of the crash and rankkill runs; freeze apart
    assert measured.freeze_recovery_s == pytest.approx(14.0)
    assert (measured.precision, measured.recall) == (0.9, 0.8)
    assert measured.hang_s == pytest.approx(14.0)  # a hang costs what the campaign's freeze runs took
    assert measured.probe_timeout_s == 3.0  # two quick probes: 2 s deadline, the second 1 s after the first
    model = sim.Model(gpus=16_384)

    def ettr(m):  # type: ignore[no-untyped-def]
        return sim.simulate("hotspare", model, m, 3000, seed=4).ettr(330.0, 5.0)

    slow = _measured(tmp_path, recovery=600.0, precision=0.9, recall=0.8)
    sloppy = _measured(tmp_path, recovery=20.0, precision=0.5, recall=0.2)
    base = ettr(measured)
    assert ettr(slow) < base - 0.005  # a slower measured recovery costs
    assert ettr(sloppy) < base  # worse attribution costs (spares, failed launches)
    assert sim.simulate("hotspare", model, sloppy, 3000, seed=4).innocents > 0


def test_default_run_last_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign, attribution = _files(tmp_path)
    out = tmp_path / "figures.json"
    assert sim.main(["--campaign", str(campaign), "--attribution", str(attribution), "--gpus", "512,16384",
                     "--costs", "5", "--sweep", "1,5", "--seeds", "2", "--failures", "800", "--json", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    keys = [kv.split("=")[0] for kv in last.split()]
    assert keys == ["ettr_hotspare", "ettr_oracle", "ettr_blind", "ettr_requeue"], last
    assert all(0 < float(kv.split("=")[1]) < 1 for kv in last.split())
    figures = json.loads(out.read_text())
    assert figures["inputs"]["measured"]["campaign"] == str(campaign)
    assert {p["policy"] for p in figures["points"]} == set(sim.POLICIES)
    assert all(math.isclose(sum(p["breakdown"].values()), 1.0, rel_tol=1e-9) for p in figures["points"])
