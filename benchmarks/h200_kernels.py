"""The kernel model against kernels timed on a lent H200 (tests/fixtures/gpu/h200-kernels-2026-11-26.json):
DeepBench's matrix products and recurrent layers and XLA's sm_90 GEMM shapes, run there through
PyTorch. No GPU needed. Never fitted on, except where --fit and --fit-rnn say: the misaligned
products' shares of the peak (gpu_kernels.MISALIGNED_EFFICIENCY) and the recurrent layers' three prices
(gpu_rnn.RNN_CALL_S, RNN_STEP_FLOOR_S, RNN_PERSIST_STEP_S), each fitted on a seeded half and reported on
the other.

    python3 benchmarks/h200_kernels.py              # the tables, as in docs/accuracy.md
    python3 benchmarks/h200_kernels.py --fit        # refit MISALIGNED_EFFICIENCY on the fit half
    python3 benchmarks/h200_kernels.py --fit-rnn    # refit the recurrent layers' prices on the fit half
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core.estimate.gpu_kernels as gk  # noqa: E402
import core.estimate.gpu_rnn as gr  # noqa: E402
from benchmarks.accuracy_suite_recorded import DEFAULT, H100_FOURTH, H100_FRESH, H100_SUITE, cases, recorded, summary  # noqa: E402
from benchmarks.fitting import least_log_error, seeded_halves  # noqa: E402
from core.estimate.gemm import TILE, gemm_s  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402

DATA = ROOT / "tests/fixtures/gpu/h200-kernels-2026-11-26.json"
FIT_SEED = 2026
MIN_PRODUCT_S = 50e-6  # shorter calls time the host's dispatch (about 14 µs there), not the kernel
MIN_LAYER_S = 200e-6


def data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def gpu() -> gk.GpuFigures:
    return gk.figures(find_device("H200 SXM", tuple(load_catalogue())))


def product_s(m: int, n: int, k: int, precision: str, g: gk.GpuFigures, batch: int = 1) -> float:
    peak, nbytes = gk.matmul_peak(precision, g)
    eff = float(gk.aligned_efficiency(gk.matmul_efficiency(precision, g), (m, n, k), precision, g))
    return batch * gemm_s(m, n, k, peak, g, nbytes, eff, True)


def products() -> list[dict]:
    """Every timed product of 50 µs or more: its row, the prediction, the error, its group."""
    g, out = gpu(), []
    for source, rows in (("DeepBench", data()["gemm_deepbench"]), ("XLA", data()["gemm_xla"])):
        for r in rows:
            if r["s"] < MIN_PRODUCT_S:
                continue
            b = r.get("b", 1)
            t = product_s(r["m"], r["n"], r["k"], r["precision"], g, b)
            nbytes = gk.matmul_peak(r["precision"], g)[1]
            align = int(gk.alignment_bytes((r["m"], r["n"], r["k"]), nbytes))
            misaligned = g.tensor_cores(r["precision"]) and align < 16
            shape = "misaligned" if misaligned else "skinny" if min(r["m"], r["n"]) < TILE else "large"
            out.append({**r, "source": source, "predicted": t, "error": t / r["s"] - 1, "shape": shape, "align": align})
    return out


def layers() -> list[dict]:
    g, out = gpu(), []
    for r in data()["rnn_deepbench"]:
        if "error" in r or r["fwd_bwd_s"] < MIN_LAYER_S:
            continue
        op = types.SimpleNamespace(name=r["kind"], rnn=(1, r["hidden"], r["hidden"], r["steps"]))
        t = gr.rnn_op_s(
            op, r["batch"], "fp32" if r["precision"] == "tf32" else r["precision"], g, r["precision"] == "tf32"
        )
        out.append({**r, "predicted": t, "error": t / r["fwd_bwd_s"] - 1})
    return out


def halves(rows: list[dict], seed: int = FIT_SEED) -> tuple[list[dict], list[dict]]:
    return seeded_halves(rows, seed)


def misaligned_rows() -> list[dict]:
    return [r for r in products() if r["shape"] == "misaligned" and r["source"] == "DeepBench"]


def fit_misaligned(seed: int = FIT_SEED) -> dict[int, float]:
    """Each alignment's share of the peak (0.02 … 0.60 by 0.01) with the least squared log error
    over the fit half's products of that alignment."""
    fit, _ = halves(misaligned_rows(), seed)
    saved = dict(gk.MISALIGNED_EFFICIENCY)

    def errors(align: int, share: float) -> list[float]:
        gk.MISALIGNED_EFFICIENCY[align] = share
        g = gpu()
        return [
            product_s(r["m"], r["n"], r["k"], r["precision"], g, r.get("b", 1)) / r["s"] - 1
            for r in fit
            if r["align"] == align
        ]

    try:
        shares = [step / 100 for step in range(2, 61)]
        return {a: least_log_error(shares, lambda v, a=a: errors(a, v)) for a in sorted({r["align"] for r in fit})}
    finally:
        gk.MISALIGNED_EFFICIENCY.clear()
        gk.MISALIGNED_EFFICIENCY.update(saved)


def rnn_halves(seed: int = FIT_SEED) -> tuple[list[dict], list[dict]]:
    return halves(layers(), seed)


RECURRENT_SUITES = (H100_SUITE, H100_FRESH, H100_FOURTH, DEFAULT)  # the suites with recurrent networks


def suite_recurrent() -> list[dict]:
    """The GPU suites' recurrent networks' steps (four leases, none fitted on), each at its host probe."""
    out = []
    for path in RECURRENT_SUITES:
        lines = [m for m in recorded(path) if m["family"] == "rnn"]
        out += cases(path, lines, calibrated=True)
    return out


RNN_GRID = {  # the prices' grids, seconds
    "RNN_CALL_S": [step * 1e-4 for step in range(13)],  # 0 … 1.2 ms
    "RNN_STEP_FLOOR_S": [step * 2e-6 for step in range(21)],  # 0 … 40 µs
    "RNN_PERSIST_STEP_S": [v * 1e-6 for v in (0.5, 1, 2, 3, 4, 6, 8, 10)],
}


def fit_rnn(seed: int = FIT_SEED) -> dict[str, float]:
    """The recurrent layers' three prices (gpu_rnn: a call's fixed cost, the standard algorithm's
    shortest step, a persistent kernel's step) with the least squared log error over the fit half of
    the layers, searched together on RNN_GRID."""
    fit, _ = rnn_halves(seed)
    keys = {(r["kind"], r["precision"], r["hidden"], r["batch"], r["steps"]) for r in fit}
    saved = {name: getattr(gr, name) for name in RNN_GRID}

    def loss(values: tuple[float, ...]) -> float:
        for name, v in zip(RNN_GRID, values, strict=True):
            setattr(gr, name, v)
        return sum(
            math.log1p(r["error"]) ** 2
            for r in layers()
            if (r["kind"], r["precision"], r["hidden"], r["batch"], r["steps"]) in keys
        )

    try:
        best = min(itertools.product(*RNN_GRID.values()), key=loss)
        return {name: round(v, 9) for name, v in zip(RNN_GRID, best, strict=True)}
    finally:
        for name, v in saved.items():
            setattr(gr, name, v)


def main() -> int:
    if "--fit-rnn" in sys.argv:
        fitted = fit_rnn()
        print(f"fitted on the seeded half (seed {FIT_SEED}):")
        for name, v in fitted.items():
            print(f"  {name} {v * 1e6:.1f} µs (committed: {getattr(gr, name) * 1e6:.1f} µs)")
    if "--fit" in sys.argv:
        print(
            f"fitted on the seeded half (seed {FIT_SEED}): {fit_misaligned()}  (committed: {gk.MISALIGNED_EFFICIENCY})"
        )
    print("| kernels (H200, held out unless said) | n | within 25 % | mean abs error | median error |")
    print("|---|---|---|---|---|")
    groups: dict[str, list[float]] = defaultdict(list)
    for r in products():
        if r["shape"] != "misaligned":
            groups[f"{r['source']} products, {r['precision']}, {r['shape']}"].append(r["error"])
    fit, held = halves(misaligned_rows())
    groups["DeepBench misaligned products, fit half"] = [r["error"] for r in fit]
    groups["DeepBench misaligned products, held-out half"] = [r["error"] for r in held]
    for r in layers():
        groups[f"DeepBench {r['kind'].upper()} layers, {r['precision']}"].append(r["error"])
    fit_layers, held_layers = rnn_halves()
    groups["DeepBench LSTM/GRU layers, fit half"] = [r["error"] for r in fit_layers]
    groups["DeepBench LSTM/GRU layers, held-out half"] = [r["error"] for r in held_layers]
    groups["GPU suites' recurrent networks' steps, four leases at their probes"] = [
        c["error"] for c in suite_recurrent()
    ]
    for name in sorted(groups):
        print(f"| {name} | {summary(groups[name])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
