"""Each GPU's matrix rates from published PyTorch matmul measurements of it
(resources/published/matmul_ceilings.json, core/estimate/published_rates.py, applied by
core/estimate/gpu_kernels.py published_efficiency): the
share of its datasheet peak its large matmuls reach, over the share the reference card (the H100 SXM,
where the kernel model's efficiencies were set) reaches, scales those efficiencies."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from core.estimate import gpu_kernels as gk
from core.estimate import published_rates as pr
from core.estimate.gemm import GEMM_FIXED_S
from core.estimate.profile_read import KernelRecord
from core.estimate.profile_scale import scale_kernel, sm_count
from core.estimate.sizing import size_candidate
from core.hardware.catalogue import find_device, load_catalogue
from core.output.sizing_report import step_accuracy_note
from core.paths import resource_path
from core.spec.workload import parse_workload

CAT = load_catalogue()
DOC = json.loads(resource_path("published/matmul_ceilings.json").read_text(encoding="utf-8"))


def dev(name: str) -> Any:
    return find_device(name, CAT)


def median(gpu: str, key: str) -> float:
    return statistics.median(e[key] for e in DOC["devices"][gpu] if e[key])


def test_every_figure_is_kept_with_its_source_and_names_a_catalogue_gpu() -> None:
    src = DOC["source"]
    assert src["url"].endswith("/torch-performance-test-data") and "commit" in src["version"]
    assert "torch.mm" in src["method"] and DOC["reference"] == "NVIDIA H100 SXM"
    for name, entries in DOC["devices"].items():
        assert dev(name).name == name and dev(name).kind == "gpu"
        for e in entries:
            assert e["name"] and e["fp32"] > 0 and (e["fp16"] or 0) > 0 and "setting" in e


def test_the_reference_card_keeps_the_efficiencies_the_model_was_set_on() -> None:
    h100 = dev("H100 SXM")
    assert gk.published_efficiency(h100) == {} and pr.published_note(h100) == ""
    g = gk.figures(h100)
    assert (g.eff_tensor, g.eff_cuda, g.eff_tf32, g.eff_fp16) == (
        gk.GEMM_EFFICIENCY["tensor"],
        gk.GEMM_EFFICIENCY["cuda"],
        None,
        None,
    )


def test_a_geforce_card_runs_its_matmuls_at_the_rate_published_for_it() -> None:
    # six submissions: the RTX 4090's FP16 matmuls reach 101 % of its datasheet peak (FP32 accumulate,
    # half rate), the H100 SXM's 77 %: its GEMMs are priced 1.32 × the H100's efficiency, not 0.72
    ref = "NVIDIA H100 SXM"
    rtx, h100 = dev("RTX 4090"), dev("H100 SXM")
    share = median(rtx.name, "fp16") * 1e12 / rtx.half_flops
    ref_share = median(ref, "fp16") * 1e12 / h100.half_flops
    assert share == pytest.approx(1.01, abs=0.01) and ref_share == pytest.approx(0.767, abs=0.005)
    g = gk.figures(rtx)
    assert g.eff_fp16 == pytest.approx(gk.GEMM_EFFICIENCY["tensor"] * share / ref_share)
    assert gk.matmul_efficiency("fp16_mixed", g) == g.eff_fp16
    # its FP32 CUDA cores reach 66 % of their peak (the H100's 78 %): slower than the constant
    assert gk.matmul_efficiency("fp32", g) == pytest.approx(0.8 * (54.3 / 82.6) / (52.0 / 66.9), rel=0.01)
    # a 70 W T4 (three submissions) reaches 54 % of its FP32 peak: its matrix products are slower
    assert gk.figures(dev("T4")).eff_cuda < 0.6


def test_a_figure_with_a_single_submission_is_not_used() -> None:
    # one contributor's figure may come from a card held at a lower power limit: the RTX A6000 and the
    # H100 PCIe have one each and are priced from their datasheets as before; the RTX 4090's TF32 and
    # the H100 SXM's TF32 have one each, so TF32 takes the tensor cores' published share
    for name in ("RTX A6000", "H100 PCIe"):
        assert len(DOC["devices"][dev(name).name]) == 1
        assert pr.published_note(dev(name)) == ""
        assert gk.figures(dev(name)).eff_tensor == gk.GEMM_EFFICIENCY["tensor"]
    assert sum(1 for e in DOC["devices"]["NVIDIA GeForce RTX 4090"] if e["tf32"]) == 1
    assert "TF32" not in pr.published_note(dev("RTX 4090")) and gk.figures(dev("RTX 4090")).eff_tf32 is None


def test_a_geforce_card_without_figures_of_its_own_takes_its_class_s() -> None:
    # the RTX 5080 has one submission: it is priced at the median share of the GeForce cards with two
    # or more (RTX 3090, 4090, 5090: FP16 107 %, FP32 66 % of their datasheet peaks), said in its note
    rtx = dev("RTX 5080")
    assert len(DOC["devices"][rtx.name]) == 1
    note = pr.published_note(rtx)
    assert "as GeForce cards reach (GeForce RTX 3090, GeForce RTX 4090, GeForce RTX 5090): BF16 108%, FP16 107%" in note
    fp16_class = statistics.median(
        median(n, "fp16") * 1e12 / dev(n).half_flops
        for n in ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090")
    )
    ref_share = median("NVIDIA H100 SXM", "fp16") * 1e12 / dev("H100 SXM").half_flops
    assert gk.figures(rtx).eff_fp16 == pytest.approx(min(gk.GEMM_EFFICIENCY["tensor"] * fp16_class / ref_share, 1.0))
    # not a professional card (its datasheet peaks are full rate): the RTX 6000 Ada keeps the constants
    assert pr.published_note(dev("RTX 6000 Ada")) == ""


def test_this_machines_calibration_replaces_the_published_figures() -> None:
    g = gk.figures(dev("RTX 4090"), {"tensor": 0.6, "note": "measured on this machine's"})
    # the published FP16 and FP32 figures go with it, not only the ones measured here
    assert (g.eff_tensor, g.eff_cuda, g.eff_fp16) == (0.6, gk.GEMM_EFFICIENCY["cuda"], None)
    assert gk.matmul_efficiency("fp16_mixed", g) == 0.6


def test_tf32_on_a_geforce_card_runs_on_tensor_cores_and_never_slower_than_fp32() -> None:
    # the RTX 4090's TF32 peak equals its FP32 one (82.6 TFLOPS), yet TF32 runs on tensor cores; at its
    # tensor cores' share × TF32's 0.7 it would be slower than its CUDA cores, which cuBLAS and cuDNN
    # would not choose: TF32 is priced at least at the FP32 rate (published: TF32 85.7 TFLOPS against
    # FP32 54 on this card, so TF32 is if anything faster)
    for name in ("RTX 4090", "RTX 5080", "RTX 3060"):
        rtx = dev(name)
        assert rtx.tf32_flops == pytest.approx(rtx.fp32_flops, rel=0.01)
        g = gk.figures(rtx)
        assert g.tensor_cores("tf32") and not g.tensor_cores("fp32")
        tf32_rate = gk.matmul_efficiency("tf32", g) * g.tf32
        assert tf32_rate >= gk.matmul_efficiency("fp32", g) * g.fp32 * (1 - 1e-9)
        bert = parse_workload({"model": {"preset": "bert-base"}, "training": {"precision": "tf32"}})
        fp32 = parse_workload({"model": {"preset": "bert-base"}, "training": {"precision": "fp32"}})
        assert size_candidate(bert, rtx, 1).step.compute_s <= size_candidate(fp32, rtx, 1).step.compute_s
    # on an H100 TF32 is the tensor cores' share × 0.7 of the TF32 peak, far above FP32's rate
    h100 = gk.figures(dev("H100 SXM"))
    assert gk.matmul_efficiency("tf32", h100) == pytest.approx(gk.GEMM_EFFICIENCY["tensor"] * gk.TF32_GEMM_EFFICIENCY)
    assert not gk.figures(dev("T4")).tensor_cores("tf32")  # Turing has no TF32


def test_the_sizing_names_where_its_matrix_rates_come_from() -> None:
    w = parse_workload({"model": {"preset": "bert-base"}, "training": {"precision": "fp16_mixed"}})
    rtx = size_candidate(w, dev("RTX 4090"), 1)
    line = next(a for a in rtx.assumptions if a.startswith("efficiency"))
    assert "published PyTorch matmul measurements show (this GPU's: BF16 100%, FP16 101%, FP32 66%" in line
    assert "two or more contributors per figure" in line
    assert "priced at the rates published PyTorch matmul measurements show" in step_accuracy_note(rtx)
    assert "GeForce" in step_accuracy_note(rtx)
    a6000 = size_candidate(w, dev("RTX A6000"), 1)
    assert "published" not in next(a for a in a6000.assumptions if a.startswith("efficiency"))
    # a model given as a summary is not priced by the kernel model: no claim of published rates
    summary = {"input_shape": [128], "summary": {"parameters": 1_000_000, "activation_bytes_per_sample": 4096}}
    doc = {"model": summary, "data": {"samples": 1000}, "training": {"batch_size": 100, "epochs": 1}}
    flat = size_candidate(parse_workload(doc), dev("RTX 4090"), 1)
    assert "GeForce" in step_accuracy_note(flat) and "published PyTorch matmul" not in step_accuracy_note(flat)
    # the RTX 4090 trains it faster than its datasheet × the H100's efficiency said
    assert rtx.step.compute_s < 0.85 * _without_published(w, dev("RTX 4090")).step.compute_s


def _without_published(w: Any, device: Any) -> Any:
    pr.clear_caches()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(pr, "MIN_SUBMISSIONS", 100)
            return size_candidate(w, device, 1)
    finally:
        pr.clear_caches()


def test_measure_and_scale_uses_the_published_rates_of_both_cards() -> None:
    # a bf16 GEMM kernel measured on an RTX 3090, scaled to an RTX A6000: the 3090's matmuls reach
    # 108 % of its (half-rate) datasheet peak, the A6000 is priced at the H100's share
    k = KernelRecord(name="ampere_bf16_s16816gemm_bf16_128x128", kind="gemm", calls=1, total_s=1e-3)
    src, dst = dev("RTX 3090"), dev("RTX A6000")
    got = scale_kernel(k, src, dst, "bf16_mixed", (None, sm_count(dst)))
    # the kernel model's rates: the 3090 at 0.97 of its datasheet peak, the A6000 at the H100's 0.72
    assert gk.matmul_rate(src, "bf16_mixed") == pytest.approx(src.half_flops * 0.972, rel=0.01)
    assert gk.matmul_rate(dst, "bf16_mixed") == pytest.approx(dst.half_flops * gk.GEMM_EFFICIENCY["tensor"])
    fixed = GEMM_FIXED_S  # a matrix product's fixed time does not scale
    expected = fixed + (1e-3 - fixed) * gk.matmul_rate(src, "bf16_mixed") / gk.matmul_rate(dst, "bf16_mixed")
    assert got == pytest.approx(expected)
    # an fp16 workload's half-precision kernels at the cards' FP16 rates (RTX PRO 6000 Blackwell: FP16
    # 62 % of its peak, BF16 82 %)
    pro = dev("RTX PRO 6000 Blackwell")
    assert gk.matmul_rate(pro, "fp16_mixed") < 0.8 * gk.matmul_rate(pro, "bf16_mixed")
    fp16 = scale_kernel(k, pro, dst, "fp16_mixed", (None, sm_count(dst)))
    bf16 = scale_kernel(k, pro, dst, "bf16_mixed", (None, sm_count(dst)))
    assert fp16 < bf16  # the slower FP16 source rate: the same measured time is more work
