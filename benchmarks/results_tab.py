"""The Results tab at scale (SPEC 9: the results table under 0.5 s with 10,000 runs and 10 million
samples; issue 14: a run's curves in under 100 ms, filters that answer as typed).

Builds (or reuses, with --db) a database of --runs finished training runs of --samples samples each
through the store's own run API, then times what a user waits for, offscreen: the tab built and
its first page shown, a sort by a figure, a filter as typed, the next page when scrolling, one
run's details (read and plotted), and a comparison of 10 runs (read and plotted).

Run: python benchmarks/results_tab.py [--runs 10000] [--samples 1000] [--db PATH] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

COLUMNS = ["cpu_percent", "ram_used_bytes", "proc_cpu_percent", "proc_rss_bytes"]


def build(path: Path, runs: int, samples: int) -> None:
    from core.storage.store import Store

    rnd = random.Random(14)
    store = Store.open(path)
    t0 = time.perf_counter()
    for i in range(runs):
        step = rnd.uniform(0.002, 0.2)
        rid = store.start_run(
            "trained",
            f"{rnd.choice(['mlp', 'cnn', 'lstm', 'bert'])} {i}",
            device="cpu",
            prediction={"step_s": step * rnd.uniform(0.8, 1.25)},
            sampling={"columns": COLUMNS, "rate_hz": 10.0, "limits": {"cpu_percent": 100.0}},
        )
        store.add_samples(
            rid, [(k / 10, [rnd.uniform(0, 100), 8e9 + k * 1e6, 150.0, 1e9 + k * 1e5]) for k in range(samples)]
        )
        progress = [
            {"t": k / 10, "iteration": k, "loss": 2.3 / (1 + k / 100), "step_s": step} for k in range(0, samples, 10)
        ]
        store.finish_run(
            rid,
            "finished",
            exit_code=0,
            duration_s=samples / 10,
            metrics={
                "training_time_s": samples / 10,
                "median_step_s": step,
                "accuracy": rnd.random(),
                "macro_f1": rnd.random(),
            },
            measured={"median_step_s": step, "training_time_s": samples / 10},
            progress=progress,
        )
        if i and i % 1000 == 0:
            print(f"  {i:,} runs written ({time.perf_counter() - t0:.0f} s)", flush=True)
    store.close()


def timed(label: str, fn, until=None, app=None, limit_s: float = 60.0) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn()
    if until is not None:
        while not until() and time.perf_counter() - t < limit_s:
            app.processEvents()
            time.sleep(0.001)
    dt = time.perf_counter() - t
    print(f"{label:<52} {dt * 1e3:9.1f} ms")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=1_000, help="per run (10,000 × 1,000 = 10 million)")
    ap.add_argument("--db", type=Path, help="an existing database to measure (built there if missing)")
    ap.add_argument("--keep", action="store_true", help="keep the generated database")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="trainrig-results-bench-"))
    path = args.db or folder / "results.db"
    if not path.exists():
        print(f"building {args.runs:,} runs × {args.samples:,} samples in {path} …", flush=True)
        t = time.perf_counter()
        build(path, args.runs, args.samples)
        print(f"built in {time.perf_counter() - t:.0f} s, {path.stat().st_size / 2**20:,.0f} MiB")
    app = QApplication([])
    from gui.app import configure_app

    configure_app(app)
    from core.storage.store import Store
    from gui.models.results_model import COL_MEASURED
    from gui.tabs.results_tab import ResultsTab

    store = Store.open(path)
    print(f"{store.results_count():,} results, {args.runs * args.samples:,} samples (as built)")
    holder: list[ResultsTab] = []

    def show() -> None:
        tab = ResultsTab(store)
        tab.resize(1366, 800)
        tab.show()
        app.processEvents()
        holder.append(tab)

    timed("tab built, first page shown (SPEC: < 0.5 s)", show)
    tab = holder[0]
    timed(
        "sort by measured step (header click)",
        lambda: tab.table.sortByColumn(COL_MEASURED, Qt.SortOrder.AscendingOrder),
    )
    timed("filter 'mlp 12' (after the 150 ms pause)", lambda: (tab.search.setText("mlp 12"), tab.apply_filters()))
    timed("filter cleared", lambda: (tab.search.setText(""), tab.apply_filters()))
    timed("next page while scrolling", tab.model.fetchMore)
    tab.select_rows([0])
    timed(
        "one run's details read and plotted (goal < 100 ms)",
        tab._load_details,
        until=lambda: tab.details.kind == "run",
        app=app,
    )
    tab.select_rows(list(range(10)))
    timed(
        "10 runs compared (read and plotted)",
        tab.compare_selected,
        until=lambda: len(tab.compare.runs) == 10 and bool(tab.compare.curves),
        app=app,
    )
    store.close()
    if args.db is None and not args.keep:
        path.unlink(missing_ok=True)
        for p in folder.glob("*"):
            p.unlink()
        folder.rmdir()
    elif args.db is None:
        print(f"kept {path}")


if __name__ == "__main__":
    main()
