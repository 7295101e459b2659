"""`calibrate` refuses impossible rates (issue 15 §4): every measured rate is held against the
physical peak of the device it ran on; an impossible one is measured again, then refused with a
message and never stored (core/estimate/rate_limits.py, telemetry/calibrate.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from core.estimate.calibration import efficiency_from_calibration
from core.estimate.rate_limits import cpu_peak_flops, drop_refused, impossible_rates
from core.hardware.catalogue import load_catalogue
from telemetry import calibrate

CATALOGUE = load_catalogue()
GPU_HOST = Path(__file__).resolve().parents[1] / "fixtures" / "gpu" / "h100-calibration-2026-11-26c.json"
# a 16-core AVX-512 host at 3.5 GHz: 16 × 3.5 GHz × 64 × 1.5 = 5.4 TFLOP/s at most
CPU_PEAK = cpu_peak_flops(16, 3.5e9, 64)
# what the issue saw on a 16-core GPU host: convolution rates of 226,492,416 and 2,774,532,096 GFLOP/s
BROKEN = {
    "cpu_fp32_matmul_flops": 1.2e12,
    "cpu_linear_train_flops": 0.9e12,
    "cpu_conv_train_flops": 2.26492416e17,
    "cpu_profile": {
        "linear_train": [[8e6, 3e11], [4e9, 0.9e12]],
        "conv_train": [[576, 2e11], [36864, 2.26492416e17], [294912, 2.774532096e18]],
    },
    "gpus": [
        {
            "name": "NVIDIA H100 80GB HBM3",
            "fp32_matmul_flops": 50e12,
            "tf32_matmul_flops": 380e12,
            "bf16_matmul_flops": 2.0e15,  # twice the H100 SXM's dense 989 TFLOPS
            "memory_bandwidth_bps": 2.9e12,
            "profile": {"linear_train": [[1e9, 20e12], [1e12, 40e12]]},
        }
    ],
}


def test_the_issues_impossible_convolution_rates_are_found_and_plausible_ones_kept() -> None:
    found = impossible_rates(BROKEN, CPU_PEAK, CATALOGUE, [80 * 2**30])
    paths = {r.path for r in found}
    assert paths == {
        ("cpu_conv_train_flops",),
        ("cpu_profile", "conv_train", 1),
        ("cpu_profile", "conv_train", 2),
        ("gpus", 0, "bf16_matmul_flops"),
    }
    conv = next(r for r in found if r.path == ("cpu_profile", "conv_train", 2))
    assert "2,774,532,096 G/s" in conv.message and "this machine's CPU" in conv.message
    gpu = next(r for r in found if r.path[0] == "gpus")
    assert gpu.bound == pytest.approx(989.4e12 * 1.15)  # the H100 SXM's datasheet peak the name matches
    assert "impossible, refused" in gpu.message


def test_refused_figures_are_dropped_and_named() -> None:
    result = drop_refused(copy.deepcopy(BROKEN), impossible_rates(BROKEN, CPU_PEAK, CATALOGUE))
    assert result["cpu_profile"]["conv_train"] == [[576, 2e11]]  # the plausible point stays
    assert result["cpu_conv_train_flops"] is None and result["gpus"][0]["bf16_matmul_flops"] is None
    assert result["gpus"][0]["tf32_matmul_flops"] == 380e12
    assert len(result["refused"]) == 4
    rates = efficiency_from_calibration(result, "cpu")
    assert rates["conv_train"] == [[576.0, 2e11]]  # nothing impossible reaches a sizing


def run_with(monkeypatch: pytest.MonkeyPatch, answers: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    calls = []

    def measure(py: str, timeout_s: float) -> dict[str, Any]:
        calls.append(py)
        return copy.deepcopy(answers[min(len(calls), len(answers)) - 1])

    monkeypatch.setattr(calibrate, "_measure", measure)
    monkeypatch.setattr(calibrate, "_machine_limits", lambda: (CPU_PEAK, [80 * 2**30]))
    monkeypatch.setattr(calibrate, "measure_read", lambda folder: {"folder": str(folder), "read_bps": 1e9, "note": ""})
    return calibrate.run_calibration("python3", Path(".")), len(calls)


def test_an_impossible_rate_is_measured_again_and_the_new_figure_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    sane = copy.deepcopy(BROKEN)
    sane["cpu_conv_train_flops"] = 0.8e12
    sane["cpu_profile"]["conv_train"] = [[576, 2e11], [36864, 0.6e12], [294912, 0.8e12]]
    sane["gpus"][0]["bf16_matmul_flops"] = 700e12
    result, calls = run_with(monkeypatch, [BROKEN, sane])
    assert calls == 2
    assert "refused" not in result and result["gpus"][0]["bf16_matmul_flops"] == 700e12


def test_an_impossible_rate_measured_twice_is_refused_not_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    result, calls = run_with(monkeypatch, [BROKEN, BROKEN])
    assert calls == 2
    assert len(result["refused"]) == 4 and all("refused" in m for m in result["refused"])
    assert result["cpu_conv_train_flops"] is None
    assert max(r for _, r in result["cpu_profile"]["conv_train"]) < CPU_PEAK


def test_a_plausible_calibration_is_measured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sane = drop_refused(copy.deepcopy(BROKEN), impossible_rates(BROKEN, CPU_PEAK, CATALOGUE))
    del sane["refused"]
    result, calls = run_with(monkeypatch, [sane])
    assert calls == 1 and "refused" not in result


def test_an_impossible_point_of_the_convolution_grid_is_refused_and_the_grid_falls_back() -> None:
    grid = [[4, 8, 3, 5e10], [4, 32, 3, 9e10], [16, 8, 3, 7e10], [16, 32, 3, 3e18]]  # 3,000,000,000 GFLOP/s
    result = {"cpu_profile": {"conv_grid": grid}}
    found = impossible_rates(result, CPU_PEAK, CATALOGUE)
    assert [r.path for r in found] == [("cpu_profile", "conv_grid", 3)]
    assert "16 → 32 channels, 3×3" in found[0].message and "impossible, refused" in found[0].message
    kept = efficiency_from_calibration(drop_refused(copy.deepcopy(result), found), "cpu")
    assert len(kept["conv_grid"]) == 3  # an incomplete grid: the rate by weights prices the layers


def test_a_calibration_during_which_the_machine_slowed_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    sane = drop_refused(copy.deepcopy(BROKEN), impossible_rates(BROKEN, CPU_PEAK, CATALOGUE))
    del sane["refused"]
    slowed = {**sane, "cpu_fp32_matmul_flops_end": 0.8e12}  # 1.2e12 at the start: -33 %
    result, _ = run_with(monkeypatch, [slowed])
    assert "changed by -33% during the calibration" in result["unsteady"]
    assert "1,200 GFLOP/s at the start and 800 at the end" in result["unsteady"]
    steady = {**sane, "cpu_fp32_matmul_flops_end": 1.1e12}  # -8 %: within the tolerance
    result, _ = run_with(monkeypatch, [steady])
    assert "unsteady" not in result
    result, _ = run_with(monkeypatch, [sane])  # a worker from before the second measurement
    assert "unsteady" not in result


def test_a_layer_faster_than_the_calls_fixed_cost_gives_a_possible_rate() -> None:
    """The cause of the issue's figures: calibrate measured a small convolution's step net of the fixed
    cost of a call timed on a 1 × 1 layer, and on a 16-core GPU host (a lent H100's, 2026-11-26) that
    fixed cost (0.51 ms) exceeded small 3 × 3 first layers' whole step: 226,492,416 GFLOP/s again, refused
    12 times (tests/fixtures/gpu/h100-calibration-2026-11-26c.json)."""
    import sys

    from core.paths import resource_path

    sys.path.insert(0, str(resource_path("workers")))
    import calibrate as worker  # resources/workers/calibrate.py, as the app runs it

    record = GPU_HOST.read_text(encoding="utf-8")
    assert record.count("impossible, refused") == 12 and "226,492,416 G/s" in record
    call = 0.509e-3  # the record's conv_call_s
    flops = 2 * 2 * 16 * 128 * 32 * 32 * 3 * 9  # the first grid's 3 → 128 channels, 3 × 3, batch 16, 32 × 32
    for step_s in (0.2e-3, 0.4e-3, 0.509e-3):  # a step at or below the fixed cost's measurement
        rate = flops / worker.net_of_call(step_s, call)
        assert rate == pytest.approx(flops / (0.25 * step_s))
        assert rate < cpu_peak_flops(16, 3.5e9, 64)  # possible: 4.5 TFLOP/s at most
    assert worker.net_of_call(2e-3, call) == pytest.approx(2e-3 - call)  # a larger layer: its time net of the call
