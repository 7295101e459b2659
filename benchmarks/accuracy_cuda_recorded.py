"""The engine's predictions for the catalogue H100 SXM against training steps recorded on an
H100 80GB HBM3: peak memory (``torch.cuda.max_memory_allocated``) and step time (median step),
with the errors, as in docs/accuracy.md. No GPU and no PyTorch needed: the measurements are the
fixture files the tests use (tests/fixtures/gpu/).

    python3 benchmarks/accuracy_cuda_recorded.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.estimate.sizing import CandidateResult, size_candidate  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.network.presets import accuracy_models  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

FIXTURES = ROOT / "tests/fixtures/gpu"
# the fit set's lines: TrainRig's presets, and its small CNN (2 conv + 2 linear on 32 × 32 × 3 images,
# 1,070,794 parameters: none of TrainRig's presets) from the workload the fit set ran, copied
# unchanged into tests/fixtures/gpu/fit-set-small-cnn.json
SMALL_CNN = "fit-set-small-cnn"
FIT_SET_CASES = {
    "small CNN": (SMALL_CNN, 128, "adam", "fp32"),
    "small CNN channels_last": (SMALL_CNN, 128, "adam", "fp32"),
    "seed MLP": ("seed-mlp", 512, "adam", "fp32"),
    "ResNet-50 fp16": ("resnet-50", 256, "sgd_momentum", "fp16_mixed"),
    "ResNet-50 fp16 channels_last": ("resnet-50", 256, "sgd_momentum", "fp16_mixed"),
    "BERT-base b64 bf16": ("bert-base", 64, "adamw", "bf16_mixed"),
}


def recorded_cases() -> list[dict]:
    """Every recorded H100 step: model, batch, optimizer, precision, measured MiB and ms, where from."""
    doc = json.loads((FIXTURES / "h100-2026-11-22.json").read_text())
    cases = [{**c, "set": "2026-11-22"} for c in doc["cases"]]
    for line in (FIXTURES / "h100-sxm-fit-set.jsonl").read_text().splitlines():
        m = json.loads(line)
        model, batch, optimizer, precision = FIT_SET_CASES[m["name"]]
        cases.append(
            {
                "model": model,
                "batch": batch,
                "optimizer": optimizer,
                "precision": precision,
                "max_allocated_mib": m["max_allocated"] / 2**20,
                "step_ms": m["step_time_s"] * 1e3,
                "set": "fit set" + (", channels_last" if "channels_last" in m["name"] else ""),
            }
        )
    return cases


def _model(name: str) -> dict:
    if name == SMALL_CNN:
        return json.loads((FIXTURES / f"{SMALL_CNN}.json").read_text())["model"]
    return accuracy_models()[name]


def _candidate(case: dict, device: str = "H100 SXM") -> CandidateResult:
    """The engine's sizing of a recorded case on the catalogue ``device`` (its set names its layout)."""
    w = parse_workload(
        {
            "model": _model(case["model"]),
            "data": {"samples": case["batch"] * 10},
            "training": {
                "batch_size": case["batch"],
                "epochs": 1,
                "optimizer": case["optimizer"],
                "precision": case["precision"],
                # the recorded loop: random tensors already on the GPU, synchronised every step
                "loop": "device_tensors",
                "memory_format": "channels_last" if "channels_last" in case.get("set", "") else "contiguous",
                # the fit set ran with cudnn.benchmark on (../shared/gpu-measurements/README.md);
                # accuracy_cuda.py's cases with PyTorch's default, off
                "cudnn_benchmark": case.get("set", "").startswith("fit set"),
            },
        }
    )
    return size_candidate(w, find_device(device, tuple(load_catalogue())), 1)


def predict_device(case: dict) -> float:
    """The GPU's kernels alone (ms): matrix products and memory-bound work, the host's overhead left out."""
    st = _candidate(case).step
    return (st.compute_s + st.memory_s) * 1e3


def predict(case: dict) -> tuple[float, float]:
    """The engine's tensor peak (MiB) and step time (ms) for the catalogue H100 SXM, defaults only
    (the GPU kernel model, core/estimate/gpu_kernels.py; the fit set's channels_last line with the
    model and input converted to NHWC)."""
    c = _candidate(case)
    return c.memory.tensor_peak / 2**20, c.step.step_s * 1e3


def main() -> None:
    print(
        "| model | batch | optimizer | precision | recorded | peak predicted | measured | error "
        "| step predicted | kernels | measured | error |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    mem_err, step_err = [], []
    for c in recorded_cases():
        mib, ms = predict(c)
        em, es = mib / c["max_allocated_mib"] - 1, ms / c["step_ms"] - 1
        mem_err.append(abs(em))
        step_err.append(abs(es))
        print(
            f"| {c['model']} | {c['batch']} | {c['optimizer']} | {c['precision']} | {c['set']} "
            f"| {mib:,.1f} MiB | {c['max_allocated_mib']:,.1f} MiB | {em:+.1%} "
            f"| {ms:.2f} ms | {predict_device(c):.2f} ms | {c['step_ms']:.2f} ms | {es:+.0%} |"
        )
    n = len(mem_err)
    print(
        f"\nMemory: {sum(e <= 0.05 for e in mem_err)} of {n} within 5 %, {sum(e <= 0.10 for e in mem_err)} within "
        f"10 %; mean |error| {statistics.mean(mem_err):.1%}, worst {max(mem_err):.1%} (SPEC 9: 5 %, 10 % at worst)."
    )
    print(
        f"Step time: {sum(e <= 0.25 for e in step_err)} of {n} within 25 %; mean |error| "
        f"{statistics.mean(step_err):.1%} (SPEC 9: ≥ 90 % within 25 %, mean ≤ 15 %)."
    )


if __name__ == "__main__":
    main()
