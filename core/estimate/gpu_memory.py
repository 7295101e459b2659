"""The memory-bound kernels of a training step on an NVIDIA GPU (docs/sizing.md §4c): elementwise ops
and norms, autocast's casts, the loss and the optimizer, each by the bytes its kernels move at the
bandwidth reached (core/estimate/gpu_kernels.py: the GPU's figures, the matrix products and the
shortest kernel). Two of them are set from the kernels a lent H100 and H200 ran in real profiles
(tests/fixtures/profiles/, benchmarks/memory_kernels.py): the optimizer's passes, counted from
PyTorch's foreach code, and autocast's casts, which PyTorch runs below the streaming rate. Two sum a
gradient over many rows below the streaming rate, as a lent H100's profiles of 23 suite steps showed
(tests/fixtures/gpu/h100-profiles-2026-11-26d.jsonl, benchmarks/row_reductions.py): a bias's gradient
and layer norm's weight gradient; batch norm on NCHW runs a block a channel (PyTorch's kernels in bf16,
cuDNN's in fp16 and fp32); and max pooling is paced by its index arithmetic (a lent H200's profiles too,
benchmarks/cnn_kernels.py).
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


# A linear layer's bias gradient: PyTorch sums the output gradient over its rows in its generic reduction
# kernel (reduce_kernel over dim 0, the partial sums of many blocks combined in a second pass). A lent
# H100 ran each such call in BIAS_REDUCE_FLOOR_S plus its bytes at a share of the streaming bandwidth that
# grows with the bytes of one row (the outputs its threads read side by side): (row bytes /
# BIAS_ROW_BYTES)^BIAS_ROW_EXPONENT, all of it from BIAS_ROW_BYTES up. 128 bf16 outputs (256 bytes a row)
# stream at 13 %, 768 at 33 %; fitted on nine of its profiles (36–72 calls each), held out on the
# H100's and H200's BERT-base b64 and GPT-2 small b8 profiles: +10, +11, −4, −3 % (the streaming price
# alone: −65 … −74 %). Convolutions' bias gradients (a reduction over the images and pixels) keep the
# streaming price.
BIAS_REDUCE_FLOOR_S = 8e-6
BIAS_ROW_BYTES = 8000.0
BIAS_ROW_EXPONENT = 0.6
# Layer norm's weight and bias gradients: PyTorch's GammaBetaBackward kernel gives each block of 32 × 32
# threads 32 of the normalised features and every row, so a layer with few features runs on few SMs, each
# reading its columns of the input and its gradient (two tensors) at the rate one SM's outstanding loads
# reach; only with more than 65,536 rows and fewer column blocks than half the SMs does it split the rows
# among blocks (layer_norm_kernel.cu). Priced as that per-block stream at GAMMA_BETA_BYTES_PER_CLOCK a
# clock, on top of the streaming bytes elementwise_s counts: at 128 features and 65,536 rows the kernel
# took 262 µs where its bytes stream in 25. Fitted on eight H100 profiles, held out on the H100's and
# H200's BERT-base and GPT-2 profiles (−3, −4, −9, −9 %; the streaming price alone −59 … −69 %).
GAMMA_BETA_BYTES_PER_CLOCK = 41.5
GAMMA_BETA_SPLIT_ROWS = 65536


# BatchNorm2d on NCHW bf16 activations: PyTorch keeps bf16 off cuDNN's batch norm (which takes fp16 and
# fp32) and runs its own per-channel kernels (Normalization.cuh): one block of 512 threads a channel walks
# the channel's images and pixels, each thread one element per dependent load, so a pass streams at
# BATCHNORM_ELEMENTS_PER_CLOCK elements a clock per channel, up to BATCHNORM_BLOCKS_PER_SM channels on an
# SM at once. Three passes: forward's statistics, backward's reduction and its input gradient (the
# forward's normalisation is an elementwise grid, priced by its bytes). A lent H100 took 23 ms a step in
# these kernels for ResNet-18 at batch 256 (224 × 224) where their bytes stream in 2.4; the rate is
# fitted on four bf16 NCHW profiles (ResNet-18, two random CNNs, the small CNN: −20 … +34 %).
# channels_last runs PyTorch's channels-last kernels and fp16/fp32 cuDNN's, priced by their bytes.
BATCHNORM_ELEMENTS_PER_CLOCK = 0.64
BATCHNORM_BLOCKS_PER_SM = 4
BATCHNORM_PASSES = 3


# BatchNorm2d in fp16 and fp32 on NCHW runs cuDNN's kernels: up to CUDNN_BN_SINGLE_READ_ROWS elements a
# channel, kernels that read a channel once (bn_*_1C11_singleread, priced by their bytes); above, one
# block a channel (bn_fw_tr_1C11_kernel_NCHW, bn_bw_1C11_kernel_new: as many blocks as channels in the
# profiles) streaming the channel at CUDNN_BN_FORWARD_PER_CLOCK elements a clock in forward and
# CUDNN_BN_BACKWARD_PER_CLOCK in backward, up to BATCHNORM_BLOCKS_PER_SM channels on an SM at once.
# Fitted on four layers of three profiles (benchmarks/cnn_kernels.py --fit; 16–128 channels of
# 262,144–1,048,576 elements, fp16 and fp32, a lent H200); held out on ResNet-50 fp16 b256's NCHW profiles
# (41.6 and 39.5 ms of the H100's and H200's 91.5 and 82.2 ms of kernels: docs/accuracy.md).
CUDNN_BN_SINGLE_READ_ROWS = 16384
CUDNN_BN_FORWARD_PER_CLOCK = 0.85
CUDNN_BN_BACKWARD_PER_CLOCK = 0.37
# MaxPool2d's CUDA kernels (max_pool_forward_nchw/_nhwc: a thread an output, walking its window;
# max_pool_backward_nchw: a thread an input element, searching the outputs whose windows hold it, _nhwc a
# block of channels) are paced by their index arithmetic, not their bytes: fp16 and fp32 took the same time
# on a lent H200, and the H100 and H200 the same per element. Elements of the input an SM clock, fitted on
# the profiled suite steps (benchmarks/cnn_kernels.py --fit).
MAXPOOL_FORWARD_PER_CLOCK = 1.16
MAXPOOL_BACKWARD_PER_CLOCK = {"contiguous": 0.405, "channels_last": 0.59}


def block_a_channel_s(rows: Any, channels: Any, clocks_per_element: float, gpu: GpuFigures) -> Any:
    """Seconds of batch-norm kernels that give each of ``channels`` channels one block, walking its ``rows``
    elements at ``clocks_per_element``, in waves of BATCHNORM_BLOCKS_PER_SM channels an SM (0: no clock known)."""
    rows = np.asarray(rows, dtype=float)
    if gpu.clock <= 0:
        return np.zeros_like(rows)
    waves = np.ceil(np.asarray(channels, dtype=float) / (BATCHNORM_BLOCKS_PER_SM * gpu.sms))
    return waves * rows * clocks_per_element / gpu.clock


def cudnn_batchnorm_s(rows: Any, channels: Any, gpu: GpuFigures) -> Any:
    """Seconds of cuDNN's NCHW batch norm (forward and backward) over ``channels`` channels of ``rows``
    elements each where it runs a block a channel (0 where it reads a channel once, or no clock known)."""
    clocks = 1 / CUDNN_BN_FORWARD_PER_CLOCK + 1 / CUDNN_BN_BACKWARD_PER_CLOCK
    seconds = block_a_channel_s(rows, channels, clocks, gpu)
    return np.where(np.asarray(rows) > CUDNN_BN_SINGLE_READ_ROWS, seconds, 0.0)


def maxpool_s(in_elems: Any, memory_format: str, gpu: GpuFigures) -> Any:
    """Seconds of MaxPool2d's forward and backward kernels over ``in_elems`` input elements at their
    element rates (0 where no clock is known)."""
    if gpu.clock <= 0:
        return np.zeros_like(np.asarray(in_elems, dtype=float))
    backward = MAXPOOL_BACKWARD_PER_CLOCK["channels_last" if memory_format == "channels_last" else "contiguous"]
    per_clock = 1 / MAXPOOL_FORWARD_PER_CLOCK + 1 / backward
    return np.asarray(in_elems, dtype=float) * per_clock / (gpu.sms * gpu.clock)


def native_batch_norm(precision: str, memory_format: str) -> bool:
    """Whether PyTorch runs BatchNorm2d on its own per-channel kernels (batchnorm_channel_s): bf16
    activations in the NCHW layout."""
    return precision == "bf16_mixed" and memory_format != "channels_last"


def batchnorm_channel_s(rows: Any, channels: Any, gpu: GpuFigures) -> Any:
    """Seconds of PyTorch's per-channel batch-norm kernels (NCHW, bf16) over ``channels`` channels of
    ``rows`` elements each (images × pixels): BATCHNORM_PASSES latency-bound passes, in waves of
    BATCHNORM_BLOCKS_PER_SM channels an SM."""
    return block_a_channel_s(rows, channels, BATCHNORM_PASSES / BATCHNORM_ELEMENTS_PER_CLOCK, gpu)


def bias_reduce_s(rows: Any, width: Any, calls: Any, nbytes: int, gpu: GpuFigures) -> Any:
    """Seconds of the bias-gradient reductions of linear layers: ``calls`` reductions each of ``rows`` ×
    ``width`` gradient elements of ``nbytes`` (arrays or numbers)."""
    width = np.asarray(width, dtype=float)
    share = np.minimum(1.0, (width * nbytes / BIAS_ROW_BYTES) ** BIAS_ROW_EXPONENT)
    return np.asarray(calls) * (BIAS_REDUCE_FLOOR_S + np.asarray(rows) * width * nbytes / (gpu.bandwidth * share))


def gamma_beta_s(rows: Any, width: Any, nbytes: Any, gpu: GpuFigures) -> Any:
    """Seconds a layer norm's weight-gradient kernel spends beyond streaming its two tensors (which
    elementwise_s prices): one block's 32 columns of every row at GAMMA_BETA_BYTES_PER_CLOCK a clock; none
    where PyTorch splits the rows among blocks (GAMMA_BETA_SPLIT_ROWS)."""
    rows = np.asarray(rows, dtype=float)
    if gpu.clock <= 0:  # no clock known: not priced
        return np.zeros_like(rows)
    column_blocks = np.ceil(np.asarray(width, dtype=float) / 32)
    split = (rows > GAMMA_BETA_SPLIT_ROWS) & (column_blocks < gpu.sms / 2)
    per_block = rows * 32 * 2 * np.asarray(nbytes) / (GAMMA_BETA_BYTES_PER_CLOCK * gpu.clock)
    return np.where(split, 0.0, per_block)


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
