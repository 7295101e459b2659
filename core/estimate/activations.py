"""Activations under large-model settings: the checkpointing policy, the attention kernel and the
model-parallel split (docs/sizing.md §4e).

* **Checkpointing** (``TrainingSpec.checkpoint_policy``): "none" keeps what autograd saves; "full"
  keeps each segment's input (a top-level layer or one ``repeat`` iteration) and runs the segment's
  forward again in backward; "selective" is the per-op policy of torchtitan and Megatron-core
  (``torch.utils.checkpoint`` with a policy that must-saves matrix products and SDPA): within a
  segment the outputs of the matrix products and of the attention kernel (with the flash kernel's
  log-sum-exp) are stored, and the cheap ops — norms, activations, dropout, autocast's casts, and
  the math kernel's sequence² softmax and dropout — run again in backward (Korthikanti et al. 2022,
  "Reducing Activation Recomputation in Large Transformer Models", arXiv 2205.05198, §4).
  A segment of one op (an embedding, the output layer) is not checkpointed: torchtitan wraps the
  transformer blocks only. "selective_op" is torchtitan's own per-op policy
  (``selective_ac_option = "op"``, torchtitan/…/activation_checkpoint.py ``_get_custom_policy``): the
  same save list, but it counts the block's ``aten.mm`` calls in forward order and recomputes every
  second one — with Llama's separate Q, K, V, gate and up projections that is K, the output
  projection and up (``alternate_matmul_shares``).
* **Attention kernel** (``LargeModelSpec.attention``): flash and memory-efficient kernels store no
  score matrix; the math kernel stores the softmax output and, with dropout, a mask and the dropped
  scores (5·a·s²·b bytes per layer in 16 bit: Korthikanti eq. 1). "auto" is what PyTorch's SDPA
  picks: flash on CUDA in half precision (head dim ≤ 256), memory-efficient on CUDA in fp32, the
  CPU flash kernel without dropout and the math kernel with dropout on the CPU (which PyTorch 2.13
  runs in fp32 with a float mask: about five score-sized floats and a bool mask per layer measured).
* **Model parallelism** (Korthikanti Table 2, §4.2): tensor parallelism t splits what lies between a
  column-parallel and a row-parallel matrix product (Q, K, V, the attention core, the MLP's hidden
  activations) over t; the norms' inputs, the inputs of the column-parallel products, dropout masks
  on the hidden size and the residual stream stay whole (10·s·b·h of Korthikanti's 34) unless
  sequence parallelism splits them too. Context parallelism c splits the sequence: every activation
  over c. Pipeline parallelism p under 1F1B: the replica's batch runs as m micro-batches (m = p when
  not given) and the first stage holds min(m, p) of them through its L/p layers: min(m, p)/(p·m) of
  the whole network's activations for the replica's batch (one micro-batch's worth of all layers
  when m ≥ p, Korthikanti §4.2.3); the embedding and output layer are not moved off that stage.
  The profile is per sample of a replica's batch; core.estimate.memory.phase_lines turns it into
  the sizing's per-device batch, and each device of a replica loads the replica's data.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from core.estimate.op_work import variant_bytes
from core.network.graph import Graph, Op
from core.network.model import ModelAnalysis
from core.spec.large import ATTENTION_TEXT, CHECKPOINT_TEXT, DEFAULT_LARGE, LargeModelSpec

# ops whose output ``torch.utils.checkpoint``'s selective policy stores (matrix products and SDPA):
# every op with matrix-product FLOPs
MATMUL_NAMES = ("linear", "conv2d", "qkv_proj", "out_proj", "gate_up", "down", "lstm", "gru", "sdpa")
# matrix products Megatron splits by columns (output split over t) and by rows (input split)
COLUMN_PARALLEL = ("qkv_proj", "gate_up")
ROW_PARALLEL = ("out_proj", "down")
# the math kernel's score tensors per score element: (floats at the activation precision, bytes)
MATH_SCORES = {
    # CUDA (PyTorch's _scaled_dot_product_attention_math in the input's precision): the softmax
    # output; with dropout also the bool mask of native_dropout and the dropped scores
    ("gpu", False): (1, 0),
    ("gpu", True): (2, 1),
    # CPU, measured with saved_tensors_hooks on PyTorch 2.13: the softmax output (fp32) without
    # dropout; with dropout about five score-sized floats and a bool mask alive in a training step
    ("cpu", False): (1, 0),
    ("cpu", True): (5, 1),
}
# eager attention (Hugging Face's, NVIDIA's BERT) per score element, by dropout: the softmax output in
# fp32 (4 bytes: under autocast softmax runs in fp32), the dropout's bool mask, and the probabilities
# as the second product saves them (cast to the activation precision under autocast; in fp32 the
# dropout's output): one float at the activation precision + 5 bytes with dropout, + 4 without
# (exact under autocast and in fp32 with dropout; in fp32 without dropout the softmax output is the
# product's input and one float per score is counted twice)
EAGER_SCORES = {False: (1, 4), True: (1, 5)}


@dataclass(frozen=True)
class ActivationPolicy:
    """What decides the activations' memory beside the network (hashable: profiles are cached)."""

    checkpoint: str = "none"  # "none", "selective", "full"
    alternate_matmuls: bool = False  # selective: every second matrix product recomputed (torchtitan "op")
    checkpoint_every: int = 1  # full: every Nth block checkpointed (torchtitan's "selective layer")
    attention: str = "auto"  # LargeModelSpec.attention
    device_kind: str = "gpu"  # "cpu": PyTorch's CPU kernels (math attention with dropout, RMSNorm decomposed)
    tensor: int = 1
    sequence: bool = False
    context: int = 1
    pipeline_share: float = 1.0  # of the network's activations for the replica's batch the first stage holds


DEFAULT_POLICY = ActivationPolicy()


def activation_policy(
    large: LargeModelSpec = DEFAULT_LARGE, checkpointing: bool = False, device_kind: str = "gpu"
) -> ActivationPolicy:
    """The policy of a workload's settings: ``checkpointing`` is full checkpointing (it wins over
    ``large.selective_checkpointing``); ``device_kind`` "cpu" or anything else (GPUs, accelerators)."""
    par = large.parallel
    # 1F1B: the replica's batch in m micro-batches (m = p when not given, the fewest that fill the
    # pipeline); the first stage holds min(m, p) of them, each through its L/p layers
    m = par.microbatches or par.pipeline
    share = min(m, par.pipeline) / (par.pipeline * m)
    return ActivationPolicy(
        checkpoint="full" if checkpointing else "selective" if large.selective_checkpointing else "none",
        alternate_matmuls=large.alternate_matmuls and not checkpointing,
        checkpoint_every=large.checkpoint_every if checkpointing else 1,
        attention=large.attention,
        device_kind="cpu" if device_kind == "cpu" else "gpu",
        tensor=par.tensor,
        sequence=par.sequence,
        context=par.context,
        pipeline_share=share,
    )


def attention_kernel_name(attention: str, device_kind: str, precision: str) -> str:
    """The SDPA kernel that runs: ``attention`` unless "auto", else what PyTorch picks."""
    if attention != "auto":
        return attention
    if device_kind == "cpu":
        return "flash (CPU), math with attention dropout"
    return "flash" if precision in ("fp16_mixed", "bf16_mixed") else "memory_efficient"


def activation_note(large: LargeModelSpec, checkpointing: bool, device_kind: str, precision: str) -> str | None:
    """The sizing's assumption line for a checkpointing policy, attention kernel or model-parallel
    split other than the defaults (None when all are default)."""
    policy = activation_policy(large, checkpointing, device_kind)
    parts = []
    if policy.checkpoint != "none":
        parts.append(CHECKPOINT_TEXT["selective_op" if policy.alternate_matmuls else policy.checkpoint])
    if policy.attention != "auto":
        parts.append(f"attention kernel {policy.attention}: {ATTENTION_TEXT[policy.attention]}")
    if policy.tensor > 1:
        parts.append(
            f"tensor parallel {policy.tensor}: attention and MLP activations split over {policy.tensor}"
            + (
                ", norms, dropout and residual inputs too (sequence parallel)"
                if policy.sequence
                else "; norms, dropout and residual inputs whole"
            )
        )
    if policy.context > 1:
        parts.append(f"context parallel {policy.context}: the sequence split, every activation over {policy.context}")
    if large.parallel.pipeline > 1:
        parts.append(
            f"pipeline {large.parallel.pipeline} (1F1B): the first stage holds {policy.pipeline_share:.0%} of the "
            "network's activations for the replica's batch (its in-flight micro-batches through its layers)"
        )
    if not parts:
        return None
    kernel = attention_kernel_name(large.attention, device_kind, precision)
    return "activations (Korthikanti et al. 2022; docs/sizing.md §4e): " + "; ".join(parts) + f" [SDPA: {kernel}]"


def uses_math(policy: ActivationPolicy, op: Op) -> bool:
    """Whether the attention ``op`` runs the math kernel under ``policy``."""
    if not op.scores:
        return False
    if policy.attention in ("math", "eager"):
        return True
    return policy.attention == "auto" and policy.device_kind == "cpu" and op.attn_dropout


def math_score_saves(policy: ActivationPolicy, op: Op) -> tuple[int, int]:
    """(float elements at the activation precision, bytes) per sample the math kernel keeps for the
    attention ``op`` beyond q, k, v and its output; (0, 0) for the flash and efficient kernels."""
    if not uses_math(policy, op):
        return 0, 0
    if policy.attention == "eager":
        floats, fixed = EAGER_SCORES[op.attn_dropout]
    else:
        floats, fixed = MATH_SCORES[(policy.device_kind, op.attn_dropout)]
    return floats * op.scores, fixed * op.scores


def tensor_split(g: Graph, policy: ActivationPolicy) -> list[float]:
    """Per tensor of ``g``: the fraction of it one device holds under tensor/sequence/context
    parallelism (1.0 without). A tensor is split over t when it lies between a column-parallel and
    a row-parallel product (propagated through the ops between them); others over t only with
    sequence parallelism. Everything over the context-parallel degree."""
    t, c = max(1, policy.tensor), max(1, policy.context)
    whole = (1.0 / t if policy.sequence else 1.0) / c
    if t == 1:
        return [whole] * len(g.tensors)
    split = [False] * len(g.tensors)
    for op in g.ops:
        inp = split[op.input_id]
        if op.name in COLUMN_PARALLEL or (op.name == "linear" and not inp):
            out = True
        elif op.name in ROW_PARALLEL or op.name == "linear":
            out = False
        elif op.name in ("add", "embedding", "positional_embedding"):
            out = False
        else:
            out = inp  # elementwise ops, norms, attention follow their input
        if op.output_id != op.input_id:
            split[op.output_id] = out
        for s in op.saved:
            if s not in (op.input_id, op.output_id):
                # autocast's copy of the input follows the input; other extras follow the output
                split[s] = inp if g.tensors[s].copy else out
    return [(1.0 / (t * c)) if s else whole for s in split]


def full_segments(g: Graph, policy: ActivationPolicy) -> set[int]:
    """The segments full checkpointing wraps: every segment, or with ``checkpoint_every`` N every
    Nth block — the Nth, 2Nth, … segment of more than one op, as torchtitan counts its transformer
    blocks (``_layer_sac_count % ac_freq == 0``); an embedding or output layer alone is not one."""
    segments: dict[int, int] = {}
    for op in g.ops:
        segments[op.segment] = segments.get(op.segment, 0) + 1
    if policy.checkpoint_every <= 1:
        return set(segments)
    blocks = [s for s, n in segments.items() if n > 1]
    return {s for i, s in enumerate(blocks) if (i + 1) % policy.checkpoint_every == 0}


def _product_widths(op: Op) -> tuple[float, ...]:
    """The matrix products one graph op issues, in forward order, by their output widths: the
    attention's input projection as separate Q, K and V products and the gated MLP's gate and up
    as two (Llama's and TrainRig's PyTorch builder's separate nn.Linear layers); one otherwise."""
    if op.name == "qkv_proj" and len(op.tensor_sizes) >= 3:
        return tuple(float(n) for n in op.tensor_sizes[:3])
    if op.name == "gate_up" and len(op.tensor_sizes) >= 2:
        return tuple(float(n) for n in op.tensor_sizes[:2])
    return (1.0,)


def alternate_matmul_shares(ops: list[Op]) -> dict[int, float]:
    """torchtitan's per-op policy over one segment: per op (by output tensor id), the share of its
    matrix-product work and output that is recomputed, counting the segment's ``aten.mm`` calls
    from 1 in forward order and recomputing the even ones (the attention kernel is saved by its own
    rule and is not counted)."""
    shares: dict[int, float] = {}
    count = 0
    for op in ops:
        if op.name not in MATMUL_NAMES or op.name == "sdpa" or not op.flops:
            continue
        widths = _product_widths(op)
        again = 0.0
        for w in widths:
            count += 1
            if count % 2 == 0:
                again += w
        shares[op.output_id] = again / sum(widths)
    return shares


def stored_under(g: Graph, policy: ActivationPolicy, ops: list[Op]) -> dict[int, float]:
    """Tensors a selectively checkpointed segment (``ops``) stores from forward to backward, with
    the share of each that stays: the outputs of its matrix products and attention kernel and what
    those kernels make beside them (the log-sum-exp, a recurrent layer's reserve), not autocast's
    casts. Under the per-op policy a product that is recomputed stores nothing and one recomputed in
    part (the K of a Q/K/V projection) stores the rest."""
    again = alternate_matmul_shares(ops) if policy.alternate_matmuls else {}
    kept: dict[int, float] = {}
    for op in ops:
        if op.name in MATMUL_NAMES:
            share = 1.0 - again.get(op.output_id, 0.0)
            if share <= 0.0:
                continue
            kept[op.output_id] = share
            for s in op.saved:
                if s not in (op.input_id,) and not g.tensors[s].copy:
                    kept[s] = share
    return kept


@dataclass(frozen=True)
class RecomputeWork:
    """Work per sample that runs again in backward under a checkpointing policy (helper for the
    step-time model, core/estimate/timing.py): forward matrix-product FLOPs (2 per multiply-add)
    and bytes the recomputed elementwise kernels read and write, at the activation precision
    ``act_bytes`` given to :func:`recompute_per_sample`."""

    flops: float
    elementwise_bytes: float


def recompute_per_sample(
    model: ModelAnalysis, policy: ActivationPolicy, act_bytes: int, compiled: bool = False
) -> RecomputeWork:
    """The forward work per sample that backward runs again under ``policy.checkpoint``.

    "none": nothing. "full": the whole forward (every matrix product, every elementwise op; a
    summary model: its forward FLOPs). "selective": no matrix product except the math kernel's
    Q·Kᵀ (half the attention FLOPs, to rebuild the softmax) and, under the per-op policy, every
    second matrix product of a segment; the elementwise ops of the checkpointed
    segments (norms, activations, dropout, casts; the math kernel's softmax and dropout over the
    scores), each reading its input and writing its output once. Figures per sample of the batch
    one device runs, after the tensor/context split of ``policy``. ``compiled`` (torch.compile):
    an op variant's decomposed kernels are fused, priced like any elementwise op.
    """
    if policy.checkpoint == "none":
        return RecomputeWork(0.0, 0.0)
    g = model.graph
    if g is None:
        return RecomputeWork(float(model.forward_flops) if policy.checkpoint == "full" else 0.0, 0.0)
    return _recompute_graph(g, policy, act_bytes, compiled)


@lru_cache(maxsize=256)
def _recompute_graph(g: Graph, policy: ActivationPolicy, act_bytes: int, compiled: bool) -> RecomputeWork:
    """recompute_per_sample of a layer graph, once per graph and policy (the what-if loop re-times
    the same graph)."""
    frac = tensor_split(g, policy)
    seg_ops: dict[int, list[Op]] = {}
    for op in g.ops:
        seg_ops.setdefault(op.segment, []).append(op)
    flops = moved = 0.0
    wrapped = full_segments(g, policy) if policy.checkpoint == "full" else set(seg_ops)
    for seg, ops in seg_ops.items():
        if policy.checkpoint == "selective" and len(ops) == 1:
            continue  # one-op segments are not checkpointed
        if seg not in wrapped:
            continue  # full checkpointing of every Nth block: this one keeps what autograd saves
        again = alternate_matmul_shares(ops) if policy.alternate_matmuls else {}
        for op in ops:
            share = frac[op.output_id]
            work = min(share, frac[op.input_id])  # a row-parallel product splits its input, not its output
            floats, _ = math_score_saves(policy, op)
            if policy.checkpoint == "full":
                flops += op.flops * work
            elif floats:
                flops += op.flops / 2 * work  # Q·Kᵀ again, to rebuild the softmax
            else:
                flops += op.flops * again.get(op.output_id, 0.0) * work
            if floats:  # softmax and dropout over the scores: read and write each
                moved += 2 * floats * act_bytes * share
            if op.variant and not compiled:  # its eager kernels' forward bytes (core.estimate.op_work.VARIANT_BYTES)
                moved += variant_bytes(op.variant, act_bytes)[0] * g.tensors[op.output_id].elems * share
            elif op.name not in MATMUL_NAMES and op.output_id != op.input_id:
                size = g.tensors[op.input_id].elems * frac[op.input_id] + g.tensors[op.output_id].elems * share
                moved += size * act_bytes
    return RecomputeWork(flops, moved)
