"""cuDNN's recurrent layers (nn.LSTM, nn.GRU) on an NVIDIA GPU, as the GPU kernel model prices them
(docs/sizing.md §4c): the algorithm PyTorch picks for the call, the call's fixed cost, the input
projections of all time steps and the weight gradients as large GEMMs, then the time steps one after
another. The GPU's figures and the matrix products come from core/estimate/gpu_kernels.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.estimate.gemm import gemm_s
from core.estimate.gpu_kernels import KERNEL_FLOOR_S, GpuFigures, cudnn_precision, matmul_efficiency, matmul_peak

if TYPE_CHECKING:
    from core.estimate.op_work import OpWork

# The three prices below are the least squared log error over a seeded half (seed 2026) of DeepBench's
# 123 LSTM/GRU layers timed through PyTorch on a lent H200 (fp32, TF32, fp16; tests/fixtures/gpu/
# h200-kernels-2026-11-26.json), held out on the other half and on the GPU suites' recurrent networks
# (benchmarks/h200_kernels.py --fit-rnn; docs/accuracy.md, "cuDNN's recurrent algorithms").
#
# What a call costs besides its kernels: a GRU of one time step took 0.98–1.10 ms forward and backward
# on that H200 and 0.11–0.13 ms forward alone, and the longer layers' times are that much above their
# steps' (a GRU of 2,048 at 187 … 1,500 steps: 40 µs a step + 0.8 ms). cuDNN's setup of a call, on the
# host: divided by the host's speed as calibrate's probe measures it; cuDNN's own (Baidu's DeepBench,
# calling cuDNN 7.6 from C++ on a V100, reads closer with it: 26 of 82 layers within 25 % against 20).
# Paid per layer: DeepBench's layers are single, and the suites' two-layer networks (held out) read
# closer so than with one per nn.LSTM module (the suites' recurrent steps 42 against 40 of 55 within 25 %,
# median −3 against −10 %; 39 of 55 before the three prices, benchmarks/h200_kernels.py).
RNN_CALL_S = 0.9e-3
# The shortest a time step's recurrent product takes in the standard algorithm, forward and backward
# alike: each step's product waits for the step before, a chain of dependent kernels cuDNN launches from
# the host inside the one library call, so the floor is divided by the host's speed (the H200's host,
# where it was fitted, measured 1.04 × the reference by the host probe).
RNN_STEP_FLOOR_S = 16e-6
# A time step of cuDNN's persistent kernels (one kernel for the whole sequence, its recurrent weights
# kept on the SMs, no launch per step): the fp16 LSTMs of hidden 256 … 1,024 at batch ≤ 128 ran 1.5–9 µs
# a step forward on that H200, where the standard algorithm's chain takes 14–24.
RNN_PERSIST_STEP_S = 4e-6

# PyTorch's choice (aten/src/ATen/native/cudnn/RNN.cpp get_algo, PyTorch 2.x with cuDNN ≥ 8.2.1), per
# direction of the pass: PERSIST_STATIC_SMALL_H where the hidden size is at most 192 in forward, 128 in
# backward (LSTM/GRU; any type but double, compute capability ≥ 6.0); else PERSIST_STATIC in half
# precision for a one-layer, one-direction call of hidden ≤ 1,024 with the hidden and input sizes
# multiples of 128, on a GPU the device heuristic admits (LSTM: batch a multiple of 8 up to 128 on
# compute capability 8.0+ with at least 98 SMs, not 8.6; Volta's own batch and sequence rules; never
# Turing, nor GRUs on 8.0+); else STANDARD. torch.autocast runs cuDNN's recurrent layers in fp16
# whatever its dtype (aten/src/ATen/cudnn/AutocastRNN.cpp casts the input and weights to half), so
# bf16_mixed takes the half-precision algorithms too. The small-hidden kernels are priced as the
# persistent ones: no measurement here has a hidden size under 256.
SMALL_H_LIMIT = {True: 192, False: 128}  # forward, backward
PERSIST_MIN_SMS = 98
HALF_RNN_PRECISIONS = ("fp16_mixed", "bf16_mixed")


def _capability(gpu: GpuFigures) -> tuple[int, int]:
    try:
        major, minor = (int(part) for part in gpu.capability.split(".")[:2])
    except ValueError:
        return (0, 0)
    return major, minor


def _persist_static(op: Any, b: int, precision: str, gpu: GpuFigures) -> bool:
    """Whether PyTorch runs ``op`` at batch ``b`` with cuDNN's PERSIST_STATIC algorithm."""
    dirs, hidden, in_f, steps = op.rnn
    layers = getattr(op, "rnn_layers", 1)
    if precision not in HALF_RNN_PRECISIONS or layers != 1 or dirs != 1:
        return False
    if hidden > 1024 or hidden % 128 or in_f % 128:
        return False
    major, minor = _capability(gpu)
    if major == 7:
        if minor == 5:
            return False
        return ((b % 16 == 0 and b not in (80, 112)) or b == 8) and (
            (steps >= 40 and b <= 128) or (steps >= 20 and b <= 96) or (steps >= 10 and b <= 32)
        )
    if major >= 8 and gpu.sms >= PERSIST_MIN_SMS and minor != 6:
        return op.name == "lstm" and b % 8 == 0 and b <= 128
    return False


def rnn_algorithms(op: Any, b: int, precision: str, gpu: GpuFigures) -> tuple[str, str]:
    """The cuDNN algorithm PyTorch picks for a recurrent layer's forward and its backward at batch
    ``b``: "small_h", "persist" or "standard" each."""
    major = _capability(gpu)[0]
    hidden = op.rnn[1]
    static = _persist_static(op, b, precision, gpu)
    return tuple(  # type: ignore[return-value]
        "small_h" if major >= 6 and hidden <= SMALL_H_LIMIT[forward] else "persist" if static else "standard"
        for forward in (True, False)
    )


def rnn_op_s(
    op: OpWork,
    b: int,
    precision: str,
    gpu: GpuFigures,
    cudnn_tf32: bool = False,
    host_speed: float = 1.0,
    algorithm: str = "",
) -> float:
    """Seconds of a cuDNN LSTM/GRU layer's forward and backward at batch ``b`` (in ``cudnn_precision``):
    the call's fixed cost (RNN_CALL_S at ``host_speed``), the input projections of every step and the
    weight gradients as large GEMMs, then per time step, forward and backward, a step of the algorithm
    PyTorch picks (``rnn_algorithms``): in the standard one a
    (b × H)·(H × gates·H) GEMM no shorter than the host's launch chain (RNN_STEP_FLOOR_S at
    ``host_speed``) and a pointwise kernel; in a persistent one RNN_PERSIST_STEP_S or the product's
    FLOPs at the matrix rate, if longer. ``algorithm``: cuDNN's ("standard") where the caller set it
    (DeepBench's own harness), else PyTorch's pick."""
    prec = cudnn_precision(precision, gpu, cudnn_tf32)
    gates = 4 if op.name == "lstm" else 3
    dirs, hidden, in_f, steps = op.rnn
    peak, nbytes = matmul_peak(prec, gpu)
    eff = matmul_efficiency(prec, gpu)
    gh = gates * hidden
    big = dirs * (
        3 * gemm_s(b * steps, gh, in_f, peak, gpu, nbytes, eff)  # input projection fwd, dgrad, wgrad
        + gemm_s(gh, hidden, b * steps, peak, gpu, nbytes, eff)  # recurrent weights' gradient
    )
    product = gemm_s(b, gh, hidden, peak, gpu, nbytes, eff)
    standard = max(product, RNN_STEP_FLOOR_S / host_speed) + max(KERNEL_FLOOR_S, 10 * b * hidden * 4 / gpu.bandwidth)
    # one kernel for the sequence: the step's product at the tensor rate, without a launch's fixed time
    persistent = max(2 * b * gh * hidden / (peak * eff), RNN_PERSIST_STEP_S)
    algorithms = (algorithm, algorithm) if algorithm else rnn_algorithms(op, b, precision, gpu)
    step = sum(standard if a == "standard" else persistent for a in algorithms)
    return RNN_CALL_S / host_speed + big + dirs * steps * step
