"""The step replay: what is alive at every instant of one steady-state training step, per sample
of the batch, from the tensor graph of the layer list (core/network/graph.py).

The replay runs one steady-state training step (after the first, so optimizer state exists;
gradients set to None by ``zero_grad()``):

* forward: saved-for-backward tensors accumulate, plus the op's own output;
* backward, op by op in reverse: saved tensors of earlier ops stay, those of later ops are freed,
  parameter gradients accumulate, and the op holds its output and input gradients;
* optimizer step: all gradients, state, and the optimizer's temporaries.

The peak is the largest of these instants, so the total is not the plain sum of the parts.
Full activation checkpointing keeps only each segment's input (a top-level layer or one iteration
of a ``repeat``) and recomputes one segment at a time during backward; selective checkpointing also
keeps the segment's matrix-product and attention outputs; the attention kernel and the
model-parallel split change what each tensor weighs (core.estimate.activations).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from core.estimate.activations import (
    DEFAULT_POLICY,
    ActivationPolicy,
    full_segments,
    math_score_saves,
    stored_under,
    tensor_split,
)
from core.network.graph import Graph, Op
from core.network.model import ModelAnalysis


@dataclass(frozen=True)
class MemoryProfile:
    """Per-sample and fixed memory at every instant of a step, independent of batch and bytes."""

    act_float: np.ndarray  # float elements per sample alive at each instant
    act_fixed: np.ndarray  # bytes per sample of bool/int tensors alive
    temp_float: np.ndarray  # float elements per sample of temporaries (gradients of activations)
    grad_params: np.ndarray  # parameter elements whose gradients exist
    saved_float: float  # all saved activations at the end of forward
    saved_fixed: float
    step_mask: np.ndarray  # 1 for forward/backward instants, 0 for the optimizer step (last row)
    loss_saved: np.ndarray  # bytes per sample: the loss's fp32 log-softmax, alive through backward
    loss_grad: np.ndarray  # bytes per sample: the loss gradient (fp32) as backward starts
    largest_param: int
    largest_segment_params: int
    largest_segment_matmul: int  # of those, matrix weights (fp8 all-gather gathers them in 1 byte)
    matmul_params: int


def memory_profile(model: ModelAnalysis, policy: ActivationPolicy = DEFAULT_POLICY) -> MemoryProfile:
    """The step replay of ``model`` under ``policy`` (checkpointing, attention kernel, device kind,
    model-parallel split: core.estimate.activations)."""
    assert model.graph is not None
    return _profile(model.graph, model.output_elems, policy)


@lru_cache(maxsize=256)
def _profile(g: Graph, output_elems: int, policy: ActivationPolicy) -> MemoryProfile:
    ops = list(g.ops)
    frac = tensor_split(g, policy)
    # float tensors scale with the activation precision; fp32-kept and fixed-type ones do not
    size_f = [t.elems * frac[i] if t.dtype_bytes is None and not t.fp32 else 0.0 for i, t in enumerate(g.tensors)]
    size_x = [
        t.elems * (t.dtype_bytes or 4) * frac[i] if t.dtype_bytes is not None or t.fp32 else 0.0
        for i, t in enumerate(g.tensors)
    ]
    size_f[0] = size_x[0] = 0.0  # the input batch is counted as data
    for i, op in enumerate(ops):
        floats, fixed = math_score_saves(policy, op)  # the math kernel's score tensors
        # RMSNorm run decomposed: on the CPU, and on CUDA in its fp32 implementation
        if op.decomposed_saves and (policy.device_kind == "cpu" or op.variant == "rmsnorm_fp32"):
            floats += op.decomposed_saves
        if floats or fixed:
            size_f.append(floats * frac[op.output_id])
            size_x.append(fixed * frac[op.output_id])
            ops[i] = replace(op, saved=(*op.saved, len(size_f) - 1))
    params = [op.params for op in ops]
    grads_after = np.cumsum(params[::-1])[::-1]  # gradients of op i and everything after it

    seg_input: dict[int, int] = {}
    seg_ops: dict[int, list[Op]] = {}
    for op in g.ops:
        seg_input.setdefault(op.segment, op.input_id)
        seg_ops.setdefault(op.segment, []).append(op)
    # what each checkpointed segment stores from forward to backward, with the share of each tensor
    # that stays (None: not checkpointed)
    stored: dict[int, dict[int, float] | None] = {}
    wrapped = full_segments(g, policy) if policy.checkpoint == "full" else set()
    for seg, members in seg_ops.items():
        if policy.checkpoint == "full" and seg in wrapped:
            stored[seg] = {seg_input[seg]: 1.0}
        elif policy.checkpoint == "selective" and len(members) > 1:
            stored[seg] = {**stored_under(g, policy, members), seg_input[seg]: 1.0}
        else:
            stored[seg] = None

    rows: list[tuple[float, float, float, float]] = []  # act_f, act_x, temp_f, grad_p
    saved: set[int] = set()
    af = ax = 0.0
    # forward
    for op in ops:
        keep = stored[op.segment]
        if keep is not None:  # only what the segment stores stays; the op's own tensors are transient
            own = {op.output_id, *op.saved}
            for t in ({seg_input[op.segment]} | (own & keep.keys())) - saved:
                saved.add(t)
                af += size_f[t] * keep[t]
                ax += size_x[t] * keep[t]
            extra = own - saved
            # a tensor stored in part (the per-op policy's Q/K/V) exists whole while its op runs
            part_f = sum(size_f[t] * (1.0 - keep[t]) for t in own & keep.keys())
            part_x = sum(size_x[t] * (1.0 - keep[t]) for t in own & keep.keys())
            rows.append(
                (af + part_f + sum(size_f[t] for t in extra), ax + part_x + sum(size_x[t] for t in extra), 0, 0)
            )
            continue
        for t in op.saved:
            if t not in saved:
                saved.add(t)
                af += size_f[t]
                ax += size_x[t]
        out_f = size_f[op.output_id] if op.output_id not in saved else 0
        rows.append((af + out_f, ax, 0, 0))
    saved_f_end, saved_x_end = af, ax
    # backward, in reverse
    live_f, live_x = _backward_live(ops, stored, size_f, size_x)
    whole = frac[0]  # the share of a tensor no tensor-parallel group splits (the residual stream)
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        grad_in = size_f[op.input_id] if op.input_id != 0 else 0
        temp = size_f[op.output_id] + grad_in + op.pending_grad * whole
        rows.append((live_f[i], live_x[i], temp, int(grads_after[i])))
    rows.append((0, 0, 0, 0))  # the optimizer step: no activations; its memory is added per precision
    arr = np.array(rows, dtype=np.float64)
    # pipeline 1F1B with fewer micro-batches than stages: the first stage holds fewer of them
    arr[:, 0:2] *= policy.pipeline_share
    step_mask = np.ones(len(rows))
    step_mask[-1] = 0.0
    # cross-entropy runs in fp32 (also under autocast): it keeps log-softmax of the logits through
    # backward, and backward starts from fp32 gradients of the logits (split as the output layer's)
    n = len(ops)
    logits = output_elems * 4.0 * (frac[ops[-1].output_id] if ops else 1.0)
    loss_saved = np.zeros(len(rows))
    loss_saved[n:-1] = logits
    loss_grad = np.zeros(len(rows))
    loss_grad[n] = logits
    seg_params: dict[int, int] = {}
    seg_matmul: dict[int, int] = {}
    for op in ops:
        seg_params[op.segment] = seg_params.get(op.segment, 0) + op.params
        seg_matmul[op.segment] = seg_matmul.get(op.segment, 0) + op.matmul_params
    largest = max(seg_params, key=lambda s: seg_params[s], default=None)
    return MemoryProfile(
        act_float=arr[:, 0],
        act_fixed=arr[:, 1],
        temp_float=arr[:, 2],
        grad_params=arr[:, 3],
        saved_float=saved_f_end * policy.pipeline_share,
        saved_fixed=saved_x_end * policy.pipeline_share,
        largest_param=max((op.largest_param for op in ops), default=0),
        largest_segment_params=seg_params[largest] if largest is not None else 0,
        largest_segment_matmul=seg_matmul[largest] if largest is not None else 0,
        step_mask=step_mask,
        loss_saved=loss_saved,
        loss_grad=loss_grad,
        matmul_params=sum(op.matmul_params for op in ops),
    )


def _backward_live(
    ops: list[Op], stored: dict[int, dict[int, float] | None], size_f: list[float], size_x: list[float]
) -> tuple[list[float], list[float]]:
    """Live saved tensors during backward of op i: what the earlier segments hold (their stored
    tensors, or the stored share of them, when checkpointed, else all they saved), plus, in op i's
    own segment, its stored tensors (whole again once recomputed) and what its recomputed forward
    has saved up to op i."""
    live_f = [0.0] * len(ops)
    live_x = [0.0] * len(ops)
    held: set[int] = set()
    held_f = held_x = 0.0
    i = 0
    while i < len(ops):
        seg = ops[i].segment
        keep = stored[seg]
        cur: set[int] = set((keep or {}).keys() - held)
        cur_f = sum(size_f[t] for t in cur)
        cur_x = sum(size_x[t] for t in cur)
        while i < len(ops) and ops[i].segment == seg:
            for t in ops[i].saved:
                if t not in held and t not in cur:
                    cur.add(t)
                    cur_f += size_f[t]
                    cur_x += size_x[t]
            live_f[i], live_x[i] = held_f + cur_f, held_x + cur_x
            i += 1
        for t in cur if keep is None else keep.keys() - held:
            share = 1.0 if keep is None else keep[t]
            held.add(t)
            held_f += size_f[t] * share
            held_x += size_x[t] * share
    return live_f, live_x
