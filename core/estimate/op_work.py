"""The work of a training step op by op, as the timing model prices it (core/estimate/timing.py):
the forward pass's matrix products and elementwise kernels from the layer graph or a trace, each
priced at its measured rate by size (`calibrate`) or the device's datasheet peak and bandwidth; the
loss; and the optimizer's memory-bound work over the trainable tensors."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from core.estimate import gpu_kernels, gpu_memory, gpu_step
from core.estimate.measured_curves import grid_rate, interpolate_rate
from core.hardware.catalogue import DeviceSpec
from core.network.graph import Graph, Op
from core.network.model import ModelAnalysis
from core.vocabulary import PRECISION_BYTES

# Fraction of the datasheet memory bandwidth elementwise kernels reach (TrainRig default).
BANDWIDTH_EFFICIENCY = {"gpu": 0.8, "cpu": 0.6, "tpu": 0.8}
# Elementwise layers: the kind of kernel each op runs (its cost is measured per kind by
# `calibrate`) and whether its cost counts input elements (pooling) or output elements.
ELEMENTWISE_KIND = {
    "relu": ("relu",),
    "leaky_relu": ("relu",),
    "tanh": ("tanh",),
    "sigmoid": ("tanh",),
    "gelu": ("gelu",),
    "silu": ("gelu",),
    "silu_mul": ("gelu", "add"),
    "softmax": ("softmax",),
    "batchnorm1d": ("batchnorm",),
    "batchnorm2d": ("batchnorm",),
    "layernorm": ("layernorm",),
    "rmsnorm": ("layernorm",),
    "maxpool2d": ("maxpool",),
    "avgpool2d": ("avgpool",),
    "adaptive_avgpool2d": ("avgpool",),
    "dropout": ("dropout",),
    "add": ("add",),
    "positional_embedding": ("add",),
    "embedding": ("embedding",),
    # op variants (Op.variant) whose eager kernels differ from PyTorch's module: VARIANT_BYTES
    "rmsnorm_fp32": ("rmsnorm_fp32",),
    "rotary_half": ("rotary_half",),
    "rotary_complex": ("rotary_complex",),
}
PER_INPUT_ELEMENT = {"maxpool", "avgpool"}
# norms whose kernels the GPU model prices by their rows and width too (gpu_memory.gamma_beta_s,
# batchnorm_channel_s, cudnn_batchnorm_s)
NORMS = ("layernorm", "batchnorm2d")
# Matrix-product calls of a graph op (separate q, k and v projections, as torchbridge, Hugging Face and
# NVIDIA's BERT write them; SwiGLU's gate and up): under autocast each casts an fp32 input to half, and
# each reduces its own bias's gradient
PROJECTIONS = {"qkv_proj": 3, "gate_up": 2}
# Before calibration: tensor elements read or written per element by the forward and backward of
# each kind (TrainRig estimates from the kernels' passes; e.g. ReLU reads x and writes y, then reads
# the gradient and y and writes the input gradient: 5), moved at the device's bandwidth.
ELEMENT_ACCESSES = {
    "relu": 5,
    "tanh": 5,
    "gelu": 5,
    "softmax": 5,
    "batchnorm": 9,
    "layernorm": 9,
    "maxpool": 4,
    "avgpool": 2.5,
    "dropout": 4.5,
    "add": 6,
    "embedding": 4,
}
# Bytes per element (forward, backward) the eager kernels of an op variant move, by the activation
# precision's bytes (2: bf16/fp16 activations, 4: fp32), counted from their kernels' reads and writes
# (docs/sizing.md §4c, "Op variants"):
# * rmsnorm_fp32 — x.float() (r2 w4), pow (r4 w4), mean (r4), rsqrt per row, x·rsqrt (r4 w4),
#   .type_as(x) (r4 w2), ·weight (r2 w2): 36 forward; backward the weight's (grad·w, grad·x̂ and its
#   sum), the casts', the product's two branches, mean's expand, pow's 2·x·grad and the two branches'
#   sum: 92. In fp32 the casts are no-ops and the weight's branch moves fp32: 28 and 92.
# * rotary_complex — x.float() (r2 w4), the complex product (r4 w4), .type_as (r4 w2): 20 forward,
#   the same three backward; in fp32 only the product: 8 and 8.
# * rotary_half — neg of one half, cat, x·cos, rotate_half(x)·sin, their sum: 10 accesses forward,
#   10 backward (two products' gradients, neg, cat's and the branches' sums), at the activation dtype.
VARIANT_BYTES = {
    "rmsnorm_fp32": {2: (36.0, 92.0), 4: (28.0, 92.0)},
    "rotary_complex": {2: (20.0, 20.0), 4: (8.0, 8.0)},
    "rotary_half": {2: (20.0, 20.0), 4: (40.0, 40.0)},
}
# A CPU prices a variant by the kind `calibrate` measures that is nearest to it, times its bytes over
# that kind's (PyTorch on the CPU runs nn.RMSNorm decomposed in fp32 already: the layernorm kind).
CPU_VARIANT_KIND = {
    "rmsnorm_fp32": ("layernorm", 1.0),
    "rotary_complex": ("add", 16 / 24),
    "rotary_half": ("add", 80 / 24),
}


def variant_bytes(kind: str, act_bytes: int) -> tuple[float, float]:
    """(forward, backward) bytes per element of an op variant at ``act_bytes`` activations."""
    return VARIANT_BYTES[kind][2 if act_bytes <= 2 else 4]


# glibc's malloc serves an allocation at or over its mmap threshold with fresh pages from the kernel;
# the threshold adapts to the sizes freed, up to DEFAULT_MMAP_THRESHOLD_MAX, 32 MiB on 64-bit systems
# (mallopt(3)). A tensor of 32 MiB or more (its chunk, with malloc's header, is over the maximum, so
# freeing it does not raise the threshold) is new memory every step.
MMAP_THRESHOLD_MAX_BYTES = 32 * 2**20
GRAIN_SIZE = 32768  # PyTorch's at::internal::GRAIN_SIZE: elements per chunk of a parallel CPU kernel
# fp32 words read or written per parameter by one optimizer step on a CPU before `calibrate` measures it:
# TrainRig estimates, in the ratios `calibrate` measured on a CPU (a GPU's foreach kernels:
# gpu_memory.FOREACH_ACCESSES, counted from PyTorch's code).
OPTIMIZER_ACCESSES = {"sgd": 3, "sgd_momentum": 7, "adam": 21, "adamw": 25, "rmsprop": 14, "adagrad": 13}


@dataclass(frozen=True)
class OpWork:
    """One op of a forward pass as the timing model sees it, per sample."""

    rate: str | None = None  # "linear" or "conv": a matrix product timed at that kind's rate
    flops: float = 0.0  # forward matrix FLOPs per sample
    weights: int = 0  # a convolution's weights (its rate is measured by them)
    elementwise: tuple[tuple[str, float], ...] = ()  # (kind, elements per sample) of its elementwise kernels
    cpu_scores: float = 0.0  # L×L score elements per sample PyTorch's math attention keeps (CPU, dropout)
    first: bool = False  # reads the network's input: backward computes no input gradient
    pointwise: bool = False  # a 1×1 convolution: a matrix product over pixels
    kernel_area: int = 0  # a convolution's kernel height × width
    winograd_shape: bool = False  # square kernel, stride 1, undilated, ungrouped (graph.Op.winograd_shape)
    # what the GPU kernel model needs from the layer graph: name, forward GEMM's rows per sample, n, k, in/out
    # elements a sample, a recurrent layer's (directions, hidden, input, steps) and its module's layers, causal mask
    name: str = ""
    gemm_rows: float = 0.0
    gemm_n: float = 0.0
    gemm_k: float = 0.0
    in_elems: float = 0.0
    out_elems: float = 0.0
    rnn: tuple[int, int, int, int] = ()  # type: ignore[assignment]
    rnn_layers: int = 1
    causal: bool = False
    # attention: L×L×heads score elements per sample, query heads, dropout on the attention weights
    # (what the math and eager kernels move over the scores)
    scores: float = 0.0
    heads: int = 0
    attn_dropout: bool = False
    # under torch.autocast: whether the op's elementwise tensors are fp32 (the residual stream after an
    # fp32 embedding, norms' outputs and the adds that meet them) and how many matrix-product calls
    # cast its fp32 input to half precision (q, k and v each cast it: 3)
    fp32_io: bool = False
    input_casts: int = 0
    bias: bool = False  # a matrix product with a bias: backward reduces its output gradient over the rows
    projections: int = 1  # matrix-product calls the op makes (PROJECTIONS)
    # a layer norm's features or a BatchNorm2d's channels: its weight gradient sums each over the rows, a
    # batch norm's statistics too (0: none)
    norm_width: int = 0


def forward_work(model: ModelAnalysis) -> tuple[tuple[OpWork, ...], int]:
    """The forward pass's ops and the number of framework calls they take: from the layer graph,
    or from the kernels a trace of the PyTorch model recorded; empty for a published summary."""
    if model.graph is not None:
        return _graph_work(model.graph)
    trace = model.trace or {}
    ops = tuple(
        OpWork(
            rate=o["kind"],
            flops=float(o["flops"]),
            weights=int(o.get("weights", 0)),
            first=bool(o.get("first", False)),
            pointwise=bool(o.get("pointwise", False)),
        )
        if o["kind"] in ("linear", "conv")
        else OpWork(elementwise=((o["kind"], float(o["elements"])),))
        for o in trace.get("ops", ())
    )
    return ops, int(trace.get("op_calls", len(ops)))


def _gemm_fields(g: Graph, op: Op) -> dict[str, Any]:
    """The GPU kernel model's view of one graph op: its forward GEMM's shape (rows per sample × k)
    · (k × n) from its FLOPs, weights and input, or a recurrent layer's sizes."""
    fields: dict[str, Any] = {
        "name": op.name,
        "in_elems": float(g.tensors[op.input_id].elems),
        "out_elems": float(g.tensors[op.output_id].elems),
        "causal": op.causal,
        "fp32_io": g.tensors[op.output_id].fp32 or g.tensors[op.input_id].fp32,
    }
    if op.flops and op.matmul_params and op.name not in ("sdpa", "lstm", "gru"):
        fields["projections"] = PROJECTIONS.get(op.name, 1)
        # an fp32 activation, or the network's float32 input (images, features): cast to half each call
        network_fp32 = op.input_id == 0 and g.tensors[0].dtype_bytes == 4
        if g.tensors[op.input_id].fp32 or network_fp32:
            fields["input_casts"] = fields["projections"]
    if op.scores:
        fields.update(scores=float(op.scores), heads=op.heads, attn_dropout=op.attn_dropout)
    if op.name in ("lstm", "gru") and len(op.tensor_sizes) >= 2:
        gates = 4 if op.name == "lstm" else 3
        hidden = max(1, round(math.sqrt(op.tensor_sizes[1] / gates)))
        in_f = max(1, round(op.tensor_sizes[0] / (gates * hidden)))
        dirs = max(1, round(op.matmul_params / (gates * hidden * (in_f + hidden))))
        fields["rnn"] = (dirs, hidden, in_f, max(1, round(fields["out_elems"] / (dirs * hidden))))
        fields["rnn_layers"] = op.rnn_layers or 1
    elif op.flops and op.matmul_params and op.name != "sdpa":
        rows = op.flops / (2 * op.matmul_params)
        n = fields["out_elems"] / rows
        fields.update(
            gemm_rows=rows, gemm_n=n, gemm_k=op.matmul_params / n, bias=sum(op.tensor_sizes) > op.matmul_params
        )
    return fields


@lru_cache(maxsize=256)
def _graph_work(g: Graph) -> tuple[tuple[OpWork, ...], int]:
    """A layer graph's ops as timing work, built once per graph (the what-if loop re-times it)."""
    ops = tuple(
        OpWork(
            rate=("conv" if op.name == "conv2d" else "linear") if op.flops else None,
            flops=float(op.flops),
            weights=op.matmul_params if op.name == "conv2d" else 0,
            elementwise=tuple(
                (k, float(g.tensors[op.input_id if k in PER_INPUT_ELEMENT else op.output_id].elems))
                for k in ELEMENTWISE_KIND.get(op.variant or op.name, ())
            ),
            cpu_scores=float(op.math_scores),
            first=op.input_id == 0,
            pointwise=op.kernel_area == 1,
            kernel_area=op.kernel_area,
            winograd_shape=op.winograd_shape,
            # PyTorch's layer norm (not an RMS norm, nor a variant's own code) and BatchNorm2d with weights
            norm_width=op.tensor_sizes[0] if op.name in NORMS and not op.variant and op.tensor_sizes else 0,
            **_gemm_fields(g, op),
        )
        for op in g.ops
    )
    return ops, len(g.ops)


def parameter_tensor_sizes(model: ModelAnalysis) -> list[float]:
    """Elements of each trainable tensor the optimizer steps (weights, biases, norms' scales and
    shifts): the layer graph's, a traced model's own, or else the average of an estimated count."""
    if model.graph is not None:
        return [float(n) for op in model.graph.ops for n in op.tensor_sizes]
    trace = model.trace or {}
    if trace.get("param_sizes"):
        return [float(n) for n in trace["param_sizes"] if n]
    tensors = sum(2 for o in trace.get("ops", ()) if o.get("kind") in ("linear", "conv")) or 1
    return [model.parameters / tensors] * tensors if model.parameters else []


def matrix_time(
    op: OpWork, b: int, checkpointing: bool, peak_rate: float, cal: Mapping[str, Any], speed: float = 1.0
) -> float:
    """Seconds of a matrix product's forward and backward at the per-device batch ``b``: 3 × its
    forward FLOPs (2 × on the network's input: no input gradient; +1 × recomputed under
    checkpointing) at the rate measured for its kind and size, else at ``peak_rate``; a convolution
    also pays its measured fixed cost per call. ``speed``: the measured half/full-precision ratio."""
    passes = (2 if op.first else 3) + (1 if checkpointing else 0)
    flops = passes * op.flops * b
    grid = None
    if op.rate == "conv" and not op.pointwise and op.kernel_area and op.gemm_k and op.gemm_n:
        cin = op.gemm_k / op.kernel_area
        first_grid = cal.get("conv_first_grid") or []
        # a first layer on image channels takes the first layers' grid; one on more channels than
        # it measured (an embedding of 8 channels, say) the other layers' grid, not its edge
        if op.first and first_grid and cin <= max(p[0] for p in first_grid):
            grid = first_grid
        else:
            grid = cal.get("conv_grid")
    shaped = None
    if grid:
        shaped = grid_rate(grid, op.gemm_k / op.kernel_area, op.gemm_n, math.sqrt(op.kernel_area))
    if shaped:  # measured by its channels and kernel
        seconds = flops / (shaped * speed)
        return seconds + float(cal.get("conv_call_s", 0.0))
    if op.rate == "linear" and op.gemm_rows and op.gemm_n and op.gemm_k and cal.get("linear_grid"):
        # measured by its rows and width: a skinny product runs below a square one of its FLOPs
        rate = grid_rate(cal["linear_grid"], op.gemm_rows * b, math.sqrt(op.gemm_n * op.gemm_k), 1.0)
        if rate:
            return flops / (rate * speed)
    if op.rate == "conv" and not op.pointwise:  # measured by the convolution's weights
        curve = cal.get("conv_first_train") if op.first else None
        curve, size = curve or cal.get("conv_train"), float(op.weights)
    else:  # linear layers and 1×1 convolutions: by the FLOPs of one call
        curve, size = cal.get("linear_train"), op.flops * b
    seconds = flops / (interpolate_rate(curve, size) * speed) if curve else flops / peak_rate
    return seconds + (float(cal.get("conv_call_s", 0.0)) if op.rate == "conv" else 0.0)


@dataclass(frozen=True, eq=False)
class PassSetup:
    """What prices a forward/backward pass whatever its batch (core/estimate/pass_work.py puts it
    together; op_times and parallel_time.large_terms price their parts of it): the network and its
    ops, the device and its kind ("cpu", "gpu", "tpu"), precision, optimizer, whether the whole
    forward runs again (full checkpointing), the matrix rate from the peak and the default
    efficiency, and what `calibrate` measured for the device."""

    model: ModelAnalysis
    ops: Sequence[OpWork]
    device: DeviceSpec
    kind: str
    precision: str
    optimizer: str
    checkpointing: bool
    peak_rate: float
    cal: Mapping[str, Any]

    def parts(self) -> tuple[Any, ...]:
        """The fields in their order, for unpacking."""
        return tuple(getattr(self, f.name) for f in fields(self))


def op_times(
    setup: PassSetup,
    b: int,
    tensor_sizes: Sequence[float],
    *,
    memory_format: str = "contiguous",
    compile_model: bool = False,
    fp8: bool = False,
    attention: str = "auto",
    cudnn_tf32: bool = False,
    cudnn_benchmark: bool = False,
    autocast: bool = True,
    host_speed: float = 1.0,
) -> tuple[float, float, float]:
    """Seconds of matrix products, of memory-bound work (elementwise layers, loss) and of the
    optimizer's memory-bound work over the trainable tensors of ``tensor_sizes`` elements, at batch
    ``b``.

    On an NVIDIA GPU without measured GPU rates, the kernels' times come from the GPU kernel model
    (core/estimate/gpu_kernels.py), which also follows ``memory_format``, ``compile_model`` and, in
    fp32, ``cudnn_tf32`` (cuDNN's convolutions and recurrent layers on TF32 tensor cores) and
    ``cudnn_benchmark`` (cuDNN's algorithm search for each convolution); in half-precision mixed
    precision ``autocast`` (fp32 weights under torch.autocast: fp32 residual stream and casts)."""
    model, ops, device, kind, precision, optimizer, checkpointing, peak_rate, cal = setup.parts()
    if uses_gpu_kernels(setup):
        g = gpu_pass(
            setup, b, memory_format, compile_model, fp8, attention, cudnn_tf32, cudnn_benchmark, autocast, host_speed
        )
        return g.compute, g.memory, g.optimizer
    act_bytes = PRECISION_BYTES[precision][2]
    speed = cal.get("half_speedup", 1.0) if precision.endswith("_mixed") else 1.0
    bandwidth = (device.bandwidth or 50e9) * BANDWIDTH_EFFICIENCY[kind]
    measured = cal.get("elementwise_s", {})
    curves = cal.get("elementwise_curves", {})
    touch = float(cal.get("first_touch_s_per_byte", 0.0))

    threads = int(cal.get("threads", 1)) if kind == "cpu" else 1

    def per_element(k: str, n: float = 0.0) -> float:
        """Seconds per element of kind ``k`` on a tensor of ``n`` elements: measured by size where
        `calibrate` measured it at two sizes, else at its one size, else from the bandwidth. On a
        CPU, PyTorch splits an elementwise kernel over its threads in chunks of at least 32,768
        elements (at::internal::GRAIN_SIZE): a smaller tensor runs on fewer threads than the
        measurement did. A tensor of 32 MiB or more is fresh memory every step (glibc's mmap
        threshold, MMAP_THRESHOLD_MAX_BYTES), as the large measurement (64 MiB) was: it costs what
        that one did, not a value interpolated towards the cached one."""
        if k in CPU_VARIANT_KIND:
            near, ratio = CPU_VARIANT_KIND[k]
            return per_element(near, n) * ratio if kind == "cpu" else sum(variant_bytes(k, act_bytes)) / bandwidth
        if k in curves and n > 0:
            fresh_regime = kind == "cpu" and n * act_bytes >= MMAP_THRESHOLD_MAX_BYTES
            cost = interpolate_rate(curves[k], max(n, max(p[0] for p in curves[k])) if fresh_regime else n)
        else:
            cost = float(measured[k]) if k in measured else ELEMENT_ACCESSES[k] * act_bytes / bandwidth
        if threads > 1 and 0 < n and k in measured:
            cost *= threads / max(1, min(threads, math.ceil(n / GRAIN_SIZE)))
        return cost

    def fresh(elems: float) -> float:
        """What allocating a tensor of ``elems`` costs beyond computing it: new pages past the
        allocator's reuse (measured; only tensors at or over glibc's largest mmap threshold)."""
        n_bytes = elems * b * act_bytes
        return n_bytes * touch if n_bytes >= MMAP_THRESHOLD_MAX_BYTES else 0.0

    stream = cal.get("weight_stream")
    compute = memory = 0.0
    for op in ops:
        if op.rate:
            seconds = matrix_time(op, b, checkpointing, peak_rate, cal, speed)
            weight_bytes = op.gemm_k * op.gemm_n * 4  # fp32
            if stream and kind == "cpu" and op.rate == "linear" and weight_bytes > 0:
                # at a small batch a linear layer costs by its weights' bytes, not its FLOPs: read in
                # forward and for the input's gradient, its gradient written (new memory each step
                # past the allocator's reuse), at what `calibrate` measured per byte by layer size
                # and its activations likewise: the input read in forward and for the weight's gradient
                # (its gradient written, unless it is the network's input), the output written and its
                # gradient read twice — a wide input into a narrow output at a large batch (a
                # classifier after a flattened image) costs by these bytes, not its FLOPs
                passes = 2 if op.first else 3
                act = ((2 if op.first else 3) * op.in_elems + 3 * op.out_elems) * b * 4
                largest = max(weight_bytes, op.in_elems * b * 4, op.out_elems * b * 4)
                moved = passes * weight_bytes + act
                seconds = max(seconds, moved * interpolate_rate(stream, largest))
            compute += seconds
            if touch and kind == "cpu":  # its output, and in backward its input's gradient
                memory += fresh(op.out_elems) + (0.0 if op.first else fresh(op.in_elems))
        for k, elems in op.elementwise:
            memory += per_element(k, elems * b) * elems * b
        # an unfused attention's kernels over the L×L scores (softmax, the mask, dropout; eager: the
        # division too): the math kernel PyTorch runs on a CPU with attention dropout, or the
        # attention the workload names
        scores = op.scores if attention in ("math", "eager") else op.cpu_scores if kind == "cpu" else 0.0
        if scores:
            kinds = ("softmax", "add") + ("dropout",) * (op.attn_dropout or bool(op.cpu_scores))
            kinds += ("add",) * (attention == "eager")
            memory += sum(per_element(k, scores * b) for k in kinds) * scores * b
    memory += loss_time(model, b, per_element("softmax", model.output_elems * b), measured)
    curve = cal.get("optimizer_s", {}).get(optimizer)
    if curve:  # measured per element by tensor size: small tensors stay in cache
        opt = sum(interpolate_rate(curve, size) * size for size in tensor_sizes)
    else:
        opt = OPTIMIZER_ACCESSES[optimizer] * 4 / bandwidth * model.parameters
    return compute, memory, opt


def loss_time(model: ModelAnalysis, b: int, softmax_s: float, measured: Mapping[str, Any]) -> float:
    """Cross-entropy's forward and backward over the ``b`` samples' outputs: per element at
    softmax's cost, but at least what `calibrate` measured a row of few classes to cost (a row of 10
    classes costs about what one of 100 does: the kernels' per-row work dominates)."""
    per_element = softmax_s * model.output_elems * b
    row = float(measured.get("cross_entropy_row", 0.0))
    if not row:
        return per_element
    width = max(1, model.output_shape[-1] if model.output_shape else 1)
    return max(per_element, model.output_elems * b / width * row)


@dataclass(frozen=True)
class GpuPass:
    """A pass's device seconds on an NVIDIA GPU as the kernel model prices them: the sums, and the
    order they run in (each op's forward and backward kernels, the loss between the two passes)."""

    compute: float
    memory: float  # memory-bound work: elementwise kernels, the loss, autocast's and GradScaler's
    optimizer: float
    kernels: gpu_step.PassKernels
    loss: float
    casts: float  # autocast's weight and gradient casts, GradScaler's checks


def uses_gpu_kernels(setup: PassSetup) -> bool:
    """Whether op_times prices ``setup``'s kernels with the GPU kernel model (gpu_pass)."""
    _, ops, device, kind, _, _, _, _, cal = setup.parts()
    return kind == "gpu" and device.runs_cuda and "linear_train" not in cal and bool(ops)


def gpu_pass(
    setup: PassSetup,
    b: int,
    memory_format: str = "contiguous",
    compile_model: bool = False,
    fp8: bool = False,
    attention: str = "auto",
    cudnn_tf32: bool = False,
    cudnn_benchmark: bool = False,
    autocast: bool = True,
    host_speed: float = 1.0,
) -> GpuPass:
    """op_times on an NVIDIA GPU from its kernels (core/estimate/gpu_kernels.py): matrix products and
    attention (at the efficiency `calibrate` measured for the GPU's class, when it has); elementwise
    kernels, the loss and autocast's and GradScaler's per-step work; the foreach optimizer."""
    model, ops, device, _, precision, optimizer, checkpointing, _, cal = setup.parts()
    gpu = gpu_kernels.figures(device, cal)
    nbytes = 2 if precision in ("fp16_mixed", "bf16_mixed") else 4

    # an op variant's bytes as accesses of the activation precision, like the other kinds; under
    # torch.compile its decomposed kernels fuse into what the kind nearest to it moves
    def variant_accesses(act_bytes: int) -> dict[str, float]:
        return {
            k: ELEMENT_ACCESSES[CPU_VARIANT_KIND[k][0]]
            if compile_model
            else sum(variant_bytes(k, act_bytes)) / act_bytes
            for k in VARIANT_BYTES
        }

    accesses = {**ELEMENT_ACCESSES, **variant_accesses(nbytes)}
    kernels = gpu_step.pass_kernels(
        ops,
        b,
        device,
        precision,
        checkpointing,
        memory_format,
        compile_model,
        accesses,
        cal,
        fp8,
        attention,
        cudnn_tf32,
        cudnn_benchmark,
        autocast,
        variant_accesses(4),  # a variant on the fp32 tensors of autocast: its fp32 kernels' bytes
        host_speed,
    )
    loss = gpu_memory.loss_s(model.output_elems * b, gpu, half_logits=nbytes == 2)
    matmul, weights = gpu_step.matrix_weights(ops)
    casts = gpu_memory.mixed_precision_s(precision, matmul, model.parameters, gpu, weights)
    opt = gpu_memory.optimizer_s(model.parameters, gpu, gpu_memory.FOREACH_ACCESSES[optimizer])
    return GpuPass(kernels.compute, kernels.memory + loss + casts, opt, kernels, loss, casts)
