"""Three kernels that sum over many rows below the streaming rate, against the kernels of real profiles: a
linear layer's bias gradient (PyTorch's reduce_kernel), layer norm's weight gradient (GammaBetaBackward)
and batch norm on NCHW bf16 (PyTorch's per-channel kernels), priced by core/estimate/gpu_memory.py
(bias_reduce_s, gamma_beta_s, batchnorm_channel_s). No GPU needed.

The profiles: 23 suite steps a lent H100 ran under the measure worker on 2026-11-26
(tests/fixtures/gpu/h100-profiles-2026-11-26d.jsonl, benchmarks/profile_cases.py) fit the constants; the
H100's and H200's BERT-base b64 and GPT-2 small b8 profiles (tests/fixtures/profiles/) hold the bias and
layer-norm prices out. Batch norm's rate has no held-out profile; the suites' bf16 NCHW steps hold it out
(docs/accuracy.md).

    python3 benchmarks/row_reductions.py          # each kernel's price against each profile
    python3 benchmarks/row_reductions.py --fit    # refit the constants on the fit profiles
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fitting import fit_constant, print_kernel_tables  # noqa: E402
from benchmarks.flash_attention import GPUS, PROFILES, WORKLOADS  # noqa: E402  the held-out profiles
from benchmarks.profile_cases import as_profile, recorded  # noqa: E402  the fit profiles
from core.estimate import gpu_memory as gm  # noqa: E402
from core.estimate.gpu_kernels import KERNEL_FLOOR_S, figures  # noqa: E402
from core.estimate.op_work import forward_work  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402


def _dtype(precision: str) -> str:
    return {"bf16_mixed": "c10::BFloat16", "fp16_mixed": "c10::Half"}.get(precision, "float")


# the kernels of each part, by name (a bias's sum is a column reduction in the activations' dtype)
KERNELS: dict[str, Callable[[str, str], bool]] = {
    "bias": lambda name, precision: (
        "reduce_kernel<128, 4" in name and "sum_functor" in name and f"ReduceOp<{_dtype(precision)}," in name
    ),
    "layernorm": lambda name, precision: "GammaBetaBackward" in name,
    "batchnorm": lambda name, precision: (
        "at::native::batch_norm_" in name and "channels_last" not in name and "transform_input" not in name
    ),
}


def profiles() -> list[dict[str, Any]]:
    """Each profile: its role (fit / held out), label, GPU, workload, batch, precision, layout, kernels."""
    out = [as_profile(d, "H100 SXM", role="fit") for d in recorded()]
    for gpu, device in GPUS.items():
        for workload, (preset, batch) in WORKLOADS.items():
            p = json.loads((PROFILES / f"{gpu}-{workload}.profile.json").read_text(encoding="utf-8"))
            out.append(
                {
                    "role": "held out",
                    "label": f"{gpu} {workload}",
                    "gpu": device,
                    "workload": {"model": {"preset": preset}},
                    "batch": batch,
                    "precision": "bf16_mixed",
                    "layout": "contiguous",
                    "kernels": p["kernels"],
                    "steps": p["steps"],
                }
            )
    return out


def measured_s(p: dict[str, Any], part: str) -> float:
    match = KERNELS[part]
    return sum(float(k["total_us"]) for k in p["kernels"] if match(str(k["name"]), p["precision"])) / p["steps"] * 1e-6


def priced_s(p: dict[str, Any], part: str) -> float:
    """The model's seconds a step for ``part``'s kernels of profile ``p`` (0: none of its kind)."""
    gpu = figures(find_device(p["gpu"], tuple(load_catalogue())))
    ops = forward_work(parse_workload(p["workload"]).analysis)[0]
    b, half = p["batch"], p["precision"] in ("bf16_mixed", "fp16_mixed")
    nbytes = 2 if half else 4
    total = 0.0
    for o in ops:
        if part == "bias" and o.bias and o.rate == "conv":  # priced by its bytes (gpu_step.pass_kernels)
            total += max(o.out_elems * b * nbytes / gpu.bandwidth, KERNEL_FLOOR_S)
        elif part == "bias" and o.bias and o.rate == "linear" and o.gemm_n / o.projections >= 16:
            total += float(gm.bias_reduce_s(o.gemm_rows * b, o.gemm_n / o.projections, o.projections, nbytes, gpu))
        elif o.norm_width and (o.name == "layernorm") == (part == "layernorm") and part != "bias":
            rows = o.out_elems / o.norm_width * b
            if part == "layernorm":  # its streaming bytes (two fp32 tensors under autocast) and the blocks' stream
                width_bytes = 4 if o.fp32_io or not half else 2
                total += 2 * rows * o.norm_width * width_bytes / gpu.bandwidth
                total += float(gm.gamma_beta_s(rows, o.norm_width, width_bytes, gpu))
            elif gm.native_batch_norm(p["precision"], p["layout"]):
                total += float(gm.batchnorm_channel_s(rows, o.norm_width, gpu))
    return total


def rows(part: str) -> list[dict[str, Any]]:
    """The profiles with kernels of ``part``, each with its measured and priced seconds a step."""
    out = []
    for p in profiles():
        measured = measured_s(p, part)
        if measured > 0:
            out.append({**p, "measured_s": measured, "predicted_s": priced_s(p, part)})
    return out


CONSTANTS = {
    "bias": ("BIAS_ROW_BYTES", [500.0 * i for i in range(2, 41)]),
    "layernorm": ("GAMMA_BETA_BYTES_PER_CLOCK", [0.5 * i for i in range(20, 200)]),
    "batchnorm": ("BATCHNORM_ELEMENTS_PER_CLOCK", [0.01 * i for i in range(10, 200)]),
}


def fit(part: str) -> float:
    name, grid = CONSTANTS[part]
    # profiles with kernels of the part the price covers (a channels_last convolution's bias gradient runs
    # the same reduction, priced by its bytes: docs/accuracy.md)
    fitting = [r for r in rows(part) if r["role"] == "fit" and r["predicted_s"] > 0.1 * r["measured_s"]]
    return fit_constant(
        grid, fitting, lambda r: priced_s(r, part), lambda: getattr(gm, name), lambda v: setattr(gm, name, v)
    )


def main() -> int:
    def fitted(part: str) -> str:
        name = CONSTANTS[part][0]
        return f"{name}: fitted {fit(part):g} (core/estimate/gpu_memory.py holds {getattr(gm, name):g})"

    print_kernel_tables(KERNELS, rows, fitted if "--fit" in sys.argv else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
