"""Sequence layers: embeddings, recurrent layers, attention and transformer blocks.

Registered into ``core.network.layers.HANDLERS`` on import. Attention FLOPs count the four matrix
products of scaled dot-product attention over the full L×L score matrix (what
``torch.utils.flop_counter`` counts for the math kernel, causal masking included).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from core.errors import WorkloadError
from core.network.graph import Graph, LayerRow
from core.network.layers import (
    MAX_FEATURES,
    RMSNORM_IMPLEMENTATIONS,
    Context,
    Shape,
    check_size,
    expect_dims,
    handler,
    numel,
)
from core.validate import get_bool, get_choice, get_float, get_int, reject_unknown


@handler("embedding")
def embedding(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    reject_unknown(spec, {"type", "num_embeddings", "embedding_dim", "padding_idx"}, path)
    if not (ctx.input_is_int and x == 0):
        raise WorkloadError(path, "an embedding takes the model's integer token input (model.input_dtype int64)")
    expect_dims(shape, 1, path, "embedding")
    num = get_int(spec, "num_embeddings", path, maximum=MAX_FEATURES)
    dim = get_int(spec, "embedding_dim", path, maximum=MAX_FEATURES)
    params = num * dim
    out_shape = (shape[0], dim)
    check_size(out_shape, path)
    if g.embedding is None:
        g.embedding = (num, dim)
    # embedding backward keeps only the indices, which are the input batch itself
    y = g.op("embedding", x, numel(out_shape), autocast="fp32", save_input=True, params=params, largest_param=params)
    g.row(LayerRow(path, "embedding", out_shape, params, 0, 0, 0, numel(out_shape)))
    return out_shape, y


@handler("positional_embedding")
def positional_embedding(
    spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context
) -> tuple[Shape, int]:
    """A learned position table added to the input (GPT-2, BERT): ``x + table[:L]``."""
    reject_unknown(spec, {"type", "num_embeddings"}, path)
    expect_dims(shape, 2, path, "positional_embedding")
    length, dim = shape
    num = get_int(spec, "num_embeddings", path, maximum=MAX_FEATURES)
    if length > num:
        raise WorkloadError(f"{path}.num_embeddings", f"{num} positions are fewer than the sequence length {length}")
    params = num * dim
    y = g.op("positional_embedding", x, numel(shape), autocast="fp32", params=params, largest_param=params)
    g.row(LayerRow(path, "positional_embedding", shape, params, 0, numel(shape), 1, numel(shape)))
    return shape, y


@handler("lstm", "gru")
def recurrent(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    kind = str(spec["type"])
    allowed = {"type", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional"}
    reject_unknown(spec, allowed, path)
    expect_dims(shape, 2, path, kind)
    steps, features = shape
    if "input_size" in spec and get_int(spec, "input_size", path, maximum=MAX_FEATURES) != features:
        raise WorkloadError(f"{path}.input_size", f"is {spec['input_size']} but the input has {features} features")
    if spec.get("batch_first", True) is not True:
        raise WorkloadError(f"{path}.batch_first", "inputs are (batch, sequence, features): must be true")
    hidden = get_int(spec, "hidden_size", path, maximum=MAX_FEATURES)
    layers = get_int(spec, "num_layers", path, default=1, maximum=1000)
    bias = get_bool(spec, "bias", path, default=True)
    p = get_float(spec, "dropout", path, default=0.0, maximum=1.0, exclusive_max=True)
    dirs = 2 if get_bool(spec, "bidirectional", path, default=False) else 1
    gates = 4 if kind == "lstm" else 3
    params = flops = t1 = t2 = 0
    in_f = features
    for index in range(layers):
        w = gates * hidden * (in_f + hidden)
        layer_params = dirs * (w + (2 * gates * hidden if bias else 0))
        params += layer_params
        flops += dirs * 2 * w * steps
        t1 += dirs * 2 * w * steps
        t2 += steps * 2 * (in_f + hidden)  # time steps run one after another
        # per step the fused kernels (oneDNN on CPU, cuDNN on CUDA) keep the gate pre-activations,
        # the gates, the cell/hidden states and a reserve space; for the LSTM the total measured
        # on PyTorch 2.11–2.13 is about 17·H per step and direction (engine: 2·gates·H + 2·H + 7·H)
        reserve = 7 * hidden if kind == "lstm" else 0
        extra = ((steps * dirs * (2 * gates * hidden + 2 * hidden + reserve), None),)
        if p > 0 and index < layers - 1:
            extra += ((steps * dirs * hidden, 1),)
        biases = (gates * hidden,) * 2 if bias else ()
        x = g.op(
            kind,
            x,
            steps * dirs * hidden,
            autocast="lower",
            save_input=True,
            extra=extra,
            params=layer_params,
            matmul_params=dirs * w,
            largest_param=gates * hidden * max(in_f, hidden),
            flops=dirs * 2 * w * steps,
            # per direction: input and hidden weights, then their biases
            tensor_sizes=dirs * (gates * hidden * in_f, gates * hidden * hidden, *biases),
        )
        g.ops[-1] = replace(g.ops[-1], rnn_layers=layers)
        in_f = dirs * hidden
    out_shape = (steps, dirs * hidden)
    g.row(LayerRow(path, kind, out_shape, params, flops, t1, t2, steps * dirs * hidden * gates * layers))
    return out_shape, x


# rotary embeddings as practitioners' code runs them: "rotate_half" (Hugging Face's Llama: q·cos +
# rotate_half(q)·sin in the activation dtype), "complex" (Meta's reference code and torchtitan: the
# pairs as complex numbers in fp32, times the frequencies, cast back)
ROTARY = ("none", "rotate_half", "complex")
ROTARY_VARIANT = {"rotate_half": "rotary_half", "complex": "rotary_complex"}


def _attention(
    path: str,
    shape: Shape,
    x: int,
    g: Graph,
    heads: int,
    kv_heads: int,
    bias: bool,
    dropout: float,
    causal: bool = False,
    rotary: str = "none",
) -> tuple[Shape, int, int, int]:
    length, dim = shape
    if dim % heads:
        raise WorkloadError(f"{path}.num_heads", f"{heads} heads do not divide the embedding size {dim}")
    if heads % kv_heads:
        raise WorkloadError(f"{path}.kv_heads", f"{kv_heads} key/value heads do not divide {heads} heads")
    kv_dim = dim * kv_heads // heads
    proj = dim * dim * 2 + 2 * dim * kv_dim  # q, o and k, v
    params = proj + ((2 * dim + 2 * kv_dim) if bias else 0)
    flops = 2 * length * proj + 4 * length * length * dim
    qkv = g.op(
        "qkv_proj",
        x,
        length * (dim + 2 * kv_dim),
        autocast="lower",
        save_input=True,
        params=params - dim * dim - (dim if bias else 0),
        matmul_params=dim * dim + 2 * dim * kv_dim,
        largest_param=dim * dim,
        flops=2 * length * (dim * dim + 2 * dim * kv_dim),
        tensor_sizes=(dim * dim, dim * kv_dim, dim * kv_dim) + ((dim, kv_dim, kv_dim) if bias else ()),  # q, k, v
    )
    if rotary != "none":
        # rotary embeddings on q and k: elementwise kernels that save nothing (cos/sin or the complex
        # frequencies are buffers); the rotated q and k replace the projections' (sdpa reads them)
        g.op("rotary", qkv, length * (dim + kv_dim))
        g.ops[-1] = replace(g.ops[-1], variant=ROTARY_VARIANT[rotary])
    # memory-efficient attention keeps q, k, v, its output and a log-sum-exp per row and head
    core = g.op(
        "sdpa",
        qkv,
        length * dim,
        save_input=True,
        save_output=True,
        extra=((length * heads, 4),),
        flops=4 * length * length * dim,
    )
    g.ops[-1] = replace(g.ops[-1], heads=heads, causal=causal, scores=length * length * heads, attn_dropout=dropout > 0)
    if dropout > 0:  # PyTorch's CPU flash kernel has no dropout: the math kernel saves L×L scores
        g.ops[-1] = replace(g.ops[-1], math_scores=length * length * heads)
    y = g.op(
        "out_proj",
        core,
        length * dim,
        autocast="lower",
        params=dim * dim + (dim if bias else 0),
        matmul_params=dim * dim,
        largest_param=dim * dim,
        flops=2 * length * dim * dim,
    )
    t2 = 2 * dim + 4 * (dim // heads) + 2 * length + 2 * dim
    g.row(LayerRow(path, "multihead_attention", shape, params, flops, flops, t2, length * dim))
    return shape, y, params, flops


@handler("multihead_attention")
def multihead_attention(
    spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context
) -> tuple[Shape, int]:
    """Self-attention over a (sequence, embed_dim) input, as torch.nn.MultiheadAttention."""
    allowed = {"type", "embed_dim", "num_heads", "dropout", "bias", "kv_heads", "causal", "batch_first", "rotary"}
    reject_unknown(spec, allowed, path)
    expect_dims(shape, 2, path, "multihead_attention")
    if "embed_dim" in spec and get_int(spec, "embed_dim", path, maximum=MAX_FEATURES) != shape[1]:
        raise WorkloadError(f"{path}.embed_dim", f"is {spec['embed_dim']} but the input has {shape[1]} features")
    heads = get_int(spec, "num_heads", path, maximum=4096)
    kv_heads = get_int(spec, "kv_heads", path, default=heads, maximum=4096)
    p = get_float(spec, "dropout", path, default=0.0, maximum=1.0, exclusive_max=True)
    causal = get_bool(spec, "causal", path, default=False)
    bias = get_bool(spec, "bias", path, default=True)
    rotary = get_choice(spec, "rotary", path, ROTARY, default="none")
    out_shape, y, _, _ = _attention(path, shape, x, g, heads, kv_heads, bias, p, causal, rotary)
    return out_shape, y


@handler("swiglu")
def swiglu(spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    """The gated MLP of Llama: ``down(silu(gate(x)) * up(x))``."""
    reject_unknown(spec, {"type", "hidden_features", "bias"}, path)
    dim = shape[-1]
    hidden = get_int(spec, "hidden_features", path, maximum=MAX_FEATURES)
    bias = get_bool(spec, "bias", path, default=False)
    lead = numel(shape[:-1])
    params = 3 * dim * hidden + ((2 * hidden + dim) if bias else 0)
    flops = 2 * 3 * dim * hidden * lead
    n_hidden = lead * hidden
    gate_up = g.op(
        "gate_up",
        x,
        2 * n_hidden,
        autocast="lower",
        save_input=True,
        params=params - dim * hidden - (dim if bias else 0),
        matmul_params=2 * dim * hidden,
        largest_param=dim * hidden,
        flops=2 * 2 * dim * hidden * lead,
        tensor_sizes=(dim * hidden,) * 2 + ((hidden,) * 2 if bias else ()),  # gate and up projections
    )
    # silu keeps its input (the gate), the product keeps both factors
    act = g.op("silu_mul", gate_up, n_hidden, save_input=True, extra=((n_hidden, None),))
    y = g.op(
        "down",
        act,
        lead * dim,
        autocast="lower",
        save_input=True,
        params=dim * hidden + (dim if bias else 0),
        matmul_params=dim * hidden,
        largest_param=dim * hidden,
        flops=2 * dim * hidden * lead,
    )
    g.row(LayerRow(path, "swiglu", shape, params, flops, flops + 2 * n_hidden, 4 * dim + 2 * hidden, n_hidden))
    return shape, y


@handler("transformer_block")
def transformer_block(
    spec: Mapping[str, Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context
) -> tuple[Shape, int]:
    """torch.nn.TransformerEncoderLayer (its argument names), plus kv_heads, causal, norm, mlp.

    Expanded into residual blocks of the primitive layers, so memory and FLOPs follow them.
    """
    allowed = {
        "type",
        "d_model",
        "nhead",
        "dim_feedforward",
        "dropout",
        "activation",
        "norm_first",
        "bias",
        "layer_norm_eps",
        "batch_first",
        "kv_heads",
        "causal",
        "norm",
        "mlp",
        "rotary",
        "norm_implementation",
    }
    reject_unknown(spec, allowed, path)
    expect_dims(shape, 2, path, "transformer_block")
    if "d_model" in spec and get_int(spec, "d_model", path, maximum=MAX_FEATURES) != shape[1]:
        raise WorkloadError(f"{path}.d_model", f"is {spec['d_model']} but the input has {shape[1]} features")
    heads = get_int(spec, "nhead", path, maximum=4096)
    ffn = get_int(spec, "dim_feedforward", path, default=2048, maximum=MAX_FEATURES)
    p = get_float(spec, "dropout", path, default=0.1, maximum=1.0, exclusive_max=True)
    act = get_choice(spec, "activation", path, ("relu", "gelu"), default="relu")
    norm_first = get_bool(spec, "norm_first", path, default=False)
    bias = get_bool(spec, "bias", path, default=True)
    kv_heads = get_int(spec, "kv_heads", path, default=heads, maximum=4096)
    causal = get_bool(spec, "causal", path, default=False)
    norm_kind = get_choice(spec, "norm", path, ("layernorm", "rmsnorm"), default="layernorm")
    mlp_kind = get_choice(spec, "mlp", path, ("standard", "swiglu"), default="standard")
    rotary = get_choice(spec, "rotary", path, ROTARY, default="none")
    norm_impl = get_choice(spec, "norm_implementation", path, RMSNORM_IMPLEMENTATIONS, default="fused")
    if norm_impl != "fused" and norm_kind != "rmsnorm":
        raise WorkloadError(f"{path}.norm_implementation", 'applies to norm "rmsnorm" only')
    return ctx.apply_list(
        expand_transformer_block(
            shape[1], heads, kv_heads, ffn, p, act, norm_first, bias, causal, norm_kind, mlp_kind, rotary, norm_impl
        ),
        f"{path}.expanded",
        shape,
        x,
        g,
    )


def expand_transformer_block(
    dim: int,
    heads: int,
    kv_heads: int,
    ffn: int,
    p: float,
    act: str,
    norm_first: bool,
    bias: bool,
    causal: bool,
    norm_kind: str,
    mlp_kind: str,
    rotary: str = "none",
    norm_impl: str = "fused",
) -> list[dict[str, Any]]:
    """The primitive layer list of one transformer block (shared with the PyTorch builder)."""
    norm: dict[str, Any] = {"type": norm_kind}
    if norm_impl != "fused":
        norm["implementation"] = norm_impl
    if norm_kind == "layernorm" and not bias:
        norm["bias"] = False
    drop = [{"type": "dropout", "p": p}] if p > 0 else []
    attn = [
        {
            "type": "multihead_attention",
            "num_heads": heads,
            "kv_heads": kv_heads,
            "dropout": p,
            "bias": bias,
            "causal": causal,
            **({"rotary": rotary} if rotary != "none" else {}),
        },
        *drop,
    ]
    if mlp_kind == "swiglu":
        mlp: list[dict[str, Any]] = [{"type": "swiglu", "hidden_features": ffn, "bias": bias}, *drop]
    else:
        mlp = [
            {"type": "linear", "out_features": ffn, "bias": bias},
            {"type": act},
            *drop,
            {"type": "linear", "out_features": dim, "bias": bias},
            *drop,
        ]
    if norm_first:
        return [{"type": "residual", "layers": [norm, *attn]}, {"type": "residual", "layers": [norm, *mlp]}]
    return [{"type": "residual", "layers": attn}, norm, {"type": "residual", "layers": mlp}, norm]
