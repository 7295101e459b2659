"""GUI tests run offscreen (QT_QPA_PLATFORM set in tests/conftest.py before any QApplication)."""

from __future__ import annotations

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
