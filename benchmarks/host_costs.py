"""This machine's host costs (resources/workers/host_bench.py: cost per framework call, the
DataLoader per batch and per sample, the hand-off from 2 workers, ``.item()``, a log line), measured
in a few rounds, with the median of each and the speed they imply against the reference CPU
(core/estimate/host.py). PyTorch needed; run it on an idle machine — on a shared one the figures
move by 2× between rounds.

    python3 benchmarks/host_costs.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "resources" / "workers"))

from core.estimate.host import REFERENCE_BENCH_CALL_S  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import torch
    from host_bench import measure_host

    rounds = [measure_host(torch) for _ in range(args.rounds)]
    print(f"PyTorch {torch.__version__}, {args.rounds} rounds (median, then every round)")
    for key in ("per_call_s", "loader_batch_s", "loader_sample_s", "handoff_batch_s", "sync_s", "log_line_s"):
        values = [r[key] for r in rounds]
        each = " ".join(f"{v * 1e6:.2f}" for v in values)
        print(f"  {key:16s} {statistics.median(values) * 1e6:9.2f} µs   ({each})")
    speed = REFERENCE_BENCH_CALL_S / statistics.median(r["per_call_s"] for r in rounds)
    print(
        f"  speed against the reference CPU's core (its {REFERENCE_BENCH_CALL_S * 1e6:.1f} µs per call): {speed:.2f}×"
    )


if __name__ == "__main__":
    main()
