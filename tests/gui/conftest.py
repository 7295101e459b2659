"""GUI tests run offscreen (QT_QPA_PLATFORM set in tests/conftest.py before any QApplication)."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest
from PySide6.QtCore import QCoreApplication, QSettings, QThreadPool


@pytest.fixture(autouse=True)
def _qt_settings(tmp_path, qapp):
    QCoreApplication.setOrganizationName("TrainRigTests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    from gui.app import configure_app

    configure_app(qapp)
    QCoreApplication.setOrganizationName("TrainRigTests")
    yield
    assert QThreadPool.globalInstance().waitForDone(5000), "a background job was left running"
    # A test's windows are garbage once it ends. Collect them here, on the GUI thread: left to a
    # later collection, Python may run it in a worker thread of the next test, where deleting Qt
    # widgets deadlocks against the GUI thread (seen: ~QObject waiting for the GIL in a pool
    # thread while the GUI thread built a QListWidget).
    gc.collect()


@pytest.fixture(autouse=True)
def unsaved_changes_answer(monkeypatch):
    """Closing a window whose workload has unsaved changes asks the user (a modal dialog that would
    wait forever offscreen): tests answer "discard" unless they set another answer, and see the
    questions asked in ``asked``."""
    from gui.wizard import session

    answer = SimpleNamespace(value="discard", asked=[])

    def ask(parent, name: str) -> str:
        answer.asked.append(name)
        return answer.value

    monkeypatch.setattr(session, "ask_save_changes", ask)
    return answer


@pytest.fixture
def main_window(qtbot):
    """A main window on an in-memory database, shown, with this machine detected."""
    from core.storage.store import Store
    from gui.main_window import MainWindow

    def make(store=None) -> MainWindow:
        w = MainWindow(store or Store.open(None))
        qtbot.addWidget(w)
        w.show()
        qtbot.waitUntil(lambda: w.sizing_tab.machine is not None, timeout=5000)
        return w

    return make
