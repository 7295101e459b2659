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
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from core.estimate import host as host_model
from core.estimate import input_pipeline, parallel_time
from core.estimate.host import HostTime
from core.estimate.input_pipeline import (
    decode_cost,
    input_note,
    loader_cores,
    loader_cores_needed,
)
from core.estimate.op_work import PassSetup, forward_work, parameter_tensor_sizes
from core.estimate.pass_work import PassWork, pass_work
from core.hardware.catalogue import DeviceSpec
from core.hardware.links import FALLBACK_LINK_BPS
from core.hardware.platforms import network_adapter
from core.network.model import ModelAnalysis
from core.spec.large import DEFAULT_LARGE, LargeModelSpec, data_parallel
from core.spec.loop import DEFAULT_LOOP, LoopSpec
from core.spec.workload import DataSpec
from core.vocabulary import INPUT_DTYPES, SHARDS_OPTIMIZER_STATES

# Fraction of the datasheet peak a training step's matrix products reach, by device class and
# precision: TrainRig defaults, not fitted to a source — checked against the recorded H100 steps
# (docs/accuracy.md: within 11 % for small networks and GPT-2 fp32, 31–71 % too fast for
# ResNet-50, transformers and the LSTM) and the CPU calibrations; replaced by the measured value
# once `calibrate` has run on the device class. Hooda 2023's "15–25 % performance decrease" is a
# different claim (sustained vs. theoretical FFMA peak) and is shown only beside T_train.
DEFAULT_EFFICIENCY = {("gpu", "fp32"): 0.60, ("gpu", "tensor"): 0.45, ("cpu", "fp32"): 0.55, ("tpu", "tensor"): 0.45}
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
    # the host side (core/estimate/host.py): the host's seconds per step (dispatch, loader in the main
    # process, copy, synchronisations, logging) and the device's own work, both summed over micro-steps
    host_s: float = 0.0
    device_s: float = 0.0
    loader_s: float = 0.0  # the DataLoader's main-process share and the copy the host waits for
    host: HostTime | None = None  # the last micro-step's host terms (None: not modelled, e.g. a TPU)
    # the large-model terms (core/estimate/parallel_time.py): offload traffic and the CPU's optimizer
    # step, the pipeline bubble, and the collectives that no compute hides (all on the critical path)
    offload_s: float = 0.0
    bubble_s: float = 0.0
    exposed_comm_s: float = 0.0
    # on an accelerator, what the step takes beyond the slower of the host's dispatch and the device's
    # work where the slower side changes along the pass (the device waits for the dispatch in one
    # stretch and cannot make it up in another: core/estimate/host.py device_wait)
    turns_s: float = 0.0

    @property
    def host_bound(self) -> bool:
        """The host, not the device, sets the pace: a faster device would not shorten the step."""
        return self.host is not None and self.host_s >= self.device_s and self.step_s > 0

    @property
    def device_load(self) -> float:
        """The device's busy fraction of the step (what nvidia-smi calls GPU utilisation)."""
        return min(1.0, self.device_s / self.step_s) if self.step_s else 0.0


def efficiency_for(device: DeviceSpec, precision: str, calibrated: Mapping[str, Any] | None = None) -> float:
    key = "fp32" if precision in ("fp32",) or device.peak_flops(precision) == device.fp32_flops else "tensor"
    if calibrated and key in calibrated:
        return calibrated[key]
    kind = device.kind if device.kind in ("gpu", "cpu", "tpu") else "gpu"
    return DEFAULT_EFFICIENCY.get((kind, key), DEFAULT_EFFICIENCY.get((kind, "fp32"), 0.5))


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
    loop: LoopSpec | None = None,
    host_cpu: str | None = None,
    memory_format: str = "contiguous",
    compile_model: bool = False,
    large: LargeModelSpec = DEFAULT_LARGE,
    cudnn_tf32: bool = False,
    cudnn_benchmark: bool = False,
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
    cores the machine that holds the device has for it). ``data`` None: nothing to decode.

    ``loop``: how the user's loop feeds the device (core/estimate/host.py; None: the default, a
    DataLoader over in-memory data with no workers and ``loss.item()`` each step); ``host_cpu`` the
    CPU that hosts the device (a platform's "cpu" text), whose single-thread speed scales the host's
    costs; this machine's calibration (``calibrated["host"]``) replaces them."""
    cal = calibrated or {}
    loop = loop or DEFAULT_LOOP
    eff = efficiency_for(device, precision, cal)
    peak = device.peak_flops(precision)
    b = batch_per_device
    m = b if micro_batch is None else max(1, min(micro_batch, b))
    k = accumulation_steps(b, m)
    kind = device.kind if device.kind in ("gpu", "cpu", "tpu") else "gpu"
    ops, n_ops = forward_work(model)
    sizes = parameter_tensor_sizes(model) if ops else ()
    # ZeRO-1 and up, FSDP, Megatron's distributed optimizer: each data-parallel device steps only its
    # partition of the optimizer states; tensor × pipeline ranks each hold their share of the model
    dp = data_parallel(large, devices)
    partitioned = sharding in SHARDS_OPTIMIZER_STATES or (large.precision_layout == "megatron" and sharding == "zero1")
    shards = (dp if partitioned else 1) * large.parallel.tensor * large.parallel.pipeline
    speed, cpu_text = host_model.host_speed(cal.get("host"), host_cpu, kind)
    probed = host_model.probed_host(cal.get("host"), kind)
    # full checkpointing of every Nth block only (large.checkpoint_every): the kernels price no
    # whole-network recompute; parallel_time.large_terms adds the wrapped blocks' forward again
    whole = checkpointing and large.checkpoint_every <= 1

    setup = PassSetup(model, ops, device, kind, precision, optimizer, whole, peak * eff, cal)

    def run(n: int) -> PassWork:
        return pass_work(
            setup, n, n_ops, sizes, shards, speed, (memory_format, compile_model, cudnn_tf32, cudnn_benchmark), large
        )

    overhead_known = device.kind == "cpu" or device.runs_cuda or "per_step_s" in cal
    sample_bytes = float(data.features * INPUT_DTYPES[data.dtype] + 8) if data is not None else 0.0

    costs = host_model.host_costs(cal.get("host"), speed, kind)

    def host_of(p: PassWork, n: int, optimizer_step: bool) -> HostTime | None:
        if not overhead_known:
            return None
        loader, copy, workers = host_model.loader_host(loop, n, sample_bytes, costs, device.host_link_bw, kind)
        sync = costs["sync_s"] / loop.sync_every if loop.sync_every else 0.0
        if p.synchronised and optimizer_step:  # GradScaler's read of its found-inf flag
            sync += costs["sync_s"]
        log = costs["log_line_s"] / loop.log_every if loop.log_every else 0.0
        dispatch = p.overhead if optimizer_step else p.overhead_no_optimizer  # run_scale applied in pass_work
        r = float(cal.get("run_scale", 1.0))  # a local run measured the whole step, its host included
        return HostTime(dispatch, loader * r, copy * r, sync * r, log * r, workers * r, speed, cpu_text, loop, probed)

    def paced(p: PassWork, h: HostTime | None, optimizer_step: bool, waits: bool = True) -> float:
        work = p.work if optimizer_step else p.work_no_optimizer
        if h is None:  # no host figure for the device: its work alone (a lower bound, the sizing says so)
            return work
        # the device's work and its waits for the host's dispatch along the pass (pass_work.PassWork.wait)
        wait = (p.wait if optimizer_step else p.wait_no_optimizer) if waits else 0.0
        return host_model.combine(h, work, kind, wait, p.synchronised and optimizer_step)

    last = run(b - (k - 1) * m)
    # a CPU runs the framework's code between its kernels; an accelerator queues kernels while the
    # host issues the next ones, so the slower of the two sets the pace between synchronisations
    # (core/estimate/host.py combine)
    last_host = host_of(last, b - (k - 1) * m, True)
    busy = paced(last, last_host, True)
    busy_nowait = paced(last, last_host, True, waits=False)  # the step were the slower side the same throughout
    acc = run(m) if k > 1 else None  # the micro-steps before the last: no optimizer step, no all-reduce

    # the data-parallel traffic hides behind the passes as they run: their matrix products, or on an
    # accelerator the host's dispatch of the passes where that is slower (a host-bound backward lasts
    # as long as its host takes to issue it) — so a slower device no longer shortens a host-bound step
    # by hiding traffic behind kernels the host's pace already covered (on a CPU the two add, and so
    # does the step)
    def window(p: PassWork) -> float:
        return max(p.compute, p.overhead_no_optimizer if overhead_known and kind != "cpu" else 0.0)

    passes = window(last)
    comms = parallel_time.step_communication(
        model,
        device,
        ops,
        large,
        precision,
        sharding,
        devices,
        nodes,
        m,
        k,
        passes + (k - 1) * (window(acc) if acc is not None else 0.0),
        passes * 2 / 3,
        whole,
        cal,
        FALLBACK_LINK_BPS,
        INTER_NODE_BPS,
    )
    comm = comms.total_s - comms.offload_s  # the collectives; offload traffic is its own term
    # DDP overlaps the all-reduce with backward, FSDP its gathers with forward and backward; tensor,
    # pipeline and context traffic and offload stay on the critical path (parallel_time.py)
    hidden_comm = comms.exposed_s
    a_busy = a_nowait = 0.0
    acc_host = host_of(acc, m, False) if acc is not None else None
    if acc is not None:
        a_busy = paced(acc, acc_host, False)
        a_nowait = paced(acc, acc_host, False, waits=False)
    # the loader cores that keep up with the device's own pace: samples/s of its faster pass, so that
    # no micro-step waits for data (the loader also decodes while an all-reduce finishes)
    # a loop that trains on tensors already on the device reads and decodes nothing
    fed = loop.style != "device_tensors"
    cost = decode_cost(data) if data is not None and fed else None
    pace = max((b - (k - 1) * m) / max(busy, 1e-12), m / max(a_busy, 1e-12) if k > 1 else 0.0)
    needed = loader_cores_needed(pace, cost) if cost is not None else 0.0
    cores = loader_cores(needed, kind)
    if max_loader_cores is not None:
        cores = max(1, min(cores, max_loader_cores))

    def read(n: int) -> float:
        return n * disk_bytes_per_sample / read_bps if fed else 0.0

    def decode(n: int) -> float:
        return n * cost.per_sample_s / cores if cost is not None else 0.0

    last = replace(last, input_s=max(read(b - (k - 1) * m), decode(b - (k - 1) * m)))
    step = max(busy, last.input_s)
    # what the host and the device taking turns to be the slower adds to the step (none where the
    # step waits for its input anyway)
    turns = step - max(busy_nowait, last.input_s)
    compute, memory, input_s, overhead, flops = last.compute, last.memory, last.input_s, last.overhead, last.flops
    read_s, decode_s = read(b - (k - 1) * m), decode(b - (k - 1) * m)
    host_s = last_host.total_s if last_host else 0.0
    loader_s = last_host.loader_s + last_host.copy_s if last_host else 0.0
    device_s = last.work
    micro_s = 0.0
    if acc is not None:
        acc = replace(acc, input_s=max(read(m), decode(m)))
        micro_s = max(a_busy, acc.input_s)
        step += (k - 1) * micro_s
        turns += (k - 1) * (micro_s - max(a_nowait, acc.input_s))
        compute += (k - 1) * acc.compute
        memory += (k - 1) * (acc.memory - acc.optimizer)
        input_s += (k - 1) * acc.input_s
        overhead += (k - 1) * acc.overhead_no_optimizer
        flops += (k - 1) * acc.flops
        read_s += (k - 1) * read(m)
        decode_s += (k - 1) * decode(m)
        device_s += (k - 1) * acc.work_no_optimizer
        if acc_host is not None:
            host_s += (k - 1) * acc_host.total_s
            loader_s += (k - 1) * (acc_host.loader_s + acc_host.copy_s)
    # pipeline parallelism: 1F1B's bubble idles each stage (p − 1)/m of the ideal step
    bubble_s = step * parallel_time.pipeline_bubble(large, k)
    # collectives not hidden behind the passes finish while the loader still prepares the next batch,
    # where the last micro-step waited for its data: only what outlasts that wait lengthens the step
    # (so a slower device, whose longer passes shorten the wait, never shows the shorter step)
    collectives = hidden_comm - comms.offload_s
    exposed = max(0.0, collectives - max(0.0, last.input_s - busy))
    step = step + bubble_s + comms.offload_s + exposed
    if compute and ("linear_train" in cal or (kind == "gpu" and device.runs_cuda and ops)):
        eff = flops / compute / peak  # what the measured rates or the GPU kernel model reach
    terms = {
        "compute": compute,
        "memory bandwidth": memory,
        "input pipeline": input_s,
        "framework overhead": overhead,
        "host data loading": loader_s,
        "communication": exposed,
        "offload": comms.offload_s,
        "pipeline bubble": bubble_s,
    }
    # the largest term bounds the step; the input pipeline only when the device waits for it (input
    # that arrives in time, as the loader cores sized to keep up make it, bounds nothing)
    waits = last.input_s > busy or (acc is not None and acc.input_s > a_busy)
    # on an accelerator the host and the device run side by side: the one that paces the step names
    # its bound (a device-bound step is not "framework overhead" because the host is busy too)
    left_out = {"input pipeline"} if not waits else set()
    if kind != "cpu" and last_host is not None:
        host_paces = host_s >= device_s
        left_out |= {"compute", "memory bandwidth"} if host_paces else {"framework overhead", "host data loading"}
    bound = max((t for t in terms if t not in left_out), key=lambda t: terms[t])
    note = input_note(cost, pace, needed, cores, kind, waits and decode_s > read_s)
    st = StepTime(
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
        host_s,
        device_s,
        loader_s,
        last_host,
    )
    return replace(st, offload_s=comms.offload_s, bubble_s=bubble_s, exposed_comm_s=exposed, turns_s=turns)


def scaled_time(single_device_s: float, devices: int, scaling_model: str) -> float:
    """Wünsche 2016 observations: each doubling of GPUs cuts time by a framework's fraction."""
    cut = WUENSCHE_DOUBLING_CUT[scaling_model]
    return single_device_s * (1 - cut) ** math.log2(max(1, devices))
