"""fp16 steps in which GradScaler skipped the optimizer are not training steps. The GPU measurements
now run the optimizer at learning rate 0 and let GradScaler settle before timing; the recorded suite
lines measured at 1e-3 are replayed on the CPU (benchmarks/fp16_skips.py) and those whose median
step skipped the optimizer are left out of the accuracy figures, listed apart (docs/accuracy.md,
"fp16 steps that trained nothing")."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from benchmarks import accuracy_suite_recorded as suites

torch = pytest.importorskip("torch", reason="PyTorch is installed in CI (torch==2.13.0)")

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests/fixtures/gpu"


def suite_model(suite: str, name: str, batch: int, precision: str = "fp16_mixed") -> dict:
    for line in (GPU / suite).read_text(encoding="utf-8").splitlines():
        m = json.loads(line)
        t = m["workload"]["training"]
        if m["name"] == name and t["batch_size"] == batch and t["precision"] == precision:
            return m["workload"]["model"]
    raise AssertionError(f"{name} b{batch} is not in {suite}")


def replayed(name: str, batch: int) -> list[int] | None:
    doc = json.loads((GPU / "fp16-skips.json").read_text(encoding="utf-8"))
    return next(c["skipped"] for c in doc["cases"] if c["batch"] == batch and name in (n for _, n in c["lines"]))


def test_the_replay_is_what_a_real_fp16_run_with_grad_scaler_does() -> None:
    """mlp-8x2048 b32, as the third H100 lease measured it: trained at 1e-3 on one batch with one label,
    its fp16 logits leave the format's range at step 6 and GradScaler skips every step after (19 of the
    20 timed) — in the replay (bf16 autocast, fp16's range checked) and in real fp16 arithmetic on the
    CPU (autocast float16, GradScaler("cpu")); at learning rate 0 it never does."""
    from benchmarks.fp16_skips import replay

    model = suite_model("h100-suite-2026-11-26c.jsonl", "mlp-8x2048", 32)
    assert replay(model, 32) == list(range(6, 25)) == replayed("mlp-8x2048", 32)
    assert replay(model, 32, lr=0.0) == []

    from torchbridge.models import build_module, example_batch, make_optimizer

    torch.manual_seed(0)
    module = build_module(model)
    opt = make_optimizer(module, "adamw")
    scaler = torch.amp.GradScaler("cpu")
    x = example_batch(model, 32)
    skipped = []
    for i in range(9):  # the first skips, enough to see them start where the replay says
        before = scaler.get_scale()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(module(x).float(), torch.zeros(32, dtype=torch.long))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        if scaler.get_scale() < before:
            skipped.append(i)
    assert skipped == [6, 7, 8]


def test_the_profile_a_lent_h100_took_of_vgg11_fp16_has_no_optimizer_as_the_replay_says() -> None:
    """The measure worker's profile of VGG-11 fp16 b8 (channels_last) on a lent H100: GradScaler's
    unscale kernel and its scale update ran every step, AdamW's kernels never; its bf16 profiles ran
    AdamW's seven kinds. The replay of the same training (learning rate 1e-3, one batch, one label):
    every step the worker profiled (its 3 warm-up and 5 timed steps before them) skipped."""
    lines = [json.loads(t) for t in (GPU / "h100-profiles-2026-11-26d.jsonl").read_text().splitlines()]

    def tensor_list_kernels(d: dict) -> set[str]:
        return {k["name"] for k in d["profile"]["kernels"] if "multi_tensor_apply_kernel" in k["name"]}

    vgg = next(d for d in lines if d["name"] == "vgg-11 channels_last" and d["precision"] == "fp16_mixed")
    bf16 = next(d for d in lines if d["name"] == "vgg-16-cifar channels_last" and d["precision"] == "bf16_mixed")
    assert len(tensor_list_kernels(vgg)) == 1 and "UnaryOpFunctor" in next(iter(tensor_list_kernels(vgg)))
    assert any("amp_update_scale" in k["name"] for k in vgg["profile"]["kernels"])
    assert len(tensor_list_kernels(bf16)) == 7
    assert vgg["batch"] == 8
    skipped = replayed("vgg-11 channels_last", 8)
    assert skipped is not None and set(range(8, 13)) <= set(skipped)


def test_lines_whose_median_step_skipped_the_optimizer_are_left_out_and_counted() -> None:
    every = suites.recorded(suites.H100_FRESH)
    kept = suites.cases(suites.H100_FRESH)
    mlp = next(
        m
        for m in every
        if m["name"] == "mlp-8x2048"
        and m["workload"]["training"]["precision"] == "fp16_mixed"
        and m["workload"]["training"]["batch_size"] == 32
    )
    assert mlp["optimizer_skipped"] == 19 and suites.not_training(mlp)
    assert not any(r["name"] == "mlp-8x2048" and r["precision"] == "fp16_mixed" and r["batch"] == 32 for r in kept)
    assert all(r["optimizer_skipped"] * 2 < r["timed_steps"] for r in kept)
    assert len(every) - len(kept) == sum(suites.not_training(m) for m in every) > 0
    # a line that counts its own skips (gpu_suite.py since this session) is taken at its word
    assert suites.optimizer_skipped({**mlp, "optimizer_skipped": 0}, suites.H100_FRESH.name) == (0, 20)
    assert suites.optimizer_skipped({**mlp, "optimizer_skipped": 5, "timed_steps": 10}, "") == (5, 10)
    assert not suites.not_training({**mlp, "optimizer_skipped": 9})
    assert suites.not_training({**mlp, "optimizer_skipped": 10})


def test_the_measurements_train_at_rate_0_and_wait_for_grad_scaler_to_settle() -> None:
    from torchbridge.models import cuda_training_step, settle_scaler, skipped_steps

    model = {"input_shape": [8], "layers": [{"type": "linear", "out_features": 4}]}
    from torchbridge.models import build_module

    torch.manual_seed(0)
    module = build_module(model)
    step, scaler = cuda_training_step(module, model, 4, "adamw", "fp32", torch.device("cpu"))
    weights = [p.detach().clone() for p in module.parameters()]
    step()
    step()
    assert all(torch.equal(a, b) for a, b in zip(weights, module.parameters(), strict=True))
    assert not scaler.is_enabled() and settle_scaler(step, scaler) == 0
    assert skipped_steps(65536.0, 8192.0) == 3 and skipped_steps(32.0, 32.0) == 0

    # a real GradScaler whose first scaled gradient overflows (6e33 × 65,536 is past fp32's range, × 32,768
    # is not): one skipped step, then one that trains, and the timing starts there
    weight = torch.nn.Parameter(torch.tensor(1.0))
    opt = torch.optim.SGD([weight], lr=0.0)
    real = torch.amp.GradScaler("cpu")

    def overflowing_step() -> None:
        real.scale(weight * 6e33).backward()
        real.step(opt)
        real.update()
        opt.zero_grad(set_to_none=True)

    assert settle_scaler(overflowing_step, real) == 2 and real.get_scale() == 32768.0


def test_the_measure_worker_refuses_steps_that_never_train() -> None:
    sys.path.insert(0, str(ROOT / "resources/workers"))
    try:
        import measure as worker

        weight = torch.nn.Parameter(torch.tensor(1.0))
        opt = torch.optim.SGD([weight], lr=0.0)
        scaler = torch.amp.GradScaler("cpu")

        def step() -> None:  # an inf gradient at every scale: a forward pass that left fp16's range
            scaler.scale(weight * math.inf).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)

        with pytest.raises(worker.MeasureError, match="bf16_mixed"):
            worker.settle(step, scaler)
        assert scaler.get_scale() == 65536.0 / 2**worker.SETTLE_STEPS
    finally:
        sys.path.remove(str(ROOT / "resources/workers"))
        sys.modules.pop("measure", None)
