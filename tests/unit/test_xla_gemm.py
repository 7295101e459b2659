"""The GPU kernel model's matrix products against OpenXLA's published GEMM table for an H100 and a
B200 (resources/published/xla_gemm_perf_table.json, benchmarks/accuracy_xla_gemm.py): GEMM_FIXED_S is
the least-squares fit on a seeded half of the H100 bf16 rows; every other row is held out (docs/accuracy.md,
"Matrix products of every size")."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmarks.accuracy_xla_gemm import DATA, DEVICES, fit_fixed_s, measured_s, predicted_s, rows, scaling_errors
from core.estimate.gemm import GEMM_FIXED_S
from core.hardware.catalogue import find_device, load_catalogue


def _errors(table: str, precision: str, role: str, fixed: bool = True) -> list[float]:
    return [
        predicted_s(r, fixed) / measured_s(r) - 1
        for r in rows()
        if r["table"] == table and r["precision"] == precision and r["role"] == role
    ]


def test_the_table_is_kept_with_its_source_and_split() -> None:
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    assert doc["source"]["publisher"] == "OpenXLA" and len(doc["source"]["text_sha256"]) == 64
    for name in DEVICES.values():
        find_device(name, load_catalogue())
    assert len(rows()) == 1500
    h100_bf16 = [r for r in rows() if r["table"] == "sm_90" and r["precision"] == "bf16_mixed"]
    fit = sum(r["role"] == "fit" for r in h100_bf16)
    assert len(h100_bf16) == 375 and fit == 187  # the seeded half
    assert all(r["role"] == "held-out" for r in rows() if r not in h100_bf16)
    # nothing above the datasheet: 4,096³ bf16 on the H100 at 780 TFLOP/s of its 989
    assert max(r["flops_per_s"] for r in h100_bf16) < 989.4e12


def test_the_fixed_time_is_what_the_fit_rows_say() -> None:
    # the constant in the model is the least-squares fit on the fit half (4.94 µs), rounded
    assert fit_fixed_s() == pytest.approx(GEMM_FIXED_S, rel=0.05)


@pytest.mark.parametrize(
    ("table", "precision", "share", "mean"),
    [
        # reached: H100 bf16, the other half: 182 of 188 within 25 %, mean 9 % (65 of 188, 36 %, before:
        # every product of 0.1–2 GFLOP read 45–58 % too fast); B200 bf16, an architecture and SM count the fit
        # never saw: 340 of 375, 11 % (51 of 375, 48 %)
        ("sm_90", "bf16_mixed", 0.95, 0.10),
        ("sm_100_B200", "bf16_mixed", 0.88, 0.12),
    ],
)
def test_half_precision_products_of_every_size_held_out(table: str, precision: str, share: float, mean: float) -> None:
    errs = _errors(table, precision, "held-out")
    assert sum(abs(e) <= 0.25 for e in errs) >= share * len(errs)
    assert statistics.mean(abs(e) for e in errs) <= mean
    before = _errors(table, precision, "held-out", fixed=False)  # the model without the fixed time
    assert sum(abs(e) <= 0.25 for e in before) < 0.4 * len(before)


@pytest.mark.parametrize(
    "table",
    [
        pytest.param(
            "sm_90",
            marks=pytest.mark.xfail(
                strict=True,
                reason="H100 TF32: 239 of 375 within 25 %, mean 21 %: XLA's TF32 products of 16 GFLOP and more "
                "run at up to 82 % of the TF32 peak, the model's 0.72 × 0.7; those of 1–4 GFLOP read 25 % too fast. "
                "TF32_GEMM_EFFICIENCY is not raised: Lambda's BERT TF32 steps on the H100 already read 15 % too "
                "fast (docs/accuracy.md)",
            ),
        ),
        pytest.param(
            "sm_100_B200",
            marks=pytest.mark.xfail(
                strict=True,
                reason="B200 TF32: 271 of 375 within 25 %, mean 20 %, the H100's pattern (docs/accuracy.md)",
            ),
        ),
    ],
)
def test_tf32_products_of_every_size_held_out(table: str) -> None:
    errs = _errors(table, "tf32", "held-out")
    assert sum(abs(e) <= 0.25 for e in errs) >= 0.9 * len(errs)


def test_the_step_tooltip_quotes_these_figures() -> None:
    from core.estimate.sizing import size_candidate
    from core.output.sizing_report import step_accuracy_note
    from core.spec.workload import parse_workload

    errs = _errors("sm_90", "bf16_mixed", "held-out") + _errors("sm_100_B200", "bf16_mixed", "held-out")
    within = sum(abs(e) <= 0.25 for e in errs)
    tf32 = _errors("sm_90", "tf32", "held-out") + _errors("sm_100_B200", "tf32", "held-out")
    tf32_within = sum(abs(e) <= 0.25 for e in tf32)
    h100 = find_device("H100 SXM", load_catalogue())
    note = step_accuracy_note(size_candidate(parse_workload({"model": {"preset": "bert-base"}}), h100, 1))
    assert f"{within} of {len(errs)} within 25 % in bf16" in note and "OpenXLA" in note
    assert f"{tf32_within} of {len(tf32)} in TF32" in note


def test_measure_and_scale_keeps_a_products_fixed_time_between_an_h100_and_a_b200() -> None:
    # each published H100 product scaled to the B200 (and back) by the matrix rates' ratio, its fixed
    # time unscaled: H100 → B200 mean 14 % (bf16) and 13 % (TF32) with GEMM_FIXED_S, 28 % and 18 % with
    # the 2.5 µs launch floor alone; B200 → H100 24 % and 19 % (50 % and 29 %)
    new, old = scaling_errors(True), scaling_errors(False)
    assert set(new) == set(old) and len(new) == 4
    for key, errs in new.items():
        assert len(errs) == 375
        assert statistics.mean(abs(e) for e in errs) < statistics.mean(abs(e) for e in old[key]), key
    for precision in ("bf16_mixed", "tf32"):
        errs = new[("NVIDIA H100 SXM → NVIDIA B200 (HGX)", precision)]
        assert statistics.mean(abs(e) for e in errs) <= 0.15
