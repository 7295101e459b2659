"""The Training page's large-model settings: collapsed by default, opened by a workload that uses
them, written back exactly, refused combinations explained before Next, and the sizing follows."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.network.presets import get_preset

LLAMA = {
    "name": "llama tp",
    "model": {"preset": "llama-8b"},
    "data": {"samples": 100000},
    "training": {
        "batch_size": 64,
        "epochs": 1,
        "optimizer": "adamw",
        "precision": "bf16_mixed",
        "checkpointing": "selective_op",
        "sharding": "fsdp",
        "nodes": 2,
        "reserve_percent": 0.0,
        "attention": "flash",
        "precision_layout": "fsdp_mixed",
        "reduce_dtype": "bf16",
        "fp8": True,
        "fp8_all_gather": True,
        "offload": "optimizer_cpu",
        "optimizer_impl": "fused",
        "parallel": {"tensor": 2, "pipeline": 2, "microbatches": 8, "sequence": True, "hybrid_shard": True},
        "memory_format": "channels_last",
        "compile": True,
    },
    "hardware": {"candidates": ["NVIDIA H100 SXM"], "gpu_count": 8},
}


def on_one_h100(preset: str, samples: int, batch: int, optimizer: str, precision: str) -> dict:
    """A workload of one preset sized on one H100 SXM."""
    return {
        "name": f"{preset} {precision}",
        "model": {"preset": preset},
        "data": {"samples": samples},
        "training": {"batch_size": batch, "epochs": 1, "optimizer": optimizer, "precision": precision},
        "hardware": {"candidates": ["NVIDIA H100 SXM"], "gpu_count": 1},
    }


def test_the_group_is_collapsed_until_a_workload_uses_it_and_round_trips(qtbot, main_window) -> None:
    wiz = main_window().sizing_tab
    page = wiz.training
    assert not page.large.isChecked() and page.large.body.isHidden()
    before = copy.deepcopy(wiz.doc["training"])
    page.store(wiz.doc)
    assert wiz.doc["training"] == before  # a workload without the keys is written back without them
    wiz.load_document(copy.deepcopy(LLAMA))
    assert page.large.isChecked() and not page.large.body.isHidden()
    assert page.checkpointing.currentData() == "selective_op"
    assert page.large.fp8_gather.isChecked() and page.large.fp8_gather.isEnabled()
    assert page.large.param_dtype.isEnabled() and page.large.sequence.isEnabled()
    doc: dict = {}
    page.store(doc)
    assert doc["training"] == LLAMA["training"]


def test_the_sizing_follows_the_settings_and_names_them(qtbot, main_window) -> None:
    wiz = main_window().sizing_tab
    wiz.load_document(copy.deepcopy(LLAMA))
    wiz.go(5)
    (c,) = [c for c in wiz.result.candidates if c.count == 8]
    assert c.memory.offload_cpu_bytes > 0 and c.step.offload_s > 0
    notes = " ".join(c.assumptions)
    assert "tensor parallel 2" in notes and "optimizer fused" in notes and "fp8 matrix products" in notes
    assert "FSDP gathers the matrix weights in fp8" in notes and "per-op selective" in notes
    # no offload: the step loses its PCIe traffic and CPU-Adam
    wiz.go(3)
    page = wiz.training
    page.large.offload.setCurrentIndex(page.large.offload.findData("none"))
    wiz.go(5)
    (c2,) = [c for c in wiz.result.candidates if c.count == 8]
    assert c2.step.offload_s == 0 and c2.step.step_s < c.step.step_s


def test_a_combination_the_parser_refuses_is_explained_before_next(qtbot, main_window) -> None:
    wiz = main_window().sizing_tab
    wiz.load_document(copy.deepcopy(LLAMA))
    wiz.go(3)
    page = wiz.training
    # Megatron's distributed optimizer cannot go with FSDP: the page says why and Next waits
    page.large.layout_.setCurrentIndex(page.large.layout_.findData("megatron"))
    assert "distributed optimizer" in (page.problem() or "")
    assert "distributed optimizer" in page.error.text()
    assert not wiz.next_button.isEnabled()
    page.sharding.setCurrentIndex(page.sharding.findData("zero1"))
    assert page.problem() is None and wiz.next_button.isEnabled()
    # fp32 precision greys out the half-precision layouts and fp8, and writes neither
    page.precision.setCurrentIndex(page.precision.findData("fp32"))
    assert not page.large.fp8.isEnabled() and not page.large.layout_.isEnabled()
    doc: dict = {}
    page.store(doc)
    assert "fp8" not in doc["training"] and "precision_layout" not in doc["training"]
    assert page.problem() is None


def test_old_workloads_with_a_checkpointing_flag_still_load(qtbot, main_window) -> None:
    wiz = main_window().sizing_tab
    doc = {"name": "gpt2", "model": get_preset("gpt2-small", "p")["model"], "data": {"samples": 1000}}
    doc["training"] = {"batch_size": 8, "epochs": 1, "checkpointing": True}
    wiz.load_document(doc)
    assert wiz.training.checkpointing.currentData() == "full"
    out: dict = {}
    wiz.training.store(out)
    assert out["training"]["checkpointing"] is True


def test_checkpointing_every_nth_block_is_offered_under_full_checkpointing_only(qtbot, main_window) -> None:
    wiz = main_window().sizing_tab
    doc = copy.deepcopy(LLAMA)
    doc["training"].update(checkpointing=True, checkpoint_every=2)
    wiz.load_document(doc)
    page = wiz.training
    assert page.checkpointing.currentData() == "full"
    assert page.large.every.isEnabled() and page.large.every.value() == 2
    out: dict = {}
    page.store(out)
    assert out["training"]["checkpoint_every"] == 2 and out["training"]["checkpointing"] is True
    # a selective policy has no blocks to pick: the spin greys out and writes nothing
    page.checkpointing.setCurrentIndex(page.checkpointing.findData("selective"))
    assert not page.large.every.isEnabled()
    out = {}
    page.store(out)
    assert "checkpoint_every" not in out["training"] and page.problem() is None


def test_eager_attention_is_offered_and_slows_a_bert_step(qtbot, main_window) -> None:
    # Hugging Face's eager attention (unfused): its kernels over the 128² × 12 scores of each layer
    # cost the H100 time and memory that flash attention does not
    wiz = main_window().sizing_tab
    wiz.load_document(on_one_h100("bert-base", 100000, 256, "adamw", "bf16_mixed"))
    wiz.go(5)
    (flash,) = wiz.result.candidates
    wiz.go(3)
    page = wiz.training
    page.large.setChecked(True)
    combo = page.large.attention
    assert combo.findData("eager") >= 0 and "Hugging Face" in combo.itemData(combo.findData("eager"), 3)
    combo.setCurrentIndex(combo.findData("eager"))
    wiz.go(5)
    (eager,) = wiz.result.candidates
    assert eager.step.memory_s > flash.step.memory_s and eager.memory.activations > flash.memory.activations
    assert "attention kernel eager" in " ".join(eager.assumptions)
    doc: dict = {}
    page.store(doc)
    assert doc["training"]["attention"] == "eager"


def _fp32_resnet_on_an_h100(main_window) -> tuple[Any, Any]:
    """The wizard with ResNet-50 in fp32 sized on one H100, and its candidate."""
    wiz = main_window().sizing_tab
    wiz.load_document(on_one_h100("resnet-50", 6400, 64, "sgd_momentum", "fp32"))
    wiz.go(5)
    (candidate,) = wiz.result.candidates
    return wiz, candidate


def _tick_kernel_option(wiz: Any, key: str) -> tuple[Any, dict]:
    """Open the Training page's kernels group, tick the option ``key`` (unticked until then) and return
    its box and the training section the page writes."""
    wiz.go(3)
    page = wiz.training
    box = getattr(page.large, key)
    page.large.setChecked(True)
    assert not box.isChecked() and box.isEnabled()
    box.setChecked(True)
    stored: dict = {}
    page.store(stored)
    return box, stored["training"]


def test_ticking_cudnn_tf32_speeds_an_fp32_cnn_as_pytorchs_default_would(qtbot, main_window) -> None:
    # TrainRig prices fp32 convolutions in IEEE fp32 and says PyTorch's default differs; ticking the
    # box (PyTorch's default, cuDNN on TF32 tensor cores) writes cudnn_tf32 true and the step shrinks
    wiz, slow = _fp32_resnet_on_an_h100(main_window)
    assert any("IEEE fp32 on CUDA cores (cuDNN's TF32 off)" in a for a in slow.assumptions)
    assert any(f.rule == "gpu-fp32-cudnn-tf32" for f in wiz.recommendation.findings)
    box, training = _tick_kernel_option(wiz, "cudnn_tf32")
    assert "allow_tf32" in box.toolTip() and training["cudnn_tf32"] is True
    wiz.go(5)
    (fast,) = wiz.result.candidates
    assert any("TF32 tensor cores (training.cudnn_tf32 true" in a for a in fast.assumptions)
    assert not any(f.rule == "gpu-fp32-cudnn-tf32" for f in wiz.recommendation.findings)
    assert slow.step.compute_s > 2 * fast.step.compute_s
    # in bf16 the setting does not apply: the box is disabled and writes nothing
    wiz.go(3)
    page = wiz.training
    page.precision.setCurrentIndex(page.precision.findData("bf16_mixed"))
    assert not box.isEnabled()
    stored: dict = {}
    page.store(stored)
    assert "cudnn_tf32" not in stored["training"]


def test_ticking_cudnn_benchmark_on_an_h100_says_hoppers_cudnn_finds_the_same_kernels(qtbot, main_window) -> None:
    # PyTorch's default leaves cuDNN's algorithm search off and so does TrainRig; a user whose code turns it
    # on ticks the box. On Hopper cuDNN 9's heuristics pick what the search finds for the 3 × 3 and 1 × 1
    # layers (a lent H100 timed 68 convolutions both ways), so the step barely moves (only ResNet-50's
    # 7 × 7 stem and strided layers, not measured, keep the two prices) and the assumption says why
    wiz, heuristics = _fp32_resnet_on_an_h100(main_window)
    assert any("with or without its algorithm search" in a for a in heuristics.assumptions)
    box, training = _tick_kernel_option(wiz, "cudnn_benchmark")
    assert "cudnn.benchmark" in box.toolTip() and training["cudnn_benchmark"] is True
    wiz.go(5)
    (searched,) = wiz.result.candidates
    assert any("with or without its algorithm search" in a for a in searched.assumptions)
    assert searched.step.compute_s == pytest.approx(heuristics.step.compute_s, rel=0.15)
    # unticked, the key leaves the workload again
    wiz.go(3)
    box.setChecked(False)
    stored: dict = {}
    wiz.training.store(stored)
    assert "cudnn_benchmark" not in stored["training"]
