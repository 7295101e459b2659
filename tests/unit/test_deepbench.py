"""The GPU kernel model against DeepBench's published training kernels on a V100 and a T4
(resources/published/deepbench_train.json, benchmarks/accuracy_deepbench.py): held out but for one
constant, the rate of the smaller tiles cuBLAS runs skinny products in, fitted on a seeded half of
the skinny products and held out on the other. Matrix products with both output sides of a tile or
more are held to the errors reached, skinny ones (a side under 128) on their held-out half;
recurrent layers in fp32 and the fp32 skinny products' last misses are expected failures with
their figures (docs/accuracy.md, "DeepBench")."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmarks.accuracy_deepbench import (
    DATA,
    conv_errors,
    conv_halves,
    fit_conv,
    fit_tile_reuse,
    gemm_errors,
    rnn_errors,
    skinny_errors,
    skinny_halves,
)
from core.estimate import gpu_kernels
from core.estimate.gemm import TILE_REUSE_EXPONENT
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
    # fp32 convolutions on both, each with the forward algorithm cuDNN's search picked
    assert len(doc["conv"]) == 188 and all(c["fwd_ms"] > 0 and c["bwd_params_ms"] > 0 for c in doc["conv"])
    assert sum("WINOGRAD" in c["fwd_algorithm"] for c in doc["conv"]) == 60


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


def test_skinny_products_held_out_of_the_tile_fit() -> None:
    # cuBLAS covers a side under 128 with a smaller tile, at (its reuse)^0.6 of a full tile's rate: the
    # exponent is the fit on one seeded half (104 products), the other half reads 67 of 104 within 25 %,
    # mean 22 % (all 208 with 128 × 128 tiles: 73 within 25 %, mean 87 %, fp32 +122 … +151 %)
    assert fit_tile_reuse() == TILE_REUSE_EXPONENT
    _, held = skinny_halves()
    errs = [skinny_errors()[i] for i in held]
    assert len(errs) == 104
    assert sum(abs(e) <= 0.25 for e in errs) >= 0.60 * len(errs)
    assert statistics.mean(abs(e) for e in errs) <= 0.25


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
                reason="T4 fp32: skinny products 33 of 52 within 25 %, median +6 % (+151 % with 128 × 128 tiles over a "
                "16–64-row product, 0 of 52, before the smaller tiles cuBLAS runs them in) (docs/accuracy.md)",
            ),
            id="t4-fp32-skinny",
        ),
        pytest.param(
            _v100_fp32_skinny_and_recurrent,
            marks=pytest.mark.xfail(
                strict=True,
                reason="V100 fp32: skinny products 31 of 52 within 25 %, median +9 % (+122 % before the "
                "smaller tiles), and cuDNN LSTM/GRU layers +122/+258 % (too slow; +112/+255 % before a layer's "
                "fixed cost): cuDNN's per-step (batch × hidden) products keep the 128 × 128 tiles, with which the "
                "recorded H100 LSTM reads +14 % and fp16 layers +3/+8 % "
                "(docs/accuracy.md)",
            ),
            id="v100-fp32-skinny-and-recurrent",
        ),
    ],
)
def test_fp32_kernels_the_tile_model_misprices_within_25_percent(errors) -> None:
    errs = errors()
    assert sum(abs(e) <= 0.25 for e in errs) >= 0.75 * len(errs)


def test_searched_fp32_convolutions_held_out_of_their_fit() -> None:
    # cuDNN's search (DeepBench picks each algorithm with cudnnFind*, as cudnn.benchmark does): the efficiency
    # and Winograd's speed-up are the fit on a seeded half of these 188 layers and a lent H200's fp32 steps' fit
    # half; the other half reads 60 of 94 within 25 %, mean 24 %. Priced with the heuristics' kernels (the
    # default without the search) the same half read 36 of 94, mean 203 %: the Winograd layers 4.4 × too slow
    assert fit_conv() == (
        gpu_kernels.WINOGRAD_KERNEL_AREAS,
        gpu_kernels.CONV_SEARCH_EFFICIENCY,
        gpu_kernels.WINOGRAD_SPEEDUP,
    )
    _, held = conv_halves()
    errs = [conv_errors()[i][2] for i in held]
    assert len(errs) == 94
    assert sum(abs(e) <= 0.25 for e in errs) >= 0.6 * len(errs)
    assert statistics.mean(abs(e) for e in errs) <= 0.26
    winograd = [e for r, _, e in conv_errors() if r["winograd"]]
    assert len(winograd) == 60 and abs(statistics.median(winograd)) <= 0.15
