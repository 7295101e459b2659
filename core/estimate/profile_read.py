"""Read a measured training step: TrainRig's compact profile (resources/workers/measure.py) or a
Chrome trace as ``torch.profiler``'s ``export_chrome_trace`` writes it, and sort each kernel into
the class that decides how it scales to another GPU (core/estimate/profile_scale.py).

The Chrome trace format: a JSON object with ``traceEvents`` (or a bare list of events); complete
events have ``"ph": "X"``, a ``name``, ``ts`` and ``dur`` in microseconds and ``args``. PyTorch
marks device kernels ``"cat": "kernel"``, copies ``gpu_memcpy`` and fills ``gpu_memset``; the
kernel's ``args`` carry ``grid``, ``block`` and ``blocks per SM``; the steps of a profiler schedule
are ``ProfilerStep#N`` spans; ``deviceProperties`` lists each GPU's ``name`` and ``numSms``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import TrainRigError
from core.validate import NotAFile, read_bounded

PROFILE_FORMAT = "trainrig-profile"
# a Chrome trace of a few profiled steps is tens of MiB; a larger file is not one measure-and-scale asks for
MAX_PROFILE_BYTES = 1024 * 2**20
PROFILE_VERSION = 1

# How a kernel's time moves to another device: "compute" by the ratio of the peaks for its
# precision, "memory" by the ratio of bandwidths, "clock" by the SMs' clocks (kernels that walk their
# elements at a rate per SM clock, not at the bandwidth), "latency" (host-to-device copies, unknown
# kernels) by the clock and the launch floor.
KERNEL_CLASSES: dict[str, str] = {
    "sm_bound": "clock",
    "attention": "compute",
    "conv": "compute",
    "gemm": "compute",
    "norm": "memory",
    "softmax_loss": "memory",
    "reduction": "memory",
    "elementwise": "memory",
    "optimizer": "memory",
    "copy": "memory",
    "transfer": "latency",
    "other": "latency",
}
# Patterns on the lower-cased kernel (or CPU op) name, tried in this order: the kernels the GPU kernel
# model prices per SM clock first (core/estimate/gpu_kernels.py nchw_transpose_s, gpu_memory.py
# cudnn_batchnorm_s, batchnorm_channel_s and maxpool_s: cuDNN's NCHW ↔ NHWC transposes, cuDNN's NCHW and
# PyTorch's NCHW per-channel batch norm, max pooling — a lent H200, with the H100's SMs and clock and 1.43 ×
# its bandwidth, ran each in the H100's time, docs/accuracy.md; they say ``cudnn`` or ``pool``), attention
# before GEMM (``fmha_cutlassF`` is a CUTLASS kernel), cuDNN's other norms before convolution (they say
# ``cudnn``), convolution before GEMM (cuDNN's implicit-GEMM convolutions say ``gemm``), the optimizer's
# fused kernels before elementwise.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        (
            "sm_bound",
            r"nchwtonhwc|nhwctonchw|bn_fw_tr_1c11_kernel_nchw|bn_bw_1c11_kernel_new|"
            r"batch_norm_collect_statistics_kernel|batch_norm_backward_kernel|max_pool_(forward|backward)_n(chw|hwc)",
        ),
        ("transfer", r"memcpy.*(htod|dtoh|host to device|device to host)|^memcpy [hd]to[hd]$"),
        ("copy", r"^memcpy|^memset|memcpy dtod|copy_kernel|direct_copy|transpose|permute"),
        (
            "norm",
            r"batch_norm|batchnorm|bn_fw|bn_bw|layer_norm|layernorm|rms_norm|rmsnorm|group_norm|welford|gammabeta",
        ),
        ("attention", r"flash|fmha|attention|_sdpa|sdpa_|mha_|scaled_dot_product"),
        (
            "conv",
            r"conv|implicit_convolve|winograd|xmma_fprop|xmma_dgrad|xmma_wgrad|fprop_|dgrad|wgrad|"
            r"cudnn|im2col|col2im",
        ),
        (
            "gemm",
            r"gemm|cutlass|xmma|nvjet|cublas|matmul|^aten::(mm|addmm|bmm|baddbmm|linear)$|wmma|"
            r"(^|_)(sm\d\d|ampere|volta|turing|hopper|maxwell)_|[sh](884|1688|16816)",
        ),
        (
            "optimizer",
            r"multi_tensor_apply|fused_adam|fused_sgd|adam|sgd|fusedlamb|optimizer|foreach|non_finite|unscale|"
            r"aten::(addcdiv_|addcmul_|lerp_|sqrt)",
        ),
        ("softmax_loss", r"softmax|cross_entropy|nll_loss|log_softmax"),
        ("reduction", r"reduce|reduction|(^|::|_)sum|(^|::|_)mean|argmax|norm_kernel|cumsum"),
        (
            "elementwise",
            r"elementwise|vectorized|pointwise|unrolled|fill|index|scatter|gather|cat_|catarray|where|"
            r"dropout|pool|embedding|triton_|aten::(relu|add|mul|div|sub|threshold|gelu|silu|tanh|sigmoid|"
            r"copy_|to|fill_|zero_|clone|cat|max_pool|avg_pool|native_dropout)",
        ),
    )
)


def classify_kernel(name: str) -> str:
    """The class of a CUDA kernel (or CPU op) from its name: sm_bound, gemm, conv, attention, norm,
    softmax_loss, reduction, elementwise, optimizer, copy, transfer or other."""
    low = name.lower()
    for kind, pattern in _PATTERNS:
        if pattern.search(low):
            return kind
    return "other"


def kernel_precision(name: str, default: str) -> str:
    """The training precision whose peak a matrix kernel runs at, from hints in its name
    (cuBLAS/cuDNN/CUTLASS names carry their types), else the workload's ``default``."""
    low = name.lower()
    if re.search(r"bf16|f16|fp16|half|float16|h884|h1688|h16816|e4m3|e5m2", low):
        return "bf16_mixed"
    if "tf32" in low:
        return "tf32"
    if re.search(r"sgemm|f32f32_f32|fp32", low) and default != "tf32":
        return "fp32"
    return default


@dataclass(frozen=True)
class KernelRecord:
    """One kernel name's calls within one training step (times in seconds per step)."""

    name: str
    kind: str
    calls: float  # calls per step
    total_s: float  # device time per step
    blocks_per_sm: float | None = None  # mean thread blocks per SM on the measured GPU; None unknown

    @property
    def per_call_s(self) -> float:
        return self.total_s / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class StepProfile:
    """A measured training step: its kernels, wall and host time, and where it was measured."""

    device_name: str
    device_type: str  # "cuda" or "cpu"
    kernels: tuple[KernelRecord, ...]
    steps: int  # profiled steps the per-step figures are averaged over
    wall_s: float | None  # per step, synchronised
    host_s: float | None  # per step: the host's time issuing the step's work (None unknown)
    precision: str = "fp32"
    sm_count: int | None = None
    torch_version: str | None = None
    cuda_version: str | None = None
    source: str = ""  # how it was obtained: measured by TrainRig's worker, a user's trace file
    about: str = ""  # the file's own description (a fixture says it is synthetic)

    @property
    def device_s(self) -> float:
        """Device time per step: the kernels run one after another on one stream."""
        return sum(k.total_s for k in self.kernels)

    def by_kind(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for k in self.kernels:
            out[k.kind] = out.get(k.kind, 0.0) + k.total_s
        return out


class ProfileError(TrainRigError):
    """A profile or trace file cannot be used; the message names the file and the problem."""


def read_profile_file(path: Path | str, precision: str | None = None) -> StepProfile:
    """Read either format from ``path``: a TrainRig profile or a Chrome trace."""
    p = Path(path)
    try:
        text = read_bounded(p, MAX_PROFILE_BYTES).decode("utf-8-sig")
    except NotAFile as exc:
        raise ProfileError(f"the profile {p} {exc}") from None
    except OSError as exc:
        raise ProfileError(f"the profile {p} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"the profile {p} is not text (a JSON file is expected)") from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ProfileError(f"the profile {p} is not valid JSON ({exc}); is the file complete?") from None
    if isinstance(doc, Mapping) and doc.get("format") == PROFILE_FORMAT:
        return parse_trainrig_profile(doc, str(p))
    return parse_chrome_trace(doc, str(p), precision=precision)


# the longest a profiled training step's event or total may last: a day (a trace of 1e308 µs printed
# step times of 300 digits)
MAX_TRACE_US = 86_400e6


def _number(value: Any, where: str, what: str, minimum: float = 0.0, maximum: float = MAX_TRACE_US) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ProfileError(f"{where}: {what} must be a number, got {value!r}")
    if not minimum <= value <= maximum:
        span = f"at least {minimum:g}" if maximum == math.inf else f"{minimum:g} to {maximum:g}"
        raise ProfileError(f"{where}: {what} must be {span}, got {value!r}")
    return float(value)


def parse_trainrig_profile(doc: Mapping[str, Any], where: str = "profile") -> StepProfile:
    """The compact JSON the measure worker writes (kernel totals over ``steps`` profiled steps)."""
    if doc.get("version") != PROFILE_VERSION:
        raise ProfileError(f"{where}: profile version {doc.get('version')!r} is not {PROFILE_VERSION}")
    steps = int(_number(doc.get("steps"), where, "steps", 1, 1e6))
    raw = doc.get("kernels")
    if not isinstance(raw, list) or not raw:
        raise ProfileError(f"{where}: it lists no kernels; nothing ran on the device while it was profiled")
    kernels = []
    for i, k in enumerate(raw):
        at = f"{where}: kernels[{i}]"
        if not isinstance(k, Mapping) or not isinstance(k.get("name"), str):
            raise ProfileError(f"{at} has no name")
        bps = k.get("blocks_per_sm")
        kernels.append(
            KernelRecord(
                name=k["name"],
                kind=classify_kernel(k["name"]),
                calls=_number(k.get("count"), at, "count", 1, math.inf) / steps,
                total_s=_number(k.get("total_us"), at, "total_us") * 1e-6 / steps,
                blocks_per_sm=None if bps is None else _number(bps, at, "blocks_per_sm", 0, math.inf),
            )
        )
    wall = [_number(v, where, "step_wall_s", 0, MAX_TRACE_US * 1e-6) for v in doc.get("step_wall_s") or []]
    host = [_number(v, where, "step_host_s", 0, MAX_TRACE_US * 1e-6) for v in doc.get("step_host_s") or []]
    sms = doc.get("sm_count")
    return StepProfile(
        device_name=str(doc.get("device") or "unknown device"),
        device_type=str(doc.get("device_type") or "cuda"),
        kernels=tuple(sorted(kernels, key=lambda k: -k.total_s)),
        steps=steps,
        wall_s=_median(wall),
        host_s=_median(host),
        precision=str(doc.get("precision") or "fp32"),
        sm_count=int(sms) if isinstance(sms, int) and sms > 0 else None,
        torch_version=doc.get("torch"),
        cuda_version=doc.get("cuda"),
        source=str(doc.get("source") or f"measured by TrainRig ({where})"),
        about=str(doc.get("about") or ""),
    )


DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
SYNC_CALLS = re.compile(r"cuda(Device|Stream|Event)Synchronize|cudaMemcpy$|cudaMemcpyAsync|cudaStreamWaitEvent")


def parse_chrome_trace(doc: Any, where: str = "trace", precision: str | None = None) -> StepProfile:
    """A ``torch.profiler`` Chrome trace: its device kernels within the profiled steps.

    Steps are the ``ProfilerStep#N`` spans (one step is assumed when there are none, and the host
    time is then unknown); the host time of a step is its span less the time the host spent
    waiting in CUDA synchronisations inside it; the wall time runs from the first step's start to
    the end of the last kernel (or step), divided by the steps.
    """
    events = doc.get("traceEvents") if isinstance(doc, Mapping) else doc
    if not isinstance(events, list):
        raise ProfileError(
            f"{where}: neither a TrainRig profile nor a Chrome trace (no 'traceEvents' list); export one with "
            "torch.profiler's export_chrome_trace"
        )
    complete = [e for e in events if isinstance(e, Mapping) and e.get("ph") == "X"]
    steps = sorted(
        (e for e in complete if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: _ts(e, where)
    )
    device_events = [e for e in complete if e.get("cat") in DEVICE_CATEGORIES]
    if not device_events:
        raise ProfileError(
            f"{where}: the trace has no device kernels ('cat': 'kernel'); record it with "
            "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] on a CUDA GPU"
        )
    start = _ts(steps[0], where) if steps else min(_ts(e, where) for e in device_events)
    in_steps = [e for e in device_events if _ts(e, where) >= start]
    n_steps = max(1, len(steps))
    totals: dict[str, list[float]] = {}
    for e in in_steps:
        name = str(e.get("name", "")).strip()
        if not name:
            raise ProfileError(f"{where}: a kernel event at ts {e.get('ts')} has no name")
        dur = _dur(e, where)
        args = e.get("args") if isinstance(e.get("args"), Mapping) else {}
        bps = args.get("blocks per SM")
        entry = totals.setdefault(name, [0.0, 0.0, 0.0, 0.0])  # calls, µs, Σ blocks/SM, calls with it
        entry[0] += 1
        entry[1] += dur
        if isinstance(bps, (int, float)) and not isinstance(bps, bool) and math.isfinite(bps) and bps >= 0:
            entry[2] += bps
            entry[3] += 1
    kernels = tuple(
        sorted(
            (
                KernelRecord(
                    name=name,
                    kind=classify_kernel(name),
                    calls=c / n_steps,
                    total_s=us * 1e-6 / n_steps,
                    blocks_per_sm=bsum / bn if bn else None,
                )
                for name, (c, us, bsum, bn) in totals.items()
            ),
            key=lambda k: -k.total_s,
        )
    )
    host_s = wall_s = None
    if steps:
        waits = [e for e in complete if e.get("cat") == "cuda_runtime" and SYNC_CALLS.search(str(e.get("name", "")))]
        host = []
        for s in steps:
            s0, s1 = _ts(s, where), _ts(s, where) + _dur(s, where)
            waited = sum(_dur(w, where) for w in waits if s0 <= _ts(w, where) < s1)
            host.append(max(0.0, s1 - s0 - waited) * 1e-6)
        host_s = _median(host)
        end = max([_ts(s, where) + _dur(s, where) for s in steps] + [_ts(e, where) + _dur(e, where) for e in in_steps])
        wall_s = (end - start) * 1e-6 / n_steps
    props = doc.get("deviceProperties") if isinstance(doc, Mapping) else None
    gpu = props[0] if isinstance(props, list) and props and isinstance(props[0], Mapping) else {}
    sms = gpu.get("numSms")
    return StepProfile(
        device_name=str(gpu.get("name") or "unknown GPU"),
        device_type="cuda",
        kernels=kernels,
        steps=n_steps,
        wall_s=wall_s,
        host_s=host_s,
        precision=precision or _trace_precision(kernels),
        sm_count=int(sms) if isinstance(sms, int) and sms > 0 else None,
        torch_version=None,
        cuda_version=_cuda_version(doc.get("cuda_runtime_version") if isinstance(doc, Mapping) else None),
        source=f"Chrome trace {where}" + ("" if steps else " (no ProfilerStep spans: one step, host time unknown)"),
        about=str(doc.get("about") or "") if isinstance(doc, Mapping) else "",
    )


def _cuda_version(value: Any) -> str | None:
    """CUDA's runtime version as the trace stores it (13000 = 13.0, 12040 = 12.4)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"{value // 1000}.{value % 1000 // 10}"
    return str(value) if value else None


def _trace_precision(kernels: Sequence[KernelRecord]) -> str:
    """The precision most of the matrix time ran at, read from the kernels' names."""
    votes: dict[str, float] = {}
    for k in kernels:
        p = kernel_precision(k.name, "unknown")
        if KERNEL_CLASSES[k.kind] == "compute" and p != "unknown":
            votes[p] = votes.get(p, 0.0) + k.total_s
    return max(votes, key=lambda p: votes[p]) if votes else "fp32"


def _ts(e: Mapping[str, Any], where: str) -> float:
    return _number(e.get("ts"), f"{where}: event {e.get('name')!r}", "ts", -math.inf, math.inf)


def _dur(e: Mapping[str, Any], where: str) -> float:
    return _number(e.get("dur"), f"{where}: event {e.get('name')!r}", "dur")


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
