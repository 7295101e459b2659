"""The GPU path against what CUDA measured: the engine's peak memory and step time for the
catalogue H100 SXM against ``torch.cuda.max_memory_allocated`` and the median step recorded on an
NVIDIA H100 80GB HBM3 with PyTorch 2.11 (tests/fixtures/gpu/: benchmarks/accuracy_cuda.py's run of
2026-11-22 and the shared fit set). A CPU-only PyTorch cannot run these steps, nor trace on fake
CUDA tensors (its convolutions ask for a CUDA device guard it does not have), so the recorded
figures stand in for the GPU here. The bars are SPEC section 9; a case that misses is an xfail
with its figure, never a looser bar. The table with every figure: benchmarks/accuracy_cuda_recorded.py."""

from __future__ import annotations

import statistics

import pytest

from benchmarks.accuracy_cuda_recorded import SMALL_CNN, _candidate, predict, predict_device, recorded_cases
from benchmarks.fit_host_gpu import fit_suites
from core.estimate.host import REFERENCE

CASES = recorded_cases()
MEMORY_BAR, MEMORY_MEAN_BAR = 0.10, 0.05  # SPEC 9: within 5 %, 10 % at worst
STEP_BAR, STEP_SHARE, STEP_MEAN_BAR = 0.25, 0.90, 0.15  # SPEC 9: ≥ 90 % within 25 %, mean error ≤ 15 %
MISSES = {
    ("seed-mlp", 4096, "sgd", "bf16_mixed"): (
        "−12.3 % against the 10 % bar (97.0 MiB predicted, 110.6 MiB measured): the batch-4096 activations "
        "under bf16 autocast keep about 14 MiB more than the engine's replay; which tensors is unknown"
    ),
    ("gpt2-small", 8, "adamw", "fp32"): (
        "−12.9 % against the 10 % bar (11,300 MiB predicted, 12,979 MiB measured): about one logits-sized "
        "tensor (8 × 1024 × 50,257 floats = 1.5 GiB) around the fp32 loss is not in the replay"
    ),
}


def key(c: dict) -> tuple[str, int, str, str]:
    return c["model"], c["batch"], c["optimizer"], c["precision"]


def case_id(c: dict) -> str:
    return "-".join(map(str, key(c))) + (
        "" if c["set"] == "2026-11-22" else "-" + c["set"].replace(" ", "").replace(",", "-")
    )


def memory_error(c: dict) -> float:
    return predict(c)[0] / c["max_allocated_mib"] - 1


def step_error(c: dict) -> float:
    return predict(c)[1] / c["step_ms"] - 1


def marked(c: dict) -> object:
    misses = [pytest.mark.xfail(strict=True, reason=MISSES[key(c)])] if key(c) in MISSES else []
    return pytest.param(c, marks=misses, id=case_id(c))


def test_every_recorded_case_is_read() -> None:
    # 14 cases of 2026-11-22 and the fit set's 6 (its small CNN from the workload it ran)
    assert [c["set"] for c in CASES].count("2026-11-22") == 14 and len(CASES) == 20
    assert set(MISSES) <= {key(c) for c in CASES}


@pytest.mark.parametrize("case", [marked(c) for c in CASES])
def test_gpu_peak_memory_against_the_recorded_h100(case: dict) -> None:
    error = memory_error(case)
    assert abs(error) <= MEMORY_BAR, f"{error:+.1%} against the {MEMORY_BAR:.0%} bar"


def test_gpu_peak_memory_is_within_5_percent_on_average() -> None:
    errors = [abs(memory_error(c)) for c in CASES]
    assert statistics.mean(errors) <= MEMORY_MEAN_BAR, f"mean |error| {statistics.mean(errors):.1%}"


@pytest.mark.xfail(
    strict=True,
    reason="16 of 20 recorded H100 steps within 25 % (bar: 90 %), mean |error| 12.8 % (bar: 15 %, met): the 6 steps "
    "of the host the shared measurements come from all within 17 %; the 14 of 2026-11-22 ran on another host, which "
    "ran the same seed MLP step 0.67 ms slower (2.36 against 1.69 ms): its seed MLP b512 and b4096 bf16, small CNN "
    "and tiny GPT read 25–32 % too fast (17 of 20, 12.0 % before the host's prices were fitted on the probed suites; "
    "docs/accuracy.md)",
)
def test_gpu_step_time_from_the_catalogue_against_the_recorded_h100() -> None:
    errors = [abs(step_error(c)) for c in CASES]
    within = sum(e <= STEP_BAR for e in errors)
    assert within >= STEP_SHARE * len(errors), f"{within} of {len(errors)} within {STEP_BAR:.0%}"
    assert statistics.mean(errors) <= STEP_MEAN_BAR, f"mean |error| {statistics.mean(errors):.0%}"


# The steps the GPU's kernels bound (the kernel model's device time is above the host's dispatch, and
# the measured step grows with the work: ResNet-50 in fp32 slower than in bf16 at twice the batch,
# GPT-2 in fp32 3 × its bf16 step): the device time the GPU kernel model predicts (matrix products and
# memory-bound work, core/estimate/gpu_kernels.py) against the measured step. Reached: −16 … +5 %,
# mean |error| 6.1 % (the LSTM −16 %, ResNet-50 tf32 −7.5 %, the rest within 5 %); before each matrix
# product took GEMM_FIXED_S: −26 … +3 %, mean 8.2 % (the LSTM −26 %); 10.5 % with tf32 −22 % before TF32's
# spatial convolutions paid the NCHW transposes.
DEVICE_BOUND = {
    ("resnet-50", 32, "sgd_momentum", "fp32"),
    ("resnet-50", 128, "adam", "tf32"),
    ("resnet-50", 256, "sgd_momentum", "fp16_mixed"),  # the fit set's NCHW and channels_last lines
    ("gpt2-small", 8, "adamw", "fp32"),
    ("lstm-lm", 20, "sgd", "fp32"),
}
DEVICE_BAR, DEVICE_MEAN_BAR = 0.20, 0.07


def device_error(c: dict) -> float:
    return predict_device(c) / c["step_ms"] - 1


@pytest.mark.parametrize("case", [pytest.param(c, id=case_id(c)) for c in CASES if key(c) in DEVICE_BOUND])
def test_the_gpu_kernel_model_against_the_device_bound_h100_steps(case: dict) -> None:
    error = device_error(case)
    assert abs(error) <= DEVICE_BAR, f"{error:+.1%}"


def test_the_device_bound_h100_steps_are_within_7_percent_on_average() -> None:
    errors = [abs(device_error(c)) for c in CASES if key(c) in DEVICE_BOUND]
    assert len(errors) == 6
    assert statistics.mean(errors) <= DEVICE_MEAN_BAR, f"mean |error| {statistics.mean(errors):.1%}"


# The steps the host's dispatch bounds. The host's reference prices (core/estimate/host.py REFERENCE: 15.68
# µs per dispatched operator + 0.469 ms per step + 65.5 µs per call of cuDNN's convolutions) are fitted on a
# seeded half of two lent H100s' suite steps, each sized at its own host probe, and anchored to this fit
# set's host: its seed MLP step (the host probe's workload) is the reference host's, 1.69 ms
# (benchmarks/fit_host_gpu.py --suites). Its BERT-base b64 and small CNN are held out (until 2026-11-26, an
# eighth session, the seed MLP and BERT-base b64 alone pinned two prices). They were recorded on the host the
# shared measurements come from; the steps of 2026-11-22 ran on another H100 host, which ran the same seed MLP
# step 0.67 ms slower (2.36 against 1.69 ms); BERT-base b32, dispatching as many operators as b64, is held out
# there at −4 %.
HOST_FIT = {("seed-mlp", "fit set")}
HOST_BOUND = {*HOST_FIT, ("bert-base", "fit set"), (SMALL_CNN, "fit set"), (SMALL_CNN, "fit set, channels_last")}
# the fit set measured its small CNN at 1.92 ms in NCHW and 1.65 ms in channels_last, the same host work
# (two dispatched operators apart): one price reads one of them 16 % apart from the other (+0 and +16 %),
# BERT-base b64 −10 %
HOST_FIT_BAR = 0.17


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=case_id(c)) for c in CASES if (c["model"], c["set"]) in HOST_BOUND]
)
def test_the_host_prices_hold_the_fit_sets_host_bound_steps(case: dict) -> None:
    error = step_error(case)
    assert abs(error) <= HOST_FIT_BAR, f"{error:+.1%}"
    assert _candidate(case).step.bound == "framework overhead"


def test_the_committed_host_prices_are_the_fit_of_the_probed_suites() -> None:
    assert fit_suites() == pytest.approx(
        (REFERENCE["per_operator_s"], REFERENCE["per_step_s"]["gpu"], REFERENCE["cudnn_call_s"]), rel=0.01
    )
    (seed,) = [c for c in CASES if (c["model"], c["set"]) == ("seed-mlp", "fit set")]
    assert step_error(seed) == pytest.approx(0.0, abs=0.005)  # the reference host is the fit set's


def test_the_small_cnns_pair_sits_around_its_two_measurements() -> None:
    errors = [step_error(c) for c in CASES if c["model"] == SMALL_CNN and c["set"].startswith("fit set")]
    assert len(errors) == 2 and abs(sum(errors) / 2) <= 0.1


# the small networks and the tiny GPT of 2026-11-22, on the other host, held out: the model's prices are the
# reference host's, on which the same seed MLP step took 1.69 ms against 2.36 ms there
OTHER_HOST_SMALL = {"seed-mlp", "lenet-5", "small-cnn", "residual-cnn", "tiny-gpt"}
OTHER_HOST_MISSES = {
    ("seed-mlp", 512, "adam", "fp32"): "−28 % (1.69 ms predicted, 2.36 ms measured on the other host, 1.69 on the "
    "fit set's)",
    ("seed-mlp", 4096, "sgd", "bf16_mixed"): "−25.3 % (1.80 ms predicted, 2.41 ms measured on the other host; −24.6 % "
    "before the host's prices were fitted on the probed suites)",
    ("small-cnn", 256, "adamw", "fp32"): "−31 % (1.81 ms predicted, 2.62 ms measured on the other host; −34 % before "
    "the host's prices were fitted on the probed suites, −30 % before Hopper's IEEE fp32 3 × 3 convolutions got "
    "their own price)",
    ("tiny-gpt", 32, "adamw", "fp32"): "−32 % (10.2 ms predicted, 15.0 ms measured on the other host; −24.9 % before "
    "the host's prices were fitted on the probed suites, whose lower price an operator the tiny GPT's many views "
    "feel most)",
}
# LeNet-5 there reads −23 % (−25.1 % before the host's prices were fitted on the probed suites)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c,
            id=case_id(c),
            marks=[pytest.mark.xfail(strict=True, reason=OTHER_HOST_MISSES[key(c)])]
            if key(c) in OTHER_HOST_MISSES
            else [],
        )
        for c in CASES
        if c["model"] in OTHER_HOST_SMALL and c["set"] == "2026-11-22"
    ],
)
def test_the_other_hosts_small_steps_within_25_percent(case: dict) -> None:
    error = step_error(case)
    assert abs(error) <= STEP_BAR, f"{error:+.1%}"


def test_bert_b32_on_another_host_held_out_of_the_fit() -> None:
    # BERT's steps barely grow with the batch (38.8 ms at 32 on one host, 41.3 at 64 on the other): the
    # host's dispatch of about 2,100 operators a step, not the GPU's 12–18 ms of kernels. Both are host-bound
    # with the same operators, so b32 is predicted as b64: it checks the other host's price per operator
    # for BERT, not the fit
    case = next(c for c in CASES if key(c) == ("bert-base", 32, "adamw", "bf16_mixed"))
    error = step_error(case)
    assert abs(error) <= HOST_FIT_BAR, f"{error:+.1%}"
    assert _candidate(case).step.bound == "framework overhead"


def test_gpt2_bf16_pays_for_its_misaligned_vocabulary() -> None:
    # GPT-2's tied head over 50,257 words misses the 16 bytes Hopper's fast matrix kernels need: the H200
    # profile of this step ran its three head products on cutlass_75 align1 kernels at 95–148 TFLOP/s, 15 of
    # its 44 ms of kernels (tests/fixtures/profiles/h200-gpt2-bf16-b8.profile.json). Priced so, the recorded
    # H100 step reads −10 % (−28 % before, with the host's dispatch binding it); BERT-base, whose
    # products are all aligned, keeps its figure
    case = next(c for c in CASES if key(c) == ("gpt2-small", 8, "adamw", "bf16_mixed"))
    assert abs(step_error(case)) <= 0.15, f"{step_error(case):+.1%}"
    assert _candidate(case).step.bound == "compute"
    bert = next(c for c in CASES if key(c) == ("bert-base", 32, "adamw", "bf16_mixed"))
    assert abs(step_error(bert)) <= HOST_FIT_BAR
