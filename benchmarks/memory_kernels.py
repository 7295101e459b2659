"""Two memory-bound parts of a GPU step against the kernels of real profiles: the optimizer's
multi-tensor-apply kernels and autocast's casts (PyTorch's copy kernels between half and fp32), as the
measure worker recorded them on a lent H100 and a lent H200 (tests/fixtures/profiles/, BERT-base b64 and
GPT-2 small b8 in bf16 with AdamW), against core/estimate/gpu_memory.py's price. No GPU needed.

The optimizer is priced from the words PyTorch's foreach code moves (gpu_memory.FOREACH_ACCESSES, a count,
not a fit). The casts' share of the streaming bandwidth (gpu_memory.CAST_BANDWIDTH_SHARE) is the ratio in
the H100's BERT profile (``--fit`` prints it); GPT-2's casts, which also carry its 50,257-word logits (the
loss's cast), and the H200's are held out.

    python3 benchmarks/memory_kernels.py [--fit]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.flash_attention import GPUS, PROFILES, WORKLOADS  # noqa: E402  the same profiles
from core.estimate import gpu_memory, gpu_step  # noqa: E402
from core.estimate.gpu_kernels import figures  # noqa: E402
from core.estimate.op_work import forward_work  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

FIT = ("h100", "bert-base-b64")


def measured_s(gpu: str, workload: str) -> dict[str, float]:
    """Seconds a step of the profile spent in the optimizer's kernels and in the casts."""
    doc = json.loads((PROFILES / f"{gpu}-{workload}.profile.json").read_text(encoding="utf-8"))
    out = {"optimizer": 0.0, "casts": 0.0}
    for k in doc["kernels"]:
        name = str(k["name"])
        seconds = float(k["total_us"]) * 1e-6 / float(doc["steps"])
        if "multi_tensor_apply" in name:
            out["optimizer"] += seconds
        elif "copy_kernel" in name:  # direct_copy (LoadWithCast) and bfloat16_copy: the dtype casts
            out["casts"] += seconds
    return out


def priced_s(gpu: str, workload: str) -> dict[str, float]:
    """The model's seconds for the same: the foreach optimizer, and autocast's casts (each matrix
    product's input and its gradient, the weights and their gradients, the half logits' casts)."""
    preset, batch = WORKLOADS[workload]
    analysis = parse_workload({"model": {"preset": preset}}).analysis
    figs = figures(find_device(GPUS[gpu], tuple(load_catalogue())))
    ops = forward_work(analysis)[0]
    mo = gpu_step._matrix_ops(ops)
    cast = gpu_memory.autocast_cast_s(mo.cast_elems * batch, figs, False, mo.cast_kernels)
    activations = float(np.sum(cast) + np.sum(np.where(mo.cast_first, 0.0, cast)))
    matmul, weights = gpu_step.matrix_weights(ops)
    weight_casts = gpu_memory.mixed_precision_s("bf16_mixed", matmul, analysis.parameters, figs, weights)
    logits = gpu_memory.LOSS_CAST_BYTES * analysis.output_elems * batch / figs.bandwidth
    return {
        "optimizer": gpu_memory.optimizer_s(analysis.parameters, figs, gpu_memory.FOREACH_ACCESSES["adamw"]),
        "casts": activations + weight_casts + logits,
    }


def fit() -> float:
    """CAST_BANDWIDTH_SHARE at which the H100 BERT profile's casts are priced as measured: the price is
    fixed + streaming / share (the kernels' floors and the logits' cast do not scale), so two prices
    give both parts."""
    saved = gpu_memory.CAST_BANDWIDTH_SHARE
    try:
        gpu_memory.CAST_BANDWIDTH_SHARE = 1.0
        at_one = priced_s(*FIT)["casts"]
        gpu_memory.CAST_BANDWIDTH_SHARE = 0.5
        streaming = priced_s(*FIT)["casts"] - at_one
    finally:
        gpu_memory.CAST_BANDWIDTH_SHARE = saved
    return streaming / (measured_s(*FIT)["casts"] - (at_one - streaming))


def main() -> int:
    if "--fit" in sys.argv:
        print(f"CAST_BANDWIDTH_SHARE fitted on the {FIT[0].upper()} {FIT[1]} profile: {fit():.3f}")
    print("| GPU | workload | part | measured | priced | error | |")
    print("|---|---|---|---|---|---|---|")
    for gpu in GPUS:
        for w in WORKLOADS:
            measured, priced = measured_s(gpu, w), priced_s(gpu, w)
            for part in ("optimizer", "casts"):
                role = "counted" if part == "optimizer" else "fit" if (gpu, w) == FIT else "held out"
                print(
                    f"| {GPUS[gpu]} | {w} | {part} | {measured[part] * 1e3:.2f} ms | {priced[part] * 1e3:.2f} ms "
                    f"| {priced[part] / measured[part] - 1:+.1%} | {role} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
