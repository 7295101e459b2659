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
