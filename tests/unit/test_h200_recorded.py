"""The GPU model against what a lent H200 measured on 2026-11-26 (tests/fixtures/gpu/h200-*,
tests/fixtures/profiles/h200-*): none of it was fitted on but MISALIGNED_EFFICIENCY, fitted on a
seeded half of the misaligned matrix products and held on the other (docs/accuracy.md, "CUDA: a lent
NVIDIA H200"). The step-time bar of SPEC 9 is not met on the suite: an expected failure with its
figures and causes."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from benchmarks.accuracy_cuda_recorded import _candidate
from benchmarks.accuracy_suite_recorded import cases as suite_cases
from benchmarks.accuracy_suite_recorded import conv_halves, recorded
from benchmarks.h200_kernels import fit_misaligned, fit_rnn, halves, layers, misaligned_rows, products, rnn_halves
from benchmarks.measure_scale import h200_to_h100
from core.estimate import gpu_rnn
from core.estimate.gpu_kernels import MISALIGNED_EFFICIENCY
from core.estimate.host import REFERENCE
from core.hardware.catalogue import load_catalogue

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = tuple(load_catalogue())
SUITE = suite_cases()
ACCURACY = json.loads((ROOT / "tests/fixtures/gpu/h200-2026-11-26.json").read_text(encoding="utf-8"))["cases"]


def within(errors: list[float], bar: float = 0.25) -> int:
    return sum(abs(e) <= bar for e in errors)


def test_the_misaligned_products_share_is_the_fit_of_its_half() -> None:
    assert fit_misaligned() == MISALIGNED_EFFICIENCY


def test_misaligned_products_held_out_within_25_percent() -> None:
    # 21 held-out DeepBench shapes with an odd side or one of 2 or 4 modulo 8 (bf16, fp16, TF32): 18 within
    # 25 %, mean 14 %; each of them 2–6 × too fast before (aligned kernels' 0.72 of the peak)
    _, held = halves(misaligned_rows())
    errors = [r["error"] for r in held]
    assert len(held) == 21 and within(errors) >= 18 and statistics.mean(map(abs, errors)) <= 0.15


@pytest.mark.parametrize("precision", ["bf16_mixed", "fp16_mixed", "fp32"])
def test_aligned_products_on_a_card_never_fitted(precision: str) -> None:
    # DeepBench's aligned products of 50 µs or more: bf16 and fp16 all 24 within 25 % (mean 5–8 %), fp32
    # 41 of 56 (its skinny products: 8 of 22)
    rows = [
        r
        for r in products()
        if r["source"] == "DeepBench" and r["precision"] == precision and r["shape"] != "misaligned"
    ]
    large = [r["error"] for r in rows if r["shape"] == "large"]
    assert within(large) >= 0.95 * len(large) and statistics.mean(map(abs, large)) <= 0.10
    if precision != "fp32":
        assert within([r["error"] for r in rows]) == len(rows)


def test_the_recurrent_layers_prices_are_the_fit_of_their_half() -> None:
    # a call's fixed cost 0.9 ms, the standard algorithm's shortest step 16 µs, a persistent kernel's step 4 µs
    fitted = fit_rnn()
    assert fitted == {name: pytest.approx(getattr(gpu_rnn, name)) for name in fitted}
    assert fitted["RNN_CALL_S"] == pytest.approx(0.9e-3) and fitted["RNN_PERSIST_STEP_S"] == pytest.approx(4e-6)


def test_recurrent_layers_held_out_half() -> None:
    # the other half of the 123 DeepBench LSTM/GRU layers timed on the H200: 53 of 62 within 25 %, mean 15 %
    # (37, 39 % with the floor alone, before cuDNN's algorithm and a call's fixed cost; 29 without the floor);
    # the GPU suite's recurrent networks 10 of 14 (4 before the floor)
    _, held = rnn_halves()
    errors = [r["error"] for r in held]
    assert len(held) == 62 and within(errors) >= 53 and statistics.mean(map(abs, errors)) <= 0.16
    rnn = [r["error"] for r in SUITE if r["family"] == "rnn"]
    assert within(rnn) >= 10


def test_recurrent_layers_in_half_precision_and_tf32() -> None:
    # cuDNN's LSTMs in fp16 and TF32 on the H200: 20 and 22 of 22 within 25 % since PyTorch's choice of the
    # persistent kernel was modelled (15 and 11 with the time step's floor alone: at hidden 256 in fp16 a step
    # took 4–8 µs, one persistent kernel for the sequence, and the model priced a chain of kernels)
    fp16 = [r["error"] for r in layers() if r["kind"] == "lstm" and r["precision"] == "fp16_mixed"]
    tf32 = [r["error"] for r in layers() if r["kind"] == "lstm" and r["precision"] == "tf32"]
    assert within(fp16) >= 20 and within(tf32) >= 21
    # the persistent layers of hidden 256 at 150 steps: +62, +45, −15 % (+474, +412, +198 % as chains of kernels)
    persistent = [r for r in layers() if r["kind"] == "lstm" and r["precision"] == "fp16_mixed" and r["hidden"] == 256]
    assert len(persistent) == 3 and all(abs(r["error"]) <= 0.65 for r in persistent)


def test_the_fourteen_steps_of_the_h100_day_on_the_h200() -> None:
    # accuracy_cuda's 14 cases: memory within 10 % but the two the H100 also misses (−12.3, −13.3 %); step
    # time 13 of 14 within 25 %, mean 11.3 % (12, 13.6 % before a convolution's cuDNN calls were priced on
    # the host; BERT-base b32 +38 %: this host dispatches its operators faster than the fit set's)
    mem, step = [], []
    for c in ACCURACY:
        r = _candidate(c, "H200 SXM")
        mem.append(r.memory.tensor_peak / 2**20 / c["max_allocated_mib"] - 1)
        step.append(r.step.step_s * 1e3 / c["step_ms"] - 1)
    assert within(mem, 0.10) == 12 and max(map(abs, mem)) < 0.14
    assert within(step) >= 13 and statistics.mean(map(abs, step)) <= 0.12


def test_gpt2_on_the_h200_with_its_misaligned_head() -> None:
    # the suite's GPT-2 small steps (50,257 words): bf16/fp16 at batch 32 were −47/−48 %; the vocabulary
    # padded to 50,304 (aligned) measured 104 ms against 156 in bf16
    gpt2 = [r for r in SUITE if r["name"] == "gpt2-small"]
    assert len(gpt2) == 5 and all(abs(r["error"]) <= 0.15 for r in gpt2)
    padded = next(r for r in SUITE if r["name"] == "gpt2-small-vocab50304" and r["precision"] == "bf16_mixed")
    plain = next(r for r in SUITE if r["name"] == "gpt2-small" and r["precision"] == "bf16_mixed" and r["batch"] == 32)
    assert padded["predicted_s"] < 0.7 * plain["predicted_s"] and padded["measured_s"] < 0.7 * plain["measured_s"]


def test_the_hosts_price_of_a_cudnn_call_fitted_on_h100s_holds_the_h200s_convolutional_networks() -> None:
    # the price of a cuDNN convolution call is fitted with the two others on the probed H100 suites
    # (benchmarks/fit_host_gpu.py --suites, 65.5 µs); the H200's 48 convolutional steps, on which it was once
    # fitted alone (54 µs on a seeded half), are held out in both halves: 21 and 23 of 24 within 25 %
    assert REFERENCE["cudnn_call_s"] == pytest.approx(65.5e-6)
    for half in conv_halves(recorded()):
        errors = [r["error"] for r in suite_cases(lines=half)]
        assert len(errors) == 24 and within(errors) >= 21 and statistics.mean(map(abs, errors)) <= 0.14


def test_convolutional_networks_held_out_half() -> None:
    # the other half of the H200's convolutional steps: 23 of 24 within 25 %, mean 11.6 % (22 of 24, mean 13 %,
    # when the cuDNN call's price was fitted on the first half; 21 of 24, mean 22 %,
    # before cuDNN's algorithm search was priced; 17 of 24, mean 29 %, when a convolution's host work was its
    # operators' alone)
    _, held = conv_halves(recorded())
    errors = [r["error"] for r in suite_cases(lines=held)]
    assert len(errors) == 24 and within(errors) >= 21 and statistics.mean(map(abs, errors)) <= 0.15


def test_ieee_fp32_convolutions_under_cudnns_search() -> None:
    # the suite ran with cudnn.benchmark on: VGG-11 fp32 b32 measured 29.4 ms (NCHW) and 30.9 ms (NHWC), which
    # the heuristics' kernels (0.42 of a GEMM's efficiency) priced at 84 ms (+186/+172 %) and the search as on
    # DeepBench's V100 at −17/−21 %; now as Hopper's cuDNN 9 runs them either way (core/estimate/gpu_convs.py,
    # fitted on a lent H100's single convolutions): +14/+8 %, +18/+10 % since its five max pools are priced at
    # their kernels' element rate (benchmarks/cnn_kernels.py: 1.1 ms a step more in NCHW). 9 of the 10
    # convolutional steps in IEEE fp32 (cuDNN's TF32 off) within 25 % at the reference host's speed: all 10
    # before the host's prices were fitted on the probed suites, since which random-2026-28 channels_last b32
    # reads +26.6 % (+24.0 before; +23.9 % once the H200's host is calibrated); 9 before the search was
    # priced, ResNet-34 NHWC −32 %
    fp32 = [
        r
        for r in SUITE
        if r["precision"] == "fp32" and r["family"] in ("cnn", "resnet", "random cnn") and "cudnn tf32" not in r["name"]
    ]
    assert len(fp32) == 10 and within([r["error"] for r in fp32]) >= 9
    vgg = [r for r in fp32 if r["name"].startswith("vgg-11")]
    assert len(vgg) == 2 and all(abs(r["error"]) <= 0.20 for r in vgg)


def test_the_suite_held_out_as_reached() -> None:
    # 201 steps (a seeded sample of the suite and 40 random architectures): 167 within 25 %, mean 14.8 %;
    # 134 and 24 % before the device-tensor loop stopped paying a disk read, misaligned products their
    # kernels, cuDNN's convolutions their host work and recurrent layers their time step's floor; 156 and
    # 19 % before IEEE fp32 convolutions were priced as cuDNN's search runs them, 160 and 16 % before
    # autocast's fp32 residual stream and casts, 167 and 15.0 % before a bias's gradient, 167 and 14.8 % before
    # Hopper's IEEE fp32 convolutions got their own price (now 168, 14.7 %). Transformers'
    # decoders 53 of 60, encoders 35 of 49
    errors = [r["error"] for r in SUITE]
    assert len(SUITE) == 201 and within(errors) >= 165 and statistics.mean(map(abs, errors)) <= 0.15
    decoders = [r["error"] for r in SUITE if r["family"] in ("decoder", "random decoder")]
    assert within(decoders) >= 0.8 * len(decoders)
    # the encoders, whose batch-256 steps are bound by autocast's fp32 residual stream: 30 of 49 before it
    encoders = [r["error"] for r in SUITE if r["family"] in ("encoder", "random encoder")]
    assert len(encoders) == 49 and within(encoders) >= 34


def test_the_suite_meets_spec_9() -> None:
    # 182 of 201 within 25 % (91 %), mean 12 % at the reference host's speed since the host's prices were
    # fitted on the probed H100 suites (168, 14.0 % before: most misses host-bound and too slow, BERT b32
    # +60 %, eager attention +47 … +50 %); 186 (93 %), 11.0 % once its host is calibrated
    # (tests/unit/test_host_probe.py)
    errors = [abs(r["error"]) for r in SUITE]
    assert within(errors) >= 0.9 * len(errors) and statistics.mean(errors) <= 0.15


def test_measure_and_scale_from_the_h200_to_the_h100() -> None:
    # real H200 kernels (82.2 and 41.2 ms a step for ResNet-50 fp16, NCHW and channels_last) scaled to the
    # H100 SXM against the fit set's H100 steps of the same workloads: −6.9 and −5.4 % (+14.4 and −3.3 % with
    # batch norm, layout transposes and max pooling scaled by the bandwidths, not the SMs' clock); the other four
    # were the host's there (and these profiles' host times were taken under the profiler)
    compared = [r for r in h200_to_h100() if r["compares"]]
    assert [r["name"] for r in compared] == ["resnet50-fp16", "resnet50-fp16-cl"]
    assert all(abs(r["device_ms"] / r["measured_ms"] - 1) <= 0.15 for r in compared)
