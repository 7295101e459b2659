"""How fast the sizing engine is (SPEC 9: one workload × one candidate < 10 ms; 10,000 configurations < 1 s).

Run: python benchmarks/sizing_speed.py
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.estimate.sizing import size_candidate, size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.network.model import _analyze_cached
from core.spec.workload import parse_workload


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    catalogue = load_catalogue()
    gpu = find_device("4090", catalogue)
    print(f"{'workload':14} {'cold parse+size':>16} {'warm size (median)':>20}")
    for preset in ("seed-mlp", "resnet-50", "gpt2-small", "llama-8b"):
        doc = {"model": {"preset": preset}}

        def cold(doc: dict = doc) -> None:
            _analyze_cached.cache_clear()
            size_candidate(parse_workload(doc), gpu, 1)

        cold_s = min(timed(cold, 3))
        w = parse_workload(doc)
        warm = statistics.median(timed(lambda w=w: size_candidate(w, gpu, 1), 200))
        print(f"{preset:14} {cold_s * 1e3:13.2f} ms {warm * 1e3:17.3f} ms")

    w = parse_workload({"model": {"preset": "resnet-50"}})
    devices = [d for d in catalogue if d.kind == "gpu"]
    batches = [2**k for k in range(1, 11)]  # 10
    precisions = ["fp32", "tf32", "fp16_mixed", "bf16_mixed"]  # 4
    optimizers = ["sgd", "sgd_momentum", "adam", "adamw", "adagrad"]  # 5
    counts = [1, 2, 4, 8, 16]  # 5 → 10·4·5·5 = 1,000 per device
    configs = list(itertools.product(batches, precisions, optimizers, counts, devices))[:10_000]
    while len(configs) < 10_000:
        configs += configs[: 10_000 - len(configs)]

    def sweep() -> None:
        for b, p, o, n, d in configs:
            size_candidate(replace(w, training=replace(w.training, batch_size=b, precision=p, optimizer=o)), d, n)

    sweep_s = min(timed(sweep, 3))
    print(
        f"sweep: {len(configs):,} configurations (resnet-50 × batch × precision × optimizer × GPUs × device) "
        f"in {sweep_s:.3f} s ({sweep_s / len(configs) * 1e6:.1f} µs each)"
    )
    seed = parse_workload({"model": {"preset": "seed-mlp"}})
    this = [gpu, find_device("Tesla P40", catalogue)]
    recompute = statistics.median(
        timed(
            lambda: size_workload(
                parse_workload({"model": {"preset": "seed-mlp"}, "training": {"batch_size": 300}}), this
            ),
            100,
        )
    )
    print(f"GUI recompute (parse + size, 2 candidates, seed-mlp): {recompute * 1e3:.2f} ms median")
    del seed


if __name__ == "__main__":
    main()
