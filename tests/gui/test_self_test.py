"""`trainrig --self-test`: the check CI runs on the frozen app, here from source (needs PySide6)."""

from __future__ import annotations

from pathlib import Path


def test_self_test_visits_every_tab_and_page(tmp_path: Path, cli) -> None:
    code, out, err = cli("--self-test", "--screenshots", str(tmp_path))
    assert code == 0, err
    assert "self-test passed" in out
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names[0] == "1-inventory.png" and len(names) == 9 and names[-2:] == ["3-telemetry.png", "4-results.png"]
    assert "4 tabs" in out  # the Results tab listed the wizard's saved sizing and showed its details


def test_the_self_test_leaves_the_users_settings_alone(tmp_path: Path, cli) -> None:
    # it used to save its own 1366 × 768 window over the user's remembered geometry
    from PySide6.QtCore import QByteArray, QSettings

    user = tmp_path / "user-settings"
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(user))
    try:
        mine = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "TrainRig", "TrainRig")
        mine.setValue("main_window/geometry", QByteArray(b"the user's window"))
        mine.setValue("main_window/tab", 2)
        mine.sync()
        code, out, err = cli("--self-test")
        assert code == 0 and "self-test passed" in out, err
        QSettings.setDefaultFormat(QSettings.Format.IniFormat)
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(user))
        after = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "TrainRig", "TrainRig")
        assert after.value("main_window/geometry") == QByteArray(b"the user's window")
        assert int(after.value("main_window/tab")) == 2
    finally:
        QSettings.setDefaultFormat(QSettings.Format.NativeFormat)
