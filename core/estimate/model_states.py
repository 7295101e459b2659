"""Model states on one device: weights, gradients, master weights and optimizer state, the copies
kept between forward and backward, and what offload moves to host RAM or NVMe (docs/sizing.md §4e).

Each precision layout (``training.precision_layout``) keeps the states in its own dtypes:

* autocast (PyTorch AMP): fp32 weights, gradients and optimizer state; autocast's half-precision
  copies of the matmul weights live from forward to backward.
* fsdp_mixed (FSDP2 ``MixedPrecisionPolicy``): fp32 sharded weights (they are the master copy) and
  fp32 sharded gradients, the optimizer state sharded; the unit being computed is gathered in
  ``param_dtype``, so there are no autocast copies; in its backward the unit's unsharded gradient in
  ``param_dtype`` and the reduce-scatter input in ``reduce_dtype`` are in flight (FSDP2
  ``foreach_reduce``).
* deepspeed (bf16/fp16 engine): 2-byte weights and gradients, fp32 master weights and Adam state
  (12 bytes) partitioned by ZeRO; at the optimizer step the gradient partition is upcast to fp32
  (stage_1_and_2.py / stage3.py ``_prepare_fp32_grad_for_sub_group``; ZeRO-3 frees the 2-byte
  partition once copied).
* megatron (Megatron-LM, docs "distributed optimizer"): bf16 weights with fp32 main gradients, or
  fp16 weights and gradients with an fp32 gradient copy; master weights and Adam state; the
  distributed optimizer (sharding "zero1") partitions them over the data-parallel ranks.

Model parallelism: tensor × pipeline ranks each hold parameters/(t·p): the layers split evenly over
the stages and each weight over t, the embedding and LM head split over t by vocabulary as
Megatron's vocab-parallel embedding does (an assumption: the first and last stage hold the
embedding and head on top of their layers in practice). Context-parallel ranks hold the same
weights; ZeRO, FSDP and the distributed optimizer shard over data × context ranks (torchtitan,
Megatron). HYBRID_SHARD shards over the data-parallel ranks of one node and replicates across nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.spec.large import DEFAULT_LARGE, LAYOUT_TEXT, OFFLOAD_TEXT, LargeModelSpec, data_parallel
from core.vocabulary import (
    OPTIMIZER_STATES,
    PRECISION_BYTES,
    SHARDS_GRADIENTS,
    SHARDS_OPTIMIZER_STATES,
    SHARDS_PARAMETERS,
)

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
FP8_BYTES = 1


@dataclass(frozen=True)
class ModelStates:
    """Bytes of the model states on one device (model-parallel rank) through a training step."""

    weights: int  # the weights held on the device, with the unit gathered at a time
    grad_bytes: float  # bytes per gradient element on the device as gradients appear in backward
    grad_in_flight: int  # during backward: an unsharded unit's gradients waiting for their reduce
    grads_step: int  # gradient bytes on the device at the optimizer step
    optimizer_states: int  # master weights and optimizer state on the device
    weight_copies: int  # copies kept from forward to backward (autocast half, fp8)
    opt_temp_bytes: int  # the optimizer's scratch on the device during its step
    offload_cpu: int  # host RAM this device's rank needs for offloaded states
    offload_nvme: int  # NVMe bytes this device's rank needs
    shards: int  # ranks the sharded states are divided over
    local_params: int  # parameters on this model-parallel rank


def shard_degree(large: LargeModelSpec, devices: int, nodes: int = 1) -> int:
    """Ranks ZeRO/FSDP/the distributed optimizer shard over: data × context ranks; with HYBRID_SHARD
    those within one node only."""
    d = data_parallel(large, devices) * large.parallel.context
    if large.parallel.hybrid_shard and nodes > 1:
        return max(1, d // nodes)
    return max(1, d)


def model_states(
    *,
    parameters: int,
    buffers: int,
    matmul_params: int,
    largest_unit: int,
    largest_param: int,
    precision: str,
    optimizer: str,
    device_kind: str,
    devices: int = 1,
    nodes: int = 1,
    sharding: str = "none",
    large: LargeModelSpec = DEFAULT_LARGE,
    largest_unit_matmul: int = 0,
) -> ModelStates:
    """The model states of one device for this layout, sharding, parallelism and offload.

    ``largest_unit``: parameters of the largest checkpoint segment (the unit FSDP/ZeRO-3 gathers),
    ``largest_unit_matmul`` of them matrix weights;
    ``largest_param``: of the largest single parameter (CPU optimizers' per-tensor scratch)."""
    mp = large.parallel.tensor * large.parallel.pipeline
    p = -(-parameters // mp)
    matmul = -(-matmul_params // mp)
    unit = -(-largest_unit // large.parallel.tensor)
    buffers = -(-buffers // mp)
    n = shard_degree(large, devices, nodes)
    so = n if sharding in SHARDS_OPTIMIZER_STATES else 1
    sg = n if sharding in SHARDS_GRADIENTS else 1
    sw = n if sharding in SHARDS_PARAMETERS else 1
    k = OPTIMIZER_STATES[optimizer]
    layout = large.precision_layout
    half = precision.endswith("_mixed")
    in_flight = 0
    if layout == "autocast":  # today's figures, unchanged
        pb, gb, _, ob = PRECISION_BYTES[precision]
        weights = p * pb // sw + buffers * 4 + (unit * pb if sw > 1 else 0)
        grad_bytes = gb / sg
        grads_step = p * gb // sg + (p * gb if sharding == "ddp" and n > 1 else 0)
        states = k * p * ob // so
        master = 0
        copies = matmul * 2 if half else 0
        param_shard = p * pb // sw
    elif layout == "fsdp_mixed":
        pd, rd = DTYPE_BYTES[large.param_dtype], DTYPE_BYTES[large.reduce_dtype]
        weights = p * 4 // sw + buffers * 4 + unit * pd
        grad_bytes = 4 / sg
        in_flight = unit * (pd + rd)
        grads_step = p * 4 // sg
        states = k * p * 4 // so
        master = 0
        copies = 0
        param_shard = p * 4 // sw
    elif layout == "deepspeed":
        weights = p * 2 // sw + buffers * 4 + (unit * 2 if sw > 1 else 0)
        grad_bytes = 2 / sg
        # the fp32 gradient partition at the step; ZeRO-3 frees the 2-byte partition once copied
        grads_step = p * 4 // so + (0 if sharding in SHARDS_PARAMETERS else p * 2 // sg)
        states = k * p * 4 // so
        master = p * 4 // so
        copies = 0
        param_shard = p * 2 // sw
    elif not half:  # megatron in fp32: weights, gradients and Adam state in fp32, no master copy
        weights = p * 4 + buffers * 4
        grad_bytes = 4.0
        grads_step = p * 4
        states = k * p * 4 // so
        master = 0
        copies = 0
        param_shard = p * 4
    else:  # megatron: bf16 weights + fp32 main grads, or fp16 weights and grads + an fp32 copy
        fp16 = precision == "fp16_mixed"
        weights = p * 2 + buffers * 4
        grad_bytes = 2.0 if fp16 else 4.0
        grads_step = p * 2 + p * 4 // so if fp16 else p * 4
        states = k * p * 4 // so
        master = p * 4 // so
        copies = 0
        param_shard = p * 2
    if large.fp8:  # fp8 weight copies (Transformer Engine / torchao float8) replace autocast's
        copies = matmul * FP8_BYTES
    if large.fp8_all_gather and sw > 1:
        # FSDP2 gathers the matrix weights cast to fp8 on their shard (torchao's
        # enable_fsdp_float8_all_gather): the gathered unit holds them in 1 byte, and they are the
        # weights the matmuls save for backward — freed at reshard and gathered again — so no fp8 copy
        # of every weight stays from forward to backward
        share = min(1.0, largest_unit_matmul / largest_unit) if largest_unit else 0.0
        unit_dtype = {"fsdp_mixed": DTYPE_BYTES[large.param_dtype]}.get(layout, 4)
        gathered = unit * (share * FP8_BYTES + (1 - share) * unit_dtype)
        weights += gathered - unit * unit_dtype  # the unit's gradients stay in param_dtype
        copies = 0
    opt_temp = _optimizer_temporaries(optimizer, device_kind, large.optimizer_impl, layout, p // so, largest_param)
    cpu = nvme = 0
    off = large.offload
    if off != "none":
        # the master weights and optimizer state leave the device; the fp32 gradient partition is
        # copied out to host memory for the CPU's optimizer step (ZeRO-Offload, FSDP CPUOffloadPolicy)
        moved = states + master  # fsdp_mixed/autocast: the fp32 weights are the master copy (below)
        cpu += p * 4 // so
        if off.endswith("nvme"):
            nvme += moved
        else:
            cpu += moved
        states = master = 0
        opt_temp = 0  # the step runs on the CPU
        # gradients leave as soon as their partition is reduced: none kept on the device at the step
        # unless the layout keeps them whole (ZeRO-1 keeps the full half-precision gradients)
        partitions = sharding in SHARDS_GRADIENTS
        grads_step = 0 if partitions else p * round(grad_bytes)
        if partitions:
            in_flight = max(in_flight, unit * round(grad_bytes * sg))
            grad_bytes = 0.0
        if off.startswith("params"):
            # the unit computed: in param_dtype (fsdp_mixed), 16-bit (deepspeed), fp32 (autocast)
            unit_bytes = {"fsdp_mixed": DTYPE_BYTES[large.param_dtype], "deepspeed": 2}.get(layout, 4)
            gathered = unit * unit_bytes
            weights = gathered + buffers * 4
            if off.endswith("nvme"):
                nvme += param_shard
            else:
                cpu += param_shard
    return ModelStates(
        weights=int(weights),
        grad_bytes=grad_bytes,
        grad_in_flight=int(in_flight),
        grads_step=int(grads_step),
        optimizer_states=int(states + master),
        weight_copies=int(copies),
        opt_temp_bytes=int(opt_temp),
        offload_cpu=int(cpu),
        offload_nvme=int(nvme),
        shards=n,
        local_params=p,
    )


def _optimizer_temporaries(optimizer: str, device_kind: str, impl: str, layout: str, params: int, largest: int) -> int:
    """Bytes of scratch the optimizer step allocates.

    PyTorch on CPU runs the single-tensor loop (Adam builds two scratch tensors of the size of the
    parameter it updates); on CUDA the foreach path builds one fp32 list as large as all its
    parameters (``_foreach_sqrt`` of the second moments); fused kernels (``fused=True``, DeepSpeed's
    and Megatron's FusedAdam) update in place."""
    if optimizer in ("sgd", "sgd_momentum"):
        return 0
    if impl == "fused" or (impl == "auto" and layout in ("deepspeed", "megatron")):
        return 0
    per_tensor = (2 if optimizer in ("adam", "adamw") else 1) * largest * 4
    if impl == "per_tensor":
        return per_tensor
    if impl == "foreach" or device_kind == "gpu":
        return params * 4
    return per_tensor


def bytes_per_parameter(layout: str, precision: str, sharding: str, shards: int, optimizer: str = "adamw") -> float:
    """Model-state bytes per parameter at the optimizer step (weights + gradients + master weights +
    optimizer state, no gathered unit, no copies): the figure Megatron-LM's and DeepSpeed's docs
    publish. ``shards``: the data-parallel ranks they are partitioned over."""
    big = 10**12  # large enough that integer division leaves no rounding to speak of
    s = model_states(
        parameters=big,
        buffers=0,
        matmul_params=0,
        largest_unit=0,
        largest_param=0,
        precision=precision,
        optimizer=optimizer,
        device_kind="gpu",
        devices=shards,
        sharding=sharding,
        large=LargeModelSpec(precision_layout=layout),
    )
    return (s.weights + s.grads_step + s.optimizer_states) / big


def states_note(large: LargeModelSpec, offload_cpu: int, offload_nvme: int, per_node: int) -> list[str]:
    """The sizing's assumption line for a precision layout, fp8 or offload other than the default
    (empty for plain autocast without offload)."""
    if large.precision_layout == "autocast" and not large.fp8 and large.offload == "none":
        return []
    parts = [LAYOUT_TEXT[large.precision_layout]]
    if large.precision_layout == "fsdp_mixed":
        parts[0] += f" (param_dtype {large.param_dtype}, reduce_dtype {large.reduce_dtype})"
    if large.fp8_all_gather:
        parts.append(
            "FSDP gathers the matrix weights in fp8 (torchao's float8 all-gather): half the gather traffic, "
            "the gathered unit's matrix weights in 1 byte, no fp8 copies kept from forward to backward"
        )
    elif large.fp8:
        parts.append("fp8 copies of the matmul weights (1 byte each) kept from forward to backward")
    if large.offload != "none":
        need = []
        if offload_cpu:
            need.append(f"{offload_cpu * per_node / 1e9:,.1f} GB of host RAM")
        if offload_nvme:
            need.append(f"{offload_nvme * per_node / 1e9:,.1f} GB of NVMe")
        parts.append(f"{OFFLOAD_TEXT[large.offload]}: {' and '.join(need)} per node")
    return ["model states: " + "; ".join(parts)]
