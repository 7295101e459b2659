"""The engine's GPU step time against published per-GPU training throughputs
(resources/published/gpu_throughputs.json: the Lambda deep-learning benchmark's PyTorch tables, 9
GPUs), predicted vs published samples/s per case, split into the fit part (ResNet-50 on the
RTX 3090 and 4090, BERT-base TF32 on the H100 SXM and RTX 3090: the rows the kernel model's
constants were fitted on, docs/accuracy.md) and the held-out rest, by network family and by GPU. No
GPU and no PyTorch needed.

    python3 benchmarks/accuracy_published.py
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.estimate.sizing import size_candidate  # noqa: E402
from core.estimate.timing import StepTime  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

DATA = ROOT / "resources/published/gpu_throughputs.json"
# the (network, GPU) pairs whose kind of measurement the constants were fitted on: the GPUs that run NCHW
# half precision without cuDNN's transposes on the GeForce cards' (the transposes' own price was fitted on
# the H100's ResNet-50 until lent GPUs' profiles priced them, 2026-11-26: its rows are held out since)
FIT = {
    ("resnet50", "NVIDIA GeForce RTX 3090"),
    ("resnet50", "NVIDIA GeForce RTX 4090"),
}
# single rows the constants were fitted on: TF32's share of the tensor cores' GEMM efficiency
# (gpu_kernels.TF32_GEMM_EFFICIENCY) on BERT-base in TF32 on a datacenter and a GeForce card
FIT_ROWS = {
    ("bert_base_squad", "NVIDIA H100 SXM", "tf32"),
    ("bert_base_squad", "NVIDIA GeForce RTX 3090", "tf32"),
}


def published_cases() -> list[dict]:
    """Every published row with its network, TrainRig precision and optimizer, and fit/held-out."""
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    cases = []
    for r in doc["rows"]:
        net = doc["networks"][r["benchmark"]]
        # a row's own precision where the table's mapping does not hold (Volta's "fp32" is IEEE fp32)
        precision = r.get("precision") or doc["precisions"][r["lambda_precision"]]
        cases.append(
            {
                **r,
                "model": net["model"],
                "optimizer": net["optimizer"],
                # how the published code trains (its attention; in fp16, apex amp O2's half-precision model)
                "training": {**net.get("training", {}), **net.get("training_by_precision", {}).get(precision, {})},
                "unit": net["unit"],
                "precision": precision,
                "part": "fit"
                if (r["benchmark"], r["device"]) in FIT or (r["benchmark"], r["device"], precision) in FIT_ROWS
                else "held-out",
            }
        )
    return cases


def predicted_step(case: dict, catalogue: tuple | None = None) -> StepTime:
    """The engine's step for one GPU of the catalogue at the published batch, trained as the
    published code trains (its optimizer, precision, attention)."""
    w = parse_workload(
        {
            "model": case["model"],
            "data": {"samples": case["batch"] * 10},
            "training": {
                "batch_size": case["batch"],
                "epochs": 1,
                "optimizer": case["optimizer"],
                "precision": case["precision"],
                "micro_batch_size": case["batch"],
                **case.get("training", {}),
            },
        }
    )
    return size_candidate(w, find_device(case["device"], catalogue or tuple(load_catalogue())), 1).step


def predict(case: dict) -> float:
    """Samples/s the engine predicts for one GPU of the catalogue at the published batch."""
    return case["batch"] / predicted_step(case).step_s


def errors() -> list[tuple[dict, float, float]]:
    """(case, predicted samples/s, error of the predicted throughput)."""
    out = []
    for c in published_cases():
        p = predict(c)
        out.append((c, p, p / c["throughput"] - 1))
    return out


def _summary(label: str, errs: list[float]) -> str:
    a = [abs(e) for e in errs]
    return (
        f"{label}: {sum(e <= 0.25 for e in a)} of {len(a)} within 25 %, mean |error| {statistics.mean(a):.0%}, "
        f"worst {max(errs, key=abs):+.0%}"
    )


def main() -> None:
    rows = errors()
    print("| network | GPU | precision | batch | published | predicted | error | part |")
    print("|---|---|---|---|---|---|---|---|")
    for c, p, e in rows:
        print(
            f"| {c['benchmark']} | {c['device'].replace('NVIDIA ', '')} | {c['precision']} | {c['batch']} "
            f"| {c['throughput']:,.0f} {c['unit']} | {p:,.0f} | {e:+.0%} | {c['part']} |"
        )
    print()
    by: dict[str, list[float]] = defaultdict(list)
    for c, _, e in rows:
        by[c["part"]].append(e)
        if c["part"] == "held-out":
            by[f"held-out {c['benchmark']}"].append(e)
            by[f"held-out {c['device'].replace('NVIDIA ', '')}"].append(e)
    for label in sorted(by):
        print(_summary(label, by[label]))


if __name__ == "__main__":
    main()
