"""Calibration: measured rates replace the default efficiencies for "this machine"."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from core.errors import WorkloadError
from core.estimate.calibration import efficiency_from_calibration
from core.estimate.gemm import GEMM_FIXED_S
from core.estimate.gpu_kernels import GEMM_EFFICIENCY, KERNEL_FLOOR_S, TF32_GEMM_EFFICIENCY
from core.estimate.gpu_memory import BIAS_REDUCE_FLOOR_S, BIAS_ROW_BYTES, BIAS_ROW_EXPONENT
from core.estimate.measured_curves import interpolate_rate
from core.estimate.op_work import ELEMENT_ACCESSES
from core.estimate.sizing import size_candidate
from core.hardware.catalogue import device_from_entry, find_device, load_catalogue
from core.network.model import ELEMENTWISE_KINDS
from core.spec.workload import parse_workload
from telemetry.candidates import calibrated_rates
from telemetry.machine import GpuSummary, probe_machine, this_machine_device

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
    first = w.analysis.rows[0].flops  # the first layer computes no input gradient: 2 passes, not 3
    flops = (3 * w.analysis.forward_flops - first) * 512
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
    conv1 = w.analysis.rows[0].flops  # on the input image: no input gradient
    b, speed = w.training.batch_size, 3.0  # bf16 matmuls measured 3× as fast as fp32
    assert c.step.compute_s == pytest.approx(b * (3 * lin / (8.0e10 * speed) + (3 * conv - conv1) / (4.0e10 * speed)))


def test_storage_read_drops_the_cache_and_cleans_up(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from telemetry import calibrate

    events: list[tuple] = []
    real_fadvise = os.posix_fadvise

    def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
        target = Path(os.readlink(f"/proc/self/fd/{fd}"))
        events.append(("fadvise", target.name, target.stat().st_size, offset, length, advice))
        real_fadvise(fd, offset, length, advice)

    clock = iter([100.0, 100.25])  # the read is timed from 100 s to 100.25 s

    def perf_counter() -> float:
        events.append(("clock",))
        return next(clock)

    monkeypatch.setattr(calibrate.os, "posix_fadvise", fadvise)
    monkeypatch.setattr(calibrate.time, "perf_counter", perf_counter)
    size = 8 * 2**20
    r = calibrate.measure_read(tmp_path, size=size)
    # the whole test file (8 MiB, written and fsynced) is dropped from the page cache before the
    # timed read starts: offset 0, length 0 = to the end of the file, POSIX_FADV_DONTNEED
    (_, name, written, offset, length, advice), *timed = events
    assert name.startswith("trainrig-read-") and written == size
    assert (offset, length, advice) == (0, 0, os.POSIX_FADV_DONTNEED)
    assert timed == [("clock",), ("clock",)]
    assert r["read_bps"] == size / 0.25  # 32 MiB/s: the bytes read over the timed interval
    assert r["note"] == "page cache dropped for the test file"
    assert list(tmp_path.iterdir()) == []


def test_storage_read_says_when_the_cache_could_not_be_dropped(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from telemetry import calibrate

    def refuse(*_args: object) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(calibrate.os, "posix_fadvise", refuse)
    r = calibrate.measure_read(tmp_path, size=4 * 2**20)
    assert r["note"] == "read may come from the page cache" and r["read_bps"] > 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="CI installs torch==2.13.0")
def test_calibrate_command_is_used_by_size(cli, write_json, seed_doc) -> None:
    code, out, err = cli("calibrate", "--json")
    assert code == 0, err
    cal = json.loads(out)
    assert cal["cpu_linear_train_flops"] > 1e8 and cal["step_overhead"]["per_op_s"] >= 0
    code, out, _ = cli("size", str(write_json(seed_doc)), "--json", "--no-save")
    (cand,) = json.loads(out)["candidates"]
    assert "(calibrated)" in cand["assumptions"][0]
    # the step `size` printed is the one the stored measurements give, not the datasheet default's
    w = parse_workload(seed_doc)
    here = this_machine_device(probe_machine(), load_catalogue())
    measured = size_candidate(w, here, 1, calibrated=efficiency_from_calibration(cal, "cpu")).step
    assert cand["step"]["compute_s"] == pytest.approx(measured.compute_s, rel=1e-9)
    assert cand["step"]["overhead_s"] == pytest.approx(measured.overhead_s, rel=1e-9)
    assert cand["step"]["compute_s"] != pytest.approx(size_candidate(w, here, 1).step.compute_s, rel=1e-3)


SMALL_CNN = {
    "input_shape": [1, 8, 8],
    "layers": [
        {"type": "conv2d", "out_channels": 4, "kernel_size": 3, "padding": 1},
        {"type": "relu"},
        {"type": "maxpool2d", "kernel_size": 2},
        {"type": "flatten"},
        {"type": "dropout", "p": 0.5},
        {"type": "linear", "out_features": 10},
    ],
}
PROFILE = {
    **CAL,
    "cpu_profile": {
        "linear_train": [[1e6, 2e10], [1e9, 1e11]],
        "conv_train": [[100, 1e10], [10_000, 1e11]],
        "conv_first_train": [[10, 5e9], [1000, 5e11]],
        "conv_call_s": 1e-4,
        "elementwise_s": {"relu": 1e-9, "maxpool": 4e-9, "dropout": 6e-9, "softmax": 2e-9},
        "optimizer_s": {"adam": 1e-9},
    },
}


# a calibration that measured each optimizer's fixed cost per parameter tensor and its cost per
# element by tensor size (a calibration from an older version has one figure: PROFILE)
PROFILE_PER_TENSOR = {
    **PROFILE,
    "cpu_profile": {
        **PROFILE["cpu_profile"],
        "optimizer_s": {"adam": [[100, 4e-9], [10_000, 1e-9]], "sgd": [[100, 1e-9], [10_000, 1e-10]]},
        "optimizer_tensor_s": {"adam": 2e-5, "sgd": 2e-6},
    },
}


def test_rates_are_interpolated_by_size_in_log_log() -> None:
    curve = [[1e6, 2e10], [1e9, 1e11]]
    assert interpolate_rate(curve, 1e3) == 2e10 and interpolate_rate(curve, 1e12) == 1e11  # held at the ends
    assert interpolate_rate(curve, 10**7.5) == pytest.approx((2e10 * 1e11) ** 0.5)  # halfway: geometric mean


def test_a_cpu_step_is_the_sum_of_its_layers_elementwise_work_optimizer_and_overhead() -> None:
    w = parse_workload(
        {
            "model": SMALL_CNN,
            "data": {"samples": 10_000},
            "training": {"batch_size": 32, "epochs": 1, "optimizer": "adam"},
        }
    )
    rates = efficiency_from_calibration(PROFILE, "cpu")
    s = size_candidate(w, CPU, 1, calibrated=rates).step
    b, params = 32, w.analysis.parameters
    # the convolution on the input image: 2 passes (no input gradient) at the first-layer rate for
    # its 36 weights (log-log between 10 and 1,000 weights: 5e9 × 3.6) plus the fixed cost of a
    # convolution call; the linear layer's call of 32 × 1,280 FLOPs is below the smallest measured
    conv = 2 * b * 2 * 36 * 64 / (5e9 * 3.6) + 1e-4
    assert s.compute_s == pytest.approx(conv + 3 * b * 2 * 256 // 4 * 10 / 2e10)
    # ReLU on 256 outputs, max pooling per input element (256), dropout on 64, the loss on 10 logits
    memory = b * (256 * 1e-9 + 256 * 4e-9 + 64 * 6e-9 + 10 * 2e-9) + params * 1e-9
    assert s.memory_s == pytest.approx(memory)
    n_ops = len(w.analysis.graph.ops)
    # framework calls as PyTorch issues them: dropout is four calls on a CPU (core/estimate/host.py)
    calls = n_ops + 3
    assert s.overhead_s == pytest.approx(2e-4 + 1e-5 * (3 * calls + 2 * n_ops))
    # the DataLoader over in-memory data in the main process (the default loop): 63 µs per batch and
    # 5.1 µs per sample plus its 264 bytes stacked at 10 GB/s, and loss.item()'s 30 µs
    loader = 63e-6 + b * (5.1e-6 + (64 * 4 + 8) / 10e9)
    assert s.loader_s == pytest.approx(loader)
    assert s.host_s == pytest.approx(s.overhead_s + loader + 30e-6)
    assert s.step_s == pytest.approx(s.compute_s + s.memory_s + s.host_s)  # a CPU runs them in turn
    assert s.bound == "framework overhead"


def test_a_measured_optimizer_pays_its_fixed_cost_per_parameter_tensor() -> None:
    doc = {"model": SMALL_CNN, "data": {"samples": 10_000}, "training": {"batch_size": 32, "epochs": 1}}
    rates = efficiency_from_calibration(PROFILE_PER_TENSOR, "cpu")
    n_ops = len(parse_workload(doc).analysis.graph.ops)
    calls = n_ops + 3  # dropout is four framework calls on a CPU (core/estimate/host.py)
    for optimizer, per_tensor in (("adam", 2e-5), ("sgd", 2e-6)):
        w = parse_workload({**doc, "training": {**doc["training"], "optimizer": optimizer}})
        s = size_candidate(w, CPU, 1, calibrated=rates).step
        # framework calls of forward and backward per op, then the optimizer's ops on 4 tensors:
        # the convolution's and the linear layer's weights and biases
        assert s.overhead_s == pytest.approx(2e-4 + 1e-5 * 3 * calls + per_tensor * 4)
    # an optimizer the calibration did not measure keeps the default: framework calls per op
    w = parse_workload({**doc, "training": {**doc["training"], "optimizer": "rmsprop"}})
    s = size_candidate(w, CPU, 1, calibrated=rates).step
    assert s.overhead_s == pytest.approx(2e-4 + 1e-5 * (3 * calls + 2 * n_ops))
    # Adam's cost per element by tensor size: the 36 convolution weights and the 4 and 10 biases
    # at the small-tensor cost (held below 100 elements), the 640 linear weights in between (log-log)
    w = parse_workload({**doc, "training": {**doc["training"], "optimizer": "adam"}})
    c = size_candidate(w, CPU, 1, calibrated=rates).step
    elementwise = c.memory_s - 32 * (256 * 1e-9 + 256 * 4e-9 + 64 * 6e-9 + 10 * 2e-9)
    adam_at_640 = 4e-9 * (1e-9 / 4e-9) ** (math.log10(640 / 100) / 2)  # 2.2e-9
    assert elementwise == pytest.approx((36 + 4 + 10) * 4e-9 + 640 * adam_at_640)


def test_a_measurement_of_zero_is_dropped_not_a_math_error() -> None:
    # on a busy machine the timer read 0 s for Adam on a tiny tensor: before, every later sizing of
    # this machine stopped with "math domain error" (the log-log interpolation of 0)
    busy = {
        **PROFILE,
        "cpu_profile": {
            **PROFILE["cpu_profile"],
            "optimizer_s": {"adam": [[100, 0.0], [1_000, 4e-9], [10_000, 1e-9]], "sgd": [[100, 0.0]]},
            "linear_train": [[1e6, 0.0], [1e9, 1e11]],
        },
    }
    rates = efficiency_from_calibration(busy, "cpu")
    assert rates["optimizer_s"] == {"adam": [[1_000.0, 4e-9], [10_000.0, 1e-9]]}  # sgd: nothing usable
    assert rates["linear_train"] == [[1e9, 1e11]]
    training = {"batch_size": 32, "epochs": 1, "optimizer": "adam"}
    doc = {"model": SMALL_CNN, "data": {"samples": 10_000}, "training": training}
    step = size_candidate(parse_workload(doc), CPU, 1, calibrated=rates).step
    assert step.step_s > 0 and math.isfinite(step.step_s)


def test_an_accelerator_overlaps_the_framework_with_its_kernels_and_moves_elementwise_data_at_its_bandwidth() -> None:
    gpu = device_from_entry(
        {
            "name": "test GPU",
            "kind": "gpu",
            "fp32_tflops": 10,
            "memory_gb": 16,
            "memory_bandwidth_gbs": 500,
            "source": "t",
        }
    )
    w = parse_workload(
        {
            "model": SMALL_CNN,
            "data": {"samples": 10_000},
            "training": {"batch_size": 4096, "epochs": 1, "optimizer": "sgd"},
        }
    )
    s = size_candidate(w, gpu, 1).step
    per_access = 4 / (500e9 * 0.8)  # fp32 at 80 % of the datasheet bandwidth
    elems = 5 * 256 + 4 * 256 + 4.5 * 64  # element accesses of ReLU, pooling, dropout
    # the loss over 4096 × 10 logits: its four kernels are too small to fill the GPU and take their
    # floor (core/estimate/gpu_kernels.py); SGD reads and writes 3 fp32 words per parameter
    loss = 4 * KERNEL_FLOOR_S
    # each bias's gradient: a reduction reading the output gradient (the convolution's 4 × 8 × 8 outputs at
    # the bandwidth; the linear layer's 10 a row, a column reduction: gpu_memory.bias_reduce_s's floor and
    # its 40-byte rows at (40 / 8000)^0.6 of the bandwidth)
    linear = BIAS_REDUCE_FLOOR_S + 4096 * 10 * per_access / (40 / BIAS_ROW_BYTES) ** BIAS_ROW_EXPONENT
    biases = max(4096 * 256 * per_access, KERNEL_FLOOR_S) + linear
    assert s.memory_s == pytest.approx(
        4096 * elems * per_access + loss + biases + 3 * w.analysis.parameters * per_access
    )
    first = w.analysis.rows[0].flops  # the convolution on the input: forward and weight gradient only
    # the GPU kernel model's GEMMs: never faster than the FLOPs at the datasheet peak
    assert s.compute_s > 4096 * (3 * w.analysis.forward_flops - first) / 10e12
    # the host runs ahead until loss.item() each step; then the device waits while the host loads
    # and copies the next batch (core/estimate/host.py combine), and for the host's dispatch where
    # the host is the slower side (turns_s, host.device_wait)
    assert s.step_s == pytest.approx(max(s.host_s, s.compute_s + s.memory_s + s.loader_s) + s.turns_s)
    assert 0 < s.turns_s < 0.1 * s.step_s
    assert s.loader_s > 0


def test_gpu_rates_are_stored_but_not_applied_and_old_calibrations_still_apply() -> None:
    assert efficiency_from_calibration({**PROFILE, "gpus": [{"profile": PROFILE["cpu_profile"]}]}, "gpu") == {}
    old = efficiency_from_calibration(CAL, "cpu")  # saved by TrainRig before rates were measured by size
    assert old["linear_train"] == [[1.0, 8.0e10]] and "elementwise_s" not in old


def test_a_calibration_corrects_the_efficiency_of_this_machines_device_classes() -> None:
    catalogue = load_catalogue()
    machine = replace(
        probe_machine(),
        cpu_model="Intel(R) Xeon(R) CPU E5-2683 v3 @ 2.00GHz",
        gpus=(GpuSummary("NVIDIA H100 80GB HBM3", 80 * 10**9, "GPU-1"),),
    )
    cal = {
        **PROFILE,
        "gpus": [
            {
                "name": "NVIDIA H100 80GB HBM3",
                "fp32_matmul_flops": 50e12,
                "tf32_matmul_flops": 380e12,
                "bf16_matmul_flops": 700e12,
                "profile": {"linear_train": [[1e9, 20e12], [1e12, 40e12]]},
            }
        ],
    }
    sxm, pcie, xeon = (find_device(n, catalogue) for n in ("H100 SXM", "H100 PCIe", "Xeon E5-2683 v3"))
    here = this_machine_device(machine, catalogue)
    rates = calibrated_rates([sxm, pcie, xeon, here], cal, machine, catalogue)
    assert pcie.name not in rates  # another class: datasheet defaults
    assert rates[sxm.name]["fp32"] == pytest.approx(40e12 / sxm.fp32_flops)  # largest layer's rate / peak
    assert rates[sxm.name]["tensor"] == pytest.approx(700e12 / sxm.half_flops * 40 / 50)
    assert rates[here.name] == rates[sxm.name]  # this machine's H100 is of that class
    cpu_peak = this_machine_device(replace(machine, gpus=()), catalogue).fp32_flops
    assert rates[xeon.name]["fp32"] == pytest.approx(min(1e11 / cpu_peak, 1.0))
    # large fp32 layers, whose GEMMs are compute-bound: the GPU kernel model runs them at the measured
    # efficiency instead of its default for CUDA cores
    wide = {"input_shape": [4096], "layers": [{"type": "linear", "out_features": 4096}] * 3}
    w = parse_workload(
        {"model": wide, "data": {"samples": 81920}, "training": {"batch_size": 8192, "epochs": 1, "precision": "fp32"}}
    )
    c = size_candidate(w, sxm, 1, calibrated=rates[sxm.name])
    default = size_candidate(w, sxm, 1)
    # (eight matrix products: three per layer, the first without an input gradient, each its fixed time)
    fixed = 8 * GEMM_FIXED_S
    assert c.step.compute_s - fixed == pytest.approx(
        (default.step.compute_s - fixed) * GEMM_EFFICIENCY["cuda"] / (40e12 / sxm.fp32_flops)
    )
    assert "measured on this machine's NVIDIA H100 SXM" in c.assumptions[0]
    # TF32: its own measured share of its peak replaces the estimate (0.7 of the tensor cores' share)
    assert rates[sxm.name]["tf32"] == pytest.approx(380e12 / sxm.tf32_flops * 40 / 50)
    w32 = parse_workload(
        {"model": wide, "data": {"samples": 81920}, "training": {"batch_size": 8192, "epochs": 1, "precision": "tf32"}}
    )
    c32 = size_candidate(w32, sxm, 1, calibrated=rates[sxm.name])
    estimated = GEMM_EFFICIENCY["tensor"] * TF32_GEMM_EFFICIENCY
    assert c32.step.compute_s - fixed == pytest.approx(
        (size_candidate(w32, sxm, 1).step.compute_s - fixed) * estimated / rates[sxm.name]["tf32"]
    )


def test_a_geforce_ada_cards_tf32_is_measured_though_its_peak_equals_fp32s() -> None:
    # the RTX 4090's datasheet TF32 tensor peak is its FP32 one (82.6 TFLOPS); TF32 still runs on its
    # tensor cores, so calibrate's TF32 matmul sets its TF32 efficiency
    catalogue = load_catalogue()
    machine = replace(probe_machine(), gpus=(GpuSummary("NVIDIA GeForce RTX 4090", 24 * 10**9, "GPU-1"),))
    cal = {
        **PROFILE,
        "gpus": [
            {
                "name": "NVIDIA GeForce RTX 4090",
                "fp32_matmul_flops": 54e12,
                "tf32_matmul_flops": 85e12,
                "bf16_matmul_flops": 165e12,
                "profile": {"linear_train": [[1e12, 45e12]]},
            }
        ],
    }
    rtx = find_device("RTX 4090", catalogue)
    assert rtx.tf32_flops == rtx.fp32_flops
    rates = calibrated_rates([rtx], cal, machine, catalogue)
    assert rates[rtx.name]["tf32"] == pytest.approx(85e12 / rtx.tf32_flops * 45 / 54)


def test_a_hand_edited_trace_is_checked_with_its_path() -> None:
    model = {
        "input_shape": [4],
        "summary": {"parameters": 10, "activation_bytes_per_sample": 16},
        "trace": {"ops": [{"kind": "warp_drive", "elements": 3}]},
    }
    with pytest.raises(WorkloadError) as err:
        parse_workload({"model": model, "data": {"samples": 10}, "training": {"batch_size": 2, "epochs": 1}})
    assert err.value.path == "model.trace.ops[0].kind"
    model["trace"] = {"ops": [{"kind": "linear", "flops": -1}]}
    with pytest.raises(WorkloadError, match="flops"):
        parse_workload({"model": model, "data": {"samples": 10}, "training": {"batch_size": 2, "epochs": 1}})
    model["trace"] = {"ops": [], "param_sizes": [8, "two"]}
    with pytest.raises(WorkloadError) as err:
        parse_workload({"model": model, "data": {"samples": 10}, "training": {"batch_size": 2, "epochs": 1}})
    assert err.value.path == "model.trace.param_sizes[1]"


def test_every_kernel_kind_a_trace_may_name_has_a_cost() -> None:
    assert set(ELEMENTWISE_KINDS) == set(ELEMENT_ACCESSES)


def test_a_measured_rate_above_the_estimated_peak_is_explained() -> None:
    w = parse_workload({"model": {"preset": "seed-mlp"}})
    fast = efficiency_from_calibration({**CAL, "cpu_linear_train_flops": 3.0e11}, "cpu")  # peak is 2e11
    c = size_candidate(w, CPU, 1, calibrated=fast)
    # 3 × forward FLOPs over the time of 3 passes (2 on the first layer) at 1.5 × the peak: the
    # seed MLP's forward pass is 2·(75·512 + 2·512² + 512·10) = 1,135,616 FLOP per sample, its
    # first layer 2·75·512 = 76,800, so 1.5 × 3,406,848 / 3,330,048 = 153.46 %
    assert c.step.efficiency == pytest.approx(1.5 * 3_406_848 / 3_330_048, rel=1e-9)
    assert "efficiency 153% of the fp32 peak" in c.assumptions[0]
    assert f"efficiency {c.step.efficiency:.0%} of the fp32 peak" in c.assumptions[0]
    assert "measured above the estimated peak (cores × clock × FLOP per cycle)" in c.assumptions[0]
    assert "above the estimated peak" not in size_candidate(w, CPU, 1).assumptions[0]


def test_the_calibration_message_says_exactly_what_later_sizings_use() -> None:
    from core.estimate.calibration import what_calibration_applies

    result = {
        "cpu_profile": {"linear_train": [[1e6, 2e10], [1e9, 1e11]]},
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "profile": {"linear_train": [[1e9, 20e12], [1e12, 40e12]]}}],
    }
    text = what_calibration_applies(result)
    assert "this machine's CPU: every measured rate" in text
    assert "NVIDIA H100 80GB HBM3: only the measured efficiency" in text
    assert "its per-op GPU rates are stored, not applied" in text
    assert "Sizings of this machine use them" not in text  # the old claim, untrue for a GPU
