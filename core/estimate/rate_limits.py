"""Physical limits a calibration's measured rates must respect: no measured rate may exceed the peak
of the device it ran on. A rate above it (a timer that read next to nothing on a busy machine, a
kernel that did no work) is impossible; `calibrate` measures again, then refuses what is still
impossible, with a message, and never stores it (telemetry/calibrate.py).

Bounds, each with a margin for clocks above the figure used:
* CPU: its cores (hardware threads counted) × its maximum clock (where none is readable, 6 GHz,
  above any shipping CPU's boost) × FP32 FLOP per cycle from its vector units
  (telemetry.machine.fp32_flops_per_cycle) × 1.5 — a bound, not an estimate; bf16
  matmuls × 16 on top (Intel AMX: 1,024 bf16 FLOP per cycle and core, 16 × AVX-512's FP32 64).
* GPU: the catalogue model NVML's name matches (its datasheet peaks per precision and bandwidth)
  × 1.15; a GPU the catalogue does not know: the highest figure of any catalogue GPU × 1.15.
  Training-step rates of linear layers are fp32 (TF32 off) and bounded by the FP32 peak; those of
  convolutions run cuDNN's TF32 default and are bounded by the TF32 peak.
Costs per element (elementwise layers, optimizer) are times, not rates; they are only required to be
finite and above zero (core/estimate/calibration.py drops the others).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.hardware.catalogue import DeviceSpec, match_detected_gpu

CPU_MARGIN = 1.5
GPU_MARGIN = 1.15
UNKNOWN_CLOCK_HZ = 6.0e9
AMX_BF16_FACTOR = 16


@dataclass(frozen=True)
class RefusedRate:
    """One measured figure above its device's physical peak: where it is in the calibration result
    (keys, and the index of a curve's point), its value, the bound and why."""

    path: tuple[Any, ...]
    value: float
    bound: float
    message: str


def cpu_peak_flops(cores: int, clock_hz: float | None, flops_per_cycle: int) -> float:
    """The highest FP32 FLOP/s this machine's CPU can reach, with CPU_MARGIN."""
    return max(1, cores) * (clock_hz or UNKNOWN_CLOCK_HZ) * flops_per_cycle * CPU_MARGIN


def impossible_rates(
    result: Mapping[str, Any],
    cpu_peak: float,
    catalogue: Sequence[DeviceSpec],
    gpu_memory: Sequence[int | None] = (),
) -> list[RefusedRate]:
    """Every rate in a calibration ``result`` above the physical peak of the device it ran on."""
    out: list[RefusedRate] = []

    def check(path: tuple[Any, ...], value: Any, bound: float, what: str, device: str) -> None:
        try:
            v = float(value)
        except (TypeError, ValueError):
            return
        if v > bound:
            out.append(
                RefusedRate(
                    path,
                    v,
                    bound,
                    f"{what} measured {v / 1e9:,.0f} G/s on {device}, above its physical peak of "
                    f"{bound / 1e9:,.0f} G/s: impossible, refused",
                )
            )

    def curve(path: tuple[Any, ...], points: Any, bound: float, what: str, device: str) -> None:
        for i, point in enumerate(points or ()):
            if isinstance(point, (list, tuple)) and len(point) >= 2:
                check((*path, i), point[1], bound, f"{what} at size {point[0]:,.0f}", device)

    cpu = "this machine's CPU"
    for key in ("cpu_fp32_matmul_flops", "cpu_linear_train_flops", "cpu_conv_train_flops"):
        check((key,), result.get(key), cpu_peak, key.replace("_", " ").replace("flops", "FLOP"), cpu)
    bf16 = result.get("cpu_bf16_matmul_flops")
    check(("cpu_bf16_matmul_flops",), bf16, cpu_peak * AMX_BF16_FACTOR, "bf16 matmul FLOP", cpu)
    prof = result.get("cpu_profile") or {}
    for key in ("linear_train", "conv_train", "conv_first_train"):
        curve(("cpu_profile", key), prof.get(key), cpu_peak, f"{key.replace('_', ' ')} FLOP", cpu)
    for key in ("conv_grid", "conv_first_grid", "linear_grid"):  # [in, out, kernel side, FLOP/s] points
        for i, point in enumerate(prof.get(key) or ()):
            if isinstance(point, (list, tuple)) and len(point) >= 4:
                if key == "linear_grid":  # [rows, width, 1, FLOP/s]
                    what = f"linear grid FLOP at {point[0]:g} rows × {point[1]:g} × {point[1]:g}"
                else:
                    what = (
                        f"{key.replace('_', ' ')} FLOP at {point[0]:g} → {point[1]:g} channels, "
                        f"{point[2]:g}×{point[2]:g}"
                    )
                check(("cpu_profile", key, i), point[3], cpu_peak, what, cpu)
    gpus = [d for d in catalogue if d.kind == "gpu"]
    for i, g in enumerate(result.get("gpus") or ()):
        memory = gpu_memory[i] if i < len(gpu_memory) else None
        match = match_detected_gpu(str(g.get("name", "")), memory, catalogue)
        name = f"GPU {i} ({g.get('name', 'unknown')})"
        fp32, tf32, half, bw = _gpu_bounds(match, gpus)
        check(("gpus", i, "fp32_matmul_flops"), g.get("fp32_matmul_flops"), fp32, "fp32 matmul FLOP", name)
        check(("gpus", i, "tf32_matmul_flops"), g.get("tf32_matmul_flops"), tf32, "tf32 matmul FLOP", name)
        check(("gpus", i, "bf16_matmul_flops"), g.get("bf16_matmul_flops"), half, "bf16 matmul FLOP", name)
        check(("gpus", i, "memory_bandwidth_bps"), g.get("memory_bandwidth_bps"), bw, "memory bandwidth (bytes)", name)
        p = g.get("profile") or {}
        curve(("gpus", i, "profile", "linear_train"), p.get("linear_train"), fp32, "linear train FLOP", name)
        for key in ("conv_train", "conv_first_train"):
            curve(("gpus", i, "profile", key), p.get(key), tf32, f"{key.replace('_', ' ')} FLOP", name)
    return out


def _gpu_bounds(match: DeviceSpec | None, gpus: Sequence[DeviceSpec]) -> tuple[float, float, float, float]:
    """(fp32, tf32, half FLOP/s, bandwidth) bounds of a GPU: its catalogue model's, else the highest
    of any catalogue GPU, each × GPU_MARGIN."""
    pool = [match] if match is not None else list(gpus)
    fp32 = max(d.fp32_flops for d in pool)
    tf32 = max(d.tf32_flops or d.fp32_flops for d in pool)
    half = max(d.half_flops or d.fp32_flops for d in pool)
    bw = max(d.bandwidth or 0.0 for d in pool) or 1e13
    return fp32 * GPU_MARGIN, tf32 * GPU_MARGIN, half * GPU_MARGIN, bw * GPU_MARGIN


def drop_refused(result: dict[str, Any], refused: Sequence[RefusedRate]) -> dict[str, Any]:
    """``result`` without the refused figures (a curve loses only the refused points), with their
    messages under ``refused``: nothing impossible is stored."""
    # the highest index of a curve first, so that popping a point leaves the others' indices valid
    for r in sorted(refused, key=lambda r: [(p if isinstance(p, int) else -1, str(p)) for p in r.path], reverse=True):
        parent: Any = result
        for key in r.path[:-1]:
            parent = parent[key]
        last = r.path[-1]
        if isinstance(parent, list):
            parent.pop(last)
        else:
            parent[last] = None
    if refused:
        result["refused"] = [r.message for r in refused]
    return result
