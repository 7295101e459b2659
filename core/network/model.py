"""A workload's model → one analysis: parameters, FLOPs, Jamgharyan T1/T2 and the tensor graph.

Three forms are accepted (docs/workload.md): a layer list with an input shape, a named preset
(resolved to one of the other forms by ``core.network.presets``), or a *summary* of a published model
that gives only its parameter and feature sizes (Jamgharyan Table 1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import core.network.layers_seq  # noqa: F401  (registers the sequence layer handlers)
from core.errors import WorkloadError
from core.network.graph import Graph, LayerRow
from core.network.layers import Context, Shape, apply_layer, numel
from core.validate import get_bool, get_choice, get_float, get_int, get_shape, reject_unknown, require_mapping
from core.vocabulary import INPUT_DTYPES

MAX_PARAMS = 10**13


@dataclass(frozen=True)
class ModelAnalysis:
    """Everything about the network that does not depend on batch, precision or hardware."""

    kind: str  # "layers" or "summary"
    input_shape: tuple[int, ...]
    input_dtype: str
    output_shape: tuple[int, ...]
    parameters: int
    buffers: int
    forward_flops: int  # per sample, 2 FLOP per multiply-add
    t1_ops: int  # Jamgharyan eq. 2, per sample
    t2_ops: int  # Jamgharyan eq. 3, per sample
    rows: tuple[LayerRow, ...]
    graph: Graph | None = field(default=None, compare=False, repr=False)
    activation_bytes_per_sample: int = 0  # summary models: the published feature size
    notes: tuple[str, ...] = ()
    trace: Mapping[str, Any] | None = field(default=None, compare=False)  # a traced PyTorch model's figures

    @property
    def input_elems(self) -> int:
        return numel(self.input_shape)

    @property
    def input_bytes_per_element(self) -> int:
        return INPUT_DTYPES[self.input_dtype]

    @property
    def output_elems(self) -> int:
        return numel(self.output_shape)


def analyze_model(model: Mapping[str, Any], path: str = "model") -> ModelAnalysis:
    """Analyse a resolved model description (no preset reference left). Cached by content."""
    return _analyze_cached(json.dumps(model, sort_keys=True), path)


@lru_cache(maxsize=256)
def _analyze_cached(model_json: str, path: str) -> ModelAnalysis:
    model = json.loads(model_json)
    if "summary" in model:
        return _analyze_summary(model, path)
    return _analyze_layers(model, path)


def _analyze_layers(model: Mapping[str, Any], path: str) -> ModelAnalysis:
    reject_unknown(model, {"input_shape", "input_dtype", "layers", "name", "description", "source"}, path)
    shape = get_shape(model, "input_shape", path)
    dtype = get_choice(model, "input_dtype", path, INPUT_DTYPES, default="float32")
    layers = model.get("layers")
    if not isinstance(layers, list) or not layers:
        raise WorkloadError(f"{path}.layers", "must be a non-empty list of layers")
    g = Graph()
    x = g.tensor(numel(shape), INPUT_DTYPES[dtype])
    ctx = Context(
        apply_list=lambda specs, p, s, t, gr: _apply_list(specs, p, s, t, gr, ctx), input_is_int=dtype == "int64"
    )
    out_shape = shape
    for i, spec in enumerate(layers):
        if i > 0:
            g.segment += 1
        out_shape, x = apply_layer(spec, f"{path}.layers[{i}]", out_shape, x, g, ctx)
    if ctx.input_is_int and x == 0:
        raise WorkloadError(f"{path}.layers", "integer input must go through an embedding layer")
    params = sum(op.params for op in g.ops)
    if params > MAX_PARAMS:
        raise WorkloadError(path, f"{params:.3g} parameters is beyond what TrainRig sizes (at most 1e13)")
    rows = tuple(g.rows)
    return ModelAnalysis(
        kind="layers",
        input_shape=shape,
        input_dtype=dtype,
        output_shape=out_shape,
        parameters=params,
        buffers=g.buffers,
        forward_flops=sum(r.flops * r.count for r in rows),
        t1_ops=sum(r.t1_ops * r.count for r in rows),
        t2_ops=sum(r.t2_ops * r.count for r in rows),
        rows=rows,
        graph=g,
    )


def _apply_list(specs: Sequence[Any], path: str, shape: Shape, x: int, g: Graph, ctx: Context) -> tuple[Shape, int]:
    for i, spec in enumerate(specs):
        shape, x = apply_layer(spec, f"{path}[{i}]", shape, x, g, ctx)
    return shape, x


def _analyze_summary(model: Mapping[str, Any], path: str) -> ModelAnalysis:
    reject_unknown(model, {"input_shape", "input_dtype", "summary", "name", "description", "source", "trace"}, path)
    shape = get_shape(model, "input_shape", path)
    dtype = get_choice(model, "input_dtype", path, INPUT_DTYPES, default="float32")
    s = require_mapping(model["summary"], f"{path}.summary")
    sp = f"{path}.summary"
    reject_unknown(s, {"parameters", "activation_bytes_per_sample", "forward_flops_per_sample", "outputs"}, sp)
    params = get_int(s, "parameters", sp, maximum=MAX_PARAMS)
    act = get_int(s, "activation_bytes_per_sample", sp, minimum=0, maximum=10**15)
    outputs = get_int(s, "outputs", sp, default=1, maximum=10**9)
    notes: list[str] = []
    source = model.get("source")
    if isinstance(source, str) and source.startswith("traced"):
        notes.append(source)
    if "forward_flops_per_sample" in s:
        flops = int(get_float(s, "forward_flops_per_sample", sp, minimum=0, maximum=1e18))
    else:
        flops = 2 * params
        notes.append(
            "forward FLOPs not published for this model: Hooda's O_f = 2 FLOP per parameter per "
            "sample is used, which undercounts convolutional networks"
        )
    return ModelAnalysis(
        kind="summary",
        input_shape=shape,
        input_dtype=dtype,
        output_shape=(outputs,),
        parameters=params,
        buffers=0,
        forward_flops=flops,
        t1_ops=flops,
        t2_ops=0,
        rows=(),
        activation_bytes_per_sample=act,
        notes=tuple(notes),
        trace=_check_trace(model["trace"], f"{path}.trace") if "trace" in model else None,
    )


# Kernel kinds a trace may list (the worker's names; core.estimate.timing has a cost for each).
ELEMENTWISE_KINDS = ("relu", "tanh", "gelu", "softmax", "batchnorm", "layernorm", "maxpool", "avgpool", "dropout")
ELEMENTWISE_KINDS += ("add", "embedding")


def _check_trace(trace: Any, path: str) -> Mapping[str, Any]:
    """What a trace of a PyTorch model recorded, checked so a hand-edited file fails with its path."""
    t = require_mapping(trace, path)
    ops = t.get("ops", [])
    if not isinstance(ops, list):
        raise WorkloadError(f"{path}.ops", "must be a list of kernels")
    for i, op in enumerate(ops):
        p = f"{path}.ops[{i}]"
        o = require_mapping(op, p)
        kind = get_choice(o, "kind", p, ("linear", "conv", *ELEMENTWISE_KINDS), default=None)
        if kind in ("linear", "conv"):
            get_float(o, "flops", p, minimum=0, maximum=1e18)
            get_int(o, "weights", p, default=0, minimum=0, maximum=MAX_PARAMS)
            get_bool(o, "first", p, default=False)
            get_bool(o, "pointwise", p, default=False)
        else:
            get_float(o, "elements", p, minimum=0, maximum=1e15)
    if "op_calls" in t:
        get_int(t, "op_calls", path, minimum=0, maximum=10**9)
    sizes = t.get("param_sizes", [])
    if not isinstance(sizes, list):
        raise WorkloadError(f"{path}.param_sizes", "must be a list of parameter tensor sizes")
    for i, n in enumerate(sizes):
        get_int({f"param_sizes[{i}]": n}, f"param_sizes[{i}]", path, minimum=0, maximum=MAX_PARAMS)
    return t
