"""Step time, epoch and run time of a training workload on a device.

A step is the sum of its ops, as a device runs them one after another: matrix products (linear,
convolution, recurrent, attention) at the rate layers of their size reach, elementwise layers
(activations, norms, pooling, dropout, residual adds) at their cost per element, the loss, and the
optimizer at its cost per parameter. The framework's cost of issuing those ops (per op and per step)
adds on a CPU and overlaps on an accelerator, which queues work asynchronously. Then:

step = max(that, input pipeline) + gradient all-reduce not hidden behind backward,

where the input pipeline is the slower of reading the batch from its storage tier and decoding and
augmenting it on the loader cores the sizing gives each device (core/estimate/input_pipeline.py).

Rates and costs come from `calibrate` on this machine; elsewhere from the device's datasheet peak
and bandwidth with the default efficiencies below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.estimate import input_pipeline
from core.estimate.input_pipeline import (
    GPU_DECODE_ADVICE,
    MAX_LOADER_CORES_PER_DEVICE,
    DecodeCost,
    decode_cost,
    loader_cores,
    loader_cores_needed,
)
from core.estimate.op_work import (
    OpWork,
    forward_work,
    op_times,
    parameter_tensor_sizes,
)
from core.hardware.catalogue import DeviceSpec
from core.hardware.links import FALLBACK_LINK_BPS
from core.hardware.platforms import network_adapter
from core.network.model import ModelAnalysis
from core.spec.workload import DataSpec
from core.vocabulary import OPTIMIZER_STATES, PRECISION_BYTES, SHARDS_OPTIMIZER_STATES

# Fraction of the datasheet peak a training step's matrix products reach, by device class and
# precision: TrainRig defaults, not fitted to a source — checked against the recorded H100 steps
# (docs/accuracy.md: within 11 % for small networks and GPT-2 fp32, 31–71 % too fast for
# ResNet-50, transformers and the LSTM) and the CPU calibrations; replaced by the measured value
# once `calibrate` has run on the device class. Hooda 2023's "15–25 % performance decrease" is a
# different claim (sustained vs. theoretical FFMA peak) and is shown only beside T_train.
DEFAULT_EFFICIENCY = {("gpu", "fp32"): 0.60, ("gpu", "tensor"): 0.45, ("cpu", "fp32"): 0.55, ("tpu", "tensor"): 0.45}
# Framework cost (Python, dispatch, kernel launches) per op and per step, seconds: TrainRig defaults
# before calibration. Per step on a CPU: the optimizer's and the loss's fixed costs; with a GPU also
# the synchronisation at the end of the step — 1.8 ms measured on an H100 host (intercept of the
# step times of four small networks over their op counts, docs/accuracy.md).
# Only for CPUs and NVIDIA GPUs: no figure is known for TPUs, Trainium or other accelerators (XLA
# and Neuron compile the step), so their overhead is 0 and the sizing says the step is a lower bound.
OVERHEAD_PER_OP_S = 15e-6
OVERHEAD_PER_STEP_S = {"cpu": 200e-6, "gpu": 1.8e-3}
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
# Sizes on disk are defined with the decode model (core/estimate/input_pipeline.py); the sizing,
# the rules and the bill of materials read them here.
FORMAT_SIZE_FACTOR = input_pipeline.FORMAT_SIZE_FACTOR
sample_bytes_on_disk = input_pipeline.sample_bytes_on_disk
dataset_bytes_on_disk = input_pipeline.dataset_bytes_on_disk
# between nodes each GPU sends over its own adapter (core.advice.bom.network_lines): the line rate of
# the adapter the bill of materials buys (resources/platforms.json), in bytes/s
INTER_NODE_BPS = (network_adapter().gbps or 100.0) * 1e9 / 8
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
    """One optimizer step of the global batch. With gradient accumulation the terms are the sums
    over the step's micro-steps (the all-reduce: once)."""

    compute_s: float
    memory_s: float
    input_s: float
    comm_s: float
    overhead_s: float
    step_s: float
    bound: str  # which term dominates
    efficiency: float
    peak_flops: float
    overhead_known: bool = True  # False: no framework overhead is known for the device (counted as 0)
    micro_batch: int = 0  # samples per device in one forward/backward pass
    accumulation_steps: int = 1  # micro-steps per optimizer step
    micro_step_s: float = 0.0  # one micro-step before the last: no optimizer step, no all-reduce
    # the optimizer step's memory-bound work (on this device's shard of the states when they are
    # sharded) and framework calls, once per step
    optimizer_s: float = 0.0
    run_scale: float = 1.0  # measured/predicted step of this machine's local runs, applied to the device's work
    # the input pipeline: reading the step's samples from storage and decoding and augmenting them
    # on ``loader_cores`` CPU cores per device (input_s is the slower of the two, per micro-step)
    read_s: float = 0.0
    decode_s: float = 0.0
    loader_cores: int = 0  # loader cores per device the step assumes
    loader_cores_needed: float = 0.0  # to decode as fast as the device computes
    input_note: str = ""  # what the input pipeline counts, for the sizing's assumptions


@dataclass(frozen=True)
class _Pass:
    """One forward/backward pass at a micro-batch, with the optimizer's share kept apart."""

    compute: float
    memory: float  # memory-bound work, the optimizer's included
    optimizer: float  # the optimizer's share of ``memory``
    work: float  # as the device runs it, optimizer included
    work_no_optimizer: float
    input_s: float
    overhead: float  # framework overhead, optimizer's calls included
    overhead_no_optimizer: float
    flops: float


def efficiency_for(device: DeviceSpec, precision: str, calibrated: Mapping[str, Any] | None = None) -> float:
    key = "fp32" if precision in ("fp32",) or device.peak_flops(precision) == device.fp32_flops else "tensor"
    if calibrated and key in calibrated:
        return calibrated[key]
    kind = device.kind if device.kind in ("gpu", "cpu", "tpu") else "gpu"
    return DEFAULT_EFFICIENCY.get((kind, key), DEFAULT_EFFICIENCY.get((kind, "fp32"), 0.5))


def train_flops_per_sample(model: ModelAnalysis, checkpointing: bool) -> int:
    """Forward + backward (≈ 2× forward: input and weight gradients) + recomputation."""
    return model.forward_flops * (4 if checkpointing else 3)


def accumulation_steps(batch_per_device: int, micro_batch: int) -> int:
    """Micro-steps that make up the batch per device: ⌈batch per device / micro-batch⌉."""
    return max(1, -(-batch_per_device // max(1, micro_batch)))


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
    calibrated: Mapping[str, Any] | None = None,
    micro_batch: int | None = None,
    data: DataSpec | None = None,
    max_loader_cores: int | None = None,
    memory_format: str = "contiguous",
    compile_model: bool = False,
) -> StepTime:
    """One optimizer step of ``batch_per_device`` samples on each device, run as
    ⌈batch_per_device / micro_batch⌉ micro-steps (gradient accumulation; ``micro_batch`` None: one
    pass). Every micro-step pays its matrix products, memory-bound work, input and the framework's
    per-step and per-op overhead; the optimizer step and the gradient all-reduce (overlapped with
    the last micro-step's backward) run once. The last micro-step takes what is left of the batch.

    A micro-step's input is the slower of reading its samples (``disk_bytes_per_sample`` at
    ``read_bps``) and decoding and augmenting them (``data``'s decode cost, core/estimate/
    input_pipeline.py) on the loader cores the device gets: as many as keep up with the device's
    own pace, at least a few, at most what a host gives a GPU and at most ``max_loader_cores`` (the
    cores the machine that holds the device has for it). ``data`` None: nothing to decode."""
    cal = calibrated or {}
    eff = efficiency_for(device, precision, cal)
    peak = device.peak_flops(precision)
    b = batch_per_device
    m = b if micro_batch is None else max(1, min(micro_batch, b))
    k = accumulation_steps(b, m)
    kind = device.kind if device.kind in ("gpu", "cpu", "tpu") else "gpu"
    ops, n_ops = forward_work(model)
    sizes = parameter_tensor_sizes(model) if ops else ()
    # ZeRO-1 and up, FSDP: each device steps only its partition of the optimizer states
    shards = max(1, devices) if sharding in SHARDS_OPTIMIZER_STATES else 1

    def run(n: int) -> _Pass:
        return _pass(
            model,
            device,
            kind,
            ops,
            n_ops,
            sizes,
            n,
            precision,
            optimizer,
            checkpointing,
            peak * eff,
            cal,
            shards,
            (memory_format, compile_model),
        )

    last = run(b - (k - 1) * m)
    comm = 0.0
    gb = PRECISION_BYTES[precision][1]
    if devices > 1:
        link = device.interconnect_bw or device.host_link_bw or FALLBACK_LINK_BPS  # GPU to GPU
        if nodes > 1:
            link = min(link, INTER_NODE_BPS)
        volume = 2 * (devices - 1) / devices * model.parameters * gb
        if sharding in ("zero3", "fsdp"):
            volume *= 1.5  # parameter all-gathers in forward and backward plus reduce-scatter
        comm = volume / link
    # a CPU runs the framework's code between its kernels; an accelerator queues kernels while the
    # host issues the next ones, so the slower of the two sets the pace
    busy = last.work + last.overhead if kind == "cpu" else max(last.work, last.overhead)
    backward = last.compute * 2 / 3
    hidden_comm = max(0.0, comm - backward)  # DDP overlaps the all-reduce with backward
    acc = run(m) if k > 1 else None  # the micro-steps before the last: no optimizer step, no all-reduce
    a_busy = 0.0
    if acc is not None:
        a_busy = (
            acc.work_no_optimizer + acc.overhead_no_optimizer
            if kind == "cpu"
            else max(acc.work_no_optimizer, acc.overhead_no_optimizer)
        )
    # the loader cores that keep up with the device's own pace: samples/s of its faster pass, so that
    # no micro-step waits for data (the loader also decodes while an all-reduce finishes)
    cost = decode_cost(data) if data is not None else None
    pace = max((b - (k - 1) * m) / max(busy, 1e-12), m / max(a_busy, 1e-12) if k > 1 else 0.0)
    needed = loader_cores_needed(pace, cost) if cost is not None else 0.0
    cores = loader_cores(needed, kind)
    if max_loader_cores is not None:
        cores = max(1, min(cores, max_loader_cores))

    def read(n: int) -> float:
        return n * disk_bytes_per_sample / read_bps

    def decode(n: int) -> float:
        return n * cost.per_sample_s / cores if cost is not None else 0.0

    last = replace(last, input_s=max(read(b - (k - 1) * m), decode(b - (k - 1) * m)))
    step = max(busy, last.input_s) + hidden_comm
    compute, memory, input_s, overhead, flops = last.compute, last.memory, last.input_s, last.overhead, last.flops
    read_s, decode_s = read(b - (k - 1) * m), decode(b - (k - 1) * m)
    micro_s = 0.0
    if acc is not None:
        acc = replace(acc, input_s=max(read(m), decode(m)))
        micro_s = max(a_busy, acc.input_s)
        step += (k - 1) * micro_s
        compute += (k - 1) * acc.compute
        memory += (k - 1) * (acc.memory - acc.optimizer)
        input_s += (k - 1) * acc.input_s
        overhead += (k - 1) * acc.overhead_no_optimizer
        flops += (k - 1) * acc.flops
        read_s += (k - 1) * read(m)
        decode_s += (k - 1) * decode(m)
    if compute and ("linear_train" in cal or (kind == "gpu" and device.runs_cuda and ops)):
        eff = flops / compute / peak  # what the measured rates or the GPU kernel model reach
    terms = {
        "compute": compute,
        "memory bandwidth": memory,
        "input pipeline": input_s,
        "framework overhead": overhead,
        "communication": hidden_comm,
    }
    # the largest term bounds the step; the input pipeline only when the device waits for it (input
    # that arrives in time, as the loader cores sized to keep up make it, bounds nothing)
    waits = last.input_s > busy or (acc is not None and acc.input_s > a_busy)
    bound = max((t for t in terms if waits or t != "input pipeline"), key=lambda t: terms[t])
    note = _input_note(cost, pace, needed, cores, kind, waits and decode_s > read_s)
    return StepTime(
        compute,
        memory,
        input_s,
        comm,
        overhead,
        step,
        bound,
        eff,
        peak,
        device.kind == "cpu" or device.runs_cuda or "per_step_s" in cal,
        m,
        k,
        micro_s,
        last.optimizer + (last.overhead - last.overhead_no_optimizer),
        float(cal.get("run_scale", 1.0)),
        read_s,
        decode_s,
        cores,
        needed,
        note,
    )


def _input_note(cost: DecodeCost | None, pace: float, needed: float, cores: int, kind: str, decode_bound: bool) -> str:
    """The assumption the sizing shows about the loader: what a sample costs, the cores that keep up
    and the cores the step counts; when they cannot keep up, why and what to do."""
    if cost is None or not cost.per_sample_s:
        return ""
    per = "GPU" if kind != "cpu" else "device"
    text = (
        f"input pipeline: {cost.describe()} takes {cost.per_sample_s * 1e3:.3g} ms of one CPU core per sample "
        f"(published figures, docs/sizing.md); at {pace:,.0f} samples/s per {per} that needs "
        f"{needed:.1f} loader cores per {per}; the step counts {cores}"
    )
    if needed > MAX_LOADER_CORES_PER_DEVICE:
        waits = "steps wait for the decoding; " if decode_bound else ""
        if kind == "cpu":
            text += f", the most TrainRig gives a device: {waits}store the data smaller or already decoded"
        else:
            text += (
                f", the most a host gives a GPU ({MAX_LOADER_CORES_PER_DEVICE}, an 8-GPU DGX A100's share): "
                f"{waits}{GPU_DECODE_ADVICE}"
            )
    return text


def _pass(
    model: ModelAnalysis,
    device: DeviceSpec,
    kind: str,
    ops: Sequence[OpWork],
    n_ops: int,
    sizes: Sequence[float],
    b: int,
    precision: str,
    optimizer: str,
    checkpointing: bool,
    peak_rate: float,
    cal: Mapping[str, Any],
    shards: int = 1,
    kernel_options: tuple[str, bool] = ("contiguous", False),
) -> _Pass:
    """The work of one forward/backward pass of ``b`` samples per device, with the optimizer step's
    memory-bound work and framework calls kept apart (they run once per optimizer step).

    ``shards``: the devices the optimizer states are partitioned over (ZeRO-1/2/3, FSDP full shard;
    Rajbhandari et al. 2020): each updates 1/shards of the parameters, so the optimizer's
    memory-bound work is divided by it. Its framework calls are kept: FSDP2 steps a dim-0 shard of
    every parameter, as many calls as unsharded; DeepSpeed's ZeRO steps one flat partition per
    parameter group, fewer — kept as an upper bound rather than divided."""
    flops = train_flops_per_sample(model, checkpointing) * b
    pb, gb, _, ob = PRECISION_BYTES[precision]
    p = model.parameters
    if not ops:  # a published summary: totals only, compute and memory traffic overlap
        compute = flops / peak_rate
        states = 2 * OPTIMIZER_STATES[optimizer] * ob
        traffic = p * (3 * pb + 2 * gb + states + pb)
        traffic += 2 * model.activation_bytes_per_sample * b
        memory = traffic / device.bandwidth if device.bandwidth else 0.0
        # the optimizer reads and writes its state and writes the weights (of its shard)
        opt = p * (states + pb) / device.bandwidth if device.bandwidth else 0.0
        if shards > 1:
            memory -= opt - opt / shards
            opt /= shards
        work, work_no_opt = max(compute, memory), max(compute, memory - opt)
        n_ops = 0  # no layer list: the per-op overhead is unknown and not counted (the sizing says so)
    else:
        compute, memory_no_opt, opt = op_times(
            model,
            ops,
            sizes,
            device,
            kind,
            b,
            precision,
            optimizer,
            checkpointing,
            peak_rate,
            cal,
            memory_format=kernel_options[0],
            compile_model=kernel_options[1],
        )
        opt /= shards
        memory = memory_no_opt + opt
        work, work_no_opt = compute + memory, compute + memory_no_opt  # the ops run one after another
    overhead_known = device.kind == "cpu" or device.runs_cuda or "per_step_s" in cal
    per_op = cal.get("per_op_s", OVERHEAD_PER_OP_S if overhead_known else 0.0)
    per_step = cal.get("per_step_s", OVERHEAD_PER_STEP_S["cpu" if kind == "cpu" else "gpu"] if overhead_known else 0.0)
    per_tensor = cal.get("optimizer_tensor_s", {}).get(optimizer)
    if per_tensor is not None:  # measured: the optimizer's ops per parameter tensor
        tensors = len(sizes) if ops else n_ops
        overhead = per_step + per_op * 3 * n_ops + float(per_tensor) * tensors
    else:
        overhead = per_step + per_op * (3 * n_ops + (2 if optimizer != "sgd" else 1) * n_ops)
    s = float(cal.get("run_scale", 1.0))  # what this machine's local runs measured against the prediction
    return _Pass(
        compute * s,
        memory * s,
        opt * s,
        work * s,
        work_no_opt * s,
        0.0,
        overhead * s,
        (per_step + per_op * 3 * n_ops) * s,
        float(flops),
    )


def scaled_time(single_device_s: float, devices: int, scaling_model: str) -> float:
    """Wünsche 2016 observations: each doubling of GPUs cuts time by a framework's fraction."""
    cut = WUENSCHE_DOUBLING_CUT[scaling_model]
    return single_device_s * (1 - cut) ** math.log2(max(1, devices))
