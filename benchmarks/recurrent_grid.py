"""What cuDNN's recurrent algorithms cost on a GPU, from the recurrent grid (benchmarks/gpu_suite.py --recurrent):
one-layer LSTMs and GRUs of hidden 64 to 512 and a two-layer LSTM at batch 20, 64 and 256 in fp32, bf16 and fp16,
each step set against the model's (core/estimate/gpu_rnn.py) at the line's host probe where it carries one, and
grouped by the algorithm PyTorch picks for its forward and backward (``rnn_algorithms``): the small-hidden
kernels, priced as the persistent one but never measured; the persistent kernel; the standard chain. A group
far from 0 names the price to refit (docs/accuracy.md, "cuDNN's recurrent algorithms").

    python3 benchmarks/gpu_suite.py --recurrent --probe-every 1 --out rnn.jsonl   # on a GPU, about 2 minutes
    python3 benchmarks/recurrent_grid.py rnn.jsonl
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.accuracy_suite_recorded import DEVICES, cases, probed_gpu_lines, recorded, summary  # noqa: E402
from core.estimate.gpu_kernels import figures  # noqa: E402
from core.estimate.gpu_rnn import rnn_algorithms  # noqa: E402
from core.estimate.op_work import forward_work  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402


def algorithms(line: dict) -> str:
    """The algorithms PyTorch picks for a line's recurrent layers on its GPU, "forward/backward" (the first
    layer's; the grid's networks have one, or two of one size)."""
    w = parse_workload(line["workload"])
    gpu = figures(find_device(DEVICES[line["device"]], tuple(load_catalogue())))
    op = next(op for op in forward_work(w.analysis)[0] if op.rnn)
    return "/".join(rnn_algorithms(op, w.training.batch_size, w.training.precision, gpu))


def grid_rows(path: Path) -> list[dict]:
    """Each recurrent line's measured and predicted step, error and algorithms (at its host probe where every
    line carries one)."""
    lines = [m for m in recorded(path) if str(m.get("family", "")).startswith("recurrent ")]
    if not lines:
        raise ValueError(f"{path}: no line of the recurrent grid (gpu_suite.py --recurrent)")
    rows = cases(path, lines, calibrated=probed_gpu_lines(path, lines, "the grid prices a GPU's layers"))
    for r, m in zip(rows, lines, strict=True):
        r["algorithms"] = algorithms(m)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 benchmarks/recurrent_grid.py FILE.jsonl", file=sys.stderr)
        return 2
    path = Path(args[0])
    if not path.is_file():
        print(f"recurrent_grid: {path}: no such file", file=sys.stderr)
        return 2
    try:
        rows = grid_rows(path)
    except (ValueError, KeyError) as exc:
        print(f"recurrent_grid: {exc}", file=sys.stderr)
        return 2
    print("| network | precision | batch | algorithms (forward/backward) | measured | predicted | error |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['name']} | {r['precision']} | {r['batch']} | {r['algorithms']} | {r['measured_s'] * 1e3:.2f} ms | "
            f"{r['predicted_s'] * 1e3:.2f} ms | {r['error']:+.0%} |"
        )
    print("\n| algorithms | steps | within 25 % | mean abs error | median error |")
    print("|---|---|---|---|---|")
    for algo in sorted({r["algorithms"] for r in rows}):
        print(f"| {algo} | {summary([r['error'] for r in rows if r['algorithms'] == algo])} |")
    print(f"\nall: median error {statistics.median(r['error'] for r in rows):+.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
