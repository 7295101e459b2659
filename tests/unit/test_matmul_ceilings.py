"""Each GPU's matrix rates from published PyTorch matmul measurements of it
(resources/published/matmul_ceilings.json, core/estimate/gpu_kernels.py published_efficiency): the
share of its datasheet peak its large matmuls reach, over the share the reference card (the H100 SXM,
where the kernel model's efficiencies were set) reaches, scales those efficiencies."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from core.estimate import gpu_kernels as gk
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
    assert gk.published_efficiency(h100, gk._reference_device()) == {}
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


def test_a_card_with_a_single_submission_keeps_the_constants() -> None:
    # one contributor's figure may come from a card held at a lower power limit: the RTX A6000 and the
    # H100 PCIe have one each and are priced from their datasheets as before
    for name in ("RTX A6000", "H100 PCIe"):
        assert len(DOC["devices"][dev(name).name]) == 1
        assert gk.published_note(dev(name)) == ""
        assert gk.figures(dev(name)).eff_tensor == gk.GEMM_EFFICIENCY["tensor"]


def test_this_machines_calibration_replaces_the_published_figures() -> None:
    g = gk.figures(dev("RTX 4090"), {"tensor": 0.6, "fp32": 0.5, "note": "measured on this machine's"})
    assert (g.eff_tensor, g.eff_cuda, g.eff_fp16) == (0.6, 0.5, None)
    assert gk.matmul_efficiency("fp16_mixed", g) == 0.6


def test_tf32_on_a_geforce_ada_card_runs_on_tensor_cores() -> None:
    # the RTX 4090's TF32 peak equals its FP32 one (82.6 TFLOPS), yet TF32 runs on tensor cores: its
    # published TF32 matmul (85.7 TFLOPS, 104 % of the peak; the H100 SXM's 81 %) sets its efficiency,
    # at TF32's share of the tensor cores' one, not the CUDA cores' 66 %
    rtx = dev("RTX 4090")
    assert rtx.tf32_flops == rtx.fp32_flops
    g = gk.figures(rtx)
    assert g.tensor_cores("tf32") and not g.tensor_cores("fp32")
    share = median(rtx.name, "tf32") * 1e12 / rtx.tf32_flops
    ref_share = median("NVIDIA H100 SXM", "tf32") * 1e12 / dev("H100 SXM").tf32_flops
    expected = gk.GEMM_EFFICIENCY["tensor"] * gk.TF32_GEMM_EFFICIENCY * share / ref_share
    assert gk.matmul_efficiency("tf32", g) == g.eff_tf32 == pytest.approx(expected)
    assert not gk.figures(dev("T4")).tensor_cores("tf32")  # Turing has no TF32


def test_the_sizing_names_where_its_matrix_rates_come_from() -> None:
    w = parse_workload({"model": {"preset": "bert-base"}, "training": {"precision": "fp16_mixed"}})
    rtx = size_candidate(w, dev("RTX 4090"), 1)
    line = next(a for a in rtx.assumptions if a.startswith("efficiency"))
    assert "published PyTorch matmul measurements of this GPU reach (BF16 100%, FP16 101%" in line
    assert "6 submissions to torch-performance-test-data" in line
    assert "published PyTorch matmul measurements of it" in step_accuracy_note(rtx)
    assert "GeForce" in step_accuracy_note(rtx)
    a6000 = size_candidate(w, dev("RTX A6000"), 1)
    assert "published" not in next(a for a in a6000.assumptions if a.startswith("efficiency"))
    # the RTX 4090 trains it faster than its datasheet × the H100's efficiency said
    assert rtx.step.compute_s < 0.85 * _without_published(w, dev("RTX 4090")).step.compute_s


def _without_published(w: Any, device: Any) -> Any:
    gk._published.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(gk, "MIN_SUBMISSIONS", 100)
            return size_candidate(w, device, 1)
    finally:
        gk._published.cache_clear()


def test_measure_and_scale_uses_the_published_rates_of_both_cards() -> None:
    # a bf16 GEMM kernel measured on an RTX 3090, scaled to an RTX A6000: the 3090's matmuls reach
    # 108 % of its (half-rate) datasheet peak, the A6000 is priced at the H100's share
    k = KernelRecord(name="ampere_bf16_s16816gemm_bf16_128x128", kind="gemm", calls=1, total_s=1e-3)
    src, dst = dev("RTX 3090"), dev("RTX A6000")
    got = scale_kernel(k, src, dst, "bf16_mixed", (None, sm_count(dst)))
    factor = gk.published_rate_factor(src, "bf16_mixed")
    assert factor == pytest.approx(0.972 / 0.72, rel=0.01)
    assert gk.published_rate_factor(dst, "bf16_mixed") == 1.0
    expected = 2.5e-6 + (1e-3 - 2.5e-6) * (src.half_flops * factor) / dst.half_flops
    assert got == pytest.approx(expected)
