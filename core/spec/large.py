"""Settings practitioners choose for large models (workload ``training``, docs/workload.md): the
activation-checkpointing policy, the attention kernel, the precision layout of DeepSpeed, FSDP,
Megatron or Transformer Engine, offload, tensor / pipeline / sequence / context parallelism, hybrid
sharding and the optimizer's implementation. core/estimate/ prices each (docs/sizing.md §4e).

Every setting defaults to what plain PyTorch does, so a workload that names none of them sizes as
before: autocast, no recompute beyond ``checkpointing``, SDPA's own kernel choice, no offload, data
parallelism only, the optimizer implementation PyTorch picks for the device."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.errors import WorkloadError
from core.validate import get_bool, get_choice, get_int, reject_unknown, require_mapping

# training.checkpointing: false/true as before, or a policy by name
CHECKPOINT_POLICIES = ("none", "selective", "selective_op", "full")
CHECKPOINT_TEXT = {
    "none": "no activation checkpointing: every activation backward needs is kept",
    "selective": (
        "selective checkpointing (Korthikanti et al. 2022; Megatron-core's policy): matrix-product and "
        "attention outputs are kept, the cheap ops (norms, activations, dropout, softmax) are recomputed "
        "in backward"
    ),
    "selective_op": (
        "torchtitan's per-op selective checkpointing (selective_ac_option 'op'): as selective, but every "
        "second matrix product of a block (Llama's K, output and up projections) is recomputed too"
    ),
    "full": "full checkpointing: each block keeps its input only and its forward runs again in backward",
}
# training.attention: which kernel F.scaled_dot_product_attention runs, or "eager": the attention
# written out in Python (Hugging Face's attn_implementation="eager", NVIDIA's BERT)
ATTENTION_KERNELS = ("auto", "flash", "memory_efficient", "math", "eager")
ATTENTION_TEXT = {
    "auto": "the kernel PyTorch's SDPA picks for the device and precision",
    "flash": "FlashAttention-2 (half precision on CUDA): no sequence² scores are stored",
    "memory_efficient": "the memory-efficient kernel (xFormers): no sequence² scores are stored",
    "math": "the math kernel: the sequence² scores, softmax and dropout mask are stored (5·a·s²·b bytes)",
    "eager": (
        "eager attention written out in Python (Hugging Face's attn_implementation=\"eager\", NVIDIA's BERT): "
        "the sequence² scores scaled, masked, softmax in fp32 under autocast and dropout, each its own kernel; "
        "softmax's fp32 output, the dropout mask and the probabilities' copy are stored"
    ),
}
# training.precision_layout: where the weights, their master copy and the gradients live
PRECISION_LAYOUTS = ("autocast", "fsdp_mixed", "deepspeed", "megatron")
LAYOUT_TEXT = {
    "autocast": "PyTorch autocast: fp32 weights, gradients and optimizer state; half-precision copies for matmuls",
    "fsdp_mixed": (
        "FSDP MixedPrecision: fp32 sharded weights, gathered and computed in param_dtype, gradients "
        "reduced in reduce_dtype"
    ),
    "deepspeed": (
        "DeepSpeed bf16/fp16: half-precision weights and gradients, fp32 master weights and optimizer "
        "state partitioned by ZeRO"
    ),
    "megatron": (
        "Megatron-LM: bf16 weights, fp32 main gradients, fp32 master weights and Adam state partitioned "
        "over data-parallel ranks by the distributed optimizer"
    ),
}
LAYOUT_DTYPES = ("bf16", "fp16", "fp32")
# training.offload: what moves off the GPU
OFFLOADS = ("none", "optimizer_cpu", "optimizer_nvme", "params_cpu", "params_nvme")
OFFLOAD_TEXT = {
    "none": "nothing offloaded",
    "optimizer_cpu": "ZeRO-Offload: optimizer state and master weights in CPU RAM, the optimizer step on the CPU",
    "optimizer_nvme": "ZeRO-Infinity: optimizer state and master weights on NVMe",
    "params_cpu": "parameters too in CPU RAM (ZeRO-3 offload_param, FSDP CPUOffload), gathered over PCIe",
    "params_nvme": "ZeRO-Infinity: parameters and optimizer state on NVMe",
}
# training.optimizer_impl
OPTIMIZER_IMPLS = ("auto", "fused", "foreach", "per_tensor")
OPTIMIZER_IMPL_TEXT = {
    "auto": "what PyTorch picks: foreach on CUDA, the per-tensor loop on the CPU",
    "fused": "fused=True: one kernel per group of parameters",
    "foreach": "foreach=True: multi-tensor apply, a few kernels per group of parameters",
    "per_tensor": "foreach=False: a loop of kernels per parameter tensor",
}
MAX_DEGREE = 4096


@dataclass(frozen=True)
class ParallelSpec:
    """Model parallelism beside data parallelism (Megatron-LM's t, p, SP and CP; FSDP HYBRID_SHARD).
    The data-parallel degree is the devices over tensor × pipeline × context."""

    tensor: int = 1  # Megatron tensor parallelism t (within a node)
    pipeline: int = 1  # pipeline stages p
    microbatches: int | None = None  # micro-batches per pipeline step m; None: the accumulation steps
    sequence: bool = False  # sequence parallelism (needs tensor > 1): norms and dropout split over t
    context: int = 1  # context parallelism: the sequence split over this many devices
    hybrid_shard: bool = False  # FSDP HYBRID_SHARD: shard within a node, replicate across nodes

    @property
    def model_parallel(self) -> int:
        return self.tensor * self.pipeline * self.context


@dataclass(frozen=True)
class LargeModelSpec:
    """The large-model settings of a workload's ``training`` (defaults: plain PyTorch)."""

    selective_checkpointing: bool = False  # training.checkpointing "selective" (full wins when both)
    # training.checkpointing "selective_op": every second matrix product of a block recomputed too
    alternate_matmuls: bool = False
    # training.checkpoint_every N with full checkpointing: every Nth block checkpointed (torchtitan's
    # selective_ac_option N, "selective layer"), the others keep what autograd saves
    checkpoint_every: int = 1
    attention: str = "auto"
    precision_layout: str = "autocast"
    param_dtype: str = "bf16"  # fsdp_mixed: the dtype weights are gathered and computed in
    reduce_dtype: str = "fp32"  # fsdp_mixed: the dtype gradients are reduced in
    fp8: bool = False  # Transformer Engine / torchao float8: matmuls on fp8 tensor cores
    # torchao's enable_fsdp_float8_all_gather: FSDP2 gathers the matrix weights already cast to fp8
    fp8_all_gather: bool = False
    offload: str = "none"
    optimizer_impl: str = "auto"
    parallel: ParallelSpec = ParallelSpec()

    @property
    def is_default(self) -> bool:
        return self == DEFAULT_LARGE


DEFAULT_LARGE = LargeModelSpec()
LARGE_KEYS = {
    "attention",
    "precision_layout",
    "param_dtype",
    "reduce_dtype",
    "fp8",
    "fp8_all_gather",
    "checkpoint_every",
    "offload",
    "optimizer_impl",
    "parallel",
}


def parse_checkpointing(t: Mapping[str, Any]) -> tuple[bool, bool]:
    """``training.checkpointing``: false/true, or "none", "selective", "selective_op", "full".
    Returns (full, selective: either selective policy)."""
    value = t.get("checkpointing", False)
    if isinstance(value, bool):
        return value, False
    if value in CHECKPOINT_POLICIES:
        return value == "full", value in ("selective", "selective_op")
    raise WorkloadError(
        "training.checkpointing",
        f'must be true, false, "none", "selective", "selective_op" or "full", got {value!r}',
    )


def parse_large(t: Mapping[str, Any], sharding: str, precision: str) -> LargeModelSpec:
    """The large-model keys of ``training`` (the caller has rejected unknown keys)."""
    path = "training"
    full, selective = parse_checkpointing(t)
    every = get_int(t, "checkpoint_every", path, default=1, maximum=10**6)
    if every > 1 and not full:
        raise WorkloadError(
            "training.checkpoint_every",
            'checkpoints every Nth block fully: it needs training.checkpointing true or "full"',
        )
    layout = get_choice(t, "precision_layout", path, PRECISION_LAYOUTS, default="autocast")
    half = precision in ("fp16_mixed", "bf16_mixed")
    if layout != "autocast" and not half:
        raise WorkloadError(
            "training.precision_layout",
            f"{layout} keeps half-precision weights: it needs training.precision bf16_mixed or fp16_mixed, "
            f"not {precision}",
        )
    if layout == "fsdp_mixed" and sharding != "fsdp":
        raise WorkloadError("training.precision_layout", f"fsdp_mixed needs training.sharding fsdp, not {sharding}")
    if layout == "megatron" and sharding in ("zero2", "zero3", "fsdp"):
        raise WorkloadError(
            "training.precision_layout",
            f"Megatron's distributed optimizer partitions the optimizer state as ZeRO-1 does; use training.sharding "
            f'"zero1" (distributed optimizer) or "ddp", not {sharding}',
        )
    for key in ("param_dtype", "reduce_dtype"):
        if key in t and layout != "fsdp_mixed":
            raise WorkloadError(f"training.{key}", 'applies to precision_layout "fsdp_mixed" only')
    default_param = "fp16" if precision == "fp16_mixed" else "bf16"
    offload = get_choice(t, "offload", path, OFFLOADS, default="none")
    if offload != "none" and sharding not in ("zero1", "zero2", "zero3", "fsdp"):
        raise WorkloadError(
            "training.offload", f"offloading needs ZeRO or FSDP sharding (training.sharding), not {sharding}"
        )
    if offload.startswith("params") and sharding not in ("zero3", "fsdp"):
        raise WorkloadError(
            "training.offload", f"{offload} offloads parameters: it needs zero3 or fsdp, not {sharding}"
        )
    fp8 = get_bool(t, "fp8", path, default=False)
    if fp8 and not half:
        raise WorkloadError(
            "training.fp8", f"fp8 matmuls run under mixed precision: set training.precision bf16_mixed, not {precision}"
        )
    fp8_all_gather = get_bool(t, "fp8_all_gather", path, default=False)
    if fp8_all_gather and not (fp8 and sharding == "fsdp"):
        raise WorkloadError(
            "training.fp8_all_gather",
            "gathers fp8 weights under FSDP: it needs training.fp8 true and training.sharding fsdp",
        )
    return LargeModelSpec(
        selective_checkpointing=selective,
        alternate_matmuls=t.get("checkpointing") == "selective_op",
        checkpoint_every=every,
        attention=get_choice(t, "attention", path, ATTENTION_KERNELS, default="auto"),
        precision_layout=layout,
        param_dtype=get_choice(t, "param_dtype", path, LAYOUT_DTYPES, default=default_param),
        reduce_dtype=get_choice(t, "reduce_dtype", path, LAYOUT_DTYPES, default="fp32"),
        fp8=fp8,
        fp8_all_gather=fp8_all_gather,
        offload=offload,
        optimizer_impl=get_choice(t, "optimizer_impl", path, OPTIMIZER_IMPLS, default="auto"),
        parallel=_parallel(t.get("parallel", {}), sharding),
    )


def _parallel(value: Any, sharding: str) -> ParallelSpec:
    path = "training.parallel"
    p = require_mapping(value, path)
    reject_unknown(p, {"tensor", "pipeline", "microbatches", "sequence", "context", "hybrid_shard"}, path)
    tensor = get_int(p, "tensor", path, default=1, maximum=MAX_DEGREE)
    pipeline = get_int(p, "pipeline", path, default=1, maximum=MAX_DEGREE)
    sequence = get_bool(p, "sequence", path, default=False)
    if sequence and tensor == 1:
        raise WorkloadError(
            f"{path}.sequence", "sequence parallelism splits over the tensor-parallel group: set tensor > 1"
        )
    micro = get_int(p, "microbatches", path, maximum=10**6) if "microbatches" in p else None
    if micro is not None and pipeline == 1:
        raise WorkloadError(f"{path}.microbatches", "pipeline micro-batches need pipeline > 1")
    hybrid = get_bool(p, "hybrid_shard", path, default=False)
    if hybrid and sharding not in ("fsdp", "zero3"):
        raise WorkloadError(f"{path}.hybrid_shard", f"HYBRID_SHARD is an FSDP (or ZeRO-3) strategy, not {sharding}")
    return ParallelSpec(
        tensor=tensor,
        pipeline=pipeline,
        microbatches=micro,
        sequence=sequence,
        context=get_int(p, "context", path, default=1, maximum=MAX_DEGREE),
        hybrid_shard=hybrid,
    )


def check_degrees(large: LargeModelSpec, devices: int) -> str | None:
    """Why ``devices`` cannot hold the model-parallel layout (None: they can): tensor × pipeline ×
    context must divide the devices, the rest being data-parallel replicas."""
    mp = large.parallel.model_parallel
    if mp > 1 and devices % mp:
        return (
            f"{devices} device(s) cannot be split into tensor {large.parallel.tensor} × pipeline "
            f"{large.parallel.pipeline} × context {large.parallel.context} = {mp} groups"
        )
    return None


def data_parallel(large: LargeModelSpec, devices: int) -> int:
    """Data-parallel replicas: the devices over the model-parallel degree (at least 1)."""
    return max(1, devices // large.parallel.model_parallel)
