"""Start the Qt application: palette-aware plots, the database, the main window."""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType

from PySide6.QtCore import QCoreApplication, QThreadPool
from PySide6.QtWidgets import QApplication, QMessageBox

from core.errors import StoreError
from core.storage.store import Store
from telemetry.orphan_runs import close_orphaned_runs

_collector: object | None = None


def collect_garbage_on_the_gui_thread() -> None:
    """Python's cyclic garbage collector runs in whichever thread allocates when a threshold is
    crossed: a background job's or the sampler's thread could then delete Qt widgets, which
    deadlocks against the GUI thread. Automatic collection is turned off and a timer on the GUI
    thread collects instead (pyqtgraph's GarbageCollector, as its documentation advises)."""
    global _collector
    if _collector is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        _collector = GarbageCollector(interval=0.5)


def configure_app(app: QApplication) -> None:
    import pyqtgraph as pg

    collect_garbage_on_the_gui_thread()
    QCoreApplication.setOrganizationName("TrainRig")
    QCoreApplication.setApplicationName("TrainRig")
    app.setStyle("Fusion")
    from PySide6.QtGui import QIcon

    from core.paths import resource_path

    icon = QIcon()
    for png in sorted(resource_path("icons").glob("trainrig-*.png")):
        icon.addFile(str(png))
    app.setWindowIcon(icon)
    palette = app.palette()
    pg.setConfigOptions(
        antialias=True,
        background=palette.color(palette.ColorRole.Base),
        foreground=palette.color(palette.ColorRole.Text),
    )


def _report_unexpected(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """A bug in a slot: the window stays up, the user reads one line, the traceback goes to the log."""
    from core.storage.error_log import unexpected_message

    QMessageBox.critical(None, "TrainRig — unexpected error", unexpected_message(exc.with_traceback(tb), "window"))


def run_app(db_path: Path) -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    configure_app(app)
    try:
        store: Store | None = Store.open(db_path)
        close_orphaned_runs(store)  # runs a killed TrainRig left "running"
    except StoreError as exc:
        QMessageBox.warning(None, "TrainRig — database", f"{exc}\n\nTrainRig starts without saving results this time.")
        store = None
    from gui.main_window import MainWindow

    window = MainWindow(store)
    sys.excepthook = _report_unexpected
    window.show()
    code = app.exec()
    QThreadPool.globalInstance().waitForDone(2000)
    if store is not None:
        store.close()
    return int(code)
