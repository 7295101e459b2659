"""The host side of the step against published measurements the fit never saw: Finocchiaro's small
MLPs on an RTX 3060 12 GB hosted by an AMD Ryzen 7 2700 (seed paper, Tables 4.1–4.5 and the GPU
loads of §4.2). No GPU and no PyTorch needed.

The paper gives the training time of 400 epochs; the step is that over 400 × ⌈80,909 / batch⌉
steps (80,909 training frames, the seed MLP preset's figure: 80 % of Table 3.1's frames — the
split was by video, so the count is approximate, and if each epoch also evaluated the test split,
the per-step figures below are too high by that share). The paper's loop is not published: each
style is shown.

    python3 benchmarks/host_heldout.py
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.estimate.timing import step_time  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.network.model import analyze_model  # noqa: E402
from core.spec.loop import LoopSpec  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

SAMPLES, EPOCHS = 80_909, 400
HOST = "AMD Ryzen 7 2700"
GPU = "NVIDIA GeForce RTX 3060 12 GB"
# (label, hidden blocks, width, batch, optimizer): training time in s, Finocchiaro Tables 4.1–4.5
PUBLISHED = [
    ("depth 2", 2, 512, 512, "adam", 325.95),
    ("depth 3 (optimal)", 3, 512, 512, "adam", 346.66),
    ("depth 4", 4, 512, 512, "adam", 367.34),
    ("depth 5", 5, 512, 512, "adam", 379.31),
    ("width 128", 3, 128, 512, "adam", 340.54),
    ("width 256", 3, 256, 512, "adam", 342.35),
    ("width 1024", 3, 1024, 512, "adam", 343.27),
    ("width 2048", 3, 2048, 512, "adam", 380.47),
    ("batch 64", 3, 512, 64, "adam", 3426.29),
    ("batch 128", 3, 512, 128, "adam", 1406.50),
    ("batch 256", 3, 512, 256, "adam", 558.14),
    ("SGD", 3, 512, 512, "sgd", 328.81),
    ("Adagrad", 3, 512, 512, "adagrad", 342.40),
    ("RMSprop", 3, 512, 512, "rmsprop", 340.90),
]
# mean GPU load the paper reports (§4.2.3: batch; §4.2.2: widths 128–512 range 0.02–0.26, 1024 ≈ 0.37)
PUBLISHED_LOAD = {"batch 64": 0.056, "batch 128": 0.08, "batch 256": 0.134, "depth 3 (optimal)": 0.15}
LOOPS = {
    "device tensors": LoopSpec(style="device_tensors"),
    "DataLoader, 0 workers": LoopSpec(),
    "DataLoader, 4 workers": LoopSpec(workers=4),
}


def mlp(blocks: int, width: int) -> dict:
    layers: list[dict] = []
    for _ in range(blocks):
        layers += [{"type": "linear", "out_features": width}, {"type": "leaky_relu"}]
    return {"input_shape": [75], "layers": [*layers, {"type": "linear", "out_features": 10}]}


def predict(blocks: int, width: int, batch: int, optimizer: str, loop: LoopSpec) -> tuple[float, float]:
    """(step seconds, GPU load) for the paper's setup."""
    w = parse_workload(
        {"model": mlp(blocks, width), "data": {"samples": SAMPLES}, "training": {"batch_size": batch, "epochs": EPOCHS}}
    )
    gpu = find_device(GPU, tuple(load_catalogue()))
    st = step_time(
        analyze_model(mlp(blocks, width), "model"),
        gpu,
        batch_per_device=batch,
        devices=1,
        nodes=1,
        precision="fp32",
        optimizer=optimizer,
        checkpointing=False,
        sharding="none",
        read_bps=10e9,
        disk_bytes_per_sample=0.0,
        data=w.data,
        loop=loop,
        host_cpu=HOST,
    )
    return st.step_s, st.device_load


def rows() -> list[dict]:
    out = []
    for label, blocks, width, batch, optimizer, seconds in PUBLISHED:
        measured = seconds / (EPOCHS * math.ceil(SAMPLES / batch))
        row = {"label": label, "batch": batch, "measured_s": measured, "load": PUBLISHED_LOAD.get(label)}
        for name, loop in LOOPS.items():
            row[name] = predict(blocks, width, batch, optimizer, loop)
        out.append(row)
    return out


def main() -> None:
    table = rows()
    names = list(LOOPS)
    print(f"Finocchiaro's MLPs, RTX 3060 12 GB hosted by an {HOST}: step predicted (GPU load) vs published\n")
    print("| case | batch | published step | GPU load | " + " | ".join(names) + " |")
    print("|---|---|---|---|" + "---|" * len(names))
    for r in table:
        cells = []
        for n in names:
            step, load = r[n]
            cells.append(f"{step * 1e3:.2f} ms ({load:.2f}) {step / r['measured_s'] - 1:+.0%}")
        load = f"{r['load']:.3f}" if r["load"] is not None else "—"
        print(f"| {r['label']} | {r['batch']} | {r['measured_s'] * 1e3:.2f} ms | {load} | " + " | ".join(cells) + " |")
    print()
    for n in names:
        errors = [abs(r[n][0] / r["measured_s"] - 1) for r in table]
        within = sum(e <= 0.25 for e in errors)
        flat = [r for r in table if r["label"] in ("batch 64", "depth 3 (optimal)")]
        ratio = flat[1][n][0] / flat[0][n][0]
        print(
            f"{n}: {within} of {len(table)} within 25 %, mean |error| {statistics.mean(errors):.0%}; "
            f"step at batch 64 / batch 512 = {ratio:.2f} "
            f"(published {flat[1]['measured_s'] / flat[0]['measured_s']:.2f})"
        )


if __name__ == "__main__":
    main()
