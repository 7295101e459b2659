"""How practitioners' model code runs, beyond PyTorch's own modules (docs/sizing.md §4c "Op variants"
and §4e): torchtitan's per-op selective checkpointing and its layer policy (every Nth block),
RMSNorm decomposed in fp32, rotary embeddings — each prices exactly what its kernels do, and a bad
value is refused by name."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.errors import WorkloadError
from core.estimate import gpu_kernels
from core.estimate.activations import ActivationPolicy, full_segments, recompute_per_sample, stored_under
from core.estimate.op_work import ELEMENT_ACCESSES, VARIANT_BYTES, PassSetup, forward_work, op_times
from core.estimate.pass_work import train_flops_per_sample
from core.estimate.sizing import size_candidate
from core.hardware.catalogue import find_device, load_catalogue
from core.network.model import analyze_model
from core.network.presets import get_preset
from core.spec.large import LargeModelSpec
from core.spec.workload import parse_workload

H100 = find_device("H100 SXM", load_catalogue())
LENGTH, DIM, KV, FFN, LAYERS = 2048, 4096, 1024, 14336, 32  # the llama-8b preset


def llama_large(every: int) -> LargeModelSpec:
    return LargeModelSpec(checkpoint_every=every)


def llama(**block: Any) -> dict[str, Any]:
    """The llama-8b preset's network, its blocks (and final norm) given ``block``'s keys."""
    model = copy.deepcopy(get_preset("llama-8b", "preset")["model"])
    model["layers"][1]["layers"][0].update(block)
    if "norm_implementation" in block:
        model["layers"][2]["implementation"] = block["norm_implementation"]
    return model


def test_the_per_op_policy_recomputes_every_second_matrix_product_of_a_block() -> None:
    # torchtitan counts a block's aten.mm calls: q 1, k 2, v 3, o 4, gate 5, up 6, down 7; the even
    # ones (k, o, up) run again in backward
    model = analyze_model(llama())
    selective = recompute_per_sample(model, ActivationPolicy(checkpoint="selective"), 2)
    per_op = recompute_per_sample(model, ActivationPolicy(checkpoint="selective", alternate_matmuls=True), 2)
    by_hand = LAYERS * 2 * LENGTH * (DIM * KV + DIM * DIM + DIM * FFN)
    assert per_op.flops - selective.flops == pytest.approx(by_hand, rel=1e-12)
    assert per_op.elementwise_bytes == selective.elementwise_bytes


def test_the_per_op_policy_stores_what_it_does_not_recompute() -> None:
    graph = analyze_model(llama()).graph
    assert graph is not None
    block = [op for op in graph.ops if op.segment == graph.ops[3].segment]
    names = {op.output_id: op.name for op in block}
    kept = stored_under(graph, ActivationPolicy(checkpoint="selective"), block)
    per_op = stored_under(graph, ActivationPolicy(checkpoint="selective", alternate_matmuls=True), block)
    assert {names.get(t) for t in kept} >= {"qkv_proj", "out_proj", "gate_up", "down", "sdpa"}
    assert "out_proj" not in {names.get(t) for t in per_op}  # the 4th product: recomputed whole
    by_name = {names[t]: share for t, share in per_op.items() if t in names}
    assert by_name["qkv_proj"] == pytest.approx((DIM + KV) / (DIM + 2 * KV))  # K recomputed, Q and V kept
    assert by_name["gate_up"] == pytest.approx(0.5)  # up recomputed, gate kept
    assert by_name["down"] == by_name["sdpa"] == 1.0


def test_selective_op_is_a_workload_setting_that_saves_memory_and_costs_time() -> None:
    def size(policy: str) -> Any:
        t = {"batch_size": 16, "micro_batch_size": 2, "epochs": 1, "optimizer": "adamw"}
        t.update(precision="bf16_mixed", sharding="fsdp", checkpointing=policy)
        w = parse_workload({"model": {"preset": "llama-8b"}, "data": {"samples": 10**5}, "training": t})
        return w, size_candidate(w, H100, 8)

    (w_sel, sel), (w_op, op) = size("selective"), size("selective_op")
    assert w_op.training.checkpoint_policy == "selective_op"
    assert w_sel.training.checkpoint_policy == "selective"
    assert op.memory.tensor_peak < sel.memory.tensor_peak
    assert op.step.step_s > sel.step.step_s


def test_fp32_rmsnorm_and_complex_rotary_cost_their_eager_kernels_bytes_on_a_gpu() -> None:
    def memory_s(model: dict[str, Any], compiled: bool = False) -> float:
        analysis = analyze_model(model)
        ops, _ = forward_work(analysis)
        setup = PassSetup(analysis, ops, H100, "gpu", "bf16_mixed", "adamw", False, 1e15, {})
        _, memory, _ = op_times(setup, 1, [], compile_model=compiled)
        return memory

    bandwidth = gpu_kernels.figures(H100).bandwidth
    norms = (2 * LAYERS + 1) * LENGTH * DIM
    rotary = LAYERS * LENGTH * (DIM + KV)  # q and k
    plain, variants = memory_s(llama()), memory_s(llama(rotary="complex", norm_implementation="fp32_decomposed"))
    # under autocast the residual stream, and so every norm, is fp32: 120 bytes an element for the
    # decomposed norm's fp32 kernels against 36 for PyTorch's fused kernel on fp32
    norm_bytes = norms * (sum(VARIANT_BYTES["rmsnorm_fp32"][4]) - ELEMENT_ACCESSES["layernorm"] * 4)
    rotary_bytes = rotary * sum(VARIANT_BYTES["rotary_complex"][2])
    assert variants - plain == pytest.approx((norm_bytes + rotary_bytes) / bandwidth, rel=1e-9)
    # torch.compile fuses the decomposed kernels: the norm as the fused kind, the rotation as an add
    fused = memory_s(llama(rotary="complex", norm_implementation="fp32_decomposed"), compiled=True)
    fused_plain = memory_s(llama(), compiled=True)
    assert fused - fused_plain == pytest.approx(rotary * ELEMENT_ACCESSES["add"] * 2 * 0.5 / bandwidth, rel=1e-9)


def test_the_variants_cost_the_recomputation_their_forward_kernels_move() -> None:
    policy = ActivationPolicy(checkpoint="selective")
    plain = recompute_per_sample(analyze_model(llama()), policy, 2)
    titan = analyze_model(llama(rotary="complex", norm_implementation="fp32_decomposed"))
    variants = recompute_per_sample(titan, policy, 2)
    # each block's two norms at 36 bytes an element forward instead of their input and output (2 + 2);
    # the rotation at 20 bytes per q and k element (the final norm is a one-op segment: not recomputed)
    norms = 2 * LAYERS * LENGTH * DIM * (36 - 4)
    rotary = LAYERS * LENGTH * (DIM + KV) * 20
    assert variants.elementwise_bytes - plain.elementwise_bytes == pytest.approx(norms + rotary, rel=1e-12)
    compiled = recompute_per_sample(titan, policy, 2, compiled=True)
    # compiled: the rotation as an elementwise op reading q, k, v and writing q and k
    assert compiled.elementwise_bytes - plain.elementwise_bytes == pytest.approx(
        LAYERS * LENGTH * ((DIM + 2 * KV) + (DIM + KV)) * 2, rel=1e-12
    )


@pytest.mark.parametrize(
    ("block", "path"),
    [
        ({"rotary": "sideways"}, "rotary"),
        ({"norm_implementation": "triton"}, "norm_implementation"),
        ({"norm": "layernorm", "norm_implementation": "fp32_decomposed"}, "norm_implementation"),
    ],
)
def test_a_bad_variant_is_refused_by_name(block: dict[str, Any], path: str) -> None:
    with pytest.raises(WorkloadError, match=path):
        analyze_model(llama(**block))


def test_an_unknown_checkpointing_policy_names_the_choices() -> None:
    t = {"batch_size": 8, "epochs": 1, "checkpointing": "op"}
    with pytest.raises(WorkloadError, match="selective_op"):
        parse_workload({"model": {"preset": "seed-mlp"}, "data": {"samples": 100}, "training": t})


def test_checkpointing_every_nth_block_wraps_the_nth_blocks_only() -> None:
    model = analyze_model(llama())
    graph = model.graph
    assert graph is not None
    blocks = sorted({op.segment for op in graph.ops if sum(o.segment == op.segment for o in graph.ops) > 1})
    assert len(blocks) == LAYERS
    policy = ActivationPolicy(checkpoint="full", checkpoint_every=2)
    # torchtitan counts its blocks from 1 and wraps those whose count N divides: the 2nd, 4th, …
    assert full_segments(graph, policy) == set(blocks[1::2])
    # what runs again: half the blocks' forward matrix products (the output layer never)
    block_flops = sum(op.flops for op in graph.ops if op.segment == blocks[0])
    again = recompute_per_sample(model, policy, 2)
    assert again.flops == pytest.approx(LAYERS // 2 * block_flops, rel=1e-12)
    assert train_flops_per_sample(model, True, llama_large(2)) == 3 * model.forward_flops + LAYERS // 2 * block_flops


def test_checkpointing_every_nth_block_sits_between_none_and_every_block() -> None:
    def size(checkpointing: Any, every: int = 1) -> Any:
        t = {"batch_size": 8, "micro_batch_size": 1, "epochs": 1, "optimizer": "adamw", "precision": "bf16_mixed"}
        t.update(sharding="fsdp", checkpointing=checkpointing, **({"checkpoint_every": every} if every > 1 else {}))
        return size_candidate(
            parse_workload({"model": {"preset": "llama-8b"}, "data": {"samples": 10**5}, "training": t}), H100, 8
        )

    none, every2, every4, full = size(False), size(True, 2), size(True, 4), size(True)
    assert none.memory.tensor_peak > every4.memory.tensor_peak > every2.memory.tensor_peak > full.memory.tensor_peak
    assert none.step.step_s < every4.step.step_s < every2.step.step_s < full.step.step_s


def test_checkpoint_every_needs_full_checkpointing() -> None:
    t = {"batch_size": 8, "epochs": 1, "checkpointing": "selective", "checkpoint_every": 2}
    with pytest.raises(WorkloadError, match="checkpoint_every"):
        parse_workload({"model": {"preset": "llama-8b"}, "data": {"samples": 100}, "training": t})
