"""Attention on an NVIDIA GPU, as the GPU kernel model prices it (docs/sizing.md §4c): PyTorch's SDPA
kernels (flash in half precision, memory-efficient in fp32/TF32) by their FLOPs at a share of the
peak, and unfused attention ("math", "eager") as batched matrix products plus the elementwise kernels
over the L×L scores at the bandwidth. The GPU's figures and the matrix products come from
core/estimate/gpu_kernels.py."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from core.estimate.gemm import gemm_s
from core.estimate.gpu_kernels import KERNEL_FLOOR_S, GpuFigures, matmul_efficiency, matmul_peak

if TYPE_CHECKING:
    from core.estimate.op_work import OpWork

# Flash attention's share of the tensor peak: FlashAttention-2 (Dao 2023, arXiv 2307.08691) reaches
# 50–73 % of the A100's peak forward; PyTorch's built-in kernel is FlashAttention-2. Head dimension 64 is
# at the low end. On Hopper and Blackwell flash attention is priced by its parts instead (below).
ATTENTION_EFFICIENCY = 0.45
MEM_EFFICIENT_FP32_EFFICIENCY = 0.45
# Flash attention on Hopper (PyTorch 2.11 runs cuDNN's SDPA kernels there), by what its kernels do per
# score element and per query row (FlashAttention-3, Shah et al. 2024, arXiv 2407.08608: at head dimension
# 64 an H100's exponentials take as long as its matrix products): the products Q·Kᵀ and P·V and, in
# backward, five more at FLASH_MMA_EFFICIENCY of the tensor peak; one exponential a score forward and one
# in backward's recompute on the special-function units (gpu_kernels.SFU_OPS_PER_SM_CLOCK); and per query
# row FLASH_ROW_ACCESSES head-dimension vectors moved at the bandwidth (q, k, v, o and their gradients,
# the backward's dO·O and its fp32 dQ converted). A causal mask skips the blocks above the diagonal: the
# share 1/2 + FLASH_BLOCK/(2L) of the scores is computed. The two constants are the exact solution of the
# attention kernels a lent H100 timed in two real profiles (BERT-base b64 at 128 tokens, GPT-2 small b8 at
# 1,024, causal; benchmarks/flash_attention.py), held out on the H200's profiles of the same workloads and
# on the GPU suites' steps (docs/accuracy.md).
FLASH_MMA_EFFICIENCY = 0.277
FLASH_ROW_ACCESSES = 15.8
FLASH_BLOCK = 128
# Other head dimensions (a lent H100's profiles of 2026-11-26, tests/fixtures/gpu/h100-profiles-2026-11-26d.
# jsonl): cuDNN's Hopper kernels tile the head dimension by 64 (their names' 64x64x64, 64x128x64), so a
# head of 16 costs its products as one of 64 (measured 4.0 × the price at 16, an encoder of 8 heads of
# 16); a head of 128 kept the tensor cores busier, its products at 0.49 of the peak (two profiles, 0.56 ×
# the price at 0.277): the share grows as (d / 64)^FLASH_HEAD_EXPONENT, fitted on those two
# (benchmarks/flash_attention.py --fit), up to FlashAttention-3's best forward on an H100 (75 %).
FLASH_HEAD_TILE = 64
FLASH_HEAD_EXPONENT = 0.82
FLASH_MMA_CEILING = 0.75


def attention_op_s(
    op: OpWork, b: int, precision: str, gpu: GpuFigures, checkpointing: bool, kernel: str = "auto"
) -> float:
    """Seconds of one SDPA call's forward and backward at batch ``b``: flash in half precision (on Hopper
    and Blackwell by flash_parts_s: cuDNN's kernels, PyTorch 2.11's pick there, for ``kernel`` "auto"; a
    kernel the workload names at FlashAttention-2's flat share), the memory-efficient kernel in fp32/TF32
    (PyTorch's choice where the mask and dropout allow)."""
    half = precision in ("fp16_mixed", "bf16_mixed")
    if half and gpu.hopper:
        return max(sum(flash_parts_s(op, b, gpu, checkpointing, kernel == "auto")), 2 * KERNEL_FLOOR_S)
    flops = op.flops * b * (0.5 if op.causal else 1.0)
    passes = 3.5 + (1.0 if checkpointing else 0.0)  # forward, backward recomputes scores: 2.5 ×
    rate = gpu.half * ATTENTION_EFFICIENCY if half else gpu.fp32 * MEM_EFFICIENT_FP32_EFFICIENCY
    return max(passes * flops / rate, 2 * KERNEL_FLOOR_S)


def flash_head_work(head_dim: float) -> float:
    """Tensor-core seconds × peak per score and FLOP of head dimension in flash attention's products: the
    head dimension padded to FLASH_HEAD_TILE, at FLASH_MMA_EFFICIENCY there and a share rising as
    (d / FLASH_HEAD_TILE)^FLASH_HEAD_EXPONENT above it, at most FLASH_MMA_CEILING."""
    padded = max(head_dim, FLASH_HEAD_TILE)
    efficiency = min(FLASH_MMA_EFFICIENCY * (padded / FLASH_HEAD_TILE) ** FLASH_HEAD_EXPONENT, FLASH_MMA_CEILING)
    return padded / efficiency


def flash_parts_s(
    op: OpWork, b: int, gpu: GpuFigures, checkpointing: bool, cudnn: bool = True
) -> tuple[float, float, float]:
    """(matrix products, exponentials, per-row traffic) seconds of one flash-attention call's forward and
    backward at batch ``b`` on Hopper (FLASH_MMA_EFFICIENCY, FLASH_ROW_ACCESSES); full checkpointing runs
    the forward again. ``cudnn``: cuDNN's kernels, their products by the head dimension as flash_head_work
    prices it; else FlashAttention-2's (training.attention "flash"), at FLASH_MMA_EFFICIENCY whatever the
    head dimension (torchtitan's published H100 runs, which ran it, read within 11 % so)."""
    heads = max(op.heads, 1)
    length = math.sqrt(op.scores / heads)
    head_dim = op.flops / (4 * op.scores)  # two products of 2·L·d FLOPs per score
    share = min(1.0, 0.5 + FLASH_BLOCK / (2 * length)) if op.causal else 1.0
    scores = op.scores * b * share
    again = 1.0 if checkpointing else 0.0
    work = flash_head_work(head_dim) if cudnn else head_dim / FLASH_MMA_EFFICIENCY
    products = (3.5 + again) * 4 * work * scores / gpu.half
    exponentials = (2 + again) * scores / gpu.sfu if gpu.sfu else 0.0  # no clock known: not priced
    rows = b * heads * length
    traffic = FLASH_ROW_ACCESSES * head_dim * 2 * rows / gpu.bandwidth
    return products, exponentials, traffic


def score_bytes(
    attention: str, half: bool, causal: bool, dropout: bool, autocast: bool = True
) -> tuple[float, float, int]:
    """(forward, backward) bytes per L×L score element that an unfused attention's elementwise
    kernels move, and their kernels, the matrix products' own reads and writes of the scores left
    to them. ``attention`` "math": PyTorch's SDPA math kernel in the input's precision p (the scale
    applied to q and k; a causal mask added to the scores: read and write p; softmax read and write
    p, its backward reads the gradient and the output and writes p; dropout reads and writes p and
    writes a bool mask, its backward reads the gradient and the mask and writes p). "eager": the
    attention written out in Python as Hugging Face's eager attention and NVIDIA's BERT
    (DeepLearningExamples' BertSelfAttention): the scores divided by √d and the mask added (each
    read and write p, the division's backward again), softmax in fp32 in half precision (read p, write
    4; backward reads 4 + 4, writes p) and dropout in fp32 (read and write 4, a bool mask), and the
    probabilities cast back to p for the second product (read 4, write p; the gradient's cast read
    p, write 4); in fp32 p = 4 and there are no casts. Under torch.autocast (``autocast``: the weights
    in fp32) the mask is fp32 too (built in the embeddings' dtype), so the masked scores are promoted
    to fp32: the addition writes 4 and softmax reads 4; in backward softmax writes 4 and the sum's
    gradient is cast back to p (read 4, write p). The recorded eager steps under autocast ran so
    (docs/accuracy.md); a model held in half (apex's O2, DeepSpeed) keeps its mask in half."""
    p = 2.0 if half else 4.0
    f = 4.0 if attention == "eager" else p  # softmax and dropout run in fp32 under autocast
    forward, backward, kernels = p + f, 2 * f + p, 2  # softmax, its backward
    if dropout:
        forward += 2 * f + 1
        backward += 2 * f + 1
        kernels += 2
    if attention == "eager":
        forward += 4 * p  # the division and the mask's addition
        backward += 2 * p  # the division's backward (the addition's gradient passes through)
        kernels += 3
        if half:  # the probabilities' cast to p and its gradient's back to fp32
            forward += f + p
            backward += p + f
            kernels += 2
        if half and autocast:  # the fp32 mask promotes the sum: written and read back in fp32
            forward += 2 * (f - p)
            backward += (f - p) + (f + p)  # softmax's gradient in fp32; the sum's gradient cast to p
            kernels += 1
    elif causal:
        forward += 2 * p
        kernels += 1
    return forward, backward, kernels


def unfused_attention_s(
    op: OpWork, b: int, precision: str, gpu: GpuFigures, checkpointing: bool, attention: str, autocast: bool = True
) -> tuple[float, float]:
    """(matrix products, elementwise kernels) seconds of one attention's forward and backward
    computed unfused ("math": PyTorch's SDPA math kernel; "eager": written out in Python): the
    batched products Q·Kᵀ and P·V and their four gradients over batch × heads, each writing or
    reading the L×L scores (at the bandwidth when their reduction over the head dimension is short),
    and the softmax, mask and dropout kernels over the scores (``score_bytes``); full checkpointing
    runs the forward again. Causal masks are applied, not skipped: every score is computed.
    ``autocast``: half precision under torch.autocast (score_bytes)."""
    heads = max(op.heads, 1)
    length = math.sqrt(op.scores / heads)
    head_dim = op.flops / (4 * op.scores)  # two products of 2·L²·d FLOPs per head
    peak, nbytes = matmul_peak(precision, gpu)
    eff = matmul_efficiency(precision, gpu)
    rows = b * heads * length
    # cuBLAS's batched products: a side under a tile (the head dimension) in a smaller tile
    scores_gemm = gemm_s(rows, length, head_dim, peak, gpu, nbytes, eff, True)  # Q·Kᵀ, dO·Vᵀ: write L×L
    reduce_gemm = gemm_s(rows, head_dim, length, peak, gpu, nbytes, eff, True)  # P·V, dS·K, dSᵀ·Q, Pᵀ·dO
    forward = scores_gemm + reduce_gemm
    backward = scores_gemm + 3 * reduce_gemm
    fwd_bytes, bwd_bytes, kernels = score_bytes(attention, nbytes == 2, op.causal, op.attn_dropout, autocast)
    elems = op.scores * b
    recompute = 1.0 if checkpointing else 0.0
    moved = ((1 + recompute) * fwd_bytes + bwd_bytes) * elems / gpu.bandwidth
    return (1 + recompute) * forward + backward, max(moved, kernels * KERNEL_FLOOR_S)
