"""The optimizer step divided among the shards (SPEC 3.5b): under ZeRO-1/2/3 and FSDP full shard
each data-parallel device updates only its partition of the optimizer states (Rajbhandari et al.
2020), so the optimizer's memory-bound work is 1/devices of a single device's; DDP and no sharding
update every parameter on every device."""

from __future__ import annotations

from typing import Any

import pytest

from core.estimate.gpu_memory import FOREACH_ACCESSES
from core.estimate.op_work import BANDWIDTH_EFFICIENCY
from core.estimate.sizing import size_candidate
from core.estimate.timing import StepTime
from core.hardware.catalogue import find_device, load_catalogue
from core.spec.workload import parse_workload
from core.vocabulary import SHARDS_OPTIMIZER_STATES

H100 = find_device("H100 SXM", load_catalogue())


def llama_step(sharding: str, count: int, **training: Any) -> StepTime:
    """Llama-8B, AdamW, bf16 mixed precision, one sample per GPU, on ``count`` × H100 SXM, without
    the preset's activation checkpointing (as the issue measured it)."""
    doc = {
        "model": {"preset": "llama-8b"},
        "training": {
            "batch_size": count,
            "optimizer": "adamw",
            "precision": "bf16_mixed",
            "sharding": sharding,
            "checkpointing": False,
            **training,
        },
    }
    return size_candidate(parse_workload(doc), H100, count).step


def adamw_memory_s(parameters: int) -> float:
    """The uncalibrated optimizer step's memory-bound seconds on one H100 updating every parameter."""
    return FOREACH_ACCESSES["adamw"] * 4 / (H100.bandwidth * BANDWIDTH_EFFICIENCY["gpu"]) * parameters


def test_the_vocabulary_shards_optimizer_states_from_zero1_up() -> None:
    assert SHARDS_OPTIMIZER_STATES == ("zero1", "zero2", "zero3", "fsdp")


@pytest.mark.parametrize("sharding", ["fsdp", "zero1"])
def test_llama_8b_on_8_h100_updates_an_eighth_of_the_optimizer_states(sharding: str) -> None:
    params = parse_workload({"model": {"preset": "llama-8b"}}).analysis.parameters
    opt = adamw_memory_s(params)  # 0.240 s over 8.03 billion parameters (20 fp32 words each)
    one = llama_step("none", 1)
    many = llama_step(sharding, 8)
    # one GPU: the optimizer term 0.241 s (0.240 s memory-bound + 0.001 s framework calls: AdamW's
    # 13 foreach calls and its Python over 291 tensors, core/estimate/host.py — 0.010 s when every
    # graph op was charged two calls)
    assert one.optimizer_s == pytest.approx(0.241, abs=0.001)
    # eight shards: each updates 1/8 of the states (0.030 s); the calls are each device's own
    assert many.optimizer_s == pytest.approx(one.optimizer_s - opt * 7 / 8)
    assert many.optimizer_s == pytest.approx(0.031, abs=0.001)  # 0.030 s + the calls
    assert many.memory_s == pytest.approx(one.memory_s - opt * 7 / 8)
    assert many.compute_s == one.compute_s


def test_the_sharded_step_shortens_by_the_optimizer_work_it_no_longer_does() -> None:
    params = parse_workload({"model": {"preset": "llama-8b"}}).analysis.parameters
    opt = adamw_memory_s(params)
    ddp, zero1, fsdp = llama_step("ddp", 8), llama_step("zero1", 8), llama_step("fsdp", 8)
    # ZeRO-1 moves as many gradient bytes as DDP's all-reduce (reduce-scatter + all-gather), hidden
    # behind backward in both: the step is shorter by exactly 7/8 of the optimizer's work
    assert zero1.comm_s == ddp.comm_s
    assert zero1.step_s == pytest.approx(ddp.step_s - opt * 7 / 8)
    # (GPU kernel model, core/estimate/gpu_kernels.py; 0.536 and 0.274 s with the datasheet peak × 45 %,
    # 0.524 and 0.261 s before cross-entropy's bytes over the 128,256-token vocabulary were counted from
    # its kernels: 44 bytes a bf16 logit, was 20; 0.526 and 0.264 s before the device's 0.65 ms of
    # waits for the host's dispatch, core/estimate/host.py device_wait; 0.527 and 0.265 s before autocast's
    # fp32 residual stream and its casts at each matrix product were priced; 0.539 and 0.277 s before flash
    # attention on Hopper was priced by its parts, gpu_attention.flash_parts_s; 0.541 and 0.279 s before the
    # foreach AdamW's 20 words a parameter, counted from its code, and autocast's casts at 70 % of the streaming
    # rate, gpu_memory.py; 0.498 and 0.289 s before cuDNN's attention at Llama's heads of 128, which keep the
    # tensor cores busier than heads of 64, gpu_attention.flash_head_work)
    assert (ddp.step_s, zero1.step_s) == (pytest.approx(0.496, abs=0.001), pytest.approx(0.286, abs=0.001))
    # FSDP: 0.278 s (0.275 s before the loss's bytes); its all-gathers prefetch the next unit in
    # forward as in backward, so the traffic hides behind the whole forward and backward (0.324 s when
    # only backward hid it; 0.278 s before autocast's fp32 residual stream and casts, 0.290 s before the
    # casts' 70 % of the streaming rate and the foreach AdamW's 20 words); the matrix
    # products bound it
    assert fsdp.step_s == pytest.approx(0.300, abs=0.001)
    assert fsdp.bound == "compute"


@pytest.mark.parametrize("sharding", ["none", "ddp"])
def test_without_sharded_states_every_device_updates_every_parameter(sharding: str) -> None:
    one, many = llama_step("none", 1), llama_step(sharding, 8)
    assert many.optimizer_s == one.optimizer_s
    assert many.memory_s == one.memory_s


def test_gradient_accumulation_pays_the_sharded_optimizer_once() -> None:
    # global batch 64 on 8 GPUs: 8 samples per GPU; the optimizer step runs once after the micro-steps
    params = parse_workload({"model": {"preset": "llama-8b"}}).analysis.parameters
    ddp, zero1 = llama_step("ddp", 8, batch_size=64), llama_step("zero1", 8, batch_size=64)
    assert zero1.accumulation_steps == ddp.accumulation_steps > 1
    assert zero1.optimizer_s == pytest.approx(ddp.optimizer_s - adamw_memory_s(params) * 7 / 8)
    assert zero1.step_s == pytest.approx(ddp.step_s - (ddp.optimizer_s - zero1.optimizer_s))


def test_a_published_summary_model_divides_its_optimizer_traffic_too() -> None:
    doc = {"model": {"preset": "ssd-pascal-vggvd-300"}, "training": {"batch_size": 8, "optimizer": "adam"}}
    ddp = size_candidate(parse_workload({**doc, "training": {**doc["training"], "sharding": "ddp"}}), H100, 8)
    zero2 = size_candidate(parse_workload({**doc, "training": {**doc["training"], "sharding": "zero2"}}), H100, 8)
    assert zero2.step.optimizer_s == pytest.approx(ddp.step.optimizer_s / 8)
    assert zero2.step.memory_s == pytest.approx(ddp.step.memory_s - ddp.step.optimizer_s * 7 / 8)
