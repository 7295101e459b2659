"""Layer list → shapes, parameters, forward FLOPs and the tensor graph of a training step.

Layer names and constructor argument names follow PyTorch (``torch.nn``); input sizes are
inferred from the previous layer. Shapes are per sample (no batch dimension). FLOPs count a
multiply-add as 2 and only matrix products (linear, convolution, recurrent and attention
matmuls), the convention of ``torch.utils.flop_counter``; elementwise work is left out of FLOPs
but counted in the Jamgharyan T1/T2 operation counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.errors import WorkloadError
from core.network.graph import Graph, LayerRow
from core.validate import (
    get_bool,
    get_choice,
    get_float,
    get_int,
    reject_unknown,
    require_mapping,
)

Shape = tuple[int, ...]
MAX_FEATURES = 10**8
MAX_ELEMS = 10**13  # per sample; beyond this the arithmetic stops meaning anything


# Limits of a layer list (docs/limits.md): Llama-8B applies 291 layers in 2 levels of containers.
MAX_LAYERS_APPLIED = 100_000  # layers applied, each repetition counted
MAX_CONTAINER_DEPTH = 16  # repeat and residual blocks inside each other
# rmsnorm "implementation": nn.RMSNorm (PyTorch's fused kernel on CUDA) or the fp32 decomposition of
# Llama's reference code, Hugging Face's LlamaRMSNorm and torchtitan's 2024 RMSNorm
RMSNORM_IMPLEMENTATIONS = ("fused", "fp32_decomposed")


@dataclass(frozen=True)
class Context:
    apply_list: Callable[[Sequence[Any], str, Shape, int, Graph], tuple[Shape, int]]
    input_is_int: bool
    applied: list[int] = field(default_factory=lambda: [0])  # layers applied so far (a counter)


Handler = Callable[[Mapping[str, Any], str, Shape, int, Graph, Context], tuple[Shape, int]]
HANDLERS: dict[str, Handler] = {}


def handler(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for n in names:
            HANDLERS[n] = fn
        return fn

    return register


def numel(shape: Shape) -> int:
    return math.prod(shape)


def pair(spec: Mapping[str, Any], key: str, path: str, default: int | None, minimum: int = 1) -> tuple[int, int]:
    """An int or a [h, w] pair, as torch.nn.Conv2d accepts."""
    if key in spec and isinstance(spec[key], list):
        v = spec[key]
        if len(v) != 2:
            raise WorkloadError(f"{path}.{key}", "must be an integer or a list of two integers")
        a = get_int({"h": v[0]}, "h", f"{path}.{key}[0]", minimum=minimum, maximum=10**5)
        b = get_int({"w": v[1]}, "w", f"{path}.{key}[1]", minimum=minimum, maximum=10**5)
        return a, b
    n = get_int(spec, key, path, default=default, minimum=minimum, maximum=10**5)
    return n, n


def expect_dims(shape: Shape, dims: int, path: str, what: str) -> None:
    if len(shape) != dims:
        raise WorkloadError(path, f"{what} needs a {dims}-D input per sample, got shape {list(shape)}")


def check_size(shape: Shape, path: str) -> None:
    if numel(shape) > MAX_ELEMS:
        raise WorkloadError(path, f"output of {numel(shape):.3g} elements per sample is too large to size")


# --- dense layers -------------------------------------------------------------------------


@handler("linear")
def linear(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    reject_unknown(spec, {"type", "in_features", "out_features", "bias", "tie_weights"}, path)
    in_f = shape[-1]
    if "in_features" in spec:
        declared = get_int(spec, "in_features", path, maximum=MAX_FEATURES)
        if declared != in_f:
            raise WorkloadError(f"{path}.in_features", f"is {declared} but the previous layer gives {in_f}")
    out_f = get_int(spec, "out_features", path, maximum=MAX_FEATURES)
    bias = get_bool(spec, "bias", path, default=True)
    tied = get_bool(spec, "tie_weights", path, default=False)
    if tied:
        if g.embedding is None or g.embedding != (out_f, in_f):
            raise WorkloadError(
                f"{path}.tie_weights",
                f"needs an earlier embedding of {out_f} × {in_f} to share weights with",
            )
    lead = numel(shape[:-1])
    params = (0 if tied else in_f * out_f) + (out_f if bias else 0)
    flops = 2 * in_f * out_f * lead
    out_shape = (*shape[:-1], out_f)
    check_size(out_shape, path)
    y = g.op(
        "linear",
        x,
        numel(out_shape),
        autocast="lower",
        save_input=True,
        params=params,
        matmul_params=in_f * out_f,
        largest_param=0 if tied else in_f * out_f,
        flops=flops,
    )
    g.row(LayerRow(path, "linear", out_shape, params, flops, flops, 2 * in_f, out_f * lead))
    return out_shape, y


@handler("conv2d")
def conv2d(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    reject_unknown(
        spec,
        {"type", "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"},
        path,
    )
    expect_dims(shape, 3, path, "conv2d")
    c, h, w = shape
    if "in_channels" in spec and get_int(spec, "in_channels", path, maximum=MAX_FEATURES) != c:
        raise WorkloadError(f"{path}.in_channels", f"is {spec['in_channels']} but the input has {c} channels")
    cout = get_int(spec, "out_channels", path, maximum=MAX_FEATURES)
    kh, kw = pair(spec, "kernel_size", path, None)
    sh, sw = pair(spec, "stride", path, 1)
    ph, pw = pair(spec, "padding", path, 0, minimum=0)
    dh, dw = pair(spec, "dilation", path, 1)
    groups = get_int(spec, "groups", path, default=1, maximum=MAX_FEATURES)
    if c % groups or cout % groups:
        raise WorkloadError(f"{path}.groups", f"{groups} must divide in_channels {c} and out_channels {cout}")
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if ho < 1 or wo < 1:
        raise WorkloadError(
            f"{path}.kernel_size",
            f"kernel {kh}×{kw} is larger than the padded input {h + 2 * ph}×{w + 2 * pw}",
        )
    bias = get_bool(spec, "bias", path, default=True)
    fan_in = (c // groups) * kh * kw
    weights = cout * fan_in
    params = weights + (cout if bias else 0)
    out_shape = (cout, ho, wo)
    flops = 2 * fan_in * numel(out_shape)
    y = g.op(
        "conv2d",
        x,
        numel(out_shape),
        autocast="lower",
        save_input=True,
        params=params,
        matmul_params=weights,
        largest_param=weights,
        flops=flops,
        kernel_area=kh * kw,
    )
    square_unit = kh == kw and (sh, sw) == (1, 1) and (dh, dw) == (1, 1) and groups == 1
    g.ops[-1] = replace(g.ops[-1], winograd_shape=square_unit)
    g.row(LayerRow(path, "conv2d", out_shape, params, flops, flops, 2 * fan_in, numel(out_shape)))
    return out_shape, y


def _pool_out(size: int, k: int, s: int, p: int, path: str) -> int:
    if p > k // 2:
        raise WorkloadError(f"{path}.padding", f"{p} must be at most half the kernel size ({k // 2})")
    out = (size + 2 * p - k) // s + 1
    if out < 1:
        raise WorkloadError(f"{path}.kernel_size", f"kernel {k} is larger than the padded input {size + 2 * p}")
    return out


@handler("maxpool2d", "avgpool2d")
def pool2d(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    kind = str(spec["type"])
    reject_unknown(spec, {"type", "kernel_size", "stride", "padding"}, path)
    expect_dims(shape, 3, path, kind)
    c, h, w = shape
    kh, kw = pair(spec, "kernel_size", path, None)
    sh, sw = pair(spec, "stride", path, None) if "stride" in spec else (kh, kw)
    ph, pw = pair(spec, "padding", path, 0, minimum=0)
    out_shape = (c, _pool_out(h, kh, sh, ph, path), _pool_out(w, kw, sw, pw, path))
    n = numel(out_shape)
    # max_pool2d_with_indices saves its input and int64 indices; avg_pool2d saves its input.
    extra: tuple[tuple[int, int | None], ...] = ((n, 8),) if kind == "maxpool2d" else ()
    y = g.op(kind, x, n, save_input=True, extra=extra)
    g.row(LayerRow(path, kind, out_shape, 0, 0, n * kh * kw, kh * kw, n))
    return out_shape, y


@handler("adaptive_avgpool2d")
def adaptive_pool(
    spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context
) -> tuple[Shape, int]:
    reject_unknown(spec, {"type", "output_size"}, path)
    expect_dims(shape, 3, path, "adaptive_avgpool2d")
    c, h, w = shape
    oh, ow = pair(spec, "output_size", path, None)
    if oh > h or ow > w:
        raise WorkloadError(f"{path}.output_size", f"{oh}×{ow} is larger than the input {h}×{w}")
    out_shape = (c, oh, ow)
    window = math.ceil(h / oh) * math.ceil(w / ow)
    y = g.op("adaptive_avgpool2d", x, numel(out_shape), save_input=True)
    g.row(LayerRow(path, "adaptive_avgpool2d", out_shape, 0, 0, numel(out_shape) * window, window, numel(out_shape)))
    return out_shape, y


@handler("batchnorm1d", "batchnorm2d")
def batchnorm(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    kind = str(spec["type"])
    reject_unknown(spec, {"type", "num_features", "eps", "momentum", "affine", "track_running_stats"}, path)
    if kind == "batchnorm2d":
        expect_dims(shape, 3, path, kind)
    elif len(shape) not in (1, 2):
        raise WorkloadError(path, f"batchnorm1d needs a 1-D or 2-D input per sample, got shape {list(shape)}")
    c = shape[0]
    if "num_features" in spec and get_int(spec, "num_features", path, maximum=MAX_FEATURES) != c:
        raise WorkloadError(f"{path}.num_features", f"is {spec['num_features']} but the input has {c} features")
    get_float(spec, "eps", path, default=1e-5, maximum=1.0)
    get_float(spec, "momentum", path, default=0.1, maximum=1.0)
    affine = get_bool(spec, "affine", path, default=True)
    if get_bool(spec, "track_running_stats", path, default=True):
        g.buffers += 2 * c + 1
    params = 2 * c if affine else 0
    n = numel(shape)
    y = g.op(kind, x, n, save_input=True, params=params, largest_param=c if affine else 0)
    g.row(LayerRow(path, kind, shape, params, 0, 4 * n, 4, n))
    return shape, y


@handler("layernorm", "rmsnorm")
def norm(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    kind = str(spec["type"])
    allowed = {"type", "normalized_shape", "eps", "elementwise_affine"}
    reject_unknown(spec, allowed | ({"bias"} if kind == "layernorm" else {"implementation"}), path)
    impl = ""
    if kind == "rmsnorm":
        impl = get_choice(spec, "implementation", path, RMSNORM_IMPLEMENTATIONS, default="fused")
    d = shape[-1]
    if "normalized_shape" in spec:
        ns = spec["normalized_shape"]
        ns = ns[0] if isinstance(ns, list) and len(ns) == 1 else ns
        if ns != d:
            raise WorkloadError(f"{path}.normalized_shape", f"must equal the last input dimension {d}, got {ns!r}")
    get_float(spec, "eps", path, default=1e-5, maximum=1.0)
    affine = get_bool(spec, "elementwise_affine", path, default=True)
    bias = kind == "layernorm" and get_bool(spec, "bias", path, default=True)
    params = (d + (d if bias else 0)) if affine else 0
    n = numel(shape)
    rows = n // d
    # LayerNorm saves its input plus mean and rstd per row. RMSNorm's fused kernel (aten
    # _fused_rms_norm, which nn.RMSNorm runs on CUDA) saves its input and the reciprocal RMS per
    # row; PyTorch 2.13 runs it decomposed on the CPU, which also keeps the normalised tensor
    # before the weight multiply (``decomposed_saves``: core.estimate.memory adds it on CPUs).
    extra: tuple[tuple[int, int | None], ...] = ((2 * rows, 4),) if kind == "layernorm" else ((rows, 4),)
    y = g.op(kind, x, n, autocast="fp32", save_input=True, extra=extra, params=params, largest_param=d if affine else 0)
    if kind == "rmsnorm":
        # "fp32_decomposed" (Llama's reference code, Hugging Face's LlamaRMSNorm, torchtitan's 2024
        # RMSNorm) runs the decomposed ops on CUDA too, in fp32
        variant = "rmsnorm_fp32" if impl == "fp32_decomposed" else ""
        g.ops[-1] = replace(g.ops[-1], decomposed_saves=n, variant=variant)
    g.row(LayerRow(path, kind, shape, params, 0, 4 * n, 4, n))
    return shape, y


# --- elementwise ---------------------------------------------------------------------------

# What autograd keeps for each activation: the output ("result") or the input ("self").
ACTIVATION_SAVES = {
    "relu": "output",
    "tanh": "output",
    "sigmoid": "output",
    "softmax": "output",
    "leaky_relu": "input",
    "silu": "input",
    "gelu": "input",
}
ACTIVATION_KEYS = {"leaky_relu": {"negative_slope"}, "gelu": {"approximate"}, "softmax": {"dim"}}


@handler(*ACTIVATION_SAVES)
def activation(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    kind = str(spec["type"])
    reject_unknown(spec, {"type", "inplace"} | ACTIVATION_KEYS.get(kind, set()), path)
    if kind == "leaky_relu":
        get_float(spec, "negative_slope", path, default=0.01, maximum=1e3)
    if kind == "gelu":
        get_choice(spec, "approximate", path, ("none", "tanh"), default="none")
    if kind == "softmax" and spec.get("dim", -1) not in (-1, len(shape)):
        raise WorkloadError(f"{path}.dim", "only the last dimension (-1) is supported")
    n = numel(shape)
    saves = ACTIVATION_SAVES[kind]
    y = g.op(
        kind,
        x,
        n,
        autocast="fp32" if kind == "softmax" else "same",
        save_input=saves == "input",
        save_output=saves == "output",
    )
    g.row(LayerRow(path, kind, shape, 0, 0, n, 1, n))
    return shape, y


@handler("dropout")
def dropout(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    reject_unknown(spec, {"type", "p", "inplace"}, path)
    p = get_float(spec, "p", path, default=0.5, maximum=1.0, exclusive_max=True)
    n = numel(shape)
    y = g.op("dropout", x, n, extra=((n, 1),)) if p > 0 else x  # native_dropout keeps a bool mask
    g.row(LayerRow(path, "dropout", shape, 0, 0, n, 1, n))
    return shape, y


@handler("flatten")
def flatten(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    reject_unknown(spec, {"type", "start_dim", "end_dim"}, path)
    if spec.get("start_dim", 1) != 1 or spec.get("end_dim", -1) != -1:
        raise WorkloadError(path, "only flatten(start_dim=1, end_dim=-1) is supported")
    out_shape = (numel(shape),)
    g.row(LayerRow(path, "flatten", out_shape, 0, 0, 0, 0, 0))
    return out_shape, x  # a view: no new memory


# --- containers ------------------------------------------------------------------------------


@handler("repeat")
def repeat(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    reject_unknown(spec, {"type", "times", "layers"}, path)
    times = get_int(spec, "times", path, maximum=10**4)
    layers = _layer_list(spec, path)
    top_level = g.multiplier == 1 and g.recording
    recording, multiplier = g.recording, g.multiplier
    out_shape = shape
    for i in range(times):
        if top_level and i > 0:
            g.segment += 1
        g.multiplier = multiplier * times
        out_shape, x = ctx.apply_list(layers, f"{path}.layers", out_shape, x, g)
        g.recording = False
        if times > 1 and out_shape != shape:
            g.recording, g.multiplier = recording, multiplier
            raise WorkloadError(
                path, f"a repeated block must keep its input shape: in {list(shape)}, out {list(out_shape)}"
            )
    g.recording, g.multiplier = recording, multiplier
    return out_shape, x


@handler("residual")
def residual(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    reject_unknown(spec, {"type", "layers", "shortcut"}, path)
    first_op = len(g.ops)
    out_shape, y = ctx.apply_list(_layer_list(spec, path), f"{path}.layers", shape, x, g)
    short_shape, s = shape, x
    if "shortcut" in spec:
        short_shape, s = ctx.apply_list(_layer_list(spec, path, "shortcut"), f"{path}.shortcut", shape, x, g)
    if short_shape != out_shape:
        raise WorkloadError(
            path,
            f"the branch gives {list(out_shape)} but the shortcut gives {list(short_shape)}; "
            "add a shortcut that matches (e.g. a 1×1 conv2d)",
        )
    # while one path runs backward, the add's output gradient waits for the other path
    for i in range(first_op, len(g.ops)):
        g.ops[i] = replace(g.ops[i], pending_grad=g.ops[i].pending_grad + numel(out_shape))
    # addition saves nothing for backward; half + fp32 gives fp32 (the residual stream under autocast)
    z = g.op("add", y, numel(out_shape), out_fp32=g.tensors[y].fp32 or g.tensors[s].fp32)
    g.row(LayerRow(path, "residual", out_shape, 0, 0, numel(out_shape), 1, numel(out_shape)))
    return out_shape, z


def _layer_list(spec: Mapping[str, Any], path: str, key: str = "layers") -> list[Any]:
    layers = spec.get(key)
    if not isinstance(layers, list) or not layers:
        raise WorkloadError(f"{path}.{key}", "must be a non-empty list of layers")
    return layers


def apply_layer(spec: Any, path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    ctx.applied[0] += 1
    if ctx.applied[0] > MAX_LAYERS_APPLIED:
        raise WorkloadError(path, f"the model applies more than {MAX_LAYERS_APPLIED:,} layers (repeats counted)")
    if path.count(".layers[") + path.count(".shortcut[") > MAX_CONTAINER_DEPTH + 1:
        raise WorkloadError(path, f"repeat and residual blocks are nested deeper than {MAX_CONTAINER_DEPTH} levels")
    spec = require_mapping(spec, path)
    kind = spec.get("type")
    if not isinstance(kind, str) or kind.lower() not in HANDLERS:
        names = ", ".join(sorted(HANDLERS))
        raise WorkloadError(f"{path}.type", f"unknown layer type {kind!r} (known: {names})")
    if kind != kind.lower():
        spec = {**spec, "type": kind.lower()}
    if ctx.input_is_int and x == 0 and kind.lower() != "embedding":
        raise WorkloadError(path, "integer (token) input must go into an embedding layer first")
    return HANDLERS[kind.lower()](spec, path, shape, x, g, ctx)
