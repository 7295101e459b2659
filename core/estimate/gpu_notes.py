"""What a sizing on an NVIDIA GPU says about how its kernels were priced (core/estimate/gpu_kernels.py):
where the efficiency comes from, and the layout and precision choices that change the step."""

from __future__ import annotations

from functools import lru_cache

from core.estimate.gpu_kernels import figures, hopper_class, nchw_native
from core.estimate.gpu_memory import native_batch_norm
from core.estimate.gpu_rnn import RNN_CALL_S, RNN_PERSIST_STEP_S, RNN_STEP_FLOOR_S, rnn_algorithms
from core.estimate.op_work import forward_work
from core.estimate.published_rates import published_note
from core.hardware.catalogue import DeviceSpec
from core.network.graph import Graph
from core.network.model import ModelAnalysis
from core.spec.workload import TrainingSpec

HALF = ("fp16_mixed", "bf16_mixed")
# the layer types cuDNN runs (its TF32 setting applies to them): convolutions and recurrent layers
CUDNN_LAYERS = frozenset({"conv2d", "lstm", "gru"})


def uses_gpu_kernel_model(device: DeviceSpec, m: ModelAnalysis) -> bool:
    """An NVIDIA GPU timing a layer graph or a trace: its ops cost the GPU kernel model's time."""
    return device.runs_cuda and (m.graph is not None or bool(m.trace))


@lru_cache(maxsize=256)
def _cudnn_layers(graph: Graph) -> tuple[bool, bool, bool]:
    """(a convolution larger than 1 × 1, any layer cuDNN runs: a convolution or an LSTM/GRU, a
    BatchNorm2d) in the graph (identity-hashed: scanned once per graph)."""
    spatial = any(o.name == "conv2d" and o.kernel_area > 1 for o in graph.ops)
    batch_norm = any(o.name == "batchnorm2d" for o in graph.ops)
    return spatial, spatial or any(o.name in CUDNN_LAYERS for o in graph.ops), batch_norm


def gpu_kernel_note(device: DeviceSpec, m: ModelAnalysis) -> str:
    """Where the efficiency comes from when nothing was calibrated."""
    if uses_gpu_kernel_model(device, m):
        sms = device.sm_count or "estimated"
        published = published_note(device)
        return (
            f" (reached by the GPU kernel model: tiles in waves over its {sms} SMs"
            + (f"; {published}" if published else "")
            + ", docs/sizing.md §4c)"
        )
    return " (default for the device class)"


def recurrent_note(device: DeviceSpec, m: ModelAnalysis, precision: str, batch: int) -> str | None:
    """Which of cuDNN's algorithms PyTorch runs the recurrent layers with at ``batch`` a GPU
    (gpu_rnn.rnn_algorithms), and where its persistent kernel would take a layer at another batch."""
    ops = [op for op in forward_work(m)[0] if op.rnn]
    if not ops:
        return None
    gpu = figures(device)
    picked = {a for op in ops for a in rnn_algorithms(op, batch, precision, gpu)}
    persistent = f"about {RNN_PERSIST_STEP_S * 1e6:.0f} µs a time step"
    if "persist" in picked:
        return (
            f"cuDNN's persistent kernel runs the LSTM at batch {batch} a GPU: one kernel for the sequence, "
            f"{persistent}; PyTorch picks it for a one-layer LSTM in half precision of hidden ≤ 1,024, hidden "
            "and input multiples of 128, at a batch a GPU that is a multiple of 8 up to 128 (docs/sizing.md §4c)"
        )
    if picked == {"small_h"}:
        return (
            f"cuDNN's small-hidden persistent kernels run the recurrent layers (hidden ≤ 192 forward, ≤ 128 "
            f"backward), priced as its persistent kernel, {persistent}: no layer that small was measured"
        )
    chain = (
        f"cuDNN's recurrent layers in its standard algorithm at batch {batch} a GPU: a chain of kernels every "
        f"time step, launched by the host (at least {RNN_STEP_FLOOR_S * 1e6:.0f} µs a step), and "
        f"{RNN_CALL_S * 1e3:.1f} ms a layer's call"
    )
    if precision not in HALF and any("persist" in rnn_algorithms(op, batch, "fp16_mixed", gpu) for op in ops):
        chain += f"; under torch.autocast PyTorch gives its LSTM cuDNN's persistent kernel ({persistent})"
    elif any("persist" in rnn_algorithms(op, b, precision, gpu) for op in ops for b in range(8, 129, 8)):
        chain += (
            "; at a batch a GPU that is a multiple of 8 up to 128 PyTorch gives its LSTM cuDNN's persistent "
            f"kernel ({persistent})"
        )
    return chain


def kernel_assumptions(device: DeviceSpec, m: ModelAnalysis, t: TrainingSpec, batch: int | None = None) -> list[str]:
    """The layout and precision choices that change the kernel model's step: NCHW transposes in half
    precision, in fp32 whether cuDNN's layers run on TF32, on CUDA cores whether cuDNN searches
    its convolution algorithms, and the algorithm of cuDNN's recurrent layers at ``batch`` a GPU (the
    micro-batch; by default the workload's batch)."""
    out = []
    cc = str(device.extra.get("compute_capability") or "")
    if t.precision == "bf16_mixed" and device.runs_cuda and cc[:1].isdigit() and float(cc) < 8:  # Pascal, Volta, Turing
        native = "fp16_mixed (with GradScaler) runs on its tensor cores" if float(cc) >= 7 else "fp32 runs fastest"
        out.append(
            f"compute capability {cc} has no bf16 arithmetic: PyTorch emulates it on CUDA cores, slower than the step "
            f"priced here; training.precision {native}"
        )
    if not uses_gpu_kernel_model(device, m) or m.graph is None:
        return out
    spatial, cudnn, batch_norm = _cudnn_layers(m.graph)
    rnn = recurrent_note(device, m, t.precision, batch or t.batch_size)
    if rnn:
        out.append(rnn)
    # compute capability 8.6/8.9 cards run NCHW half precision as it is (gpu_kernels.NCHW_NATIVE_CAPABILITIES)
    if t.memory_format != "channels_last" and t.precision in HALF and spatial and not nchw_native(device):
        out.append(
            "NCHW convolutions in half precision pay cuDNN's layout transposes "
            "(training.memory_format: channels_last avoids them; ResNet-50 fp16 on an H100: 93.9 vs 54.3 ms a step, "
            "13 ms of it the transposes)"
        )
    if batch_norm and native_batch_norm(t.precision, t.memory_format):
        out.append(
            "in bf16 with the NCHW layout, batch norm runs PyTorch's own kernels, one block a channel (cuDNN's "
            "takes fp16 and fp32): ResNet-18 at batch 256 spent 23 of its 47 ms step in them on a lent H100; "
            "training.memory_format channels_last avoids them (fp16 in NCHW runs cuDNN's, a block a channel too "
            "above 16,384 elements a channel; docs/sizing.md §4c)"
        )
    elif batch_norm and t.memory_format != "channels_last":
        out.append(
            "with the NCHW layout, cuDNN's batch norm runs one block a channel where a channel holds more than "
            "16,384 elements a step (images × pixels): ResNet-50 fp16 at batch 256 spent 42 of its 91 ms of "
            "kernels in it on a lent H100 (17 in channels_last); training.memory_format channels_last avoids it "
            "(docs/sizing.md §4c)"
        )
    if t.precision == "fp32" and device.tf32_flops and cudnn:
        out.append(
            "in fp32, cuDNN runs the convolutions and LSTM/GRU layers on TF32 tensor cores "
            "(training.cudnn_tf32 true: torch.backends.cudnn.allow_tf32, PyTorch's default) and the linear "
            "layers stay IEEE fp32"
            if t.cudnn_tf32
            else "in fp32, convolutions and LSTM/GRU layers in IEEE fp32 on CUDA cores (cuDNN's TF32 off); "
            "PyTorch's default lets cuDNN run them on TF32 tensor cores: training.cudnn_tf32 true if your "
            "code keeps it"
        )
    ieee_convs = t.precision == "fp32" and spatial and not (t.cudnn_tf32 and device.tf32_flops)
    if ieee_convs and hopper_class(device):
        out.append(
            "IEEE fp32 convolutions as Hopper's cuDNN 9 runs them, with or without its algorithm search "
            "(training.cudnn_benchmark): its heuristics pick what the search finds (102 convolutions on a lent "
            "H100, 0.98–1.14 × apart); a 3 × 3 layer's passes each the faster of an implicit GEMM and Winograd "
            "with its transforms (docs/sizing.md §4c)"
        )
    elif ieee_convs:
        out.append(
            "IEEE fp32 convolutions as cuDNN's algorithm search runs them (training.cudnn_benchmark true): "
            "Winograd kernels for the 3 × 3 ones, tiles fitted to small channel counts (DeepBench V100/T4)"
            if t.cudnn_benchmark
            else "IEEE fp32 convolutions on the kernels cuDNN's heuristics pick (torch.backends.cudnn.benchmark "
            "off, PyTorch's default); training.cudnn_benchmark true if your code turns it on: its 3 × 3 "
            "convolutions then run on Winograd kernels (VGG-11 b32 on an H200: 29 ms)"
        )
    return out
