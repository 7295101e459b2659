"""The GPU kernel model against single training kernels timed by Baidu's DeepBench on a V100 and a
T4 (resources/published/deepbench_train.json: matrix products in fp32 and fp16 with fp32
accumulation, cuDNN LSTM and GRU layers, fp32 convolutions with the algorithm cuDNN's search picks;
CUDA 10.1, cuDNN 7.6, 2019): each matrix product priced by core.estimate.gemm.gemm_s, each recurrent
layer by rnn_op_s and each convolution by matrix_op_s with cudnn.benchmark on, for the catalogue
GPU, against the published time. Fitted on them, each on a seeded half with the other half held out:
the rate of the smaller tiles cuBLAS runs a skinny product in (gemm.TILE_REUSE_EXPONENT, ``--fit``),
and a searched convolution's efficiency and Winograd's speed-up (``--fit-conv``, with a lent H200's
fp32 convolutional steps' fit half); everything else checks the kernel model on two architectures
(Volta, Turing) it was not built on. No GPU and no PyTorch needed.

    python3 benchmarks/accuracy_deepbench.py [--fit] [--fit-conv]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import types
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core.estimate.gemm as gemm  # noqa: E402
import core.estimate.gpu_kernels as gpu_kernels  # noqa: E402
from benchmarks.fitting import least_log_error, seeded_halves  # noqa: E402
from core.estimate.gemm import TILE, gemm_s  # noqa: E402
from core.estimate.gpu_kernels import figures, matmul_efficiency, matmul_peak, matrix_op_s  # noqa: E402
from core.estimate.gpu_rnn import rnn_op_s  # noqa: E402
from core.estimate.op_work import OpWork  # noqa: E402
from core.estimate.sizing import size_candidate  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

DATA = ROOT / "resources/published/deepbench_train.json"
FIT_SEED = 2026  # the skinny products' split: the fit half and the held-out half


@lru_cache(maxsize=1)
def _data() -> tuple[dict, dict]:
    """The published figures and the kernel model's figures of each GPU they were timed on."""
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    cat = tuple(load_catalogue())
    return doc, {key: figures(find_device(src["device"], cat)) for key, src in doc["sources"].items()}


def gemm_errors() -> list[tuple[dict, float, float]]:
    """(row, predicted seconds, error) of every published matrix product; a row is "skinny" when
    its smaller output side is under one 128-wide tile."""
    doc, gpus = _data()
    out = []
    for g in doc["gemm"]:
        gpu = gpus[g["gpu"]]
        peak, nbytes = matmul_peak(g["precision"], gpu)
        t = gemm_s(g["m"], g["n"], g["k"], peak, gpu, nbytes, matmul_efficiency(g["precision"], gpu), True)
        out.append(({**g, "skinny": min(g["m"], g["n"]) < TILE}, t, t / (g["ms"] * 1e-3) - 1))
    return out


def rnn_errors() -> list[tuple[dict, float, float]]:
    """(row, predicted seconds, error) of every published LSTM/GRU layer (one layer, input size =
    hidden size; forward + backward with respect to the inputs and the weights)."""
    doc, gpus = _data()
    out = []
    for kind in ("lstm", "gru"):
        for r in doc[kind]:
            if not (r["fwd_ms"] and r["bwd_inputs_ms"] and r["bwd_weights_ms"]):
                continue
            op = types.SimpleNamespace(name=kind, rnn=(1, r["hidden"], r["hidden"], r["steps"]))
            t = rnn_op_s(op, r["batch"], r["precision"], gpus[r["gpu"]], algorithm="standard")
            measured = (r["fwd_ms"] + r["bwd_inputs_ms"] + r["bwd_weights_ms"]) * 1e-3
            out.append(({**r, "kind": kind}, t, t / measured - 1))
    return out


def conv_errors(only: Iterable[int] | None = None) -> list[tuple[dict, float, float]]:
    """(row, predicted seconds, error) of every published fp32 convolution: forward, the gradient with
    respect to the parameters and (but for a layer on the network's input) to the inputs, priced by
    matrix_op_s with cuDNN's algorithm search, as DeepBench picked its algorithms; ``only``: those rows."""
    doc, gpus = _data()
    out = []
    rows = doc["conv"] if only is None else [doc["conv"][i] for i in only]
    for r in rows:
        area = r["filter_w"] * r["filter_h"]
        rows = r["out_w"] * r["out_h"]
        op = OpWork(
            rate="conv",
            pointwise=area == 1,
            kernel_area=area,
            winograd_shape=r["filter_w"] == r["filter_h"] and r["stride_w"] == r["stride_h"] == 1,
            first=r["bwd_inputs_ms"] is None,
            flops=2.0 * rows * r["k"] * r["c"] * area,
            gemm_rows=float(rows),
            gemm_n=float(r["k"]),
            gemm_k=float(r["c"] * area),
            in_elems=float(r["c"] * r["w"] * r["h"]),
            out_elems=float(r["k"] * rows),
        )
        t = matrix_op_s(op, r["n"], r["precision"], gpus[r["gpu"]], False, "contiguous", cudnn_benchmark=True)
        measured = (r["fwd_ms"] + (r["bwd_inputs_ms"] or 0.0) + r["bwd_params_ms"]) * 1e-3
        out.append(({**r, "winograd": "WINOGRAD" in r["fwd_algorithm"]}, t, t / measured - 1))
    return out


def conv_halves(seed: int = FIT_SEED) -> tuple[list[int], list[int]]:
    """Indices into conv_errors(): (fit half, held-out half)."""
    return seeded_halves(range(len(_data()[0]["conv"])), seed)


def fit_conv(seed: int = FIT_SEED) -> tuple[tuple[int, ...], float, float]:
    """(WINOGRAD_KERNEL_AREAS, CONV_SEARCH_EFFICIENCY, WINOGRAD_SPEEDUP): the kernel areas (3 × 3, or
    3 × 3 and 5 × 5), efficiency (0.30–1.00 by 0.02) and speed-up (1.0–4.0 by 0.1) with the least mean
    squared log error over the fit half of these convolutions plus that over the fit half of a lent
    H200's IEEE fp32 convolutional steps (cudnn.benchmark on, cuDNN's TF32 off: the steps the search's
    pricing applies to; benchmarks/accuracy_suite_recorded.py conv_halves): the two sources weigh the
    same, 94 kernels of two 2017–2018 GPUs and 6 steps of the reference card."""
    from benchmarks.accuracy_suite_recorded import DEVICES, recorded
    from benchmarks.accuracy_suite_recorded import conv_halves as suite_halves

    fit, _ = conv_halves(seed)
    catalogue = tuple(load_catalogue())
    steps = [  # parsed once: the grid sizes them 2,232 times
        (parse_workload(m["workload"]), find_device(DEVICES[m["device"]], catalogue), m["step_time_s"])
        for m in suite_halves(recorded(), seed)[0]
        if m["workload"]["training"]["precision"] == "fp32" and not m["workload"]["training"].get("cudnn_tf32")
    ]
    saved = gpu_kernels.WINOGRAD_KERNEL_AREAS, gpu_kernels.CONV_SEARCH_EFFICIENCY, gpu_kernels.WINOGRAD_SPEEDUP

    def loss(v: tuple[tuple[int, ...], float, float]) -> float:
        # each source weighs the same: the mean squared log error of the kernels plus the steps'
        gpu_kernels.WINOGRAD_KERNEL_AREAS, gpu_kernels.CONV_SEARCH_EFFICIENCY, gpu_kernels.WINOGRAD_SPEEDUP = v
        kernels = [math.log1p(e) ** 2 for _, _, e in conv_errors(fit)]
        on_h200 = [math.log(size_candidate(w, dev, 1).step.step_s / measured) ** 2 for w, dev, measured in steps]
        return statistics.mean(kernels) + statistics.mean(on_h200)

    grid = [
        (areas, round(0.30 + 0.02 * e, 2), round(1.0 + 0.1 * w, 1))
        for areas in ((9,), (9, 25))
        for e in range(36)
        for w in range(31)
    ]
    try:
        return min(grid, key=loss)
    finally:
        gpu_kernels.WINOGRAD_KERNEL_AREAS, gpu_kernels.CONV_SEARCH_EFFICIENCY, gpu_kernels.WINOGRAD_SPEEDUP = saved


def skinny_halves(seed: int = FIT_SEED) -> tuple[list[int], list[int]]:
    """Indices into the skinny matrix products of gemm_errors(): (fit half, held-out half)."""
    return seeded_halves(range(sum(1 for r, _, _ in gemm_errors() if r["skinny"])), seed)


def skinny_errors() -> list[float]:
    return [e for r, _, e in gemm_errors() if r["skinny"]]


def fit_tile_reuse(seed: int = FIT_SEED) -> float:
    """TILE_REUSE_EXPONENT (0 … 2 in steps of 0.05) with the least squared log error over the fit
    half of the skinny products."""
    fit, _ = skinny_halves(seed)
    saved = gemm.TILE_REUSE_EXPONENT

    def errors(exponent: float) -> list[float]:
        gemm.TILE_REUSE_EXPONENT = exponent
        errs = skinny_errors()
        return [errs[i] for i in fit]

    try:
        return round(least_log_error([step * 0.05 for step in range(41)], errors), 2)
    finally:
        gemm.TILE_REUSE_EXPONENT = saved


def summary(errs: list[float]) -> str:
    a = [abs(e) for e in errs]
    return (
        f"{sum(x <= 0.25 for x in a)} of {len(a)} within 25 %, mean |error| {statistics.mean(a):.0%}, "
        f"median error {statistics.median(errs):+.0%}"
    )


def main() -> None:
    if "--fit" in sys.argv:
        fit, held = skinny_halves()
        errs = skinny_errors()
        print(
            f"TILE_REUSE_EXPONENT fitted on {len(fit)} skinny products (seed {FIT_SEED}): {fit_tile_reuse()} "
            f"(committed {gemm.TILE_REUSE_EXPONENT})"
        )
        print(f"fit half: {summary([errs[i] for i in fit])}")
        print(f"held-out half: {summary([errs[i] for i in held])}\n")
    if "--fit-conv" in sys.argv:
        fit, held = conv_halves()
        errs = [e for _, _, e in conv_errors()]
        committed = gpu_kernels.WINOGRAD_KERNEL_AREAS, gpu_kernels.CONV_SEARCH_EFFICIENCY, gpu_kernels.WINOGRAD_SPEEDUP
        fitted = fit_conv()
        print(f"(kernel areas, efficiency, speed-up) fitted (seed {FIT_SEED}): {fitted} (committed {committed})")
        print(f"fit half: {summary([errs[i] for i in fit])}")
        print(f"held-out half: {summary([errs[i] for i in held])}\n")
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row, _, e in gemm_errors():
        groups[("matrix product", row["gpu"], row["precision"], "skinny" if row["skinny"] else "large")].append(e)
    for row, _, e in rnn_errors():
        groups[(row["kind"].upper(), row["gpu"], row["precision"], "layer")].append(e)
    for row, _, e in conv_errors():
        shape = "1 × 1" if row["filter_w"] * row["filter_h"] == 1 else "Winograd" if row["winograd"] else "other"
        groups[("convolution, searched", row["gpu"], row["precision"], shape)].append(e)
    print("| kernel | GPU | precision | shapes | cases | within 25 % | mean \\|error\\| | median error |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(groups):
        a = [abs(e) for e in groups[key]]
        print(
            f"| {' | '.join(key)} | {len(a)} | {sum(x <= 0.25 for x in a)} | {statistics.mean(a):.0%} | "
            f"{statistics.median(groups[key]):+.0%} |"
        )
    gemms = gemm_errors()
    large = summary([e for r, _, e in gemms if not r["skinny"]])
    print(f"\nmatrix products with both output sides of a tile or more: {large}")
    print(f"skinny matrix products: {summary([e for r, _, e in gemms if r['skinny']])}")
    print(f"recurrent layers: {summary([e for _, _, e in rnn_errors()])}")
    print(f"convolutions (fp32, cudnn.benchmark): {summary([e for _, _, e in conv_errors()])}")


if __name__ == "__main__":
    main()
