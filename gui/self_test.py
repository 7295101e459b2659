"""``python main.py --self-test [--screenshots DIR]``: build the window, visit every tab and every
wizard page, optionally save a PNG of each, and exit 0 — or 1 with the reason. Used by CI on the
frozen executable to prove it starts without a Python installation."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any


def run_self_test(screenshots: Path | None) -> int:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from gui.app import configure_app

    t0 = time.perf_counter()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    configure_app(app)
    # the user's settings (window geometry, chosen Python) are not the self-test's to change: it
    # reads and writes a scratch copy, removed at the end (its database is in memory)
    from PySide6.QtCore import QSettings

    scratch = tempfile.mkdtemp(prefix="trainrig-self-test-")
    previous_format = QSettings.defaultFormat()
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, scratch)
    try:
        return _run(app, screenshots, t0)
    finally:
        QSettings.setDefaultFormat(previous_format)
        shutil.rmtree(scratch, ignore_errors=True)


def _run(app: Any, screenshots: Path | None, t0: float) -> int:
    from PySide6.QtCore import QThreadPool

    from core import __version__
    from core.storage.store import Store

    if screenshots:
        screenshots.mkdir(parents=True, exist_ok=True)
    shots = 0
    try:
        from gui.main_window import MainWindow

        window = MainWindow(Store.open(None))
        window.resize(1366, 768)
        window.show()
        app.processEvents()
        shown = time.perf_counter() - t0
        deadline = time.time() + 10
        while window.inventory_tab.inventory is None and time.time() < deadline:
            app.processEvents()
            time.sleep(0.02)
        if window.inventory_tab.inventory is None:
            raise RuntimeError("the inventory did not finish within 10 s")
        for i in range(window.tabs.count()):
            window.tabs.setCurrentIndex(i)
            app.processEvents()
            name = window.tabs.tabText(i).replace("&", "").lower().replace(" ", "-")
            if name == "sizing-wizard":
                wizard = window.sizing_tab
                for page in range(len(wizard.pages)):
                    wizard.go(page)
                    app.processEvents()
                    if wizard.stack.currentIndex() != page:
                        raise RuntimeError(f"wizard page {page + 1} cannot be reached: {wizard.problem.text()}")
                    shots += _grab(window, screenshots, f"{i + 1}-{name}-{page + 1}")
                if wizard.result is None:
                    raise RuntimeError("the wizard produced no sizing")
            elif name == "results":
                _visit_results(window, app)
                shots += _grab(window, screenshots, f"{i + 1}-{name}")
            else:
                shots += _grab(window, screenshots, f"{i + 1}-{name}")
        window.close()
        QThreadPool.globalInstance().waitForDone(5000)
    except Exception as exc:  # the point of a self-test: say what broke, exit non-zero
        traceback.print_exc()
        print(f"self-test FAILED: {exc}", file=sys.stderr)
        return 1
    print(
        f"self-test passed: TrainRig {__version__}, window shown in {shown:.2f} s, "
        f"{window.tabs.count()} tabs" + (f", {shots} screenshots in {screenshots}" if screenshots else "")
    )
    return 0


def _visit_results(window: Any, app: Any) -> None:
    """The wizard's sizing saved (in the self-test's in-memory database) must be listed in the
    Results tab, and its details must load when it is selected."""
    window.sizing_tab.save_sizing()
    tab = window.results_tab
    tab.refresh()
    kinds = [tab.model.row(r)["kind"] for r in range(tab.model.rowCount())]
    if "sizing" not in kinds:
        raise RuntimeError(f"the Results tab does not list the saved sizing ({tab.message.text() or kinds})")
    tab.select_rows([kinds.index("sizing")])
    deadline = time.time() + 10
    while tab.details.kind != "sizing" and time.time() < deadline:
        app.processEvents()
        time.sleep(0.02)
    if tab.details.kind != "sizing":
        raise RuntimeError("the Results tab did not show the sizing's details within 10 s")


def _grab(window: object, folder: Path | None, name: str) -> int:
    if folder is None:
        return 0
    path = folder / f"{name}.png"
    if not window.grab().save(str(path)):  # type: ignore[attr-defined]
        raise RuntimeError(f"cannot write {path}")
    return 1
