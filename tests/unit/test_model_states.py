"""Model states per precision layout (core/estimate/model_states.py) against published figures:
Megatron-LM's distributed-optimizer bytes per parameter, accelerate's training usage, and what a
user sees in the sizing: FSDP2 MixedPrecisionPolicy without autocast copies, offload to host RAM,
tensor × pipeline division, HYBRID_SHARD and fp8 weight copies (docs/sizing.md §4e)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import WorkloadError
from core.estimate.model_states import bytes_per_parameter, model_states, shard_degree
from core.estimate.sizing import size_candidate
from core.hardware.catalogue import find_device, load_catalogue
from core.network.presets import get_preset
from core.spec.large import LargeModelSpec, ParallelSpec
from core.spec.workload import parse_workload

PEERS = Path(__file__).parents[1] / "fixtures" / "peers"
MEGATRON = json.loads((PEERS / "megatron_distributed_optimizer.json").read_text())
ACCELERATE = json.loads((PEERS / "accelerate_training_usage.json").read_text())
H100 = find_device("H100 SXM", load_catalogue())
GB = 1e9


@pytest.mark.parametrize("row", MEGATRON["rows"], ids=lambda r: f"{r['params']}-{r['grads']}")
@pytest.mark.parametrize("d", [1, 8, 64])
def test_megatron_bytes_per_parameter_are_its_docs_figures(row: dict[str, Any], d: int) -> None:
    precision = {"fp16": "fp16_mixed", "bf16": "bf16_mixed", "fp32": "fp32"}[row["params"]]
    # without the distributed optimizer: every rank keeps everything
    assert bytes_per_parameter("megatron", precision, "ddp", d) == pytest.approx(row["non_distributed"])
    # the distributed optimizer (sharding "zero1") partitions over the d data-parallel ranks
    expected = row["fixed"] + row["per_d"] / d
    assert bytes_per_parameter("megatron", precision, "zero1", d) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("d", [1, 8, 64])
def test_deepspeed_bytes_per_parameter_by_zero_stage(d: int) -> None:
    # 2-byte weights and gradients, fp32 master + Adam (12 bytes) and the fp32 gradient partition
    # at the step (4 bytes), partitioned by the stage
    assert bytes_per_parameter("deepspeed", "bf16_mixed", "zero1", d) == pytest.approx(4 + 16 / d)
    assert bytes_per_parameter("deepspeed", "bf16_mixed", "zero2", d) == pytest.approx(2 + 18 / d)
    # ZeRO-3 frees the 2-byte gradient partition once upcast: 18/d (plus the gathered unit)
    assert bytes_per_parameter("deepspeed", "bf16_mixed", "zero3", d) == pytest.approx(18 / d)


@pytest.mark.parametrize("row", ACCELERATE["rows"], ids=lambda r: f"{r['model']}-{r['mixed_precision']}")
def test_autocast_adamw_states_against_accelerates_training_usage(row: dict[str, Any]) -> None:
    p = row["parameters"]
    mixed = row["mixed_precision"] != "float32"
    s = model_states(
        parameters=p,
        buffers=0,
        matmul_params=p,
        largest_unit=0,
        largest_param=0,
        precision="bf16_mixed" if mixed else "fp32",
        optimizer="adamw",
        device_kind="gpu",
    )
    states = s.weights + s.grads_step + s.optimizer_states
    assert states == 16 * p  # fp32 weights, gradients and two Adam moments
    out = row["output"]
    if not mixed:  # accelerate's fp32 "step" is 4 × the model: the same 16 bytes per parameter
        assert row["training_using_adam"] == states
    else:
        # its parts add up to ours with autocast's half copies (4 + 6 + 8 = 18 bytes per parameter),
        # but it reports the largest part (the 8-byte optimizer state) as the training usage
        assert out["model"] + out["gradients"] + out["optimizer"] == states + s.weight_copies
        assert row["training_using_adam"] == 8 * p < states


def llama(training: dict[str, Any], count: int = 8, nodes: int = 1, model: dict[str, Any] | None = None) -> Any:
    network: dict[str, Any] = {"preset": "llama-8b"}
    if model and "vocab" in model:  # the preset's network with another vocabulary
        network = copy.deepcopy(get_preset("llama-8b", "preset")["model"])
        network["layers"][0]["num_embeddings"] = network["layers"][-1]["out_features"] = model["vocab"]
        training = {"epochs": 1, **training}
    doc: dict[str, Any] = {
        "model": network,
        "training": {
            "batch_size": count * nodes,
            "optimizer": "adamw",
            "precision": "bf16_mixed",
            "checkpointing": True,
            "nodes": nodes,
            **training,
        },
    }
    if model:  # data a preset would bring
        doc["data"] = {"samples": 10**5}
    return size_candidate(parse_workload(doc), H100, count).memory


def test_fsdp_mixed_precision_keeps_no_autocast_copies_and_gathers_in_bf16() -> None:
    autocast = llama({"sharding": "fsdp"})
    mixed = llama({"sharding": "fsdp", "precision_layout": "fsdp_mixed"})
    assert autocast.weight_copies / GB == pytest.approx(15.0, abs=0.2)  # bf16 copies of every matmul weight
    assert mixed.weight_copies == 0
    # fp32 shard (4.02 GB) + one block gathered in bf16 rather than fp32
    assert mixed.weights < autocast.weights
    assert mixed.weights / GB == pytest.approx(8.03 * 4 / 8, abs=1.2)
    assert mixed.total < autocast.total - 10 * GB


def test_deepspeed_zero3_offload_shows_the_host_ram_it_needs() -> None:
    on_gpu = llama({"sharding": "zero3", "precision_layout": "deepspeed"})
    offloaded = llama({"sharding": "zero3", "precision_layout": "deepspeed", "offload": "params_cpu"})
    assert on_gpu.offload_cpu_bytes == 0
    # 18 bytes per parameter over 8 ranks in host RAM: 2-byte weights, fp32 gradients, master, Adam
    assert offloaded.offload_cpu_bytes / GB == pytest.approx(8.03 * 18 / 8, abs=0.05)
    assert offloaded.optimizer_states == 0
    # master + Adam (12.0 GB) and the 2-byte weight shard (2.0 GB) leave; the gathered block and its
    # gradients in flight stay
    assert offloaded.weights == offloaded.gradients  # the unit gathered, the unit's gradients
    assert (on_gpu.total - offloaded.total) / GB == pytest.approx(13.8, abs=0.3)
    nvme = llama({"sharding": "zero3", "precision_layout": "deepspeed", "offload": "params_nvme"})
    # on NVMe: weights, master and Adam (14 bytes / 8); the fp32 gradients stay in host RAM (4 / 8)
    assert nvme.offload_nvme_bytes / GB == pytest.approx(8.03 * 14 / 8, abs=0.05)
    assert nvme.offload_cpu_bytes / GB == pytest.approx(8.03 * 4 / 8, abs=0.05)


def test_tensor_and_pipeline_ranks_each_hold_a_share_of_the_parameters() -> None:
    whole = llama({"sharding": "ddp", "precision_layout": "megatron"})
    split = llama({"sharding": "ddp", "precision_layout": "megatron", "parallel": {"tensor": 2, "pipeline": 2}})
    # Megatron without the distributed optimizer: 18 bytes per parameter, a quarter on each rank
    assert whole.weights / GB == pytest.approx(8.03 * 2, abs=0.05)
    assert split.weights / GB == pytest.approx(8.03 * 2 / 4, abs=0.05)
    assert split.optimizer_states / GB == pytest.approx(8.03 * 12 / 4, abs=0.05)


def test_hybrid_shard_shards_within_a_node_and_replicates_across_nodes() -> None:
    hybrid = LargeModelSpec(parallel=ParallelSpec(hybrid_shard=True))
    assert shard_degree(hybrid, 16, nodes=2) == 8
    assert shard_degree(LargeModelSpec(), 16, nodes=2) == 16
    full = llama({"sharding": "fsdp"}, count=8, nodes=2)
    within = llama({"sharding": "fsdp", "parallel": {"hybrid_shard": True}}, count=8, nodes=2)
    # AdamW's fp32 moments over 8 ranks instead of 16
    assert within.optimizer_states == pytest.approx(2 * full.optimizer_states, rel=1e-6)


def test_fp8_keeps_one_byte_copies_of_the_matmul_weights() -> None:
    half = llama({"sharding": "fsdp", "precision_layout": "fsdp_mixed"})
    fp8 = llama({"sharding": "fsdp", "precision_layout": "fsdp_mixed", "fp8": True})
    assert half.weight_copies == 0
    # about 7.5 billion matmul weights (the embedding lookup is no matmul) at one byte each
    assert fp8.weight_copies / GB == pytest.approx(7.5, abs=0.3)


def test_fp8_all_gather_gathers_the_matmul_weights_in_one_byte_and_keeps_no_copies() -> None:
    fp8 = {"sharding": "fsdp", "precision_layout": "fsdp_mixed", "fp8": True}
    plain = llama(fp8)
    gathered = llama({**fp8, "fp8_all_gather": True})
    # torchao's enable_fsdp_float8_all_gather: the fp8 weights are the gathered unit, freed at reshard
    assert gathered.weight_copies == 0
    # Llama-8B's largest unit is its embedding table (525 M parameters, no matrix weights): gathered
    # in bf16 either way
    assert gathered.weights == plain.weights
    assert plain.tensor_peak - gathered.tensor_peak == plain.weight_copies
    # with Llama 2's 32,000-token vocabulary a block (218 M parameters) is the largest unit: its
    # matrix weights gathered in 1 byte, not 2; its two norms' 8,192 weights still in bf16
    small = {"vocab": 32000}
    block = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336
    assert llama(fp8, model=small).weights - llama({**fp8, "fp8_all_gather": True}, model=small).weights == block


@pytest.mark.parametrize(
    "training",
    [{"fp8_all_gather": True, "sharding": "fsdp"}, {"fp8_all_gather": True, "fp8": True, "sharding": "ddp"}],
)
def test_fp8_all_gather_needs_fp8_and_fsdp(training: dict[str, Any]) -> None:
    t = {"batch_size": 8, "epochs": 1, "precision": "bf16_mixed", **training}
    with pytest.raises(WorkloadError, match="fp8_all_gather"):
        parse_workload({"model": {"preset": "llama-8b"}, "data": {"samples": 100}, "training": t})


def test_the_sizing_names_the_layout_and_the_host_ram_offload_needs() -> None:
    doc = {
        "model": {"preset": "llama-8b"},
        "training": {
            "batch_size": 8,
            "optimizer": "adamw",
            "precision": "bf16_mixed",
            "sharding": "zero3",
            "precision_layout": "deepspeed",
            "offload": "optimizer_cpu",
        },
    }
    notes = [a for a in size_candidate(parse_workload(doc), H100, 8).assumptions if a.startswith("model states")]
    # 16 bytes per parameter (fp32 gradients, master, Adam) over 8 ranks, × 8 GPUs in the node
    assert len(notes) == 1 and "DeepSpeed bf16/fp16" in notes[0] and "128.5 GB of host RAM per node" in notes[0]
    plain = dict(doc, training={**doc["training"], "precision_layout": "autocast", "offload": "none"})
    assert not [a for a in size_candidate(parse_workload(plain), H100, 8).assumptions if a.startswith("model states")]


@pytest.mark.parametrize(
    ("layout", "unit_bytes", "host_per_param"), [("autocast", 4, 4 + 4 + 8), ("fsdp_mixed", 2, 16)]
)
def test_fsdp_parameter_offload_keeps_only_the_unit_on_the_gpu(
    layout: str, unit_bytes: int, host_per_param: int
) -> None:
    p, unit = 8_000_000_000, 200_000_000
    s = model_states(
        parameters=p,
        buffers=0,
        matmul_params=p,
        largest_unit=unit,
        largest_param=unit,
        precision="bf16_mixed",
        optimizer="adamw",
        device_kind="gpu",
        devices=8,
        sharding="fsdp",
        large=LargeModelSpec(precision_layout=layout, offload="params_cpu"),
    )
    # FSDP CPUOffloadPolicy: fp32 shard, fp32 gradients and AdamW moments in host RAM, 16 bytes / 8
    assert s.weights == unit * unit_bytes
    assert s.offload_cpu == p * host_per_param // 8
    assert s.optimizer_states == 0 and s.grads_step == 0
