"""The memory-bound kernels of a training step on an NVIDIA GPU (docs/sizing.md §4c): elementwise ops
and norms, autocast's casts, the loss and the optimizer, each by the bytes its kernels move at the
bandwidth reached (core/estimate/gpu_kernels.py: the GPU's figures, the matrix products and the
shortest kernel). Two of them are set from the kernels a lent H100 and H200 ran in real profiles
(tests/fixtures/profiles/, benchmarks/memory_kernels.py): the optimizer's passes, counted from
PyTorch's foreach code, and autocast's casts, which PyTorch runs below the streaming rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.estimate.gpu_kernels import KERNEL_FLOOR_S, GpuFigures

# Under torch.autocast a matrix product casts an fp32 input to half (read 4 bytes, write 2 an element)
# and autograd casts the input's half gradient back (read 2, write 4): one kernel each way
AUTOCAST_CAST_BYTES = 6
# ... at this share of the bandwidth the other elementwise kernels reach: PyTorch casts half ↔ fp32 in
# its generic copy kernels (the unrolled one with LoadWithCast/StoreWithCast beside the vectorized
# bfloat16_copy). The share is the one at which a lent H100's profile of BERT-base b64 bf16 is priced as
# measured, 2.86 ms of casts a step (2.12 ms at the streaming rate; the kernels' floors do not scale;
# benchmarks/memory_kernels.py --fit); held out on GPT-2 small b8's profile (−2.5 %; its casts also carry
# its 50,257-word logits) and on the H200's (−16, −18 %; −40 % at the streaming rate; docs/accuracy.md).
CAST_BANDWIDTH_SHARE = 0.70
# fp32 words each parameter's step reads and writes in PyTorch's foreach (multi-tensor apply)
# optimizers, the default for CUDA tensors, counted from torch/optim's _multi_tensor_* code (one pass
# per _foreach_ call; a scalar's bias correction on the host): AdamW — params·(1 − lr·wd) (2), lerp of
# the first moment (3), the second moment ×β₂ (2) and + (1 − β₂)·g² (3), its sqrt (2), ÷ the correction
# (2), + eps (2), the addcdiv into the parameters (4): 20; Adam the same without weight decay's pass:
# 18; SGD 3; with momentum buf·m (2), + g (3), the update (3): 8; RMSprop 13; Adagrad 11. A lent H100
# ran AdamW's seven kinds of kernel in 3.23 ms a step for BERT-base (20 words at the bandwidth reached:
# 3.25) and 3.78 ms for GPT-2 small (3.71); the H200 2.40 and 2.85 ms (2.27, 2.59: 5–9 % faster than
# measured). CPU sizings keep op_work.OPTIMIZER_ACCESSES (the for-loop implementation, calibrated).
FOREACH_ACCESSES = {"sgd": 3, "sgd_momentum": 8, "adam": 18, "adamw": 20, "rmsprop": 13, "adagrad": 11}
# Elementwise kinds: tensor elements read or written per element over forward and backward, and
# kernels launched (op_work.ELEMENT_ACCESSES holds the accesses; the kernel counts are TrainRig's
# from PyTorch's CUDA kernels: dropout forward and backward, layer norm forward, input-gradient
# and weight-gradient kernels, embedding backward's sort and accumulate).
KERNELS_PER_KIND = {
    "relu": 2,
    "tanh": 2,
    "gelu": 2,
    "softmax": 2,
    "batchnorm": 2,
    "layernorm": 3,
    "maxpool": 2,
    "avgpool": 2,
    "dropout": 2,
    "add": 2,
    "embedding": 4,
    "rmsnorm_fp32": 16,  # 7 forward (cast, pow, mean, add+rsqrt, mul, cast, mul), 9 backward
    "rotary_half": 10,
    "rotary_complex": 6,
}


def elementwise_s(kind: str, elems: float, nbytes: int, gpu: GpuFigures, fused: bool, accesses: float) -> float:
    """Seconds of an elementwise kind's forward and backward kernels over ``elems`` elements;
    ``fused`` (torch.compile): its bytes are moved once with its neighbour's, about half."""
    moved = accesses * nbytes * elems / gpu.bandwidth
    kernels = KERNELS_PER_KIND.get(kind, 2)
    if fused:
        return moved * 0.5
    return max(moved, kernels * KERNEL_FLOOR_S)


def autocast_cast_s(elems: Any, gpu: GpuFigures, fused: bool = False, kernels: Any = 1) -> Any:
    """Seconds of one direction of autocast's casts of ``elems`` elements (one, or an array) in
    ``kernels`` casts: an fp32 input to half for a matrix product, or its gradient back; at least a
    kernel's floor each. ``fused`` (torch.compile): folded into its neighbour's kernel as an
    elementwise chain is, half its bytes."""
    moved = AUTOCAST_CAST_BYTES * np.asarray(elems, dtype=float) / (gpu.bandwidth * CAST_BANDWIDTH_SHARE)
    return 0.5 * moved if fused else np.maximum(moved, np.asarray(kernels) * KERNEL_FLOOR_S)


def optimizer_s(params: float, gpu: GpuFigures, accesses: float) -> float:
    """Seconds of a foreach optimizer step on the device: its fp32 words per parameter
    (FOREACH_ACCESSES) at the bandwidth reached. Its multi-tensor-apply launches (a few per foreach op
    and chunk of tensors) are issued back to back and cost the host, not the device, their time
    (core/estimate/pass_work.py's overhead); they are not divided among shards when the states are
    sharded."""
    return accesses * 4 * params / gpu.bandwidth


def mixed_precision_s(precision: str, matmul_params: float, params: float, gpu: GpuFigures, n_weights: int) -> float:
    """Autocast's per-step work: each matrix weight cast to half (read 4, write 2 bytes) in forward
    and its gradient cast back (read 2, write 4), one kernel each, at CAST_BANDWIDTH_SHARE; GradScaler
    (fp16): unscale and inf/NaN check over every gradient (read and write 4 bytes) and its scale update."""
    if precision not in ("fp16_mixed", "bf16_mixed"):
        return 0.0
    cast_bps = gpu.bandwidth * CAST_BANDWIDTH_SHARE
    seconds = 2 * AUTOCAST_CAST_BYTES * matmul_params / cast_bps + 2 * n_weights * KERNEL_FLOOR_S
    if precision == "fp16_mixed":
        seconds += 8 * params / gpu.bandwidth + 4 * KERNEL_FLOOR_S
    return seconds


# Cross-entropy's fp32 bytes per logit: log-softmax forward reads each row twice (max and sum, then
# the output pass) and writes once (12); NLL's backward writes a dense gradient (4); log-softmax's
# backward reads the gradient twice (its row sum, then the output pass) and the output once and
# writes once (16). Half-precision logits add the cast to fp32 and back (autocast's, or the
# `.float()` of Llama-style training code): read 2 write 4 forward, read 4 write 2 backward (12).
LOSS_BYTES_FP32 = 32.0
LOSS_CAST_BYTES = 12.0


def loss_s(elems: float, gpu: GpuFigures, half_logits: bool = False) -> float:
    """Cross-entropy over ``elems`` logits in fp32 (autocast runs it in fp32): log-softmax, NLL and
    their backward in 4 kernels (6 with the casts of half-precision logits)."""
    per_logit = LOSS_BYTES_FP32 + (LOSS_CAST_BYTES if half_logits else 0.0)
    return max(per_logit * elems / gpu.bandwidth, (6 if half_logits else 4) * KERNEL_FLOOR_S)
