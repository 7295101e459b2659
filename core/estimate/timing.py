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

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
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
from core.hardware.catalogue import DeviceSpec
from core.hardware.links import FALLBACK_LINK_BPS
from core.hardware.platforms import network_adapter
from core.network.graph import Graph
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
# Fraction of the datasheet memory bandwidth elementwise kernels reach (TrainRig default).
BANDWIDTH_EFFICIENCY = {"gpu": 0.8, "cpu": 0.6, "tpu": 0.8}
# Framework cost (Python, dispatch, kernel launches) per op and per step, seconds: TrainRig defaults
# before calibration. Per step on a CPU: the optimizer's and the loss's fixed costs; with a GPU also
# the synchronisation at the end of the step — 1.8 ms measured on an H100 host (intercept of the
# step times of four small networks over their op counts, docs/accuracy.md).
# Only for CPUs and NVIDIA GPUs: no figure is known for TPUs, Trainium or other accelerators (XLA
# and Neuron compile the step), so their overhead is 0 and the sizing says the step is a lower bound.
OVERHEAD_PER_OP_S = 15e-6
OVERHEAD_PER_STEP_S = {"cpu": 200e-6, "gpu": 1.8e-3}
# Elementwise layers: the kind of kernel each op runs (its cost is measured per kind by
# `calibrate`) and whether its cost counts input elements (pooling) or output elements.
ELEMENTWISE_KIND = {
    "relu": ("relu",),
    "leaky_relu": ("relu",),
    "tanh": ("tanh",),
    "sigmoid": ("tanh",),
    "gelu": ("gelu",),
    "silu": ("gelu",),
    "silu_mul": ("gelu", "add"),
    "softmax": ("softmax",),
    "batchnorm1d": ("batchnorm",),
    "batchnorm2d": ("batchnorm",),
    "layernorm": ("layernorm",),
    "rmsnorm": ("layernorm",),
    "maxpool2d": ("maxpool",),
    "avgpool2d": ("avgpool",),
    "adaptive_avgpool2d": ("avgpool",),
    "dropout": ("dropout",),
    "add": ("add",),
    "positional_embedding": ("add",),
    "embedding": ("embedding",),
}
PER_INPUT_ELEMENT = {"maxpool", "avgpool"}
# Before calibration: tensor elements read or written per element by the forward and backward of
# each kind (TrainRig estimates from the kernels' passes; e.g. ReLU reads x and writes y, then reads
# the gradient and y and writes the input gradient: 5), moved at the device's bandwidth.
ELEMENT_ACCESSES = {
    "relu": 5,
    "tanh": 5,
    "gelu": 5,
    "softmax": 5,
    "batchnorm": 9,
    "layernorm": 9,
    "maxpool": 4,
    "avgpool": 2.5,
    "dropout": 4.5,
    "add": 6,
    "embedding": 4,
}
# fp32 words read or written per parameter by one optimizer step in PyTorch's default (foreach)
# implementations: TrainRig estimates, in the ratios `calibrate` measured on a CPU.
OPTIMIZER_ACCESSES = {"sgd": 3, "sgd_momentum": 7, "adam": 21, "adamw": 25, "rmsprop": 14, "adagrad": 13}
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
            model, device, kind, ops, n_ops, sizes, n, precision, optimizer, checkpointing, peak * eff, cal, shards
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
    if compute and "linear_train" in cal:
        eff = flops / compute / peak
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
        compute, memory_no_opt, opt = _op_times(
            model, ops, sizes, device, kind, b, precision, optimizer, checkpointing, peak_rate, cal
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


@dataclass(frozen=True)
class OpWork:
    """One op of a forward pass as the timing model sees it, per sample."""

    rate: str | None = None  # "linear" or "conv": a matrix product timed at that kind's rate
    flops: float = 0.0  # forward matrix FLOPs per sample
    weights: int = 0  # a convolution's weights (its rate is measured by them)
    elementwise: tuple[tuple[str, float], ...] = ()  # (kind, elements per sample) of its elementwise kernels
    cpu_scores: float = 0.0  # L×L score elements per sample PyTorch's math attention keeps (CPU, dropout)
    first: bool = False  # reads the network's input: backward computes no input gradient
    pointwise: bool = False  # a 1×1 convolution: a matrix product over pixels


def forward_work(model: ModelAnalysis) -> tuple[tuple[OpWork, ...], int]:
    """The forward pass's ops and the number of framework calls they take: from the layer graph,
    or from the kernels a trace of the PyTorch model recorded; empty for a published summary."""
    if model.graph is not None:
        return _graph_work(model.graph)
    trace = model.trace or {}
    ops = tuple(
        OpWork(
            rate=o["kind"],
            flops=float(o["flops"]),
            weights=int(o.get("weights", 0)),
            first=bool(o.get("first", False)),
            pointwise=bool(o.get("pointwise", False)),
        )
        if o["kind"] in ("linear", "conv")
        else OpWork(elementwise=((o["kind"], float(o["elements"])),))
        for o in trace.get("ops", ())
    )
    return ops, int(trace.get("op_calls", len(ops)))


@lru_cache(maxsize=256)
def _graph_work(g: Graph) -> tuple[tuple[OpWork, ...], int]:
    """A layer graph's ops as timing work, built once per graph (the what-if loop re-times it)."""
    ops = tuple(
        OpWork(
            rate=("conv" if op.name == "conv2d" else "linear") if op.flops else None,
            flops=float(op.flops),
            weights=op.matmul_params if op.name == "conv2d" else 0,
            elementwise=tuple(
                (k, float(g.tensors[op.input_id if k in PER_INPUT_ELEMENT else op.output_id].elems))
                for k in ELEMENTWISE_KIND.get(op.name, ())
            ),
            cpu_scores=float(op.math_scores),
            first=op.input_id == 0,
            pointwise=op.kernel_area == 1,
        )
        for op in g.ops
    )
    return ops, len(g.ops)


def parameter_tensor_sizes(model: ModelAnalysis) -> list[float]:
    """Elements of each trainable tensor the optimizer steps (weights, biases, norms' scales and
    shifts): the layer graph's, a traced model's own, or else the average of an estimated count."""
    if model.graph is not None:
        return [float(n) for op in model.graph.ops for n in op.tensor_sizes]
    trace = model.trace or {}
    if trace.get("param_sizes"):
        return [float(n) for n in trace["param_sizes"] if n]
    tensors = sum(2 for o in trace.get("ops", ()) if o.get("kind") in ("linear", "conv")) or 1
    return [model.parameters / tensors] * tensors if model.parameters else []


def matrix_time(
    op: OpWork, b: int, checkpointing: bool, peak_rate: float, cal: Mapping[str, Any], speed: float = 1.0
) -> float:
    """Seconds of a matrix product's forward and backward at the per-device batch ``b``: 3 × its
    forward FLOPs (2 × on the network's input: no input gradient; +1 × recomputed under
    checkpointing) at the rate measured for its kind and size, else at ``peak_rate``; a convolution
    also pays its measured fixed cost per call. ``speed``: the measured half/full-precision ratio."""
    passes = (2 if op.first else 3) + (1 if checkpointing else 0)
    flops = passes * op.flops * b
    if op.rate == "conv" and not op.pointwise:  # measured by the convolution's weights
        curve = cal.get("conv_first_train") if op.first else None
        curve, size = curve or cal.get("conv_train"), float(op.weights)
    else:  # linear layers and 1×1 convolutions: by the FLOPs of one call
        curve, size = cal.get("linear_train"), op.flops * b
    seconds = flops / (interpolate_rate(curve, size) * speed) if curve else flops / peak_rate
    return seconds + (float(cal.get("conv_call_s", 0.0)) if op.rate == "conv" else 0.0)


def _op_times(
    model: ModelAnalysis,
    ops: Sequence[OpWork],
    tensor_sizes: Sequence[float],
    device: DeviceSpec,
    kind: str,
    b: int,
    precision: str,
    optimizer: str,
    checkpointing: bool,
    peak_rate: float,
    cal: Mapping[str, Any],
) -> tuple[float, float, float]:
    """Seconds of matrix products, of memory-bound work (elementwise layers, loss) and of the
    optimizer's memory-bound work over the trainable tensors of ``tensor_sizes`` elements."""
    act_bytes = PRECISION_BYTES[precision][2]
    speed = cal.get("half_speedup", 1.0) if precision.endswith("_mixed") else 1.0
    bandwidth = (device.bandwidth or 50e9) * BANDWIDTH_EFFICIENCY[kind]
    measured = cal.get("elementwise_s", {})

    def per_element(k: str) -> float:
        return float(measured[k]) if k in measured else ELEMENT_ACCESSES[k] * act_bytes / bandwidth

    compute = memory = 0.0
    for op in ops:
        if op.rate:
            compute += matrix_time(op, b, checkpointing, peak_rate, cal, speed)
        for k, elems in op.elementwise:
            memory += per_element(k) * elems * b
        if op.cpu_scores and kind == "cpu":  # math attention kernel: softmax, dropout, mask on L×L scores
            memory += sum(per_element(k) for k in ("softmax", "dropout", "add")) * op.cpu_scores * b
    memory += per_element("softmax") * model.output_elems * b  # cross-entropy: log-softmax and NLL
    curve = cal.get("optimizer_s", {}).get(optimizer)
    if curve:  # measured per element by tensor size: small tensors stay in cache
        opt = sum(interpolate_rate(curve, size) * size for size in tensor_sizes)
    else:
        opt = OPTIMIZER_ACCESSES[optimizer] * 4 / bandwidth * model.parameters
    return compute, memory, opt


def interpolate_rate(curve: Sequence[Sequence[float]], size: float) -> float:
    """FLOP/s at ``size`` from measured (size, FLOP/s) points — size is a linear layer's FLOPs per
    call or a convolution's weights: piecewise linear in log-log, held at the end points outside
    the measured range."""
    points = sorted((float(f), float(r)) for f, r in curve if float(f) > 0 and float(r) > 0)
    if not points:
        raise ValueError("no measured point above zero to interpolate (core.estimate.calibration drops them)")
    if size <= points[0][0]:
        return points[0][1]
    for (f0, r0), (f1, r1) in itertools.pairwise(points):
        if size <= f1 and f1 > f0:
            t = math.log(size / f0) / math.log(f1 / f0)
            return math.exp(math.log(r0) + t * math.log(r1 / r0))
    return points[-1][1]


def scaled_time(single_device_s: float, devices: int, scaling_model: str) -> float:
    """Wünsche 2016 observations: each doubling of GPUs cuts time by a framework's fraction."""
    cut = WUENSCHE_DOUBLING_CUT[scaling_model]
    return single_device_s * (1 - cut) ** math.log2(max(1, devices))
