"""GPT-block activations against Korthikanti et al. 2022 (arXiv 2205.05198, Table 2), kept as data
in tests/fixtures/peers/korthikanti.json, and the checkpointing policies, attention kernels and
model-parallel splits of core.estimate.activations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.estimate.activations import ActivationPolicy, activation_policy, recompute_per_sample
from core.estimate.memory import phase_lines
from core.estimate.step_replay import memory_profile
from core.network.model import ModelAnalysis, analyze_model
from core.spec.large import LargeModelSpec, ParallelSpec

PEER = json.loads((Path(__file__).parents[1] / "fixtures" / "peers" / "korthikanti.json").read_text())
MODELS = {m["name"]: m for m in PEER["models"]}


def gpt_blocks(s: int, h: int, a: int, n: int) -> ModelAnalysis:
    """n GPT (Megatron) blocks: pre-norm attention with dropout on the weights and after the
    projection, pre-norm GeLU MLP of 4h with dropout."""
    block = [
        {
            "type": "residual",
            "layers": [
                {"type": "layernorm"},
                {"type": "multihead_attention", "num_heads": a, "dropout": 0.1, "causal": True},
                {"type": "dropout", "p": 0.1},
            ],
        },
        {
            "type": "residual",
            "layers": [
                {"type": "layernorm"},
                {"type": "linear", "out_features": 4 * h},
                {"type": "gelu"},
                {"type": "linear", "out_features": h},
                {"type": "dropout", "p": 0.1},
            ],
        },
    ]
    return analyze_model({"input_shape": [s, h], "layers": [{"type": "repeat", "times": n, "layers": block}]})


def layer_bytes(m: dict[str, Any], policy: ActivationPolicy) -> float:
    """Bytes one more block stores per sample, 16-bit activations (bf16 autocast): the third
    block's, free of the network's first input and its loss."""
    s, h, a = m["s"], m["h"], m["a"]
    total = []
    for n in (2, 3):
        prof = memory_profile(gpt_blocks(s, h, a, n), policy)
        total.append(prof.saved_float * 2 + prof.saved_fixed)
    return total[1] - total[0]


def documented_differences(m: dict[str, Any], t: int = 1, sp: bool = False) -> float:
    """Bytes per sample and layer TrainRig counts that the paper does not, each for a reason:
    * LayerNorm runs in fp32 under autocast, so each of the two norms saves an fp32 copy of its
      input (4 bytes, the paper 2): +4·s·h, split over t with sequence parallelism;
    * each LayerNorm also saves its mean and reciprocal deviation per row (fp32): 2 × 2 × 4 · s;
    * the attention kernel saves its log-sum-exp per row and head (fp32): 4·a·s, split over t.
    """
    s, h, a = m["s"], m["h"], m["a"]
    whole = t if sp else 1
    return 4 * s * h / whole + 16 * s / whole + 4 * a * s / t


def paper(m: dict[str, Any], formula: str, t: int = 1) -> float:
    s, h, a = m["s"], m["h"], m["a"]
    f = PEER["formulas"][formula]
    return (f["constant"] + f["over_t"] / t + f["scores_over_t"] * a * s / (h * t)) * s * h


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gpt_block_activations_match_korthikanti_within_2_percent(name: str) -> None:
    m = MODELS[name]
    t = m["t"]
    cases = [
        # (TrainRig's settings, the paper's formula, tensor parallel, sequence parallel)
        (ActivationPolicy(attention="math"), "no_parallelism", 1, False),
        (ActivationPolicy(attention="math", tensor=t), "tensor_parallel", t, False),
        (ActivationPolicy(attention="math", tensor=t, sequence=True), "tensor_sequence_parallel", t, True),
        # the paper's selective recomputation drops the attention core's scores; a flash or
        # memory-efficient kernel stores none in the first place
        (ActivationPolicy(attention="flash", tensor=t), "tensor_parallel_selective", t, False),
        (
            ActivationPolicy(attention="memory_efficient", tensor=t, sequence=True),
            "tensor_sequence_parallel_selective",
            t,
            True,
        ),
    ]
    for policy, formula, tp, sp in cases:
        ours = layer_bytes(m, policy) - documented_differences(m, tp, sp)
        expected = paper(m, formula, tp)
        assert ours == pytest.approx(expected, rel=0.02), (formula, ours / expected)
    # full recomputation keeps the block's input: 2·s·h
    assert layer_bytes(m, ActivationPolicy(attention="math", checkpoint="full")) == pytest.approx(
        paper(m, "full_recompute"), rel=0.02
    )


def test_selective_checkpointing_keeps_the_matrix_products_and_attention_outputs() -> None:
    # torchtitan's per-op policy: the block's input (2), Q, K, V (6), the attention output (2) and
    # its log-sum-exp, the two projections' outputs (2 + 2) and the MLP's hidden (8) stay: 22·s·h
    m = MODELS["22B"]
    s, h, a = m["s"], m["h"], m["a"]
    for attention in ("flash", "math"):  # the math kernel's scores are recomputed too
        stored = layer_bytes(m, ActivationPolicy(attention=attention, checkpoint="selective"))
        assert stored == pytest.approx(22 * s * h + 4 * a * s)
    none = layer_bytes(m, ActivationPolicy(attention="flash"))
    full = layer_bytes(m, ActivationPolicy(attention="flash", checkpoint="full"))
    assert full < stored < none


def test_recompute_work_per_policy() -> None:
    s, h, a = 256, 512, 8
    model = gpt_blocks(s, h, a, 2)
    none = recompute_per_sample(model, ActivationPolicy(), 2)
    full = recompute_per_sample(model, ActivationPolicy(checkpoint="full"), 2)
    flash = recompute_per_sample(model, ActivationPolicy(checkpoint="selective", attention="flash"), 2)
    math = recompute_per_sample(model, ActivationPolicy(checkpoint="selective", attention="math"), 2)
    assert (none.flops, none.elementwise_bytes) == (0, 0)
    assert full.flops == model.forward_flops  # the whole forward again
    assert flash.flops == 0 and flash.elementwise_bytes > 0  # norms, GeLU, dropout, casts only
    # the math kernel rebuilds its softmax: Q·Kᵀ (2·s²·h per block) and softmax/dropout over a·s²
    assert math.flops == 2 * (2 * s * s * h)
    # per block: softmax output, dropped scores (2 × a·s² at 2 bytes), each read and written
    assert math.elementwise_bytes == flash.elementwise_bytes + 2 * (2 * (2 * a * s * s) * 2)
    # tensor parallelism splits what each device runs again
    split = recompute_per_sample(model, ActivationPolicy(checkpoint="full", tensor=4), 2)
    assert split.flops == pytest.approx(full.flops / 4)  # every product is column- or row-parallel


def test_context_and_pipeline_parallelism_divide_the_activations() -> None:
    m = MODELS["22B"]
    base = layer_bytes(m, ActivationPolicy(attention="flash"))
    assert layer_bytes(m, ActivationPolicy(attention="flash", context=4)) == pytest.approx(base / 4)
    # 1F1B: the replica's batch in m micro-batches; the first stage holds min(m, p) of them
    # through its L/p layers (m = p when not given)
    two = LargeModelSpec(parallel=ParallelSpec(pipeline=4, microbatches=2))
    assert activation_policy(two).pipeline_share == 2 / (4 * 2)
    assert activation_policy(LargeModelSpec(parallel=ParallelSpec(pipeline=4, microbatches=8))).pipeline_share == 4 / 32
    assert activation_policy(LargeModelSpec(parallel=ParallelSpec(pipeline=4))).pipeline_share == 1 / 4
    assert layer_bytes(m, activation_policy(two)) == pytest.approx(layer_bytes(m, ActivationPolicy()) / 4)


def test_phase_lines_follow_the_workload_settings() -> None:
    model = gpt_blocks(1024, 1024, 16, 4)

    def per_sample(large: LargeModelSpec, checkpointing: bool = False, device: str = "gpu") -> float:
        lines = phase_lines(
            model,
            precision="bf16_mixed",
            optimizer="adamw",
            device_kind=device,
            checkpointing=checkpointing,
            large=large,
        )
        return lines.activations_per_sample

    auto = per_sample(LargeModelSpec())
    assert per_sample(LargeModelSpec(attention="flash")) == auto  # auto on a GPU in bf16: flash
    assert per_sample(LargeModelSpec(attention="math")) > 2 * auto  # the scores (5·a·s² per layer)
    selective = per_sample(LargeModelSpec(selective_checkpointing=True))
    full = per_sample(LargeModelSpec(selective_checkpointing=True), checkpointing=True)  # full wins
    assert full < selective < auto
    tp = per_sample(LargeModelSpec(parallel=ParallelSpec(tensor=4)))
    sp = per_sample(LargeModelSpec(parallel=ParallelSpec(tensor=4, sequence=True)))
    # per sample of the per-device batch (a group of 4 runs 4 × it): sequence parallelism splits
    # everything over the group, tensor parallelism alone leaves the norms, dropout and residual whole
    assert sp == pytest.approx(auto) and tp > 1.2 * sp
    # a tensor-parallel group of 4 runs 4 × the per-device batch: each device holds the group's
    # data and its split of the activations
    lines = phase_lines(
        model,
        precision="bf16_mixed",
        optimizer="adamw",
        device_kind="gpu",
        devices=8,
        large=LargeModelSpec(parallel=ParallelSpec(tensor=4, sequence=True)),
    )
    one = phase_lines(model, precision="bf16_mixed", optimizer="adamw", device_kind="gpu")
    assert lines.data_per_sample == 4 * one.data_per_sample
    assert lines.activations_per_sample == pytest.approx(one.activations_per_sample)  # 4 × the batch, 1/4 each
    # on the CPU, auto with dropout runs the math kernel: today's figures
    assert per_sample(LargeModelSpec(), device="cpu") == per_sample(LargeModelSpec(attention="math"), device="cpu")
