"""The GPU kernel model against single training kernels timed by Baidu's DeepBench on a V100 and a
T4 (resources/published/deepbench_train.json: matrix products in fp32 and fp16 with fp32
accumulation, cuDNN LSTM and GRU layers; CUDA 10.1, cuDNN 7.6, 2019): each matrix product priced by
core.estimate.gemm.gemm_s and each recurrent layer by rnn_op_s for the catalogue GPU, against
the published time. One constant was fitted on them: the rate of the smaller tiles cuBLAS runs a
skinny product in (gemm.TILE_REUSE_EXPONENT), on a seeded half of the skinny products, the
other half held out (``--fit`` prints it); everything else checks the kernel model on two
architectures (Volta, Turing) it was not built on. No GPU and no PyTorch needed.

    python3 benchmarks/accuracy_deepbench.py [--fit]
"""

from __future__ import annotations

import json
import statistics
import sys
import types
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core.estimate.gemm as gemm  # noqa: E402
from benchmarks.fitting import least_log_error, seeded_halves  # noqa: E402
from core.estimate.gemm import TILE, gemm_s  # noqa: E402
from core.estimate.gpu_kernels import figures, matmul_efficiency, matmul_peak, rnn_op_s  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402

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
            t = rnn_op_s(op, r["batch"], r["precision"], gpus[r["gpu"]])
            measured = (r["fwd_ms"] + r["bwd_inputs_ms"] + r["bwd_weights_ms"]) * 1e-3
            out.append(({**r, "kind": kind}, t, t / measured - 1))
    return out


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
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row, _, e in gemm_errors():
        groups[("matrix product", row["gpu"], row["precision"], "skinny" if row["skinny"] else "large")].append(e)
    for row, _, e in rnn_errors():
        groups[(row["kind"].upper(), row["gpu"], row["precision"], "layer")].append(e)
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


if __name__ == "__main__":
    main()
