"""The seed papers' formulas with hand-computed values (SPEC 3.1)."""

from __future__ import annotations

import pytest

from core.advice.recommendation import recommend
from core.estimate import seed_formulas as seed
from core.estimate.sizing import size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.spec.workload import parse_workload


def test_p40_peak_flops_is_hoodas_test_vector() -> None:
    # Hooda eq. 1, R = 2NC, worked for the P40 in his eq. 2: (2)(3,840)(1.531e9 Hz) = 1.176e13 FLOP/s
    r = seed.peak_flops(3840, 1.531e9)
    assert r == pytest.approx(1.17580800e13, rel=1e-12)
    assert f"{r:.3e}" == "1.176e+13"


def test_c_train_and_t_train_follow_hooda_to_the_digit() -> None:
    # seed MLP: P = 569,354, S = 80,909, E = 400 → 2·3·569354·80909·400
    c = seed.c_train(569_354, 80_909, 400)
    assert c == 110_558_070_686_400.0
    assert seed.t_train(c, 1.1758080e13) == pytest.approx(9.402732, rel=1e-6)


def test_k1_and_its_meaning() -> None:
    assert seed.k1(569_354, 80_909, 75) == pytest.approx(569_354 / 6_068_175)
    assert seed.k1_meaning(0.0938).startswith("K1 < 1")
    assert seed.k1_meaning(1.0).startswith("K1 = 1")
    assert seed.k1_meaning(3.2).startswith("K1 > 1")
    with pytest.raises(ValueError):
        seed.k1(1, 10, 10)


def test_n_na_is_jamgharyans_equation_1() -> None:
    # η_b=4, S=1000, N=75, N_M=10, η_w=4, N_w=569354, η_v=4, N_v=3·569354 (Adam)
    assert seed.n_na(4, 1000, 75, 10, 4, 569_354, 4, 3 * 569_354) == 4 * 1000 * 85 + 4 * 569_354 + 12 * 569_354


def test_sizing_reports_seed_figures_on_the_p40(seed_doc: dict) -> None:
    w = parse_workload(seed_doc)
    p40 = find_device("Tesla P40", load_catalogue())
    s = recommend(w, [p40]).result.seed
    assert s["peak_flops"] == pytest.approx(1.1758080e13)
    assert s["c_train_flop"] == 110_558_070_686_400.0
    assert s["t_train_s"] == pytest.approx(110_558_070_686_400.0 / 1.1758080e13)
    lo, hi = s["t_train_real_s"]
    assert lo == pytest.approx(s["t_train_s"] / 0.85) and hi == pytest.approx(s["t_train_s"] / 0.75)
    assert s["k1"] == pytest.approx(569_354 / (80_909 * 75))
    # Adam: N_v = 3 variables per weight (gradient + two moments)
    assert s["n_na_bytes"] == 4 * 80_909 * (75 + 10) + 4 * 569_354 + 4 * 3 * 569_354
    # T1 of the MLP: every neuron costs 2·fan-in, each activation adds one op per neuron
    t1 = 2 * (75 * 512 + 512 * 512 * 2 + 512 * 10) + 3 * 512
    assert s["t1_ops"] == t1
    assert s["t2_ops"] == 2 * (75 + 512 + 512 + 512) + 3
    assert s["sources"]["k1"].startswith("Jamgharyan")
    assert (s["hooda_s"], s["hooda_s_unit"]) == (80_909, "samples")


def test_hooda_counts_tokens_for_a_model_trained_on_token_sequences() -> None:
    # GPT-2 small: 8,000,000 sequences of 1,024 tokens; 6·P FLOP per token (Hooda's O_f·O_b per
    # sample of a network that takes one vector), so C_train counts 8.192e9 tokens, not 8e6 samples
    w = parse_workload({"model": {"preset": "gpt2-small"}})
    s = size_workload(w, [find_device("H100 SXM", load_catalogue())]).seed
    assert (s["hooda_s"], s["hooda_s_unit"]) == (8_000_000 * 1024, "tokens")
    assert s["c_train_flop"] == 6 * 124_439_808 * 8_192_000_000
    assert s["hooda_s_note"] == "S = 8,000,000 sequences × 1,024 tokens = 8,192,000,000 tokens"
    assert "t_train_s" not in s  # T_train needs a device: the recommendation's (below)


def test_hooda_t_train_is_on_the_recommended_candidate_not_the_first() -> None:
    # Llama-8B (FSDP) on an RTX 3060 (listed first: it fits at no count) and H100 SXM × 1–8: the
    # recommendation is H100 SXM × 4, and R, T_train are Hooda's for those four GPUs
    cat = load_catalogue()
    w = parse_workload({"model": {"preset": "llama-8b"}, "hardware": {"gpu_count": {"min": 1, "max": 8}}})
    rec = recommend(w, [find_device("RTX 3060", cat), find_device("H100 SXM", cat)])
    assert rec.best is not None and (rec.best.device.name, rec.best.count) == ("NVIDIA H100 SXM", 4)
    s = rec.result.seed
    r = seed.peak_flops(16_896, 1.98e9)  # H100 SXM: 16,896 CUDA cores at 1,980 MHz boost
    assert (s["device"], s["devices"], s["peak_flops"]) == ("NVIDIA H100 SXM", 4, pytest.approx(r))
    assert s["t_train_s"] == pytest.approx(6 * 8_030_261_248 * 1_000_000 * 2048 / (4 * r))
    assert s["t_train_note"] == "C_train / (4 × R) on 4 × NVIDIA H100 SXM"
