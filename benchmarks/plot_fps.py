"""Live plot frame rate (SPEC 9: ≥ 30 frames/s with one hour of 10 Hz samples): the Telemetry
tab's plots with 36,000 samples on 6 series (CPU, trainer CPU, RAM, trainer RSS, GPU load, VRAM),
one new sample per frame as during a run, each frame a ring-buffer snapshot, setData on every
curve and a paint of the widget (offscreen, software rendering).

Run: python benchmarks/plot_fps.py [--seconds 5] [--smoothing 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from PySide6.QtWidgets import QApplication

COLUMNS = (
    "cpu_percent",
    "ram_used_bytes",
    "proc_cpu_percent",
    "proc_rss_bytes",
    "gpu0_util_percent",
    "gpu0_mem_used_bytes",
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--smoothing", type=int, default=1)
    ap.add_argument("--hours", type=float, default=1.0)
    args = ap.parse_args()
    app = QApplication([])
    from gui.widgets.telemetry_plots import TelemetryPlots
    from telemetry.ring import RingBuffer

    rate = 10
    n = int(args.hours * 3600 * rate)
    ring = RingBuffer(COLUMNS, n + 10 * rate * 60)
    rng = np.random.default_rng(0)
    scales = np.array([100, 64 * 2**30, 200, 8 * 2**30, 100, 80 * 2**30], dtype=float)
    for i in range(n):
        ring.append(i / rate, rng.random(len(COLUMNS)) * scales)
    progress = [
        {"t": i / rate, "iteration": i, "loss": 2 / (1 + i / 1000), "accuracy": 0.5, "step_s": 0.02}
        for i in range(0, n, 10)
    ]
    plots = TelemetryPlots()
    limits = {
        "cpu_percent": 100,
        "ram_used_bytes": 64 * 2**30,
        "gpu0_util_percent": 100,
        "gpu0_mem_used_bytes": 80 * 2**30,
    }
    plots.configure(COLUMNS, limits, 2, {"step_s": 0.02, "peak_memory_bytes": 2**30}, False)
    plots.resize(1366, 700)
    plots.show()
    app.processEvents()
    frames = 0
    i = n
    t0 = time.perf_counter()
    worst = 0.0
    while time.perf_counter() - t0 < args.seconds:
        f0 = time.perf_counter()
        ring.append(i / rate, rng.random(len(COLUMNS)) * scales)
        i += 1
        t, v = ring.snapshot()
        plots.update(t, v, progress, normalised=False, window=args.smoothing, iterations=False)
        plots.repaint()
        app.processEvents()
        frames += 1
        worst = max(worst, time.perf_counter() - f0)
    fps = frames / (time.perf_counter() - t0)
    print(
        f"{len(t):,} samples × {len(COLUMNS)} series + loss/accuracy/step curves, smoothing {args.smoothing}: "
        f"{fps:.1f} frames/s (worst frame {worst * 1e3:.0f} ms; bar ≥ 30)"
    )


if __name__ == "__main__":
    main()
