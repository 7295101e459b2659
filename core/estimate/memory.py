"""Peak training memory: weights, gradients, optimizer state, activations, data, overhead, from
the step replay of core/estimate/step_replay.py (per sample of the batch, at every instant of a
step), the model states of core/estimate/model_states.py and the runtime's own memory: the phase
lines a sizing evaluates at any batch, the breakdown at the peak, and the largest batch that fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.estimate.activations import (
    activation_policy,
)
from core.estimate.model_states import model_states
from core.estimate.step_replay import memory_profile
from core.network.model import ModelAnalysis
from core.spec.large import DEFAULT_LARGE, LargeModelSpec
from core.vocabulary import (
    OPTIMIZER_STATES,
    PRECISION_BYTES,
)

# CUDA context, loaded kernels and library handles outside PyTorch's pool: 779 MiB measured on an
# H100 (driver 580, CUDA 13, PyTorch 2.11) after training runs (docs/accuracy.md); older stacks use
# less (300–600 MiB), so on older GPUs this errs on the safe side.
CUDA_CONTEXT_BYTES = 779 * 2**20
# caching allocator reserve beyond the live-tensor peak: reserved/allocated 1.04 measured on the
# first cases of a fresh process on the H100 (docs/accuracy.md), rounded up
CUDA_FRAGMENTATION = 0.05
CPU_RUNTIME_BYTES = 300 * 2**20  # resident size of a Python process with PyTorch imported
# cuBLAS and cuBLASLt workspaces come from PyTorch's caching allocator, so they count in
# max_memory_allocated: 2 × 32 MiB on Hopper and newer (measured 65 MiB on an H100 with PyTorch
# 2.11), 2 × 8 MiB before.
CUBLAS_WORKSPACE_BYTES = {"hopper+": 64 * 2**20, "older": 16 * 2**20}


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes on one device at the highest instant of a steady-state training step: the tensor
    parts (weights … workspace) add up to ``tensor_peak`` exactly; overhead and reserve come on top."""

    weights: int
    gradients: int  # alive at the peak instant (in backward, those computed so far)
    optimizer_states: int
    activations: int  # saved for backward and alive at the peak instant
    data: int
    temporaries: int  # at the peak instant (an op's scratch, the optimizer's in its step)
    overhead: int
    reserve: int
    tensor_peak: int  # what torch.cuda.max_memory_allocated / MemTracker measure
    total: int  # tensor_peak + overhead + reserve
    peak_phase: str
    batch_per_device: int
    weight_copies: int = 0  # autocast's half-precision (or fp8) copies of the matmul weights, forward to backward
    workspace: int = 0  # cuBLAS workspace (CUDA)
    offload_cpu_bytes: int = 0  # host RAM this device's rank needs for offloaded states (not in total)
    offload_nvme_bytes: int = 0  # NVMe bytes this device's rank needs for offloaded states

    def as_dict(self) -> dict[str, int | str]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PhaseLines:
    """Bytes at each instant of a step as ``per_sample * batch + fixed`` (one row per instant)."""

    per_sample: np.ndarray
    fixed: np.ndarray
    temp_per_sample: np.ndarray
    temp_fixed: np.ndarray
    n_forward: int  # rows before this index are forward instants; the last row is the optimizer step
    weights: int
    gradients: int
    optimizer_states: int
    activations_per_sample: float
    data_per_sample: int
    # the parts of ``fixed`` and ``per_sample`` that vary by instant, so that the breakdown at the peak
    # adds up to it: gradients alive, autocast weight copies, the optimizer's scratch; cuBLAS workspace
    grad_line: np.ndarray | None = None
    copies_line: np.ndarray | None = None
    opt_temp_line: np.ndarray | None = None
    workspace: int = 0
    offload_cpu: int = 0  # host RAM / NVMe bytes per device for offloaded states (core/estimate/model_states.py)
    offload_nvme: int = 0


def phase_lines(
    model: ModelAnalysis,
    *,
    precision: str,
    optimizer: str,
    device_kind: str,
    devices: int = 1,
    sharding: str = "none",
    checkpointing: bool = False,
    target_bytes_per_sample: int = 8,
    workspace_bytes: int = 0,
    accumulating: bool = False,
    large: LargeModelSpec = DEFAULT_LARGE,
    nodes: int = 1,
) -> PhaseLines:
    """Memory of every instant of a steady-state step, linear in the per-device batch (the global
    batch over ``devices``; under model parallelism each group of tensor × pipeline × context
    devices runs that many times it together, and the lines say what one device of it holds).

    ``accumulating``: the step is one micro-step of gradient accumulation, so the gradients of
    every parameter (summed over the earlier micro-steps) are alive from the start of forward
    rather than appearing layer by layer in backward after ``zero_grad()``. ``large``: the precision
    layout, offload and model parallelism (core/estimate/model_states.py); ``nodes``: the nodes the
    ``devices`` are spread over (HYBRID_SHARD shards within one)."""
    ab = PRECISION_BYTES[precision][2]
    p = model.parameters
    has_graph = model.graph is not None
    prof = memory_profile(model, activation_policy(large, checkpointing, device_kind)) if has_graph else None
    ms = model_states(
        parameters=p,
        buffers=model.buffers,
        matmul_params=prof.matmul_params if prof is not None else 0,
        largest_unit=_largest_segment(model),
        largest_unit_matmul=prof.largest_segment_matmul if prof is not None else 0,
        largest_param=prof.largest_param if prof is not None else p,
        precision=precision,
        optimizer=optimizer,
        device_kind=device_kind,
        devices=devices,
        nodes=nodes,
        sharding=sharding,
        large=large,
    )
    # model parallelism: this rank's share of the parameters whose gradients appear in backward
    mp_share = ms.local_params / p if p else 1.0
    weights, opt_states, grads, opt_temp = ms.weights, ms.optimizer_states, ms.grads_step, ms.opt_temp_bytes
    data_ps = model.input_elems * model.input_bytes_per_element + target_bytes_per_sample
    if prof is None:  # summary model: the published parts, all alive as backward starts
        acts_ps = float(model.activation_bytes_per_sample * ab // 4)
        step_mask = np.array([1.0, 0.0])
        act_per = np.array([acts_ps, 0.0])
        temp_per = np.zeros(2)
        grad_fixed = np.array([float(max(ms.grads_step, ms.local_params * ms.grad_bytes + ms.grad_in_flight)), 0.0])
        copies, n_fwd = 0, 0
    else:
        step_mask = prof.step_mask
        temp_per = prof.temp_float * ab
        # under autocast the half-precision logits are upcast for the loss: one more fp32 gradient
        loss = prof.loss_saved + prof.loss_grad * (2.0 if precision.endswith("_mixed") else 1.0)
        act_per = prof.act_float * ab + prof.act_fixed + temp_per + loss
        grad_fixed = prof.grad_params * (ms.grad_bytes * mp_share)
        if accumulating:
            grad_fixed = step_mask * float(prof.grad_params.max() * (ms.grad_bytes * mp_share))
        n_fwd = len(model.graph.ops)
        if ms.grad_in_flight:  # a unit's unsharded gradients wait for their reduce during backward
            backward = np.zeros(len(step_mask))
            backward[n_fwd:-1] = 1.0
            grad_fixed = grad_fixed + backward * ms.grad_in_flight
        # autocast keeps half-precision copies of matmul weights from forward through backward
        copies = ms.weight_copies
        acts_ps = prof.saved_float * ab + prof.saved_fixed + float(prof.loss_saved.max())
    # model parallelism: the sizing's per-device batch is the global batch over all devices, while
    # a tensor × pipeline × context group of mp devices runs mp times that batch together (the
    # per-sample lines above are already the group's split); each device loads the group's data
    mp = large.parallel.model_parallel
    if mp > 1:
        if model.graph is None:  # no graph to split: the published activations over t·c and the stages
            policy = activation_policy(large, checkpointing, device_kind)
            act_per = act_per * policy.pipeline_share / (policy.tensor * policy.context)
            acts_ps *= policy.pipeline_share / (policy.tensor * policy.context)
        act_per, temp_per, acts_ps, data_ps = act_per * mp, temp_per * mp, acts_ps * mp, data_ps * mp
    opt_mask = 1.0 - step_mask
    return PhaseLines(
        per_sample=act_per + data_ps,
        fixed=weights + opt_states + grad_fixed + step_mask * copies + opt_mask * (grads + opt_temp) + workspace_bytes,
        temp_per_sample=temp_per,
        temp_fixed=opt_mask * opt_temp,
        n_forward=n_fwd,
        weights=weights,
        gradients=grads,
        optimizer_states=opt_states,
        activations_per_sample=float(acts_ps),
        data_per_sample=data_ps,
        grad_line=grad_fixed + opt_mask * grads,
        copies_line=step_mask * copies,
        opt_temp_line=opt_mask * opt_temp,
        workspace=workspace_bytes,
        offload_cpu=ms.offload_cpu,
        offload_nvme=ms.offload_nvme,
    )


def estimate_peak_memory(
    model: ModelAnalysis,
    *,
    batch_size: int,
    precision: str,
    optimizer: str,
    device_kind: str,
    devices: int = 1,
    sharding: str = "none",
    checkpointing: bool = False,
    reserve_fraction: float = 0.0,
    target_bytes_per_sample: int = 8,
    workspace_bytes: int = 0,
    large: LargeModelSpec = DEFAULT_LARGE,
    nodes: int = 1,
) -> MemoryBreakdown:
    """Peak memory of one device in bytes for one steady-state step.

    ``batch_size`` is the global batch, split evenly over ``devices`` (see ``phase_lines`` for
    model parallelism).
    ``device_kind`` "gpu" (CUDA) adds the CUDA context and allocator fragmentation and uses the
    multi-tensor (foreach) optimizers; "cpu" uses the single-tensor optimizers of PyTorch on CPU;
    "accelerator" (TPU, Trainium) counts the tensors as on a GPU and no runtime overhead (unknown).
    Sources: parameter/gradient/state sizes follow torch.optim; ZeRO stages 1–3 shard optimizer
    state, then gradients, then parameters (Rajbhandari et al., 2020); reserve is Jamgharyan's
    +25–30 % for reverse-engineering overfitted models.
    """
    lines = phase_lines(
        model,
        precision=precision,
        optimizer=optimizer,
        device_kind=device_kind,
        devices=devices,
        sharding=sharding,
        checkpointing=checkpointing,
        target_bytes_per_sample=target_bytes_per_sample,
        workspace_bytes=workspace_bytes,
        large=large,
        nodes=nodes,
    )
    return breakdown_at(lines, -(-batch_size // max(1, devices)), device_kind, reserve_fraction)


def breakdown_at(lines: PhaseLines, b: int, device_kind: str, reserve_fraction: float) -> MemoryBreakdown:
    """The memory breakdown at per-device batch ``b`` from precomputed phase lines."""
    at = lines.per_sample * b + lines.fixed
    k = int(np.argmax(at))
    tensor_peak = int(at[k])
    if k == len(at) - 1:
        phase = "optimizer step"
    else:
        phase = "forward" if k < lines.n_forward else "backward"
    overhead = _overhead(device_kind, tensor_peak)
    reserve = int(reserve_fraction * (tensor_peak + overhead))
    assert lines.grad_line is not None and lines.copies_line is not None and lines.opt_temp_line is not None
    gradients = int(lines.grad_line[k])
    copies = int(lines.copies_line[k])
    data = lines.data_per_sample * b
    # alive at the peak: what the instant holds per sample, less its data and scratch
    activations = int((lines.per_sample[k] - lines.data_per_sample - lines.temp_per_sample[k]) * b)
    known = lines.weights + gradients + lines.optimizer_states + activations + data + copies + lines.workspace
    return MemoryBreakdown(
        weights=lines.weights,
        gradients=gradients,
        optimizer_states=lines.optimizer_states,
        activations=activations,
        data=data,
        temporaries=tensor_peak - known,  # the scratch at the peak (and a byte or two of rounding)
        overhead=overhead,
        reserve=reserve,
        tensor_peak=tensor_peak,
        total=tensor_peak + overhead + reserve,
        peak_phase=phase,
        batch_per_device=b,
        weight_copies=copies,
        workspace=lines.workspace,
        offload_cpu_bytes=lines.offload_cpu,
        offload_nvme_bytes=lines.offload_nvme,
    )


def largest_batch_per_device(lines: PhaseLines, capacity: int, device_kind: str, reserve_fraction: float) -> int:
    """Largest per-device batch whose total stays within ``capacity`` bytes (0 if none fits)."""
    if device_kind == "gpu":
        budget = (capacity / (1 + reserve_fraction) - CUDA_CONTEXT_BYTES) / (1 + CUDA_FRAGMENTATION)
    elif device_kind == "accelerator":
        budget = capacity / (1 + reserve_fraction)
    else:
        budget = capacity / (1 + reserve_fraction) - CPU_RUNTIME_BYTES
    room = budget - lines.fixed
    if np.any(room < lines.per_sample):
        return 0
    return int(np.min(np.floor(room / lines.per_sample)))


def _overhead(device_kind: str, tensor_peak: int) -> int:
    if device_kind == "gpu":
        return CUDA_CONTEXT_BYTES + int(CUDA_FRAGMENTATION * tensor_peak)
    if device_kind == "accelerator":
        return 0  # a TPU's or Trainium's runtime reserve is not known: the tensors only
    return CPU_RUNTIME_BYTES


def _largest_segment(model: ModelAnalysis) -> int:
    if model.graph is None:
        return model.parameters
    return memory_profile(model).largest_segment_params


def gpu_workspace_bytes(compute_capability: str | None) -> int:
    """cuBLAS/cuBLASLt workspace PyTorch allocates for a GPU of this compute capability."""
    try:
        major = int(str(compute_capability).split(".")[0])
    except ValueError:
        major = 0
    return CUBLAS_WORKSPACE_BYTES["hopper+" if major >= 9 else "older"]


def checkpoint_bytes(parameters: int, optimizer: str) -> int:
    """Bytes of one training checkpoint: fp32 weights and the optimizer's state tensors, as
    ``torch.save`` of the model's and optimizer's ``state_dict`` writes them."""
    return parameters * 4 * (1 + OPTIMIZER_STATES[optimizer])
