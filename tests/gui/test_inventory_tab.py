"""The Inventory tab, offscreen: detection off the GUI thread, figures and their sources shown."""

from __future__ import annotations

import json
import os

import psutil
from PySide6.QtGui import QGuiApplication

from core.storage.store import Store


def rows(tab) -> dict[str, tuple[str, str, str]]:
    out = {}
    for i in range(tab.tree.topLevelItemCount()):
        section = tab.tree.topLevelItem(i)
        for j in range(section.childCount()):
            item = section.child(j)
            out[f"{section.text(0)}/{item.text(0)}"] = (item.text(1), item.text(2), item.text(3))
    return out


def test_inventory_tab_shows_this_machines_cpu_and_cores(qtbot, main_window) -> None:
    w = main_window()
    tab = w.inventory_tab
    r = rows(tab)
    with open("/proc/cpuinfo") as fh:
        model = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    assert r["CPU/Model"][0] == model
    assert r["CPU/Logical cores"][0] == str(os.cpu_count())
    assert r["CPU/Physical cores"][0] == str(psutil.cpu_count(logical=False))
    assert r["CPU/Logical cores"][2] == "/proc/cpuinfo"
    assert "Detected in" in tab.status.text()
    # an unknown figure says why, in the source column
    unknown = [v for v in r.values() if v[0] == "unknown"]
    assert all(v[2] for v in unknown)
    # the Sizing tab's "this machine" candidate comes from this detection
    assert w.sizing_tab.machine is not None and w.sizing_tab.machine.cpu_model == model


def test_copy_and_save_snapshot(qtbot, main_window) -> None:
    store = Store.open(None)
    w = main_window(store)
    tab = w.inventory_tab
    tab.copy_json()
    copied = json.loads(QGuiApplication.clipboard().text())
    assert copied["fingerprint"] == tab.inventory["fingerprint"]
    tab.copy_text()
    assert QGuiApplication.clipboard().text().startswith("CPU: ")
    tab.save_snapshot()
    assert store.latest_inventory()["fingerprint"] == tab.inventory["fingerprint"]
    assert "Saved snapshot #1" in tab.status.text()


def test_refresh_detects_again_without_blocking(qtbot, main_window) -> None:
    w = main_window()
    tab = w.inventory_tab
    first = tab.inventory
    tab.refresh()
    assert not tab.refresh_button.isEnabled()  # busy while the worker runs
    qtbot.waitUntil(lambda: tab.inventory is not first, timeout=5000)
    assert tab.refresh_button.isEnabled()


def test_pytorch_environment_is_checked_without_importing_it(qtbot, main_window) -> None:
    import sys

    w = main_window()
    tab = w.inventory_tab
    assert tab.torch_env is None and "press Check" in tab.torch_status.text()  # nothing heavy at start-up
    tab.check_torch(sys.executable)
    qtbot.waitUntil(lambda: tab.torch_env is not None, timeout=60000)
    env = tab.torch_env
    assert env.python == sys.executable or env.ok
    assert (env.ok and tab.torch_status.text().startswith("✓")) or (
        not env.ok and tab.torch_status.text().startswith("✗")
    )
