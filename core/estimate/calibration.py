"""What a calibration of this machine changes in the estimates: the measured rates and costs the
timing model takes for this machine's CPU, and the efficiency of this machine's device classes
(the fraction of the datasheet peak a large layer's training step reached here)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from core.estimate.host_probe import SPEED_KEY, gpu_host_speed
from core.hardware.catalogue import DeviceSpec, match_detected_gpu

# A run's measured step over its prediction, kept within these bounds: beyond them the run measured
# something else (a machine busy with other work, a different workload) rather than this model's error.
RUN_SCALE_BOUNDS = (0.2, 5.0)
RUNS_USED = 5  # the latest finished runs whose scale is taken (their median)


def run_feedback(runs: Sequence[Mapping[str, Any]], model_key: str) -> dict[str, Any] | None:
    """What this machine's finished local training runs of the network ``model_key`` on its CPU
    imply for its next sizings: the median of measured / predicted step time over the latest
    RUNS_USED such runs, each prediction taken back to what it was before an earlier run's
    correction. None when no run qualifies. Runs of other networks are not used: one network's
    error says little about another's (docs/accuracy.md)."""
    ratios = []
    for run in runs:
        pred, meas = run.get("prediction") or {}, run.get("measured") or {}
        if run.get("status") != "finished" or run.get("kind") != "trained" or run.get("device") != "cpu":
            continue
        if pred.get("model_key") != model_key:
            continue
        step, measured = pred.get("step_s"), meas.get("median_step_s")
        if not step or not measured:
            continue
        uncorrected = float(step) / float(pred.get("run_scale", 1.0))
        low, high = RUN_SCALE_BOUNDS
        ratios.append(min(max(float(measured) / uncorrected, low), high))
        if len(ratios) == RUNS_USED:
            break
    if not ratios:
        return None
    ratios.sort()
    mid = len(ratios) // 2
    scale = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
    return {"run_scale": scale, "runs": len(ratios)}


def calibrated_rates(
    devices: Sequence[DeviceSpec],
    calibration: Mapping[str, Any] | None,
    catalogue: Sequence[DeviceSpec],
    this_cpu: DeviceSpec | None = None,
    gpu_memory: Sequence[int | None] = (),
    feedback: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Measured figures per candidate, from this machine's latest calibration.

    The "this machine" CPU candidate takes every measured rate. A catalogue device of the same model
    as this machine's CPU or GPU (and this machine's GPU itself) takes the measured efficiency.
    ``this_cpu`` is this machine's CPU as a device (its peak and the catalogue model it matched);
    ``gpu_memory`` the memory NVML reports for each of its GPUs, in calibration order; ``feedback``
    what its local runs measured (run_feedback), applied to this machine's CPU.
    """
    out = _calibrated(devices, calibration, catalogue, this_cpu, gpu_memory)
    host = host_figures(calibration)
    if host:  # this machine's CPU hosts its own devices: its measured host costs replace the reference's
        for d in devices:
            if d.is_this_machine:
                out[d.name] = {**out.get(d.name, {}), "host": host}
    if feedback:
        for d in devices:
            if d.is_this_machine and d.kind == "cpu":
                out[d.name] = {**out.get(d.name, {}), **feedback}
    return out


def _calibrated(
    devices: Sequence[DeviceSpec],
    calibration: Mapping[str, Any] | None,
    catalogue: Sequence[DeviceSpec],
    this_cpu: DeviceSpec | None,
    gpu_memory: Sequence[int | None],
) -> dict[str, dict[str, Any]]:
    if not calibration:
        return {}
    cal = dict(calibration)
    classes = class_efficiencies(cal, this_cpu, gpu_memory, catalogue)
    out: dict[str, dict[str, Any]] = {}
    for d in devices:
        if d.is_this_machine and d.kind == "cpu":
            out[d.name] = efficiency_from_calibration(cal, "cpu")
        elif d.origin == "catalogue" and d.name in classes:
            out[d.name] = classes[d.name]
        elif d.is_this_machine and d.catalogue_match in classes:
            out[d.name] = classes[str(d.catalogue_match)]
    return out


def class_efficiencies(
    cal: Mapping[str, Any],
    this_cpu: DeviceSpec | None,
    gpu_memory: Sequence[int | None],
    catalogue: Sequence[DeviceSpec],
) -> dict[str, dict[str, Any]]:
    """Efficiency of each catalogue device class this machine has, from its calibration: the rate
    of the largest measured linear layer's training step over the class's datasheet peak (and, for
    a GPU, the bf16 and TF32 matmul rates over their tensor peaks at the same train/matmul ratio)."""
    out: dict[str, dict[str, Any]] = {}
    prof = cal.get("cpu_profile") or {}
    if this_cpu is not None and this_cpu.catalogue_match and this_cpu.fp32_flops and prof.get("linear_train"):
        rate = max(r for _, r in prof["linear_train"])
        out[this_cpu.catalogue_match] = {
            "fp32": min(rate / this_cpu.fp32_flops, 1.0),
            "note": f"measured on this machine's {this_cpu.catalogue_match}",
        }
    for i, g in enumerate(cal.get("gpus") or []):
        curve = (g.get("profile") or {}).get("linear_train")
        memory = gpu_memory[i] if i < len(gpu_memory) else None
        gpu = match_detected_gpu(str(g.get("name", "")), memory, catalogue)
        if gpu is None or not curve:
            continue
        rate = max(r for _, r in curve)
        note = f"measured on this machine's {gpu.name}"
        eff: dict[str, Any] = {"fp32": min(rate / gpu.fp32_flops, 1.0), "note": note}
        fp32_mm, half_mm = g.get("fp32_matmul_flops"), g.get("bf16_matmul_flops")
        if fp32_mm and half_mm and gpu.half_flops:
            eff["tensor"] = min(half_mm / gpu.half_flops * rate / fp32_mm, 1.0)
        tf32_mm = g.get("tf32_matmul_flops")
        if fp32_mm and tf32_mm and gpu.tf32_flops:
            # TF32's own share of its peak, measured: replaces the estimate TF32_GEMM_EFFICIENCY
            eff["tf32"] = min(tf32_mm / gpu.tf32_flops * rate / fp32_mm, 1.0)
        out[gpu.name] = eff
    return out


def efficiency_from_calibration(cal: Mapping[str, Any], device_kind: str) -> dict[str, Any]:
    """The figures the timing model takes from a calibration of this machine: layer rates by size,
    elementwise and optimizer costs, framework overhead. A calibration from an older version has
    one rate per kind of layer; it is used as a rate for every size."""
    out: dict[str, Any] = {}
    if device_kind != "cpu":
        # GPU rates are measured and stored, but not yet checked against measured GPU training steps
        # with this per-op model, so GPUs keep the datasheet peak and bandwidth with the default
        # efficiencies (docs/accuracy.md).
        return out
    prof = cal.get("cpu_profile") or {}
    lin, conv = cal.get("cpu_linear_train_flops"), cal.get("cpu_conv_train_flops")
    if _curve(prof.get("linear_train")):
        out["linear_train"] = _curve(prof["linear_train"])
    elif _curve([[1.0, lin]] if lin else None):
        out["linear_train"] = [[1.0, float(lin)]]
    if _curve(prof.get("conv_train")):
        out["conv_train"] = _curve(prof["conv_train"])
    elif _curve([[1.0, conv]] if conv else None):
        out["conv_train"] = [[1.0, float(conv)]]
    if _curve(prof.get("conv_first_train")):
        out["conv_first_train"] = _curve(prof["conv_first_train"])
    if prof.get("conv_call_s") is not None:
        out["conv_call_s"] = float(prof["conv_call_s"])
    for key in ("conv_grid", "conv_first_grid", "linear_grid"):  # by the shape of the matrix product
        if grid := _grid(prof.get(key)):
            out[key] = grid
    for key in ("elementwise_s", "optimizer_tensor_s"):
        if prof.get(key):
            out[key] = {k: float(v) for k, v in prof[key].items()}
    small_n, large_n = prof.get("elementwise_elements"), prof.get("elementwise_large_elements")
    if prof.get("elementwise_s") and prof.get("elementwise_large_s") and small_n and large_n:
        # by tensor size: a cached activation against one past the caches and the allocator's reuse
        out["elementwise_curves"] = {
            k: [[float(small_n), float(v)], [float(large_n), float(prof["elementwise_large_s"][k])]]
            for k, v in prof["elementwise_s"].items()
            if k in prof["elementwise_large_s"] and v > 0 and prof["elementwise_large_s"][k] > 0
        }
    if cal.get("threads"):  # the threads the measurements ran on (PyTorch's intra-op threads)
        out["threads"] = int(cal["threads"])
    if prof.get("first_touch_s_per_byte") is not None:
        out["first_touch_s_per_byte"] = float(prof["first_touch_s_per_byte"])
    if _curve(prof.get("weight_stream")):
        out["weight_stream"] = _curve(prof["weight_stream"])
    if prof.get("optimizer_s"):  # by tensor size; a calibration from an older version has one figure
        curves = {k: _curve(v if isinstance(v, list) else [[1.0, v]]) for k, v in prof["optimizer_s"].items()}
        out["optimizer_s"] = {k: v for k, v in curves.items() if v}
    half, fp32 = cal.get("cpu_bf16_matmul_flops"), cal.get("cpu_fp32_matmul_flops")
    if half and fp32:
        out["half_speedup"] = float(half) / float(fp32)
    overhead = cal.get("step_overhead") or {}
    if "per_op_s" in overhead:
        out["per_op_s"] = float(overhead["per_op_s"])
        out["per_step_s"] = float(overhead["per_step_s"])
    return out


HOST_KEYS = ("per_call_s", "loader_batch_s", "loader_sample_s", "handoff_batch_s", "sync_s", "log_line_s")
# A host cost beyond this is not a measurement of this machine's idle speed (a swapping or suspended
# machine): one framework call, a DataLoader's batch or a sample taking over 10 ms.
HOST_COST_LIMIT_S = 0.01


def host_figures(calibration: Mapping[str, Any] | None) -> dict[str, float]:
    """The host costs a calibration measured on this machine's CPU (resources/workers/
    host_bench.py), each finite, not negative and below HOST_COST_LIMIT_S; a figure outside that is
    dropped (the reference's, scaled by the measured speed, stands in), not used."""
    measured = (calibration or {}).get("host") or {}
    out: dict[str, float] = {}
    for key in HOST_KEYS:
        try:
            value = float(measured[key])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(value) and 0 <= value < HOST_COST_LIMIT_S and (key != "per_call_s" or value > 0):
            out[key] = value
    if speed := gpu_host_speed(measured):  # this machine's GPU host, from calibrate's host probe
        out[SPEED_KEY] = speed
    return out


def _curve(points: Any) -> list[list[float]]:
    """Measured (size, value) points that can be interpolated in log-log: both finite and above
    zero. A timer that read 0 s for a tiny tensor on a busy machine, or a rate of 0, is dropped
    (it would make the interpolation's logarithm undefined), not used."""
    out = []
    for point in points or ():
        try:
            size, value = float(point[0]), float(point[1])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(size) and math.isfinite(value) and size > 0 and value > 0:
            out.append([size, value])
    return out


def _grid(points: Any) -> list[list[float]]:
    """Measured [in channels, out channels, kernel side, FLOP/s] points of a convolution grid (a linear
    layer's: [rows, width, 1, FLOP/s]): each
    finite and above zero (others dropped, as _curve does; an incomplete grid then falls back to the
    rate by weights)."""
    out = []
    for point in points or ():
        try:
            values = [float(point[i]) for i in range(4)]
        except (TypeError, ValueError, IndexError):
            continue
        if all(math.isfinite(v) and v > 0 for v in values):
            out.append(values)
    return out


def what_calibration_applies(result: Mapping[str, Any]) -> str:
    """What later sizings take from a calibration, in words for the CLI and the Inventory tab:
    a CPU's every measured rate (this machine) and efficiency (its catalogue model); a GPU's
    efficiency only (class_efficiencies) — its per-op rates are kept in the
    database but the GPU timing model does not use them (see efficiency_from_calibration)."""
    parts = []
    if result.get("cpu_profile") or result.get("cpu_linear_train_flops"):
        parts.append(
            "this machine's CPU: every measured rate (layers by size, elementwise layers, optimizer, framework "
            "overhead); its catalogue model: the measured efficiency"
        )
    if host_figures(result):
        parts.append(
            "this machine as a host: its measured cost per framework call, DataLoader (per batch, per sample, "
            "hand-off from workers) and synchronisation, for every device it holds"
        )
    if speed := gpu_host_speed(result.get("host")):
        parts.append(
            f"its GPU's host: the host probe's step measured {speed:.2f}× the reference host's speed, which scales "
            "the dispatch of every step sized on this machine's GPU"
        )
    for g in result.get("gpus") or []:
        parts.append(
            f"{g.get('name', 'GPU')}: only the measured efficiency (fp32, tensor and TF32, largest layer's rate "
            "over the datasheet peak), for this machine's GPU and its catalogue model; its per-op GPU rates are "
            "stored, not applied"
        )
    return "Later sizings use: " + "; ".join(parts) + "." if parts else "Nothing measured is applied."


CALIBRATIONS_USED = 3  # the latest calibrations of a machine whose figures are combined (their median)
SPREAD_KEYS = {
    "linear layers (GFLOP/s)": ("cpu_linear_train_flops", 1e-9),
    "convolutions (GFLOP/s)": ("cpu_conv_train_flops", 1e-9),
    "cost per framework call (µs)": ("step_overhead.per_op_s", 1e6),
}


# How far the CPU's speed may move between the start and the end of a calibration (the same
# 1,024 × 1,024 matrix product timed first and last) before the result is said to be unsteady. Three
# back-to-back calibrations of an idle two-core VM moved 3–10 % figure by figure; one taken during a
# busy spell measured the framework's calls 35 % slower (docs/accuracy.md).
STEADY_TOLERANCE = 0.15


def unsteady_note(result: Mapping[str, Any]) -> str | None:
    """What to tell the user when the CPU's speed changed during the calibration, or None."""
    start, end = result.get("cpu_fp32_matmul_flops"), result.get("cpu_fp32_matmul_flops_end")
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)) or start <= 0 or end <= 0:
        return None
    change = end / start - 1
    if abs(change) <= STEADY_TOLERANCE:
        return None
    return (
        f"This machine's speed changed by {change:+.0%} during the calibration (the same matrix product ran at "
        f"{start / 1e9:,.0f} GFLOP/s at the start and {end / 1e9:,.0f} at the end): another program was probably "
        "busy, so the figures in between are uncertain. Sizings use the median of the last three calibrations; "
        "calibrate again when the machine is idle."
    )


def combine_calibrations(results: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The median of this machine's latest calibrations (newest first), figure by figure: a busy
    machine measured alone moved one step's prediction 81 → 119 → 71 ms; the median of repeated
    rounds holds still. Numbers take their median, measured curves their median point by point
    (when the rounds measured the same sizes), anything else the newest round's. ``rounds`` says how
    many were combined and ``spread`` the lowest and highest value of the main figures."""
    rounds = [r for r in results[:CALIBRATIONS_USED] if isinstance(r, Mapping)]
    if not rounds:
        return None
    combined = _median_of(rounds)
    assert isinstance(combined, dict)
    combined["rounds"] = len(rounds)
    spread: dict[str, list[float]] = {}
    for label, (path, scale) in SPREAD_KEYS.items():
        values = [v for r in rounds if (v := _at(r, path)) is not None]
        if values:
            spread[label] = [min(values) * scale, max(values) * scale]
    combined["spread"] = spread
    return combined


def _at(result: Mapping[str, Any], path: str) -> float | None:
    node: Any = result
    for key in path.split("."):
        node = node.get(key) if isinstance(node, Mapping) else None
    return float(node) if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _median_of(values: Sequence[Any]) -> Any:
    newest = values[0]
    if all(isinstance(v, bool) for v in values) or not all(type(v) is type(newest) for v in values):
        return newest
    if isinstance(newest, (int, float)):
        return _median([float(v) for v in values])
    if isinstance(newest, Mapping):
        return {k: _median_of([v[k] for v in values]) if all(k in v for v in values) else newest[k] for k in newest}
    if isinstance(newest, list) and all(len(v) == len(newest) for v in values):
        if all(isinstance(p, list) and len(p) == 2 for v in values for p in v):  # a curve: (size, rate) points
            if all([p[0] for p in v] == [p[0] for p in newest] for v in values):
                return [[p[0], _median([float(v[i][1]) for v in values])] for i, p in enumerate(newest)]
            return newest
        return [_median_of([v[i] for v in values]) for i in range(len(newest))]
    return newest
