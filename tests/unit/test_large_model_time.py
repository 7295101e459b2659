"""Step time of the large-model settings (docs/sizing.md §4e, core/estimate/parallel_time.py):
each setting moves the step the way its mechanism says, by the amount its formula gives, and the
published large-model throughputs (resources/published/large_model_throughputs.json) are held to
the issue's bar."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.accuracy_large_models import errors
from core.estimate import gpu_kernels, parallel_time
from core.estimate.sizing import CandidateResult, size_candidate
from core.hardware.catalogue import find_device, load_catalogue
from core.spec.large import DEFAULT_LARGE
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()
H100 = find_device("H100 SXM", CATALOGUE)
A100 = find_device("A100 80GB SXM", CATALOGUE)


def llama(device: Any = H100, count: int = 8, nodes: int = 1, **training: Any) -> CandidateResult:
    """Llama-8B (sequence 2048), AdamW, bf16 autocast, FSDP, full checkpointing, 64 sequences."""
    t = {"batch_size": 64, "epochs": 1, "optimizer": "adamw", "precision": "bf16_mixed", "sharding": "fsdp"}
    t.update({"checkpointing": True, "nodes": nodes, **training})
    w = parse_workload({"model": {"preset": "llama-8b"}, "data": {"samples": 10**5}, "training": t})
    return size_candidate(w, device, count)


def test_a_power_limit_below_the_tdp_lowers_the_matrix_rates_by_the_cube_root() -> None:
    capped = H100.__class__(**{**H100.__dict__, "extra": {**H100.extra, "power_limit_w": 500}})
    assert gpu_kernels.power_factor(H100) == 1.0
    assert gpu_kernels.power_factor(capped) == pytest.approx((500 / 700) ** (1 / 3))  # 0.894
    assert gpu_kernels.figures(capped).half == pytest.approx(989.4e12 * 0.8939, rel=1e-3)
    assert gpu_kernels.figures(capped).bandwidth == gpu_kernels.figures(H100).bandwidth


def test_the_optimizer_implementations_order_by_the_bytes_and_kernels_they_take() -> None:
    foreach, fused, per_tensor = (llama(optimizer_impl=i).step for i in ("foreach", "fused", "per_tensor"))
    assert llama().step.optimizer_s == foreach.optimizer_s  # auto is foreach on CUDA
    # fused AdamW: 7 fp32 words per parameter of this device's eighth, at the bandwidth reached
    params = parse_workload({"model": {"preset": "llama-8b"}, "data": {"samples": 1}}).analysis.parameters
    assert fused.optimizer_s == pytest.approx(7 * 4 * params / 8 / gpu_kernels.figures(H100).bandwidth, rel=0.02)
    assert fused.optimizer_s < foreach.optimizer_s < per_tensor.optimizer_s
    assert fused.step_s < foreach.step_s < per_tensor.step_s


def test_fp8_speeds_the_matrix_products_only_on_a_gpu_with_fp8_tensor_cores() -> None:
    assert llama(fp8=True).step.compute_s < 0.7 * llama().step.compute_s
    assert llama(A100, fp8=True).step.compute_s == llama(A100).step.compute_s  # Ampere has no fp8


def test_tensor_parallelism_adds_its_all_reduces_to_the_critical_path() -> None:
    dp = llama(sharding="ddp")
    tp = llama(sharding="ddp", parallel={"tensor": 8})
    # the same work per device, plus 3 passes (recomputed forward included) × 2 all-reduces per layer
    # of 2,048 × 4,096 bf16 activations per sequence, for the group's 64 sequences in micro-steps; the
    # tensor-parallel ranks run micro-batches of 4 (2 micro-steps, against 8 of one sequence), so they
    # launch a quarter of the matrix products, each its fixed time (GEMM_FIXED_S): 1.7 % less
    assert (dp.micro_batch, tp.micro_batch) == (1, 4)
    assert 0.97 * dp.step.compute_s < tp.step.compute_s < dp.step.compute_s
    assert tp.step.step_s > dp.step.step_s + 0.2
    assert tp.step.optimizer_s < dp.step.optimizer_s / 5  # each rank steps its eighth (its calls: all)


def test_the_pipeline_bubble_shrinks_with_more_micro_batches() -> None:
    few = llama(sharding="ddp", parallel={"tensor": 2, "pipeline": 4})
    many = llama(sharding="ddp", parallel={"tensor": 2, "pipeline": 4, "microbatches": 16})
    assert parallel_time.pipeline_bubble(DEFAULT_LARGE, 4) == 0.0
    assert few.step.step_s > 1.4 * many.step.step_s


def test_hybrid_shard_keeps_the_gathers_on_nvlink_across_nodes() -> None:
    flat, hybrid = llama(nodes=4), llama(nodes=4, parallel={"hybrid_shard": True})
    assert hybrid.step.comm_s < flat.step.comm_s / 3
    assert hybrid.step.step_s < flat.step.step_s


def test_offload_pays_pcie_traffic_and_the_cpu_optimizer_step() -> None:
    base = llama(sharding="zero2", precision_layout="deepspeed")
    cpu = llama(sharding="zero2", precision_layout="deepspeed", offload="optimizer_cpu")
    nvme = llama(sharding="zero2", precision_layout="deepspeed", offload="optimizer_nvme")
    params = parse_workload({"model": {"preset": "llama-8b"}, "data": {"samples": 1}})
    local = params.analysis.parameters / 8
    expected = local * (4 + 2) / H100.host_link_bw + local * 7 * 4 / (parallel_time.HOST_ADAM_BPS / 8)
    assert cpu.step.step_s - base.step.step_s == pytest.approx(expected, rel=0.01)
    assert nvme.step.step_s - cpu.step.step_s == pytest.approx(2 * local * 12 / parallel_time.NVME_BPS, rel=0.01)


def test_selective_checkpointing_costs_less_time_than_full_and_more_than_none() -> None:
    # at one micro-batch, so that no setting changes the accumulation steps
    steps = (llama(checkpointing=c, micro_batch_size=2).step for c in (False, "selective", True))
    none, selective, full = (s.step_s for s in steps)
    assert none < selective < full


def test_published_a100_throughputs_within_15_percent() -> None:
    for row, tps, err in errors():
        if row["device"] == "NVIDIA A100 80GB SXM":
            assert abs(err) <= 0.15, (row["label"], row["model"], round(tps), row["tokens_per_s_per_gpu"])


def test_torchtitan_h100_within_15_percent() -> None:
    row, tps, err = errors()[0]
    assert row["tokens_per_s_per_gpu"] == 5762
    assert abs(err) <= 0.15, f"{tps:,.0f} tokens/s per GPU against 5,762 ({err:+.0%})"


def test_a_custom_device_names_its_architecture_and_power_limit() -> None:
    from core.hardware.catalogue import device_from_entry, normalise_device_entry

    entry = {"name": "my H100", "fp32_tflops": 66.9, "fp16_tflops": 989.4, "memory_gb": 96, "tdp_w": 700}
    plain = device_from_entry(normalise_device_entry(entry, "custom"), "workload")
    hopper = device_from_entry(
        normalise_device_entry({**entry, "architecture": "Hopper", "power_limit_w": 500}, "custom"), "workload"
    )
    assert not gpu_kernels.figures(plain).hopper and gpu_kernels.figures(hopper).hopper
    assert gpu_kernels.figures(hopper).half == pytest.approx(gpu_kernels.figures(plain).half * 0.894, rel=1e-3)


def test_fp8_all_gather_halves_the_matmul_weights_fsdp_gathers() -> None:
    t = {"precision_layout": "fsdp_mixed", "fp8": True, "micro_batch_size": 2}
    plain = llama(**t).step
    gathered = llama(**t, fp8_all_gather=True).step
    # FSDP gathers every weight twice (forward, backward) and reduce-scatters fp32 gradients: per
    # parameter 2·2 + 4 bytes over the ring; the matrix weights' gathers at 1 byte save 2 of them
    params = parse_workload({"model": {"preset": "llama-8b"}}).analysis.parameters
    matmul = 32 * (4096 * 10240 + 3 * 4096 * 14336) + 4096 * 128256
    share = matmul / params
    assert gathered.comm_s / plain.comm_s == pytest.approx((2 * (2 - share) + 4) / (2 * 2 + 4), rel=1e-3)


def test_the_published_large_model_table_within_15_percent() -> None:
    rows = errors()
    outside = [(r["source"], r["label"]) for r, _tps, err in rows if abs(err) > 0.15]
    # flash attention on Hopper is priced from cuDNN's kernels (real H100 profiles), whose products at Llama's
    # heads of 128 reach 0.49 of the peak against 0.28 at 64 (gpu_attention.flash_head_work): Megatron's
    # Transformer Engine, which runs cuDNN's attention, −8 % (−19 % at 64's share for every head, −13 % at the
    # old flat 30 % of the peak). torchtitan's H100 rows ran FlashAttention-2 (cuDNN's attention was off
    # PyTorch's H100 list then) and are sized with attention "flash", the flat share: +6/+11/+8 % (+16/+24/+23 %
    # at cuDNN's price; docs/accuracy.md)
    assert outside == []
    megatron = [err for r, _tps, err in rows if r["source"].startswith("megatron")]
    assert len(megatron) == 1 and -0.10 <= megatron[0] < -0.05
    titan = [(r, err) for r, _tps, err in rows if r["source"] == "torchtitan-2025"]
    assert len(titan) == 3 and all(0 < e <= 0.12 and r["attention"] == "flash" for r, e in titan)
    assert sum(abs(e) for *_x, e in rows) / len(rows) <= 0.07  # 6 %
