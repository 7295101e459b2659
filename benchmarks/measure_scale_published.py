"""Measure-and-scale's scaling rules checked on published per-GPU throughputs (a proxy, no GPU
needed): for pairs of GPUs that the Lambda benchmark measured with the same networks
(resources/published/gpu_throughputs.json), a step "measured" on GPU A is built from A's published
throughput, split into matrix kernels and memory-bound kernels in the proportions the engine's GPU
kernel model gives for A; core.estimate.profile_scale scales it to GPU B (compute by the ratio of
the datasheet peaks for the precision, memory by the bandwidths), and the predicted throughput per
sample is compared with B's published one, both ways. The split is the model's, not a profiler's,
so this checks the scaling rules against real cross-GPU ratios, not the profile reader.

    python3 benchmarks/measure_scale_published.py

The issue's bar: within 15 % between GPUs of one generation. The figures go in docs/accuracy.md.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from accuracy_published import predicted_step, published_cases  # noqa: E402

from core.estimate.profile_read import KernelRecord, StepProfile  # noqa: E402
from core.estimate.profile_scale import scale_profile  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402

# pairs of one generation (and one across generations, for contrast)
PAIRS = (
    ("NVIDIA H100 SXM", "NVIDIA H100 PCIe", "Hopper GH100, SXM and PCIe"),
    ("NVIDIA GeForce RTX 4090", "NVIDIA RTX 6000 Ada", "Ada AD102, GeForce and workstation"),
    ("NVIDIA GeForce RTX 3090", "NVIDIA RTX A6000", "Ampere GA102, GeForce and workstation"),
    ("NVIDIA GeForce RTX 3090", "NVIDIA A10", "Ampere GA102, GeForce and data centre"),
    ("NVIDIA RTX A6000", "NVIDIA A10", "Ampere GA102, workstation and data centre"),
    ("NVIDIA A100 80GB SXM", "NVIDIA H100 SXM", "across generations: Ampere GA100 and Hopper"),
)
# a kernel name of each precision, as cuBLAS/cuDNN name them (the scaler reads the precision there)
GEMM_NAMES = {
    "fp16_mixed": "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32",
    "tf32": "sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x32",
}


def proxy_profile(case: dict, catalogue: tuple) -> StepProfile:
    """A's published step as a profile: matrix kernels and memory-bound kernels in the kernel model's
    proportions for A, the host at the model's host time (the large published batches are
    device-bound)."""
    st = predicted_step(case, catalogue)
    compute, memory = st.compute_s, st.memory_s + st.optimizer_s
    step = case["batch"] / case["throughput"]
    share = step / (compute + memory)
    kernels = (
        KernelRecord(GEMM_NAMES[case["precision"]], "gemm", 1000, compute * share),
        KernelRecord("vectorized_elementwise_kernel", "elementwise", 3000, memory * share),
    )
    return StepProfile(case["device"], "cuda", kernels, 10, step, min(st.host_s, step), precision=case["precision"])


def pair_errors(a: str, b: str, catalogue: tuple | None = None) -> list[tuple[dict, dict, float, float]]:
    """(from, to, predicted samples/s, error) for every network and precision published on both GPUs,
    scaled A → B and B → A."""
    catalogue = catalogue or tuple(load_catalogue())
    by = {(c["benchmark"], c["precision"], c["device"]): c for c in published_cases()}
    out = []
    for (bench, precision, dev), ca in by.items():
        if dev != a or (bench, precision, b) not in by:
            continue
        cb = by[(bench, precision, b)]
        for src, dst in ((ca, cb), (cb, ca)):
            res = scale_profile(
                proxy_profile(src, catalogue),
                find_device(src["device"], catalogue),
                [find_device(dst["device"], catalogue)],
            )
            predicted = src["batch"] / res.predictions[0].step_s
            out.append((src, dst, predicted, predicted / dst["throughput"] - 1))
    return out


def main() -> None:
    catalogue = tuple(load_catalogue())
    print("| pair | network | precision | from → to | predicted | published | error |")
    print("|---|---|---|---|---|---|---|")
    summary = []
    for a, b, label in PAIRS:
        rows = pair_errors(a, b, catalogue)
        for src, dst, predicted, err in rows:
            route = f"{src['device'].removeprefix('NVIDIA ')} → {dst['device'].removeprefix('NVIDIA ')}"
            print(
                f"| {label} | {src['benchmark']} | {src['precision']} | {route} | {predicted:,.0f} | "
                f"{dst['throughput']:,.0f} | {err:+.0%} |"
            )
        errs = [e for *_, e in rows]
        absolute = [abs(e) for e in errs]
        summary.append(
            f"{label}: {sum(e <= 0.15 for e in absolute)} of {len(absolute)} within 15 %, "
            f"mean |error| {statistics.mean(absolute):.1%}, worst {max(errs, key=abs):+.0%}"
        )
    print()
    print("\n".join(summary))


if __name__ == "__main__":
    main()
