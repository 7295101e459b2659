"""Step-time terms of the large-model settings (docs/sizing.md §4e, "Time"): the communication of
data, tensor, pipeline and context parallelism in the layout's dtypes, the pipeline bubble,
offload traffic, recomputation under selective checkpointing, the optimizer's implementation and
fp8's casts (fp8 matrix products and a GPU's power limit are core/estimate/gpu_kernels.py's).
core/estimate/timing.py adds them to the step.

Sources: ring all-reduce moves 2·(d−1)/d of the buffer per device, all-gather and reduce-scatter
(d−1)/d each (Thakur et al. 2005; NCCL's bus-bandwidth convention); FSDP gathers every unit in
forward and again in backward and reduce-scatters its gradients (Zhao et al. 2023, PyTorch FSDP);
Megatron tensor parallelism all-reduces each transformer layer's activations twice in forward and
twice in backward, and 1F1B's bubble is (p − 1)/m of the ideal step (Narayanan et al. 2021, SC'21);
ZeRO-Offload moves the gradients to the host and the updated weights back over PCIe each step and
runs Adam on the CPU (Ren et al. 2021, USENIX ATC)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.estimate import gpu_attention, gpu_kernels, gpu_step
from core.estimate.activations import activation_policy, recompute_per_sample
from core.estimate.op_work import BANDWIDTH_EFFICIENCY, OpWork, PassSetup
from core.hardware.catalogue import DeviceSpec
from core.network.model import ModelAnalysis
from core.spec.large import LargeModelSpec, ParallelSpec, data_parallel
from core.vocabulary import PRECISION_BYTES

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
# NVMe sequential rate the offloaded states stream at (PCIe 4.0 ×4 data-centre drive, read and
# write about 3 GB/s; the storage tiers' figure in core/estimate/timing.py)
NVME_BPS = 3.0e9
# Host memory bandwidth one node's CPUs give DeepSpeed's CPU-Adam, shared by the node's GPUs: an
# 8-channel DDR5-4800 socket streams about 300 GB/s, two sockets 600 GB/s; CPU-Adam reaches a share
# of it (TrainRig estimate: 200 GB/s per node). CPU-Adam reads and writes the fp32 master weights,
# both moments and the gradient: 7 fp32 words per parameter.
HOST_ADAM_BPS = 200e9
CPU_ADAM_WORDS = 7
# fused Adam/AdamW (and SGD) reads and writes each parameter's words once: weights, gradient and the
# states, in one kernel (torch.optim fused=True); the foreach path makes several passes
# (gpu_memory.FOREACH_ACCESSES)
FUSED_ACCESSES = {"sgd": 3, "sgd_momentum": 5, "adam": 7, "adamw": 7, "rmsprop": 5, "adagrad": 5}
# kernels a per-tensor (foreach=False) optimizer launches per parameter tensor on a GPU
PER_TENSOR_KERNELS = {"sgd": 1, "sgd_momentum": 3, "adam": 10, "adamw": 11, "rmsprop": 6, "adagrad": 5}


@dataclass(frozen=True)
class Communication:
    """Seconds of one step's collectives on one device."""

    data_s: float = 0.0  # gradient all-reduce / ZeRO and FSDP gathers and reduce-scatters
    data_overlap_s: float = 0.0  # the compute the data-parallel traffic can hide behind
    tensor_s: float = 0.0  # Megatron's activation all-reduces: on the critical path
    pipeline_s: float = 0.0  # activations sent between stages
    context_s: float = 0.0  # ring attention's K/V exchange not hidden behind the attention kernels
    offload_s: float = 0.0  # PCIe/NVMe traffic of offloaded states and the CPU's optimizer step

    @property
    def exposed_s(self) -> float:
        hidden = max(0.0, self.data_s - self.data_overlap_s)
        return hidden + self.tensor_s + self.pipeline_s + self.context_s + self.offload_s

    @property
    def total_s(self) -> float:
        return self.data_s + self.tensor_s + self.pipeline_s + self.context_s + self.offload_s


def _layer_shapes(ops: Sequence[OpWork]) -> tuple[int, float, float]:
    """(attention layers, activation elements per sample at a layer boundary, K+V elements per
    sample) of a transformer's op list; (0, 0, 0) without attention."""
    layers = [o for o in ops if o.name == "sdpa"]
    if not layers:
        return 0, 0.0, 0.0
    boundary = max(o.out_elems for o in layers)
    kv = max(max(0.0, o.in_elems - o.out_elems) for o in layers)
    return len(layers), boundary, kv


def _row_parallel_outputs(ops: Sequence[OpWork]) -> float:
    """Elements per sample that tensor parallelism all-reduces once in forward and once in backward:
    two per attention layer (after the output projection and the MLP's down projection), or for a
    network without attention the output of every second linear layer (column- then row-parallel)."""
    layers, boundary, _ = _layer_shapes(ops)
    if layers:
        return 2 * layers * boundary
    linear = [o for o in ops if o.rate == "linear" and o.gemm_n]
    return sum(o.out_elems for o in linear[1::2])


def communication(
    ops: Sequence[OpWork],
    device: DeviceSpec,
    *,
    parameters: int,
    large: LargeModelSpec,
    precision: str,
    sharding: str,
    devices: int,
    nodes: int,
    b: int,
    matmul_params: int = 0,
    micro_steps: int,
    act_bytes: int,
    grad_bytes: int,
    compute_s: float,
    backward_s: float,
    attention_s: float,
    nvlink_bps: float,
    inter_node_bps: float,
    checkpointing: bool,
) -> Communication:
    """The collectives of one optimizer step of ``micro_steps`` micro-steps of ``b`` samples per
    device (the sizing's per-device batch; see core.estimate.memory.phase_lines for the convention
    under model parallelism)."""
    par = large.parallel
    mp = par.model_parallel
    # gradients are reduced, and ZeRO/FSDP shard, over the data × context ranks (each context rank
    # holds the same weights; model_states.shard_degree)
    d = data_parallel(large, devices) * par.context
    local = parameters / (par.tensor * par.pipeline)
    link = nvlink_bps if nodes <= 1 else min(nvlink_bps, inter_node_bps)
    # ---- data parallelism, in the layout's dtypes
    data = 0.0
    if d > 1:
        ring = (d - 1) / d
        half = 2 if precision in ("fp16_mixed", "bf16_mixed") else 4
        layout = large.precision_layout
        if sharding in ("zero3", "fsdp"):
            if layout == "fsdp_mixed":
                gather, reduce = DTYPE_BYTES[large.param_dtype], DTYPE_BYTES[large.reduce_dtype]
            elif layout == "deepspeed":
                gather, reduce = half, half
            else:  # FSDP without MixedPrecision: fp32 weights and gradients
                gather, reduce = 4, grad_bytes
            if large.fp8_all_gather:  # the matrix weights gathered in fp8 (1 byte)
                share = min(1.0, matmul_params / parameters) if parameters else 0.0
                gather = share * 1 + (1 - share) * gather
            volume = ring * local * (2 * gather + reduce)  # gathered in forward and backward
        else:
            reduce = {"deepspeed": half, "megatron": 4}.get(layout, grad_bytes)
            if sharding in ("zero1", "zero2") or layout == "megatron":
                # reduce-scatter the gradients, all-gather the updated (half-precision) weights
                weights = half if layout in ("deepspeed", "megatron") else 4
                volume = ring * local * (reduce + weights)
            else:
                volume = 2 * ring * local * reduce  # DDP's all-reduce
        if par.hybrid_shard and nodes > 1 and sharding in ("zero3", "fsdp"):
            # shard within the node on NVLink; all-reduce the node's gradient shard across nodes
            inner = max(1, d // nodes)
            ring_in = (inner - 1) / inner
            data = ring_in * local * (volume / (ring * local)) / nvlink_bps
            data += 2 * (nodes - 1) / nodes * local / inner * reduce / inter_node_bps
        else:
            data = volume / link
    overlap = compute_s if sharding in ("zero3", "fsdp") else backward_s
    # ---- tensor parallelism: on the critical path (Megatron overlaps none of it by default)
    tensor = 0.0
    if par.tensor > 1:
        t = par.tensor
        # the replica's micro-batch (b × the model-parallel degree) through this stage's layers
        # (1/p of them), each rank holding 1/c of the sequence
        per_pass = _row_parallel_outputs(ops) * b * act_bytes * mp / (par.pipeline * par.context)
        passes = 2 + (1 if checkpointing else 0)  # forward, backward, recomputed forward
        tensor = micro_steps * passes * 2 * (t - 1) / t * per_pass / nvlink_bps
    # ---- pipeline: each micro-batch's boundary activations forward and their gradients back
    pipeline = 0.0
    layers, boundary, kv = _layer_shapes(ops)
    if par.pipeline > 1:
        edge = boundary or max((o.out_elems for o in ops), default=0.0)
        pipeline = micro_steps * 2 * edge * b * mp / (par.tensor * par.context) * act_bytes / link
    # ---- context parallelism: ring attention passes K and V around the ring in forward and their
    # gradients back in backward; it overlaps the attention kernels, and what they do not cover shows
    context = 0.0
    if par.context > 1 and layers:
        c = par.context
        moved = micro_steps * 3 * (c - 1) / c * layers * kv * b * mp / (par.tensor * c) * act_bytes
        context = max(0.0, moved / nvlink_bps - attention_s)
    return Communication(data, overlap, tensor, pipeline, context, 0.0)


def pipeline_bubble(large: LargeModelSpec, micro_steps: int) -> float:
    """1F1B's idle share of the ideal step: (p − 1) / m, m the micro-batches of one step
    (``parallel.microbatches``, else the accumulation steps)."""
    p = large.parallel.pipeline
    if p <= 1:
        return 0.0
    m = large.parallel.microbatches or micro_steps
    return (p - 1) / max(1, m)


def offload_s(
    device: DeviceSpec,
    *,
    parameters: int,
    large: LargeModelSpec,
    precision: str,
    devices: int,
    count_per_node: int,
) -> float:
    """Seconds a step spends on offloaded state (not overlapped: ZeRO-Offload's default without the
    delayed parameter update): gradients down and weights up over the host link, CPU-Adam over the
    node's memory bandwidth, and the states through NVMe; offloaded parameters fetched in forward
    and backward."""
    if large.offload == "none":
        return 0.0
    d = data_parallel(large, devices)
    local = parameters / (large.parallel.tensor * large.parallel.pipeline) / d  # this rank's partition
    half = 2 if precision in ("fp16_mixed", "bf16_mixed") else 4
    host = device.host_link_bw or 16e9
    seconds = local * (4 + half) / host  # fp32 gradient partition down, updated weights up
    seconds += local * CPU_ADAM_WORDS * 4 / (HOST_ADAM_BPS / max(1, count_per_node))
    if large.offload.endswith("nvme"):
        seconds += 2 * local * 12 / NVME_BPS  # master weights and both moments read and written
    if large.offload.startswith("params"):
        whole = parameters / (large.parallel.tensor * large.parallel.pipeline)
        fetch = 2 * whole * half / d  # each rank's partition up in forward and backward, gathered on NVLink
        seconds += fetch / (NVME_BPS if large.offload.endswith("nvme") else host)
    return seconds


def optimizer_device_s(
    optimizer: str,
    impl: str,
    kind: str,
    params: float,
    tensors: int,
    bandwidth: float,
    floor_s: float,
    foreach_s: float,
) -> float:
    """The optimizer step's device time by implementation: ``foreach_s`` (the foreach passes, what
    PyTorch picks on CUDA) for "auto"/"foreach"; fused: its words once at ``bandwidth``; per-tensor:
    the foreach bytes plus a kernel floor for each of its kernels per tensor."""
    if kind != "gpu" or impl in ("auto", "foreach"):
        return foreach_s
    if impl == "fused":
        return FUSED_ACCESSES[optimizer] * 4 * params / bandwidth
    return foreach_s + PER_TENSOR_KERNELS[optimizer] * tensors * floor_s


def recompute_s(flops: float, elementwise_bytes: float, peak_rate: float, bandwidth: float) -> float:
    """Seconds of what selective checkpointing runs again in backward: its matrix FLOPs at the
    matrix rate and its elementwise bytes at the bandwidth reached."""
    return flops / peak_rate + elementwise_bytes / bandwidth


def fp8_cast_bytes(ops: Sequence[OpWork]) -> float:
    """Bytes per sample Transformer Engine / torchao float8 moves to cast each linear layer's input
    and output gradient to fp8 (read 2, write 1 byte per element, forward and backward)."""
    return sum(3 * (o.in_elems + o.out_elems) for o in ops if o.rate == "linear" and o.gemm_n)


def mfu(model_flops: float, step_s: float, peak: float) -> float:
    """Model FLOPs utilisation: the step's model FLOPs (no recompute) over the step × the peak."""
    return model_flops / (step_s * peak) if step_s and peak else math.nan


def time_note(large: LargeModelSpec, device: DeviceSpec, precision: str, pipeline_micro: int) -> str | None:
    """One assumption line for the step-time side of the large-model settings (None: all default)."""
    par = large.parallel
    parts = []
    if par.tensor > 1:
        parts.append(
            f"tensor parallel {par.tensor}: two activation all-reduces per layer in forward and two in backward "
            "on the critical path (Megatron-LM)" + (", sequence parallel" if par.sequence else "")
        )
    if par.pipeline > 1:
        bubble = pipeline_bubble(large, pipeline_micro)
        parts.append(f"pipeline {par.pipeline} stages, 1F1B bubble (p − 1)/m = {bubble:.0%} of the ideal step")
    if par.context > 1:
        parts.append(f"context parallel {par.context}: ring attention's K/V exchange beside the attention kernels")
    if par.hybrid_shard:
        parts.append("HYBRID_SHARD: gathers within the node, gradients all-reduced across nodes")
    if large.optimizer_impl != "auto":
        parts.append(f"optimizer {large.optimizer_impl}")
    if large.fp8:
        if device.fp8_flops:
            parts.append("fp8 matrix products (linear layers) at the fp8 tensor peak, with their casts")
        else:
            parts.append(
                f"fp8 requested, but {device.name} has no fp8 tensor cores: its matrix products stay in {precision}"
            )
    if large.offload != "none":
        parts.append(f"{large.offload}: PCIe/NVMe traffic and the CPU's optimizer step on the critical path")
    factor = gpu_kernels.power_factor(device)
    if factor < 1:
        parts.append(
            f"power limit {device.extra.get('power_limit_w'):g} W of {device.tdp_w:g} W: matrix rates × {factor:.2f} "
            "(clock ∝ power^(1/3))"
        )
    return "step time: " + "; ".join(parts) if parts else None


def step_communication(
    model: ModelAnalysis,
    device: DeviceSpec,
    ops: Sequence[OpWork],
    large: LargeModelSpec,
    precision: str,
    sharding: str,
    devices: int,
    nodes: int,
    m: int,
    k: int,
    compute: float,
    backward: float,
    checkpointing: bool,
    cal: Mapping[str, Any],
    fallback_link_bps: float,
    inter_node_bps: float,
) -> Communication:
    """The step's collectives and offload traffic (core/estimate/parallel_time.py) on this device's
    links: NVLink (or PCIe) between the GPUs of a node, the network adapter between nodes."""
    attention = 0.0
    if large.parallel.context > 1 and device.kind == "gpu" and device.runs_cuda:
        gpu = gpu_kernels.figures(device, cal)
        attention = sum(
            gpu_attention.attention_op_s(o, m, precision, gpu, checkpointing, large.attention)
            for o in ops
            if o.name == "sdpa"
        )
    comms = communication(
        ops,
        device,
        parameters=model.parameters,
        large=large,
        precision=precision,
        sharding=sharding,
        devices=devices,
        nodes=nodes,
        b=m,
        matmul_params=int(gpu_step.matrix_weights(ops)[0]) if ops else 0,  # cached per op list
        micro_steps=k,
        act_bytes=PRECISION_BYTES[precision][2],
        grad_bytes=PRECISION_BYTES[precision][1],
        compute_s=compute,
        backward_s=backward,
        attention_s=attention * k,
        nvlink_bps=device.interconnect_bw or device.host_link_bw or fallback_link_bps,
        inter_node_bps=inter_node_bps,
        checkpointing=checkpointing,
    )
    offload = offload_s(
        device,
        parameters=model.parameters,
        large=large,
        precision=precision,
        devices=devices,
        count_per_node=max(1, devices // max(1, nodes)),
    )
    return replace(comms, offload_s=offload)


def large_terms(
    setup: PassSetup,
    b: int,
    large: LargeModelSpec,
    opt: float,
    tensors: int,
    compile_model: bool = False,
) -> tuple[float, float, float]:
    """(matrix seconds, memory-bound seconds, optimizer seconds) the large-model settings add or
    change: what checkpointing runs again beyond the matrix products the kernels already repeat
    (selective: the cheap ops, and the math kernel's Q·Kᵀ; full: the elementwise ops), fp8's casts,
    and the optimizer's implementation (docs/sizing.md §4e)."""
    model, ops, device, kind, precision, optimizer, checkpointing, peak_rate, cal = setup.parts()
    gpu_model = kind == "gpu" and device.runs_cuda and "linear_train" not in cal
    if gpu_model:
        gpu = gpu_kernels.figures(device, cal)
        bandwidth = gpu.bandwidth
    else:
        gpu = None
        bandwidth = (device.bandwidth or 50e9) * BANDWIDTH_EFFICIENCY[kind]
    # the whole network's work per sample: under model parallelism the device runs its share of the
    # layers for the group's batch, the same work as the per-device batch through every layer
    # (full checkpointing of every Nth block reaches here with checkpointing False: the kernels did not
    # repeat the forward, so the wrapped blocks' matrix products are added here, as selective's are)
    partial = large.checkpoint_every > 1
    policy = activation_policy(replace(large, parallel=ParallelSpec()), checkpointing or partial, kind)
    again = recompute_per_sample(model, policy, PRECISION_BYTES[precision][2], compile_model)
    compute = again.flops * b / peak_rate if policy.checkpoint == "selective" or partial else 0.0
    memory = again.elementwise_bytes * b / bandwidth
    if large.fp8 and gpu is not None and gpu.fp8 and precision in ("fp16_mixed", "bf16_mixed"):
        memory += fp8_cast_bytes(ops) * b / bandwidth
    opt = optimizer_device_s(
        optimizer,
        large.optimizer_impl,
        "gpu" if gpu_model else kind,
        model.parameters,
        tensors,
        bandwidth,
        gpu_kernels.KERNEL_FLOOR_S,
        opt,
    )
    return compute, memory, opt
