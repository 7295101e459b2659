"""The GPU kernel model's matrix products against OpenXLA's published GEMM table for an H100 and a
B200 (resources/published/xla_gemm_perf_table.json: batched products of 256–4,096 a side in bf16 and
TF32): each product priced by core.estimate.gemm.gemm_s for the catalogue GPU, against the
published rate. GEMM_FIXED_S is the least-squares fit on the H100 bf16 rows marked "fit" (a seeded
half); every other row is held out. No GPU and no PyTorch needed.

    python3 benchmarks/accuracy_xla_gemm.py          # the tables
    python3 benchmarks/accuracy_xla_gemm.py --fit    # also refit GEMM_FIXED_S on the fit rows
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.accuracy_deepbench import summary  # noqa: E402
from core.estimate.gemm import GEMM_FIXED_S, gemm_s  # noqa: E402
from core.estimate.gpu_kernels import (  # noqa: E402
    KERNEL_FLOOR_S,
    GpuFigures,
    figures,
    matmul_efficiency,
    matmul_peak,
    matmul_rate,
)
from core.estimate.profile_read import KernelRecord  # noqa: E402
from core.estimate.profile_scale import LAUNCH_FLOOR_S, scale_kernel  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402

DATA = ROOT / "resources/published/xla_gemm_perf_table.json"
DEVICES = {"sm_90": "NVIDIA H100 SXM", "sm_100_B200": "NVIDIA B200 (HGX)"}


@lru_cache(maxsize=1)
def rows() -> tuple[dict, ...]:
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    return tuple(dict(zip(doc["columns"], r, strict=True)) for r in doc["rows"])


@lru_cache(maxsize=1)
def gpus() -> dict[str, GpuFigures]:
    cat = tuple(load_catalogue())
    return {table: figures(find_device(name, cat)) for table, name in DEVICES.items()}


def measured_s(r: dict) -> float:
    return 2.0 * r["b"] * r["m"] * r["n"] * r["k"] / r["flops_per_s"]


def predicted_s(r: dict, fixed: bool = True) -> float:
    """gemm_s for the row's b products stacked as one of b·m rows (the same tiles and waves), at least
    the b products' own operands at the bandwidth; ``fixed=False``: the model before GEMM_FIXED_S (a
    kernel's floor instead)."""
    gpu = gpus()[r["table"]]
    peak, nbytes = matmul_peak(r["precision"], gpu)
    b, m, n, k = r["b"], r["m"], r["n"], r["k"]
    t = gemm_s(b * m, n, k, peak, gpu, nbytes, matmul_efficiency(r["precision"], gpu))
    t = max(t, b * (m * k + k * n + m * n) * nbytes / gpu.bandwidth + GEMM_FIXED_S)
    return t if fixed else max(t - GEMM_FIXED_S, KERNEL_FLOOR_S)


def fit_fixed_s() -> float:
    """The least-squares GEMM_FIXED_S on the fit rows, in relative error: the fixed time that makes
    (model without it + fixed) / measured closest to 1."""
    fit = [r for r in rows() if r["role"] == "fit"]
    base = [predicted_s(r) - GEMM_FIXED_S for r in fit]
    meas = [measured_s(r) for r in fit]
    # minimise Σ ((base + x) / meas − 1)² over x
    num = sum((mm - bb) / mm**2 for bb, mm in zip(base, meas, strict=True))
    den = sum(1 / mm**2 for mm in meas)
    return num / den


def cell(errs: list[float], bar: float = 0.25) -> str:
    """A table cell: within ``bar``, mean |error|, median error."""
    a = [abs(e) for e in errs]
    return f"{sum(x <= bar for x in a)} of {len(a)}, {statistics.mean(a):.0%}, {statistics.median(errs):+.0%}"


def band(r: dict) -> str:
    gflop = 2.0 * r["b"] * r["m"] * r["n"] * r["k"] / 1e9
    return "< 0.1 GFLOP" if gflop < 0.1 else "0.1–2 GFLOP" if gflop < 2 else "≥ 2 GFLOP"


def groups(fixed: bool = True) -> dict[tuple, list[float]]:
    out: dict[tuple, list[float]] = defaultdict(list)
    for r in rows():
        e = predicted_s(r, fixed) / measured_s(r) - 1
        out[(DEVICES[r["table"]], r["precision"], r["role"], band(r))].append(e)
        out[(DEVICES[r["table"]], r["precision"], r["role"], "all")].append(e)
    return out


def scaling_errors(fixed: bool = True) -> dict[tuple[str, str], list[float]]:
    """Measure-and-scale on these products (core/estimate/profile_scale.scale_kernel): each H100 time
    scaled to the B200 and each B200 time to the H100, against the other's published time, per
    (direction, precision); ``fixed=False``: the same matrix rates' ratio with the launch floor as
    the unscaled part, as scale_kernel had it before 2026-11-25."""
    times = {(r["table"], r["precision"], r["b"], r["m"], r["n"], r["k"]): measured_s(r) for r in rows()}
    cat = tuple(load_catalogue())
    devs = {table: find_device(name, cat) for table, name in DEVICES.items()}
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (table, precision, *shape), t in times.items():
        other = "sm_100_B200" if table == "sm_90" else "sm_90"
        target = times.get((other, precision, *shape))
        if target is None:
            continue
        if fixed:
            k = KernelRecord(name=f"gemm_{precision}", kind="gemm", calls=1, total_s=t)
            scaled = scale_kernel(k, devs[table], devs[other], precision, (None, None))
        else:
            floor = min(t, LAUNCH_FLOOR_S)
            ratio = matmul_rate(devs[table], precision) / matmul_rate(devs[other], precision)
            scaled = floor + (t - floor) * ratio
        out[(f"{DEVICES[table]} → {DEVICES[other]}", precision)].append(scaled / target - 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit GEMM_FIXED_S on the fit rows and print it")
    args = parser.parse_args()
    before, after = groups(False), groups(True)
    print("Within 25 %, mean \\|error\\|, median error:\n")
    print("| GPU | precision | rows | sizes | without the fixed time | with GEMM_FIXED_S |")
    print("|---|---|---|---|---|---|")
    order = {"all": 0, "< 0.1 GFLOP": 1, "0.1–2 GFLOP": 2, "≥ 2 GFLOP": 3}
    for key in sorted(after, key=lambda key: (key[0], key[1], key[2] != "fit", order[key[3]])):
        gpu, precision, role, size = key
        print(f"| {gpu} | {precision} | {role} | {size} | {cell(before[key])} | {cell(after[key])} |")
    held = [e for key, errs in after.items() if key[2] == "held-out" and key[3] == "all" for e in errs]
    print(f"\nheld out, all rows: {summary(held)}")
    print("\nMeasure-and-scale per product (scale_kernel: the matrix rates' ratio, the fixed part unscaled);")
    print("within 15 %, mean \\|error\\|, median error:\n")
    print("| scaled | precision | fixed part 2.5 µs (launch floor) | fixed part GEMM_FIXED_S |")
    print("|---|---|---|---|")
    old, new = scaling_errors(False), scaling_errors(True)
    for key in sorted(new):
        print(f"| {key[0]} | {key[1]} | {cell(old[key], 0.15)} | {cell(new[key], 0.15)} |")
    if args.fit:
        refit = fit_fixed_s() * 1e6
        print(f"GEMM_FIXED_S refitted on the fit rows: {refit:.2f} µs (in the model: {GEMM_FIXED_S * 1e6:.2f} µs)")


if __name__ == "__main__":
    main()
