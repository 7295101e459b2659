"""The costs `calibrate` measures beyond the layer rates by size, as the CPU step model prices them
(docs/sizing.md §4, "memory-bound work"): elementwise work past the caches and glibc's mmap
threshold, fresh pages, a linear layer's weight and activation bytes, PyTorch's grain size on few
elements, convolutions by their channels and kernel, and linear layers by their rows and width."""

from __future__ import annotations

import math

import pytest

from core.estimate.calibration import efficiency_from_calibration
from core.estimate.measured_curves import interpolate_rate
from core.estimate.sizing import size_candidate
from core.network.model import ELEMENTWISE_KINDS
from core.spec.workload import parse_workload
from tests.unit.test_calibration import CAL, CPU


def _large_tensor_cal(**extra: object) -> dict:
    """A calibration whose profile measured the elementwise kinds at 2 and 16 Mi elements, the
    cross-entropy of a 10-class row, fresh memory per byte and the weight stream by layer size."""
    small = {k: 0.4e-9 for k in ELEMENTWISE_KINDS if k != "embedding"}
    large = {k: 2.0e-9 for k in small}
    profile = {
        "linear_train": [[1.0, 8.0e10]],
        "conv_train": [[1.0, 4.0e10]],
        "elementwise_s": {**small, "cross_entropy_row": 1.0e-7},
        "elementwise_elements": 2**21,
        "elementwise_large_s": large,
        "elementwise_large_elements": 2**24,
        "first_touch_s_per_byte": 0.12e-9,
        "weight_stream": [[2 * 2**20, 0.04e-9], [40 * 2**20, 0.12e-9]],
        **extra,
    }
    return {**CAL, "cpu_profile": profile}


def test_large_activations_cost_what_calibrate_measured_past_the_caches() -> None:
    rates = efficiency_from_calibration(_large_tensor_cal(), "cpu")
    assert rates["elementwise_curves"]["relu"] == [[2.0**21, 0.4e-9], [2.0**24, 2.0e-9]]
    relu = {
        "input_shape": [8, 64, 64],
        "layers": [{"type": "relu"}, {"type": "flatten"}, {"type": "linear", "out_features": 10}],
    }

    def memory_s(batch: int, cal: dict) -> float:
        w = parse_workload(
            {
                "model": relu,
                "data": {"samples": 4096},
                "training": {"batch_size": batch, "epochs": 1, "loop": "device_tensors"},
            }
        )
        return size_candidate(w, CPU, 1, calibrated=cal).step.memory_s

    # 8 × 64 × 64 = 32,768 elements a sample: 64 samples are 2 Mi elements (the cached cost), 512
    # are 16 Mi (the large one); against a calibration that measured one size only (an older one)
    flat = efficiency_from_calibration(_large_tensor_cal(elementwise_large_s=None), "cpu")
    assert "elementwise_curves" not in flat
    assert memory_s(64, rates) == pytest.approx(memory_s(64, flat))
    assert memory_s(512, rates) - memory_s(512, flat) == pytest.approx(512 * 32768 * (2.0e-9 - 0.4e-9))


def test_a_large_layer_at_a_small_batch_costs_by_its_weights_and_its_fresh_memory() -> None:
    rates = efficiency_from_calibration(_large_tensor_cal(), "cpu")
    model = {"input_shape": [65536], "layers": [{"type": "relu"}, {"type": "linear", "out_features": 160}]}
    w = parse_workload(
        {
            "model": model,
            "data": {"samples": 4096},
            "training": {"batch_size": 8, "epochs": 1, "loop": "device_tensors"},
        }
    )
    c = size_candidate(w, CPU, 1, calibrated=rates)
    weights = 65536 * 160 * 4  # 40 MiB: the large measured point
    flops_s = 3 * 2 * 65536 * 160 * 8 / 8.0e10  # what the FLOPs alone would take: 6.3 ms
    # by its bytes (15.8 ms): the weights read twice and their gradient written, the 2 MiB input and
    # its gradient (read twice, written once), the small output likewise
    moved = 3 * weights + 3 * 8 * 65536 * 4 + 3 * 8 * 160 * 4
    assert c.step.compute_s == pytest.approx(moved * 0.12e-9)
    assert c.step.compute_s > 2 * flops_s
    # without the weight-stream measurement (an older calibration): by its FLOPs
    older = efficiency_from_calibration(_large_tensor_cal(weight_stream=None), "cpu")
    assert size_candidate(w, CPU, 1, calibrated=older).step.compute_s == pytest.approx(flops_s)


def test_a_convolutions_large_output_pays_for_its_fresh_pages() -> None:
    rates = efficiency_from_calibration(_large_tensor_cal(), "cpu")
    conv = {
        "input_shape": [3, 64, 64],
        "layers": [
            {"type": "conv2d", "out_channels": 32, "kernel_size": 3, "padding": 1},
            {"type": "flatten"},
            {"type": "linear", "out_features": 10},
        ],
    }

    def memory_s(batch: int, cal: dict) -> float:
        doc = {"model": conv, "data": {"samples": 4096}, "training": {"batch_size": batch, "epochs": 1}}
        w = parse_workload({**doc, "training": {**doc["training"], "loop": "device_tensors"}})
        return size_candidate(w, CPU, 1, calibrated=cal).step.memory_s

    untouched = efficiency_from_calibration(_large_tensor_cal(first_touch_s_per_byte=0.0), "cpu")
    out_bytes = 128 * 32 * 64 * 64 * 4  # 64 MiB at batch 128: over glibc's 32 MiB mmap threshold
    # the convolution's output in forward, and in backward the gradient of the linear layer's input
    # (the same 64 MiB, flattened); the convolution reads the image: no input gradient
    assert memory_s(128, rates) - memory_s(128, untouched) == pytest.approx(2 * out_bytes * 0.12e-9)
    assert memory_s(32, rates) == pytest.approx(memory_s(32, untouched))  # 16 MiB: reused memory


def test_a_small_elementwise_tensor_runs_on_one_of_the_calibrated_threads() -> None:
    """PyTorch splits a CPU kernel in chunks of at least 32,768 elements: 16 Ki elements run on one
    thread, so on two threads they cost twice the per-element figure measured on 2 Mi elements."""
    model = {"input_shape": [16], "layers": [{"type": "relu"}, {"type": "linear", "out_features": 10}]}

    def memory_s(batch: int, threads: int) -> float:
        cal = efficiency_from_calibration({**_large_tensor_cal(), "threads": threads}, "cpu")
        doc = {"model": model, "data": {"samples": 4096}, "training": {"batch_size": batch, "epochs": 1}}
        w = parse_workload({**doc, "training": {**doc["training"], "loop": "device_tensors"}})
        return size_candidate(w, CPU, 1, calibrated=cal).step.memory_s

    relu = 1024 * 16 * 0.4e-9  # 16 Ki elements at the measured cost: paid twice on two threads
    assert memory_s(1024, 2) - memory_s(1024, 1) == pytest.approx(relu)  # the loss is priced per row


def _conv_cal(**profile: object) -> dict:
    """A calibration with convolution rates by channels and kernel (and none by weights to mix up)."""
    base = {
        "linear_train": [[1.0, 8.0e10]],
        "conv_train": [[1.0, 4.0e10]],
        "conv_call_s": 0.0,
        # [in, out channels, kernel side, FLOP/s]
        "conv_grid": [
            [4, 8, 5, 1.0e10],
            [4, 128, 5, 4.0e10],
            [16, 8, 5, 2.0e10],
            [16, 128, 5, 8.0e10],
            [4, 8, 3, 3.0e10],
            [4, 128, 3, 3.0e10],
            [16, 8, 3, 3.0e10],
            [16, 128, 3, 3.0e10],
        ],
        "conv_first_grid": [[1, 8, 3, 1.0e10], [1, 128, 3, 1.0e10], [3, 8, 3, 2.0e10], [3, 128, 3, 6.0e10]],
        **profile,
    }
    return {**CAL, "cpu_profile": base}


CONVS = {
    "input_shape": [3, 16, 16],
    "layers": [
        {"type": "conv2d", "out_channels": 8, "kernel_size": 3, "padding": 1},  # first: 3 → 8, 3 × 3
        {"type": "conv2d", "out_channels": 128, "kernel_size": 5, "padding": 2},  # 8 → 128, 5 × 5
        {"type": "flatten"},
        {"type": "linear", "out_features": 10},
    ],
}


def _compute_s(cal: dict, batch: int = 4) -> float:
    doc = {"model": CONVS, "data": {"samples": 64}, "training": {"batch_size": batch, "epochs": 1}}
    w = parse_workload({**doc, "training": {**doc["training"], "loop": "device_tensors"}})
    return size_candidate(w, CPU, 1, calibrated=efficiency_from_calibration(cal, "cpu")).step.compute_s


def test_convolutions_take_the_rate_measured_for_their_channels_and_kernel() -> None:
    b = 4
    first = 2 * 2 * 16 * 16 * 8 * 3 * 9 * b  # no input gradient: forward and weight gradient
    second = 3 * 2 * 16 * 16 * 128 * 8 * 25 * b
    linear = 3 * 2 * 128 * 16 * 16 * 10 * b
    # 8 in channels lie halfway (in log) between the measured 4 and 16; 128 out channels measured:
    # the geometric mean of 4e10 and 8e10 on the 5 × 5 points
    expected = first / 2.0e10 + second / math.sqrt(4.0e10 * 8.0e10) + linear / 8.0e10
    assert _compute_s(_conv_cal()) == pytest.approx(expected, rel=1e-9)
    # an older calibration without the grid: every convolution at the rate by weights (4e10)
    older = _compute_s(_conv_cal(conv_grid=None, conv_first_grid=None))
    assert older == pytest.approx((first + second) / 4.0e10 + linear / 8.0e10, rel=1e-9)
    # a grid with a point missing cannot be interpolated over: the rate by weights stands in
    gappy = _conv_cal(conv_grid=_conv_cal()["cpu_profile"]["conv_grid"][1:])
    assert _compute_s(gappy) == pytest.approx(first / 2.0e10 + second / 4.0e10 + linear / 8.0e10, rel=1e-9)


def test_a_grid_rate_is_held_at_the_edges_and_takes_the_nearest_kernel() -> None:
    from core.estimate.measured_curves import grid_rate

    grid = _conv_cal()["cpu_profile"]["conv_grid"]
    assert grid_rate(grid, 16, 128, 5) == pytest.approx(8.0e10)
    assert grid_rate(grid, 512, 1024, 5) == pytest.approx(8.0e10)  # beyond the grid: its corner
    assert grid_rate(grid, 1, 8, 5) == pytest.approx(1.0e10)
    assert grid_rate(grid, 8, 32, 7) == grid_rate(grid, 8, 32, 5)  # a 7 × 7 kernel: the 5 × 5 points
    assert grid_rate(grid, 8, 32, 2) == pytest.approx(3.0e10)  # 2 × 2: the 3 × 3 points


def test_a_tensor_of_exactly_32_mib_is_fresh_memory_and_costs_what_the_large_measurement_did() -> None:
    rates = efficiency_from_calibration(_large_tensor_cal(), "cpu")
    relu = {
        "input_shape": [8, 64, 64],
        "layers": [{"type": "relu"}, {"type": "flatten"}, {"type": "linear", "out_features": 10}],
    }

    def memory_s(batch: int, cal: dict) -> float:
        doc = {"model": relu, "data": {"samples": 4096}, "training": {"batch_size": batch, "epochs": 1}}
        w = parse_workload({**doc, "training": {**doc["training"], "loop": "device_tensors"}})
        return size_candidate(w, CPU, 1, calibrated=cal).step.memory_s

    flat = efficiency_from_calibration(_large_tensor_cal(elementwise_large_s=None), "cpu")
    # 256 samples × 32,768 elements × 4 bytes = 32 MiB: glibc maps it fresh every step (its chunk is
    # over the 32 MiB most the mmap threshold rises to), as the 64 MiB measurement was; not the
    # value between the cached and the fresh figure a log-log interpolation would give
    n = 256 * 32768
    assert memory_s(256, rates) - memory_s(256, flat) == pytest.approx(n * (2.0e-9 - 0.4e-9))
    # just under it (224 samples, 28 MiB): the interpolation stands
    assert memory_s(224, rates) - memory_s(224, flat) < 224 * 32768 * (2.0e-9 - 0.4e-9) * 0.75


def test_a_wide_input_into_a_narrow_output_costs_by_its_activation_bytes() -> None:
    rates = efficiency_from_calibration(_large_tensor_cal(linear_train=[[1.0, 1.0e12]]), "cpu")
    # a classifier after a flattened 32 × 48 × 48 image: 73,728 → 100 at batch 128
    model = {"input_shape": [73728], "layers": [{"type": "relu"}, {"type": "linear", "out_features": 100}]}
    doc = {"model": model, "data": {"samples": 4096}, "training": {"batch_size": 128, "epochs": 1}}
    w = parse_workload({**doc, "training": {**doc["training"], "loop": "device_tensors"}})
    c = size_candidate(w, CPU, 1, calibrated=rates)
    weights, inputs, outputs = 73728 * 100 * 4, 128 * 73728 * 4, 128 * 100 * 4
    # weights read twice and their gradient written; the input read twice and its gradient written;
    # the output written and its gradient read twice — at the per-byte cost measured for the largest
    # tensor's size (the 36 MiB input: near the 40 MiB point)
    per_byte = interpolate_rate([[2 * 2**20, 0.04e-9], [40 * 2**20, 0.12e-9]], inputs)
    assert c.step.compute_s == pytest.approx((3 * weights + 3 * inputs + 3 * outputs) * per_byte, rel=1e-9)
    assert c.step.compute_s > 3 * 3 * 2 * 128 * 73728 * 100 / 1.0e12  # its FLOPs alone: 5.7 ms


def _mlp_compute_s(cal: dict, batch: int, width: int = 512) -> float:
    model = {"input_shape": [width], "layers": [{"type": "linear", "out_features": width}, {"type": "relu"}]}
    model["layers"].append({"type": "linear", "out_features": 10})
    doc = {"model": model, "data": {"samples": 4096}, "training": {"batch_size": batch, "epochs": 1}}
    w = parse_workload({**doc, "training": {**doc["training"], "loop": "device_tensors"}})
    return size_candidate(w, CPU, 1, calibrated=efficiency_from_calibration(cal, "cpu")).step.compute_s


def test_linear_layers_take_the_rate_measured_for_their_rows_and_width() -> None:
    # measured here 2026-11-25: a 16-row product ran at 56–106 GFLOP/s, a 1,024-row one at 169–290;
    # the rate by one call's FLOPs alone gave a 16 × 512 × 512 layer a square layer's rate
    grid = [[16, 128, 1, 5e10], [16, 512, 1, 8e10], [256, 128, 1, 1.3e11], [256, 512, 1, 2.4e11]]
    cal = _large_tensor_cal(linear_grid=grid, weight_stream=None)
    older = _large_tensor_cal(weight_stream=None)  # no grid: every linear layer at 8e10
    b = 16
    first = 2 * 2 * b * 512 * 512  # 512 → 512 on the network's input (no input gradient): (16, 512)
    head = 3 * 2 * b * 512 * 10  # 512 → 10: width √(512 × 10) ≈ 72, below the grid's 128: held there
    assert _mlp_compute_s(cal, b) == pytest.approx(first / 8e10 + head / 5e10, rel=1e-9)
    assert _mlp_compute_s(older, b) == pytest.approx((first + head) / 8e10, rel=1e-9)
    # 64 rows lie halfway (in log) between 16 and 256: the geometric mean of 8e10 and 2.4e11
    mid = 2 * 2 * 64 * 512 * 512 / math.sqrt(8e10 * 2.4e11) + 3 * 2 * 64 * 512 * 10 / math.sqrt(5e10 * 1.3e11)
    assert _mlp_compute_s(cal, 64) == pytest.approx(mid, rel=1e-9)


def test_an_impossible_point_of_the_linear_grid_is_refused() -> None:
    from core.estimate.rate_limits import drop_refused, impossible_rates
    from tests.unit.test_rate_limits import CATALOGUE, CPU_PEAK

    grid = [[16, 128, 1, 5e10], [16, 512, 1, 4e18], [256, 128, 1, 1.3e11], [256, 512, 1, 2.4e11]]
    result = {"cpu_profile": {"linear_grid": grid}}
    found = impossible_rates(result, CPU_PEAK, CATALOGUE)
    assert [r.path for r in found] == [("cpu_profile", "linear_grid", 1)]
    assert "linear grid FLOP at 16 rows × 512 × 512" in found[0].message
    kept = efficiency_from_calibration(drop_refused(result, found), "cpu")
    assert len(kept["linear_grid"]) == 3  # an incomplete grid: the rate by FLOPs prices the layers
