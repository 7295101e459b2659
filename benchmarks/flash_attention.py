"""Flash attention on Hopper against the attention kernels of real profiles: what the measure worker
recorded on a lent H100 and a lent H200 (tests/fixtures/profiles/{h100,h200}-*.profile.json, BERT-base
b64 at 128 tokens and GPT-2 small b8 at 1,024, bf16; cuDNN's SDPA kernels, their backward's dO·O and dQ
conversion kernels included) against core/estimate/gpu_attention.py's price of the same calls. No GPU
needed.

``--fit``: the two constants (FLASH_MMA_EFFICIENCY, FLASH_ROW_ACCESSES) that make the price equal the
H100's two profiles — two equations, two unknowns: the per-score term (matrix products at the fitted
share of the tensor peak beside the exponentials at the special-function units' rate) and the per-row
term (head-dimension vectors at the bandwidth). The H200's profiles (the same compute, 1.43 × the
bandwidth) are held out, as are the GPU suites' steps (benchmarks/accuracy_suite_recorded.py).

Other head dimensions: the half-precision steps with attention among the H100's 23 suite profiles
(tests/fixtures/gpu/h100-profiles-2026-11-26d.jsonl: heads of 16, 64 and 128); ``--fit`` also fits
FLASH_HEAD_EXPONENT on the two at 128 (the 64s are the constants' own ground, the 16 is the tile's).

    python3 benchmarks/flash_attention.py [--fit]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fitting import least_log_error  # noqa: E402
from benchmarks.profile_cases import recorded  # noqa: E402
from core.estimate import gpu_attention  # noqa: E402
from core.estimate.gpu_kernels import figures  # noqa: E402
from core.estimate.op_work import forward_work  # noqa: E402
from core.estimate.profile_read import classify_kernel  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

PROFILES = ROOT / "tests" / "fixtures" / "profiles"
# profile → (preset, batch); each ran bf16 under autocast with AdamW (the files' "about")
WORKLOADS = {"bert-base-b64": ("bert-base", 64), "gpt2-bf16-b8": ("gpt2-small", 8)}
GPUS = {"h100": "H100 SXM", "h200": "H200 SXM"}
FIT_GPU = "h100"


def attention_kernel(name: str) -> bool:
    """A kernel of the SDPA call: the attention kernels themselves, and cuDNN's SDPA backward's fused
    pre/post kernels (dO·O, the fp32 dQ's conversion) and its RNG state unpacking."""
    return classify_kernel(name) == "attention" or "cudnn::fusion::" in name or "philox::unpack_cudnn" in name


def measured_s(gpu: str, workload: str) -> float:
    """Seconds a step of ``workload``'s attention kernels took in ``gpu``'s profile."""
    doc = json.loads((PROFILES / f"{gpu}-{workload}.profile.json").read_text(encoding="utf-8"))
    total_us = sum(float(k["total_us"]) for k in doc["kernels"] if attention_kernel(str(k["name"])))
    return total_us / float(doc["steps"]) * 1e-6


def _calls(workload: str) -> tuple[Any, int]:
    preset, batch = WORKLOADS[workload]
    analysis = parse_workload({"model": {"preset": preset}}).analysis
    return [op for op in forward_work(analysis)[0] if op.scores], batch


def parts_s(gpu: str, workload: str) -> tuple[float, float, float]:
    """The price's (matrix products, exponentials, per-row traffic) seconds of a step's attention calls."""
    ops, batch = _calls(workload)
    figs = figures(find_device(GPUS[gpu], tuple(load_catalogue())))
    per_call = [gpu_attention.flash_parts_s(op, batch, figs, False) for op in ops]
    return tuple(sum(p[i] for p in per_call) for i in range(3))  # type: ignore[return-value]


def fit() -> tuple[float, float]:
    """(FLASH_MMA_EFFICIENCY, FLASH_ROW_ACCESSES) at which the price equals the H100's two profiles."""
    saved = gpu_attention.FLASH_MMA_EFFICIENCY, gpu_attention.FLASH_ROW_ACCESSES, gpu_attention.FLASH_MMA_CEILING
    try:  # unit constants (no ceiling): the parts come out per unit of each
        gpu_attention.FLASH_MMA_EFFICIENCY, gpu_attention.FLASH_ROW_ACCESSES = 1.0, 1.0
        gpu_attention.FLASH_MMA_CEILING = float("inf")
        rows = []
        for w in WORKLOADS:
            products, exponentials, traffic = parts_s(FIT_GPU, w)
            rows.append((products, traffic, measured_s(FIT_GPU, w) - exponentials))
    finally:
        gpu_attention.FLASH_MMA_EFFICIENCY, gpu_attention.FLASH_ROW_ACCESSES, gpu_attention.FLASH_MMA_CEILING = saved
    # measured − exponentials = products₁ / efficiency + traffic₁ × accesses, for both workloads
    (p1, t1, m1), (p2, t2, m2) = rows
    det = p1 * t2 - p2 * t1
    inverse_efficiency = (m1 * t2 - m2 * t1) / det
    accesses = (p1 * m2 - p2 * m1) / det
    return 1.0 / inverse_efficiency, accesses


def head_rows() -> list[dict[str, Any]]:
    """Each half-precision profiled suite step with SDPA: its head dimension, attention kernels measured and
    the price of its calls (cuDNN's, PyTorch 2.11's pick on the H100)."""
    figs = figures(find_device("H100 SXM", tuple(load_catalogue())))
    out = []
    for d in recorded():
        training = d["workload"]["training"]
        if training.get("attention", "auto") != "auto" or training["precision"] not in ("bf16_mixed", "fp16_mixed"):
            continue
        p = d["profile"]
        measured = sum(float(k["total_us"]) for k in p["kernels"] if attention_kernel(str(k["name"])))
        ops = [op for op in forward_work(parse_workload(d["workload"]).analysis)[0] if op.scores]
        if not ops or not measured:
            continue
        priced = sum(gpu_attention.attention_op_s(op, d["batch"], training["precision"], figs, False) for op in ops)
        head = round(ops[0].flops / (4 * ops[0].scores))
        label = f"{d['name']} {training['precision']} b{d['batch']}"
        out.append({"label": label, "head": head, "measured_s": measured / p["steps"] * 1e-6, "priced_s": priced})
    return out


def fit_head_exponent() -> float:
    """FLASH_HEAD_EXPONENT at which the profiles with heads of 128 are priced best."""
    saved = gpu_attention.FLASH_HEAD_EXPONENT

    def errors(value: float) -> list[float]:
        gpu_attention.FLASH_HEAD_EXPONENT = value
        return [r["priced_s"] / r["measured_s"] - 1 for r in head_rows() if r["head"] == 128]

    try:
        return least_log_error([i / 100 for i in range(0, 151)], errors)
    finally:
        gpu_attention.FLASH_HEAD_EXPONENT = saved


def main() -> int:
    if "--fit" in sys.argv:
        efficiency, accesses = fit()
        print(
            f"fitted on the {FIT_GPU.upper()} profiles: FLASH_MMA_EFFICIENCY {efficiency:.3f}, "
            f"FLASH_ROW_ACCESSES {accesses:.1f}"
        )
    print("| GPU | workload | attention kernels measured | priced (products + exponentials + rows) | error | |")
    print("|---|---|---|---|---|---|")
    for gpu in GPUS:
        for w in WORKLOADS:
            measured = measured_s(gpu, w)
            parts = parts_s(gpu, w)
            priced = sum(parts)
            role = "fit" if gpu == FIT_GPU else "held out"
            print(
                f"| {GPUS[gpu]} | {w} | {measured * 1e3:.2f} ms | {priced * 1e3:.2f} ms "
                f"({' + '.join(f'{p * 1e3:.2f}' for p in parts)}) | {priced / measured - 1:+.1%} | {role} |"
            )
    print("\n| suite step (H100 profile) | head dimension | attention kernels measured | priced | error |")
    print("|---|---|---|---|---|")
    for r in head_rows():
        error = r["priced_s"] / r["measured_s"] - 1
        ms = f"{r['measured_s'] * 1e3:.2f} ms | {r['priced_s'] * 1e3:.2f} ms"
        print(f"| {r['label']} | {r['head']} | {ms} | {error:+.0%} |")
    if "--fit" in sys.argv:
        held = gpu_attention.FLASH_HEAD_EXPONENT
        print(f"\nFLASH_HEAD_EXPONENT: fitted {fit_head_exponent():g} (gpu_attention holds {held:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
