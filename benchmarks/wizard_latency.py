"""Recompute latency of the sizing wizard's results page (SPEC 9: under 50 ms on any change).

Measures a what-if change (batch size) end to end in the window — engine, rules, bill of
materials, table, memory bar, scatter, findings — offscreen, with the results page's first tab (the
memory bar) shown; ``--tab N`` shows its tab N instead (1: the time-vs-capex scatter, which is drawn
only while it is shown). Run: python benchmarks/wizard_latency.py [--tab N]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QApplication


def main() -> None:
    tab = int(sys.argv[sys.argv.index("--tab") + 1]) if "--tab" in sys.argv[1:-1] else 0
    app = QApplication([])
    from core.storage.store import Store
    from gui.app import configure_app
    from gui.main_window import MainWindow

    configure_app(app)
    w = MainWindow(Store.open(None))
    w.resize(1366, 768)
    w.show()
    QThreadPool.globalInstance().waitForDone(5000)
    app.processEvents()
    wiz = w.sizing_tab
    w.tabs.setCurrentIndex(1)
    for preset, extra in (("seed-mlp", ()), ("gpt2-small", ("NVIDIA H100 SXM",)), ("llama-8b", ("NVIDIA H100 SXM",))):
        wiz.go(1)
        wiz.model_page.preset.setCurrentIndex(wiz.model_page.preset.findData(preset))
        for name in extra:
            wiz.candidates.check(name)
        wiz.candidates.max_gpus.setValue(8)
        wiz.go(5)
        wiz.results.tabs.setCurrentIndex(tab)
        app.processEvents()
        times = []
        for i in range(40):
            t = time.perf_counter()
            wiz.results.batch.setValue(64 + (i % 8) * 16)
            app.processEvents()
            times.append(time.perf_counter() - t)
        n = len(wiz.result.candidates)
        print(
            f"{preset:11} {n:2} candidate rows: median {statistics.median(times) * 1e3:6.1f} ms, "
            f"max {max(times) * 1e3:6.1f} ms per what-if change (engine + rules + BOM + all views)"
        )
    from gui.wizard import session

    session.ask_save_changes = lambda parent, name: "discard"  # closing asks about the changed workload
    w.close()


if __name__ == "__main__":
    main()
