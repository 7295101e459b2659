"""TrainRig's DeepSpeed layout against DeepSpeed's own model-state estimators
(``estimate_zero2_model_states_mem_needs`` in stage_1_and_2.py, ``estimate_zero3_model_states_mem_needs``
in stage3.py; their inputs and outputs in tests/fixtures/peers/deepspeed_zero_estimators.json with
version and source).

Terms compared: on the GPU, the model states at the optimizer step (16-bit weights + gradients at
the step + fp32 master weights + Adam state); on the host, the offloaded states per node.
Documented differences, not compared: ZeRO-3's gathered layer (DeepSpeed counts 4 bytes per
parameter of the largest module, TrainRig 2 bytes per parameter of the largest checkpoint unit: the
16-bit gathered weights); the estimators' additional_buffer_factor (1.5), which multiplies their CPU
figures only; and the ZeRO-2 offload estimate's 4 bytes × every GPU of host memory (each process
loading the fp32 model before partitioning), a start-up transient TrainRig does not count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.estimate.model_states import ModelStates, model_states
from core.spec.large import LargeModelSpec

PEERS = json.loads((Path(__file__).parents[1] / "fixtures" / "peers" / "deepspeed_zero_estimators.json").read_text())
ROWS: list[dict[str, Any]] = PEERS["rows"]
ZERO2 = [r for r in ROWS if r["function"] == "estimate_zero2_model_states_mem_needs"]
ZERO3 = [r for r in ROWS if r["function"] == "estimate_zero3_model_states_mem_needs"]


def deepspeed(row: dict[str, Any], sharding: str, offload: str) -> ModelStates:
    return model_states(
        parameters=row["total_params"],
        buffers=0,
        matmul_params=row["total_params"],
        largest_unit=row.get("largest_layer_params", 0),
        largest_param=row.get("largest_layer_params", 0),
        precision="bf16_mixed",
        optimizer="adamw",
        device_kind="gpu",
        devices=row["num_gpus_per_node"] * row["num_nodes"],
        nodes=row["num_nodes"],
        sharding=sharding,
        large=LargeModelSpec(precision_layout="deepspeed", offload=offload),
    )


def on_gpu(s: ModelStates, gathered: int = 0) -> int:
    return s.weights - gathered + s.grads_step + s.optimizer_states


def test_the_peer_data_names_its_source_and_version() -> None:
    assert "stage_1_and_2.py" in PEERS["source"] and "stage3.py" in PEERS["source"]
    assert PEERS["version"].startswith("0.19")
    assert len(ZERO2) == 24 and len(ZERO3) == 36  # 4 models × 3 GPU layouts × offload choices


@pytest.mark.parametrize("row", [r for r in ZERO2 if not r["cpu_offload"]], ids=lambda r: f"{r['model']}")
def test_zero2_model_states_on_the_gpu_match_deepspeeds_estimate(row: dict[str, Any]) -> None:
    # DeepSpeed: 2 bytes of 16-bit weights + 18/d (16-bit and fp32 gradients, fp32 weights, Adam)
    ours = on_gpu(deepspeed(row, "zero2", "none"))
    assert ours == pytest.approx(row["gpu_bytes"], rel=0.05)


@pytest.mark.parametrize("row", [r for r in ZERO2 if r["cpu_offload"]], ids=lambda r: f"{r['model']}")
def test_zero2_offload_keeps_the_16_bit_weights_on_the_gpu_and_the_rest_on_the_host(row: dict[str, Any]) -> None:
    s = deepspeed(row, "zero2", "optimizer_cpu")
    assert on_gpu(s) == pytest.approx(row["gpu_bytes"], rel=0.05)  # 2 bytes per parameter
    gpus = row["num_gpus_per_node"] * row["num_nodes"]
    host_per_node = s.offload_cpu * row["num_gpus_per_node"]
    assert host_per_node == pytest.approx(16 * row["total_params"] * row["num_gpus_per_node"] / gpus, rel=1e-6)
    if 4 * gpus <= 16:  # where the estimator's start-up term (4 bytes × GPUs) does not dominate
        assert host_per_node == pytest.approx(row["cpu_bytes"] / row["additional_buffer_factor"], rel=0.05)
    else:  # it asks for more: each process's fp32 model before partitioning
        assert host_per_node < row["cpu_bytes"] / row["additional_buffer_factor"]


@pytest.mark.parametrize("row", ZERO3, ids=lambda r: f"{r['model']}-{r['cpu_offload']}-{r['cpu_offload_params']}")
def test_zero3_model_states_match_deepspeeds_estimate_less_the_gathered_layer(row: dict[str, Any]) -> None:
    offload = "params_cpu" if row["cpu_offload_params"] else "optimizer_cpu" if row["cpu_offload"] else "none"
    s = deepspeed(row, "zero3", offload)
    gpus = row["num_gpus_per_node"] * row["num_nodes"]
    # the 16-bit unit gathered at a time (DeepSpeed counts 4 bytes: largest_layer_memory); one GPU
    # holds the whole model unless the parameters live on the host
    gathered = 2 * row["largest_layer_params"] if gpus > 1 or row["cpu_offload_params"] else 0
    theirs = row["gpu_bytes"] - row["largest_layer_memory"]
    ours = on_gpu(s, gathered)
    if theirs == 0:  # parameters offloaded too: nothing but the gathered layer stays on the GPU
        assert ours == 0
    else:
        assert ours == pytest.approx(theirs, rel=0.05)
    if row["cpu_offload"]:  # per node, before the estimator's 1.5 buffer factor
        host_per_node = s.offload_cpu * row["num_gpus_per_node"]
        assert host_per_node == pytest.approx(row["cpu_bytes"] / row["additional_buffer_factor"], rel=0.05)
    else:
        assert s.offload_cpu == 0


def test_llama_8b_zero3_on_8_gpus_in_figures() -> None:
    row = next(r for r in ZERO3 if r["model"] == "Llama-3.1-8B" and r["num_gpus_per_node"] == 8 and r["num_nodes"] == 1)
    s = deepspeed(row, "zero3", "none")
    # 18 bytes / 8 GPUs × 8.03 billion = 18.07 GB of states; DeepSpeed adds 2.10 GB for the largest layer
    assert on_gpu(s, 2 * row["largest_layer_params"]) / 1e9 == pytest.approx(18.07, abs=0.01)
    assert row["gpu_bytes"] / 1e9 == pytest.approx(20.17, abs=0.01)
