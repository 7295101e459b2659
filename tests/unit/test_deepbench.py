"""The GPU kernel model against DeepBench's published training kernels on a V100 and a T4
(resources/published/deepbench_train.json, benchmarks/accuracy_deepbench.py): held out, nothing was
fitted on them. Matrix products with both output sides of a tile or more are held to the errors
reached; skinny ones (a side under 128) and recurrent layers in fp32 are expected failures with
their figures (docs/accuracy.md, "DeepBench")."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmarks.accuracy_deepbench import DATA, gemm_errors, rnn_errors
from core.hardware.catalogue import find_device, load_catalogue

GEMMS = gemm_errors()


def _errors(gpu: str, precision: str, skinny: bool) -> list[float]:
    return [e for r, _, e in GEMMS if r["gpu"] == gpu and r["precision"] == precision and r["skinny"] == skinny]


def test_every_kernel_timing_is_kept_with_its_source() -> None:
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    assert doc["repository"].endswith("baidu-research/DeepBench") and len(doc["commit"]) == 40
    for src in doc["sources"].values():
        assert src["cuda"] and src["cudnn"] and src["date"] and src["file"].endswith(".xlsx")
        find_device(src["device"], load_catalogue())
    assert len(doc["gemm"]) == 380 and all(g["ms"] > 0 for g in doc["gemm"])
    assert len(doc["lstm"]) == 44 and len(doc["gru"]) == 38  # the V100 in fp32 and fp16; the T4 timed none


@pytest.mark.parametrize(
    ("gpu", "precision", "share", "mean"),
    [
        # reached: V100 fp32 37 of 43 within 25 %, mean 14 %; V100 fp16 31 of 43, 20 %; T4 fp16 41 of 43, 9 %
        # and T4 fp32 39 of 43, 15 % (the T4's matrix rates from its published PyTorch matmul measurements,
        # resources/published/matmul_ceilings.json: fp32 −36 % and fp16 −14 % median from the datasheet peaks).
        # V100 fp16 was 33 of 43, mean 24 %, before each product took GEMM_FIXED_S: its 128-wide products
        # moved from −58 … −67 % to −37 … −51 %, and two 2 ms products at +24.9 % crossed 25 % by 5 µs
        ("V100", "fp32", 0.85, 0.15),
        ("V100", "fp16_mixed", 0.70, 0.21),
        ("T4", "fp16_mixed", 0.90, 0.10),
        ("T4", "fp32", 0.90, 0.16),
    ],
)
def test_large_matrix_products_on_gpus_the_model_was_not_built_on(
    gpu: str, precision: str, share: float, mean: float
) -> None:
    errs = _errors(gpu, precision, skinny=False)
    assert len(errs) == 43
    assert sum(abs(e) <= 0.25 for e in errs) >= share * len(errs)
    assert statistics.mean(abs(e) for e in errs) <= mean


def _t4_fp32_skinny() -> list[float]:
    return _errors("T4", "fp32", skinny=True)


def _v100_fp32_skinny_and_recurrent() -> list[float]:
    return _errors("V100", "fp32", skinny=True) + [e for r, _, e in rnn_errors() if r["precision"] == "fp32"]


@pytest.mark.parametrize(
    "errors",
    [
        pytest.param(
            _t4_fp32_skinny,
            marks=pytest.mark.xfail(
                strict=True,
                reason="T4 fp32: skinny products +151 % (128 × 128 tiles over a 16–64-row product; cuBLAS runs "
                "narrower tiles) (docs/accuracy.md)",
            ),
            id="t4-fp32-skinny",
        ),
        pytest.param(
            _v100_fp32_skinny_and_recurrent,
            marks=pytest.mark.xfail(
                strict=True,
                reason="V100 fp32: skinny products +122 % and cuDNN LSTM/GRU layers +112/+255 % (too slow): the "
                "model's 128 × 128 tiles over the per-step (batch × hidden) product waste most of each tile; fp16 "
                "layers read −25/+5 % (docs/accuracy.md)",
            ),
            id="v100-fp32-skinny-and-recurrent",
        ),
    ],
)
def test_fp32_kernels_the_tile_model_misprices_within_25_percent(errors) -> None:
    errs = errors()
    assert sum(abs(e) <= 0.25 for e in errs) >= 0.75 * len(errs)
