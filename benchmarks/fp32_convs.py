"""IEEE fp32 3 × 3 convolutions (stride 1, padding 1, no bias) on an NVIDIA GPU: forward and both
gradients, timed with cuDNN's algorithm search (``cudnn.benchmark``) on and off, TF32 off — the shapes
of ResNet-18/34, VGG-11 at 224 × 224 and VGG-16 at 32 × 32, and 32 seeded random ones — against the
engine's price for each (core/estimate/gpu_kernels.py matrix_op_s). A lent H100's run is kept in
tests/fixtures/gpu/h100-fp32-convs-2026-11-26c.jsonl; no GPU needed to read it.

    python3 benchmarks/fp32_convs.py                  # the recorded H100 run against the engine
    python3 benchmarks/fp32_convs.py --fit            # refit core/estimate/gpu_convs.py's two constants
    python3 benchmarks/fp32_convs.py --measure OUT.jsonl [--budget-s 140] [--others]   # on a CUDA GPU
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fitting import seeded_halves  # noqa: E402
from benchmarks.gpu_suite import step_times_s  # noqa: E402
from core.estimate import gpu_convs, gpu_kernels  # noqa: E402
from core.estimate.op_work import OpWork  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402

RECORDED = ROOT / "tests/fixtures/gpu/h100-fp32-convs-2026-11-26c.jsonl"
# the same lease's other layers (1 × 1, strided 3 × 3, the 7 × 7 stem, 5 × 5), never fitted on
OTHERS = ROOT / "tests/fixtures/gpu/h100-fp32-convs-others-2026-11-26c.jsonl"
DEVICE_BOUND_S = 1e-3  # shorter steps carry the host's launches (0.2–0.3 ms here), which the price leaves out
FIT_SEED = 2026


def shapes() -> list[tuple[int, int, int, int, str]]:
    """(batch, in channels, out channels, side, family) in the order measured."""
    out = []
    for n in (8, 32):
        out += [(n, c, c, hw, "resnet") for c, hw in ((64, 56), (128, 28), (256, 14), (512, 7))]
        out += [
            (n, c, k, hw, "vgg11")
            for c, k, hw in (
                (64, 128, 112),
                (128, 256, 56),
                (256, 256, 56),
                (256, 512, 28),
                (512, 512, 28),
                (512, 512, 14),
            )
        ]
    for n in (32, 256):
        out += [
            (n, c, k, hw, "vgg16c")
            for c, k, hw in (
                (64, 64, 32), (64, 128, 16), (128, 128, 16), (128, 256, 8),
                (256, 256, 8), (256, 512, 4), (512, 512, 4), (512, 512, 2),
            )
        ]  # fmt: skip
    rng = random.Random(2026)
    sizes = (16, 32, 64, 128, 256, 512)
    for _ in range(40):
        n, c, k, hw = (
            rng.choice((8, 32, 128)),
            rng.choice(sizes),
            rng.choice(sizes),
            rng.choice((4, 8, 16, 32, 64, 128)),
        )
        if n * c * hw**2 <= 2**26 and n * k * hw**2 <= 2**26:
            out.append((n, c, k, hw, "random"))
    return out


def other_shapes() -> list[tuple[int, int, int, int, str, int, int]]:
    """(batch, in, out, side, family, kernel, stride) of the layers gpu_convs.py prices unmeasured or
    leaves to gpu_kernels: ResNet-50's 1 × 1 layers and its 7 × 7 stem and strided 3 × 3 ones, and
    5 × 5 layers of the random CNNs' kind, at batch 32 (and 8 for ResNet-50's)."""
    out = []
    for n in (8, 32):
        out += [
            (n, c, k, hw, "resnet50-1x1", 1, 1)
            for c, k, hw in ((64, 256, 56), (256, 64, 56), (256, 128, 56), (512, 128, 28), (128, 512, 28),
                             (1024, 256, 14), (256, 1024, 14), (2048, 512, 7), (512, 2048, 7))
        ]  # fmt: skip
        out += [(n, 3, 64, 224, "resnet50-stem", 7, 2), (n, 128, 128, 56, "resnet50-s2", 3, 2)]
        out += [(n, 256, 256, 28, "resnet50-s2", 3, 2), (n, 512, 512, 14, "resnet50-s2", 3, 2)]
    out += [
        (32, c, k, hw, "5x5", 5, 1)
        for c, k, hw in ((3, 64, 32), (64, 64, 32), (64, 256, 32), (256, 64, 16), (32, 32, 64))
    ]
    out += [(128, c, k, hw, "5x5", 5, 1) for c, k, hw in ((32, 32, 32), (64, 64, 16), (128, 128, 8))]
    return out


def measure(path: Path, budget_s: float, others: bool = False, device: str = "cuda") -> None:
    import torch

    dev = torch.device(device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def timed(n: int, c: int, k: int, hw: int, search: bool, kernel: int = 3, stride: int = 1) -> float:
        torch.backends.cudnn.benchmark = search
        conv = torch.nn.Conv2d(c, k, kernel, stride=stride, padding=kernel // 2, bias=False).to(dev)
        x = torch.randn(n, c, hw, hw, device=dev, requires_grad=True)
        side = (hw + 2 * (kernel // 2) - kernel) // stride + 1
        g = torch.randn(n, k, side, side, device=dev)
        return statistics.median(step_times_s(torch, dev, lambda: conv(x).backward(g)))

    started = time.monotonic()
    with path.open("w", encoding="utf-8") as sink:
        for n, c, k, hw, family, *ks in other_shapes() if others else shapes():
            if time.monotonic() - started > budget_s:
                break
            kernel, stride = ks or (3, 1)
            line = {"family": family, "n": n, "c": c, "k": k, "hw": hw}
            if ks:
                line.update(kernel=kernel, stride=stride)
            line.update(
                search_s=timed(n, c, k, hw, True, kernel, stride), heuristic_s=timed(n, c, k, hw, False, kernel, stride)
            )
            sink.write(json.dumps(line) + "\n")
            sink.flush()


def priced(row: dict[str, Any], search: bool, gpu: Any = None) -> float:
    """The engine's seconds for one recorded convolution's forward and both gradients."""
    n, c, k, hw = row["n"], row["c"], row["k"], row["hw"]
    kernel, stride = row.get("kernel", 3), row.get("stride", 1)
    side = (hw + 2 * (kernel // 2) - kernel) // stride + 1
    op = OpWork(
        rate="conv",
        pointwise=kernel == 1,
        kernel_area=kernel * kernel,
        winograd_shape=stride == 1,
        flops=2.0 * side * side * k * c * kernel * kernel,
        gemm_rows=float(side * side),
        gemm_n=float(k),
        gemm_k=float(c * kernel * kernel),
        in_elems=float(c * hw * hw),
        out_elems=float(k * side * side),
    )
    gpu = gpu or gpu_kernels.figures(find_device("H100 SXM", tuple(load_catalogue())))
    return gpu_kernels.matrix_op_s(op, n, "fp32", gpu, False, "contiguous", cudnn_benchmark=search)


def recorded(path: Path = RECORDED) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    gpu = gpu_kernels.figures(find_device("H100 SXM", tuple(load_catalogue())))
    for r in rows:
        r["search_error"] = priced(r, True, gpu) / r["search_s"] - 1
        r["heuristic_error"] = priced(r, False, gpu) / r["heuristic_s"] - 1
    return rows


def device_bound_halves(seed: int = FIT_SEED) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The device-bound recorded shapes: (fit half, held-out half), by a seeded shuffle."""
    return seeded_halves([r for r in recorded() if r["search_s"] >= DEVICE_BOUND_S], seed)


def fit(seed: int = FIT_SEED) -> tuple[float, float]:
    """(HOPPER_FP32_CONV_EFFICIENCY, HOPPER_WINOGRAD_SPEEDUP): 0.30–1.00 by 0.02 and 1.0–4.0 by 0.1, with
    the least mean squared log error over the fit half (the search's times: the heuristics' are the same)."""
    rows, _ = device_bound_halves(seed)
    gpu = gpu_kernels.figures(find_device("H100 SXM", tuple(load_catalogue())))
    saved = gpu_convs.HOPPER_FP32_CONV_EFFICIENCY, gpu_convs.HOPPER_WINOGRAD_SPEEDUP

    def loss(v: tuple[float, float]) -> float:
        gpu_convs.HOPPER_FP32_CONV_EFFICIENCY, gpu_convs.HOPPER_WINOGRAD_SPEEDUP = v
        return statistics.mean(math.log(priced(r, True, gpu) / r["search_s"]) ** 2 for r in rows)

    try:
        grid = [(round(0.30 + 0.02 * e, 2), round(1.0 + 0.1 * w, 1)) for e in range(36) for w in range(31)]
        return min(grid, key=loss)
    finally:
        gpu_convs.HOPPER_FP32_CONV_EFFICIENCY, gpu_convs.HOPPER_WINOGRAD_SPEEDUP = saved


def summary(errs: list[float]) -> str:
    return (
        f"{sum(abs(e) <= 0.25 for e in errs)} of {len(errs)} within 25 %, "
        f"mean |error| {statistics.mean(abs(e) for e in errs):.0%}, median {statistics.median(errs):+.0%}"
    )


def main() -> int:
    if "--measure" in sys.argv:
        budget = float(sys.argv[sys.argv.index("--budget-s") + 1]) if "--budget-s" in sys.argv else 140.0
        device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
        measure(Path(sys.argv[sys.argv.index("--measure") + 1]), budget, "--others" in sys.argv, device)
        return 0
    if "--fit" in sys.argv:
        committed = gpu_convs.HOPPER_FP32_CONV_EFFICIENCY, gpu_convs.HOPPER_WINOGRAD_SPEEDUP
        print(f"fitted on the seeded half (seed {FIT_SEED}): {fit()} (committed {committed})")
        fit_half, held = device_bound_halves()
        print(f"fit half: {summary([r['search_error'] for r in fit_half])}")
        print(f"held-out half: {summary([r['search_error'] for r in held])}\n")
    rows = recorded()
    print("| batch | in | out | side | search on | priced | heuristics | priced |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['n']} | {r['c']} | {r['k']} | {r['hw']} | {r['search_s'] * 1e3:.3f} ms | {r['search_error']:+.0%} "
            f"| {r['heuristic_s'] * 1e3:.3f} ms | {r['heuristic_error']:+.0%} |"
        )
    big = [r for r in rows if r["search_s"] >= DEVICE_BOUND_S]
    ratio = [r["search_s"] / r["heuristic_s"] for r in big]
    print(f"\ndevice-bound (≥ 1 ms): {len(big)}; search on / off measured {min(ratio):.2f}–{max(ratio):.2f}")
    for key in ("search_error", "heuristic_error"):
        print(f"{key.split('_')[0]}: {summary([r[key] for r in big])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
