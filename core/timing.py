"""Step time, epoch and run time of a training workload on a device.

step = max(compute at calibrated efficiency, memory traffic / bandwidth, input pipeline)
       + gradient all-reduce not hidden behind backward + per-step framework overhead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.catalogue import DeviceSpec
from core.memory import OPTIMIZER_STATES, PRECISION_BYTES
from core.model import ModelAnalysis

# Fraction of the datasheet peak a training step reaches, by device class and precision.
# TrainRig defaults (Hooda 2023 observes 15–25 % below peak for large kernels; small layers reach
# less); replaced by measured values once `calibrate` has run on the device class.
DEFAULT_EFFICIENCY = {("gpu", "fp32"): 0.60, ("gpu", "tensor"): 0.45, ("cpu", "fp32"): 0.55, ("tpu", "tensor"): 0.45}
# Per-op framework cost (dispatch, kernel launch), seconds; TrainRig default before calibration.
OVERHEAD_PER_OP_S = 15e-6
OVERHEAD_PER_STEP_S = 200e-6
# Sustained sequential read, bytes/s: typical drive datasheets (7,200 rpm HDD, 10k rpm HDD,
# SATA III SSD, PCIe 3.0 ×4 NVMe, tmpfs, 1 GbE network share).
STORAGE_READ_BPS = {
    "hdd": 150e6,
    "hdd_10k": 220e6,
    "sata_ssd": 520e6,
    "nvme": 3.0e9,
    "ramdisk": 10e9,
    "network": 110e6,
}
# On-disk size relative to raw uint8/float samples (Panaite & Leba 2024 compare these formats).
FORMAT_SIZE_FACTOR = {"raw": 1.0, "npy": 1.0, "tiff": 1.0, "png": 0.5, "jpeg": 0.1, "csv": 2.5}
INTER_NODE_BPS = 12.5e9  # 100 Gb/s network between nodes
# Wünsche 2016: doubling the GPUs cut training time by this fraction, per framework.
WUENSCHE_DOUBLING_CUT = {
    "wuensche-cntk": 0.35,
    "wuensche-mxnet": 0.35,
    "wuensche-caffe": 0.28,
    "wuensche-torch": 0.10,
    "wuensche-tensorflow": 0.10,
}


@dataclass(frozen=True)
class StepTime:
    compute_s: float
    memory_s: float
    input_s: float
    comm_s: float
    overhead_s: float
    step_s: float
    bound: str  # which term dominates
    efficiency: float
    peak_flops: float


def efficiency_for(device: DeviceSpec, precision: str, calibrated: dict[str, float] | None = None) -> float:
    key = "fp32" if precision in ("fp32",) or device.peak_flops(precision) == device.fp32_flops else "tensor"
    if calibrated and key in calibrated:
        return calibrated[key]
    kind = device.kind if device.kind in ("gpu", "cpu", "tpu") else "gpu"
    return DEFAULT_EFFICIENCY.get((kind, key), DEFAULT_EFFICIENCY.get((kind, "fp32"), 0.5))


def train_flops_per_sample(model: ModelAnalysis, checkpointing: bool) -> int:
    """Forward + backward (≈ 2× forward: input and weight gradients) + recomputation."""
    return model.forward_flops * (4 if checkpointing else 3)


def disk_bytes_per_sample(features: int, dtype_bytes: int, fmt: str, override: int | None) -> float:
    return float(override) if override else features * dtype_bytes * FORMAT_SIZE_FACTOR[fmt]


def step_time(
    model: ModelAnalysis,
    device: DeviceSpec,
    *,
    batch_per_device: int,
    devices: int,
    nodes: int,
    precision: str,
    optimizer: str,
    checkpointing: bool,
    sharding: str,
    read_bps: float,
    disk_bytes_per_sample: float,
    calibrated: dict[str, float] | None = None,
) -> StepTime:
    eff = efficiency_for(device, precision, calibrated)
    peak = device.peak_flops(precision)
    flops = train_flops_per_sample(model, checkpointing) * batch_per_device
    compute = flops / (peak * eff)
    cal = calibrated or {}
    if "linear_train_flops" in cal:  # measured rates of this machine, per kind of layer
        conv_share = _conv_flops(model) / model.forward_flops if model.forward_flops else 0.0
        speed = cal.get("half_speedup", 1.0) if precision.endswith("_mixed") else 1.0
        conv_rate = cal.get("conv_train_flops", cal["linear_train_flops"])
        compute = flops * ((1 - conv_share) / (cal["linear_train_flops"] * speed) + conv_share / (conv_rate * speed))
        eff = flops / compute / peak if compute else eff
    pb, gb, ab, ob = PRECISION_BYTES[precision]
    p = model.parameters
    traffic = p * (3 * pb + 2 * gb + 2 * OPTIMIZER_STATES[optimizer] * ob + pb)
    act = model.activation_bytes_per_sample if model.graph is None else _saved_bytes(model, ab)
    traffic += 2 * act * batch_per_device
    memory = traffic / device.bandwidth if device.bandwidth else 0.0
    input_s = batch_per_device * disk_bytes_per_sample / read_bps
    comm = 0.0
    if devices > 1:
        link = device.interconnect_bw or 15.75e9
        if nodes > 1:
            link = min(link, INTER_NODE_BPS)
        volume = 2 * (devices - 1) / devices * p * gb
        if sharding in ("zero3", "fsdp"):
            volume *= 1.5  # parameter all-gathers in forward and backward plus reduce-scatter
        comm = volume / link
    n_ops = len(model.graph.ops) if model.graph is not None else 50
    per_op = cal.get("per_op_s", OVERHEAD_PER_OP_S)
    per_step = cal.get("per_step_s", OVERHEAD_PER_STEP_S)
    overhead = per_step + per_op * (3 * n_ops + (2 if optimizer != "sgd" else 1) * n_ops)
    backward = compute * 2 / 3
    hidden_comm = max(0.0, comm - backward)  # DDP overlaps the all-reduce with backward
    terms = {"compute": compute, "memory bandwidth": memory, "input pipeline": input_s}
    bound = max(terms, key=lambda k: terms[k])
    step = max(terms.values()) + hidden_comm + overhead
    if hidden_comm > max(terms.values()):
        bound = "communication"
    return StepTime(compute, memory, input_s, comm, overhead, step, bound, eff, peak)


def _conv_flops(model: ModelAnalysis) -> int:
    return sum(r.flops * r.count for r in model.rows if r.type == "conv2d")


def scaled_time(single_device_s: float, devices: int, scaling_model: str) -> float:
    """Wünsche 2016 observations: each doubling of GPUs cuts time by a framework's fraction."""
    cut = WUENSCHE_DOUBLING_CUT[scaling_model]
    return single_device_s * (1 - cut) ** math.log2(max(1, devices))


def _saved_bytes(model: ModelAnalysis, act_bytes: int) -> float:
    from core.memory import memory_profile

    prof = memory_profile(model, False)
    return prof.saved_float * act_bytes + prof.saved_fixed
