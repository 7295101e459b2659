"""What a GPU's host pays per layer, from the host-cost ladder (benchmarks/gpu_suite.py --ladder): each block
kind (a linear layer, a convolution, with cuDNN's batch norm, with max pooling too) stacked 1, 2, 4 and 8
deep on a tiny input, so every step is the host's. Per block kind and precision the growth of a step per
block (least squares over the depths) is measured — the host's issue time where the line recorded it, else
the step — and set against the model's host seconds for the same lines (at each line's host probe where it
carries one: calibrate's speed; else at the reference host's), with their ratio. A ratio near 1 for every
kind says the host's prices hold per layer on that host; a convolution's alone far above 1 says the host pays
more for cuDNN's calls than the model prices (docs/accuracy.md, "A fifth H100 lease": small CNNs 13 % too
fast there, in the suite and in fresh processes alike, not on the shared measurements' host).

    python3 benchmarks/gpu_suite.py --ladder --isolate --probe-every 1 --out ladder.jsonl   # on a GPU
    python3 benchmarks/host_ladder.py ladder.jsonl
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.accuracy_suite_recorded import cases, probed_gpu_lines, recorded  # noqa: E402

DEPTH = re.compile(r"^ladder-(?P<block>.+)-x(?P<depth>\d+)$")


def _per_block(depths: list[int], seconds: list[float]) -> tuple[float, float]:
    """(seconds per block, seconds at no block): the least-squares line through the depths."""
    slope, intercept = np.polyfit(np.asarray(depths, float), np.asarray(seconds, float), 1)
    return float(slope), float(intercept)


def ladder_rows(path: Path) -> list[dict]:
    """Per (block, precision): the depths measured, the measured and modelled seconds per block and at no
    block, and the ratio of the two per-block figures."""
    lines = recorded(path)
    if not lines:
        raise ValueError(f"{path}: no lines")
    calibrated = probed_gpu_lines(path, lines, "the ladder prices a GPU's host (gpu_suite.py --ladder --device cuda)")
    issued = {m.get("host_issue_s") is not None for m in lines}
    if len(issued) > 1:
        raise ValueError(f"{path}: some lines carry the host's issue time and some do not: a mix of two recordings")
    groups: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for r in cases(path, lines, calibrated=calibrated):
        match = DEPTH.match(r["name"])
        if match is None:
            continue
        measured = r["measured_host_s"] if issued == {True} else r["measured_s"]
        key = (match["block"], r["precision"])
        groups.setdefault(key, []).append((int(match["depth"]), measured, r["predicted_host_s"]))
    if not groups:
        raise ValueError(f"{path}: no ladder lines (names ladder-<block>-x<depth>: gpu_suite.py --ladder)")
    rows = []
    for (block, precision), points in sorted(groups.items()):
        depths = [d for d, _, _ in points]
        if len(set(depths)) < 2:
            continue  # one depth draws no line
        measured, at_zero = _per_block(depths, [m for _, m, _ in points])
        model, model_zero = _per_block(depths, [p for _, _, p in points])
        rows.append(
            {
                "block": block,
                "precision": precision,
                "depths": sorted(set(depths)),
                "measured_per_block_s": measured,
                "model_per_block_s": model,
                "measured_at_zero_s": at_zero,
                "model_at_zero_s": model_zero,
                "ratio": measured / model if model > 0 else float("nan"),
                "calibrated": calibrated,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 benchmarks/host_ladder.py LADDER.jsonl", file=sys.stderr)
        return 2
    try:
        rows = ladder_rows(Path(args[0]))
    except (OSError, ValueError, KeyError) as exc:
        print(f"host_ladder: {exc}", file=sys.stderr)
        return 2
    speed = "at each line's host probe" if rows and rows[0]["calibrated"] else "at the reference host's speed"
    print(f"The host's seconds per block, measured against the model's ({speed}):\n")
    print("| block | precision | depths | measured per block | model per block | ratio | measured at 0 | model at 0 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['block']} | {r['precision']} | {', '.join(map(str, r['depths']))} "
            f"| {r['measured_per_block_s'] * 1e6:.0f} µs | {r['model_per_block_s'] * 1e6:.0f} µs | {r['ratio']:.2f} "
            f"| {r['measured_at_zero_s'] * 1e3:.2f} ms | {r['model_at_zero_s'] * 1e3:.2f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
