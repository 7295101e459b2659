"""Calibration: measured rates replace the default efficiencies for "this machine"."""

from __future__ import annotations

import importlib.util
import json

import pytest

from core.catalogue import device_from_entry
from core.sizing import size_candidate
from core.workload import parse_workload
from telemetry.calibrate import efficiency_from_calibration, measure_read

CPU = device_from_entry({"name": "this machine (test CPU)", "kind": "cpu", "fp32_tflops": 0.2, "source": "test"})
CAL = {
    "cpu_fp32_matmul_flops": 1.0e11,
    "cpu_bf16_matmul_flops": 3.0e11,
    "cpu_linear_train_flops": 8.0e10,
    "cpu_conv_train_flops": 4.0e10,
    "step_overhead": {"per_op_s": 1e-5, "per_step_s": 2e-4},
}


def test_measured_rates_set_the_compute_time_exactly() -> None:
    w = parse_workload({"model": {"preset": "seed-mlp"}})  # linear layers only
    rates = efficiency_from_calibration(CAL, "cpu")
    c = size_candidate(w, CPU, 1, calibrated=rates)
    flops = 3 * w.analysis.forward_flops * 512
    assert c.step.compute_s == pytest.approx(flops / 8.0e10)
    n_ops = len(w.analysis.graph.ops)
    assert c.step.overhead_s == pytest.approx(2e-4 + 1e-5 * (3 * n_ops + 2 * n_ops))
    assert "(calibrated)" in c.assumptions[0]
    uncalibrated = size_candidate(w, CPU, 1)
    assert uncalibrated.step.compute_s == pytest.approx(flops / (0.2e12 * 0.55))


def test_convolutions_use_the_convolution_rate_and_mixed_precision_its_speedup() -> None:
    w = parse_workload({"model": {"preset": "lenet-5"}, "training": {"precision": "bf16_mixed"}})
    rates = efficiency_from_calibration(CAL, "cpu")
    c = size_candidate(w, CPU, 1, calibrated=rates)
    conv = sum(r.flops * r.count for r in w.analysis.rows if r.type == "conv2d")
    lin = w.analysis.forward_flops - conv
    b = w.training.batch_size
    assert c.step.compute_s == pytest.approx(3 * b * (lin / (8.0e10 * 3) + conv / (4.0e10 * 3)))


def test_storage_read_drops_the_cache_and_cleans_up(tmp_path) -> None:
    r = measure_read(tmp_path, size=8 * 2**20)
    assert r["read_bps"] > 0 and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="CI installs torch==2.13.0")
def test_calibrate_command_is_used_by_size(cli, write_json, seed_doc) -> None:
    code, out, err = cli("calibrate", "--json")
    assert code == 0, err
    cal = json.loads(out)
    assert cal["cpu_linear_train_flops"] > 1e8 and cal["step_overhead"]["per_op_s"] >= 0
    code, out, _ = cli("size", str(write_json(seed_doc)), "--json", "--no-save")
    (cand,) = json.loads(out)["candidates"]
    assert "(calibrated)" in cand["assumptions"][0]
