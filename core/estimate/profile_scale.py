"""Measure here, predict there: scale each kernel of a step measured on this GPU to a candidate GPU.

Per kernel (``t`` its time per call on the measured GPU S, ``T`` the candidate):

* compute-bound (GEMM, convolution, attention): ``t × rate_S / rate_T``, a large matrix product's
  rate as the GPU kernel model prices it (``gpu_kernels.matmul_rate``: the datasheet peak × the
  efficiency published matmul measurements of the card set) for the precision the kernel runs at
  (its name says fp16/bf16/tf32/fp32, else the workload's), corrected for waves: a kernel of B thread
  blocks runs ``max(1, B / SMs)`` waves, each at the per-SM rate (rate / SMs), so a grid smaller than
  the GPU gains nothing from more SMs. Unknown grids: the rate ratio.
* memory-bound (elementwise, norms, softmax and loss, reductions, optimizer, device copies):
  ``t × bandwidth_S / bandwidth_T``; a grid smaller than the SMs is latency-bound and moves with
  the clock instead.
* bound by the SMs' clock (cuDNN's NCHW ↔ NHWC transposes, NCHW per-channel batch norm, max pooling:
  the kernels the GPU kernel model prices at a rate per SM clock, which a lent H100 and H200 ran in
  the same time although the H200 has 1.43 × the bandwidth): by the SMs × boost clock, in waves as
  above.
* the rest (unknown kernels, host↔device copies): by the boost clock ratio.
* each call keeps a fixed device cost that does not scale: ``t_T = L + (t − L) × ratio`` with
  ``L = min(t, fixed)``; ``fixed`` is the kernel model's ``GEMM_FIXED_S`` for a matrix product or
  convolution (its pipeline fill, epilogue and tail: 5 µs, fitted on OpenXLA's published H100 GEMM
  timings and checked by scaling them to the B200, docs/accuracy.md) and ``LAUNCH_FLOOR_S`` (launch,
  ramp-up and tail) for the others, attention included.

The host time (Python, PyTorch's dispatch, kernel launches) is kept as measured: another host is a
different question. A GPU step is ``max(host, device) + gap``, where the gap is what the measured
wall time had beyond ``max(host, device)`` on this GPU (synchronisations, allocator).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.estimate.gemm import GEMM_FIXED_S
from core.estimate.gpu_kernels import matmul_rate
from core.estimate.gpu_memory import BATCHNORM_BLOCKS_PER_SM
from core.estimate.profile_read import (
    KERNEL_CLASSES,
    KernelRecord,
    ProfileError,
    StepProfile,
    kernel_precision,
    parse_chrome_trace,
    parse_trainrig_profile,
    read_profile_file,
)
from core.hardware.catalogue import DeviceSpec

__all__ = [
    "LAUNCH_FLOOR_S",
    "ClassTime",
    "ProfileError",
    "Refusal",
    "ScaleResult",
    "ScaledPrediction",
    "StepProfile",
    "parse_chrome_trace",
    "parse_trainrig_profile",
    "read_profile_file",
    "scale_kernel",
    "scale_profile",
    "sm_count",
]

# TrainRig's assumption: the part of a kernel's device time that no faster GPU removes (launch,
# ramp-up, tail) is about 2.5 µs on recent NVIDIA GPUs; the shortest kernels in PyTorch profiles
# of training steps last 2–4 µs. benchmarks/measure_scale.py checks it on two real profiles.
LAUNCH_FLOOR_S = 2.5e-6
# the per-SM-clock kernels that give each channel a block (cuDNN's and PyTorch's NCHW batch norm)
_PER_CHANNEL_NORM = re.compile(r"bn_|batch_norm")
# CUDA cores per SM by compute capability (NVIDIA CUDA C++ Programming Guide, "Arithmetic
# Instructions" throughput table): the SM count of a catalogue GPU = CUDA cores / this.
CORES_PER_SM = {"6.0": 64, "6.1": 128, "7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128}
CORES_PER_SM_DEFAULT = 128  # Hopper (9.0) and Blackwell (10.x, 12.x)


@dataclass(frozen=True)
class ClassTime:
    """One class of kernels within a step: measured and predicted device seconds."""

    kind: str
    calls: float
    measured_s: float
    predicted_s: float
    rule: str  # how it was scaled, in words


@dataclass(frozen=True)
class ScaledPrediction:
    """A candidate GPU's step predicted from the measured one."""

    device: str
    step_s: float
    device_s: float
    host_s: float | None
    gap_s: float
    bound: str  # "device" or "host"
    by_class: tuple[ClassTime, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    device: str
    reason: str


@dataclass(frozen=True)
class ScaleResult:
    profile: StepProfile
    source: DeviceSpec
    measured: ScaledPrediction  # this GPU, explained by its own kernels (a check of the model)
    predictions: tuple[ScaledPrediction, ...]
    refused: tuple[Refusal, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def for_device(self, name: str) -> ScaledPrediction | None:
        return next((p for p in self.predictions if p.device == name), None)


def sm_count(device: DeviceSpec) -> int | None:
    """Streaming multiprocessors of a GPU: the catalogue's ``sm_count``, else CUDA cores / cores per
    SM of its compute capability; None when neither is known."""
    sms = device.extra.get("sm_count")
    if isinstance(sms, int) and sms > 0:
        return sms
    if not device.cuda_cores:
        return None
    cc = str(device.extra.get("compute_capability") or "")
    return max(1, round(device.cuda_cores / CORES_PER_SM.get(cc, CORES_PER_SM_DEFAULT)))


def why_not_scalable(device: DeviceSpec, precision: str) -> str | None:
    """The reason ``device`` cannot take kernels measured on an NVIDIA GPU, or None."""
    if device.kind == "tpu":
        return "a TPU runs XLA's fused programs, not CUDA kernels: size it with the model instead"
    if device.kind != "gpu":
        return f"not a GPU ({device.kind}): the measured CUDA kernels do not run on it"
    if not device.runs_cuda:
        return f"a {device.extra.get('vendor')} GPU runs other libraries' kernels: size it with the model instead"
    if not device.bandwidth:
        return "its datasheet memory bandwidth is not in the catalogue"
    if precision in ("fp16_mixed", "bf16_mixed") and not device.half_flops:
        return "its FP16/BF16 tensor peak is not in the catalogue"
    return None


def _by_waves(rate_s: float, rate_t: float, blocks: float | None, sms: tuple[int | None, int | None]) -> float:
    """The time ratio (target over source) of a kernel of ``blocks`` thread blocks that runs at ``rate_s`` and
    ``rate_t`` on GPUs whose SMs are ``sms``: in ``max(1, blocks / SMs)`` waves, each at the rate per SM (a grid
    smaller than the GPU gains nothing from more SMs); the rates' ratio where the grid or the SMs are unknown."""
    if blocks is None or not sms[1]:
        return rate_s / rate_t
    s_sm, t_sm = sms[0] or 1, sms[1]
    waves = max(1.0, blocks / t_sm) / max(1.0, blocks / s_sm)
    return waves * (rate_s / s_sm) / (rate_t / t_sm)


def _clock_ratio(
    k: KernelRecord, source: DeviceSpec, target: DeviceSpec, blocks: float | None, sms: tuple[int | None, int | None]
) -> float:
    """The time ratio of a kernel that walks its elements at a rate per SM clock: by the SMs × their boost clock,
    in waves as the GPU kernel model runs them (a per-channel batch norm BATCHNORM_BLOCKS_PER_SM channels an SM
    at once, gpu_memory.block_a_channel_s; a grid not recorded taken as filling both GPUs). Without both
    clocks, the bandwidths' ratio (what the kernel model falls back to); without both SM counts, the clocks'."""
    s_sm, t_sm = sms
    if not (source.clock_hz and target.clock_hz):
        return source.bandwidth / target.bandwidth if source.bandwidth and target.bandwidth else 1.0
    if not (s_sm and t_sm):
        return source.clock_hz / target.clock_hz
    per_sm = BATCHNORM_BLOCKS_PER_SM if _PER_CHANNEL_NORM.search(k.name.lower()) else 1
    return _by_waves(s_sm * source.clock_hz, t_sm * target.clock_hz, blocks, (s_sm * per_sm, t_sm * per_sm))


def scale_kernel(
    k: KernelRecord, source: DeviceSpec, target: DeviceSpec, precision: str, sms: tuple[int | None, int | None]
) -> float:
    """Seconds per step of kernel ``k`` on ``target`` (module docstring); ``sms`` = (source, target)."""
    cls = KERNEL_CLASSES[k.kind]
    blocks = k.blocks_per_sm * sms[0] if k.blocks_per_sm is not None and sms[0] else None
    clock = (source.clock_hz / target.clock_hz) if source.clock_hz and target.clock_hz else 1.0
    if cls == "compute":
        p = kernel_precision(k.name, precision)
        # a half-precision kernel of an fp16 workload at the cards' FP16 rates (names do not tell fp16 from bf16)
        rated = "fp16_mixed" if p == "bf16_mixed" and precision == "fp16_mixed" else p
        ratio = _by_waves(matmul_rate(source, rated), matmul_rate(target, rated), blocks, sms)
    elif cls == "clock":
        ratio = _clock_ratio(k, source, target, blocks, sms)
    elif cls == "memory":
        few_blocks = blocks is not None and sms[0] is not None and blocks < sms[0]
        ratio = (
            clock if few_blocks or not (source.bandwidth and target.bandwidth) else source.bandwidth / target.bandwidth
        )
    else:
        ratio = clock
    per_call = k.per_call_s
    fixed = min(per_call, GEMM_FIXED_S if k.kind in ("gemm", "conv") else LAUNCH_FLOOR_S)
    return k.calls * (fixed + (per_call - fixed) * ratio)


# Published pairs of one architecture (Lambda's ResNet-50 and BERT throughputs, benchmarks/
# measure_scale_published.py, docs/accuracy.md): within one class (H100 SXM ↔ PCIe) within 8 %; between
# a GeForce card and a workstation or data-centre card the datasheet peaks misled the scaling by 25–56 %
# (GeForce datasheets halve the FP16 and TF32 tensor peaks, which the cards outrun). With the published
# PyTorch matmul rates of the GeForce cards (gpu_kernels.matmul_rate, from
# core/estimate/published_rates.py) the mean error is 8 % (RTX 3090 ↔ RTX A6000), 17 % (↔ A10) and
# 27 % (RTX 4090 ↔ RTX 6000 Ada, which has none published).
GEFORCE_NOTE = (
    "scaled between a GeForce card and a workstation or data-centre card: GeForce datasheets halve the FP16 "
    "and TF32 tensor peaks (FP32 accumulate), which the cards outrun; published PyTorch matmul measurements "
    "set their rates where they exist, yet on published pairs of one architecture this scaling was still "
    "8–30 % off on average (RTX 3090 ↔ RTX A6000, ↔ A10, RTX 4090 ↔ RTX 6000 Ada); treat it as a rough figure"
)

RULES = {
    "compute": "ratio of the matrix rates for the kernel's precision (the datasheet peak × the efficiency "
    "published matmul measurements set, where published), by waves over the SMs; a matrix product's fixed "
    f"{GEMM_FIXED_S * 1e6:.0f} µs (pipeline fill, epilogue) kept",
    "memory": "ratio of the datasheet memory bandwidths (small grids: the clock ratio)",
    "clock": "ratio of the SMs × their boost clock, by waves over the SMs (kernels that walk their elements at a "
    "rate per SM clock, not at the bandwidth: per-channel batch norm, layout transposes, max pooling)",
    "latency": "ratio of the boost clocks",
}


def _predict(profile: StepProfile, source: DeviceSpec, target: DeviceSpec, gap: float) -> ScaledPrediction:
    sms = (profile.sm_count or sm_count(source), sm_count(target))
    classes: dict[str, list[float]] = {}
    for k in profile.kernels:
        row = classes.setdefault(k.kind, [0.0, 0.0, 0.0])
        row[0] += k.calls
        row[1] += k.total_s
        row[2] += scale_kernel(k, source, target, profile.precision, sms)
    by_class = tuple(
        ClassTime(kind, calls, m, p, RULES[KERNEL_CLASSES[kind]])
        for kind, (calls, m, p) in sorted(classes.items(), key=lambda kv: -kv[1][1])
    )
    device_s = sum(c.predicted_s for c in by_class)
    host = profile.host_s
    notes = []
    if host is None:
        notes.append("the host time is unknown (the trace has no ProfilerStep spans): the step is the device time")
    bound = "host" if host is not None and host > device_s else "device"
    step = max(host or 0.0, device_s) + gap
    if sms[1] is None:
        notes.append("its SM count is not known: kernels scaled without waves over the SMs")
    if source.geforce != target.geforce:
        notes.append(GEFORCE_NOTE)
    return ScaledPrediction(target.name, step, device_s, host, gap, bound, by_class, tuple(notes))


def scale_profile(profile: StepProfile, source: DeviceSpec, candidates: Sequence[DeviceSpec]) -> ScaleResult:
    """Predict each candidate's step from ``profile``, measured on ``source`` (its catalogue entry).

    ProfileError when the profile cannot be scaled at all (recorded on a CPU, or on a GPU whose
    datasheet figures are missing); candidates it cannot scale to are listed in ``refused``.
    """
    if profile.device_type != "cuda":
        raise ProfileError(
            f"this profile was recorded on the {profile.device_type.upper()} ({profile.device_name}); "
            "measure-and-scale needs a step measured on a CUDA GPU"
        )
    why = why_not_scalable(source, profile.precision)
    if why:
        raise ProfileError(f"the measured GPU {source.name} cannot be scaled from: {why}")
    measured_wall = profile.wall_s
    own = _predict(profile, source, source, 0.0)
    gap = max(0.0, measured_wall - own.step_s) if measured_wall is not None else 0.0
    own = _predict(profile, source, source, gap)
    predictions, refused = [], []
    for c in candidates:
        reason = why_not_scalable(c, profile.precision)
        if reason:
            refused.append(Refusal(c.name, reason))
        else:
            predictions.append(_predict(profile, source, c, gap))
    notes = [
        f"measured on {profile.device_name} ({source.name} in the catalogue), {profile.precision}, "
        f"{profile.steps} profiled steps; {profile.source}",
        "the host time (Python, PyTorch's dispatch, kernel launches) is this machine's: a candidate in another "
        "host with a slower or faster CPU changes it, which this scaling does not model",
    ]
    if profile.about:
        notes.append(f"about this profile: {profile.about}")
    return ScaleResult(profile, source, own, tuple(predictions), tuple(refused), tuple(notes))
