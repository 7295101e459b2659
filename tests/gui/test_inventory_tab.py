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


def test_refresh_detects_again_without_blocking(qtbot, main_window, monkeypatch) -> None:
    import threading

    from gui.tabs import inventory_tab

    w = main_window()
    tab = w.inventory_tab
    first = tab.inventory
    release, threads = threading.Event(), []

    def slow_detection() -> dict:
        threads.append(threading.current_thread())
        assert release.wait(30), "the test never released the detection"
        return {**first, "fingerprint": "after-refresh"}

    monkeypatch.setattr(inventory_tab, "collect_inventory", slow_detection)
    tab.refresh()  # returns while the detection is still held: the window's thread is free
    assert tab.inventory is first and tab.status.text() == "Detecting this machine…"
    assert not tab.refresh_button.isEnabled()  # busy while the worker runs
    qtbot.waitUntil(lambda: threads != [], timeout=5000)
    assert threads[0] is not threading.main_thread()
    release.set()
    qtbot.waitUntil(lambda: tab.inventory is not first, timeout=5000)
    assert tab.inventory["fingerprint"] == "after-refresh" and tab.refresh_button.isEnabled()


CPU_ONLY = '{"python": "3.11.9", "torch": "2.13.0", "cuda_available": false, "cuda_build": null, "devices": []}'


def fake_python(folder, body: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "python"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return str(p)


def test_pytorch_environment_check_shows_what_the_chosen_python_has(qtbot, main_window, tmp_path, monkeypatch) -> None:
    import sys

    # every other place the check looks holds a Python without PyTorch
    no_torch = fake_python(tmp_path / "bin", "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1")
    monkeypatch.setattr(sys, "executable", no_torch)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("TRAINRIG_PYTHON", raising=False)
    w = main_window()
    tab = w.inventory_tab
    assert tab.torch_env is None and "press Check" in tab.torch_status.text()  # nothing heavy at start-up
    good = fake_python(tmp_path / "env", f"echo '{CPU_ONLY}'")
    tab.check_torch(good)
    qtbot.waitUntil(lambda: tab.torch_env is not None, timeout=30000)
    assert tab.torch_env.ok and tab.torch_env.python == good
    assert tab.torch_status.text() == f"✓ {good}: PyTorch 2.13.0 on Python 3.11.9, CPU-only build"
    tab.torch_env = None
    broken = fake_python(tmp_path / "broken", "echo 'boom' >&2; exit 3")
    tab.check_torch(broken)
    qtbot.waitUntil(lambda: tab.torch_env is not None, timeout=30000)
    assert not tab.torch_env.ok and tab.torch_status.text() == f"✗ {broken} cannot import PyTorch: boom"


# a fresh interpreter: this test process may have imported PyTorch through other tests
WINDOW_CHECKS_PYTORCH = """
import json, sys
from PySide6.QtWidgets import QApplication
from core.storage.store import Store
from gui.app import configure_app
from gui.main_window import MainWindow

app = QApplication([])
configure_app(app)
w = MainWindow(Store.open(None))
w.show()
tab = w.inventory_tab
tab.check_torch(sys.executable)
while tab.torch_env is None or tab.inventory is None:
    app.processEvents()
print(json.dumps({"torch_imported": "torch" in sys.modules, "status": tab.torch_status.text()}))
w.close()
"""


def test_pytorch_environment_is_checked_without_importing_it(tmp_path) -> None:
    import importlib.util
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", WINDOW_CHECKS_PYTORCH], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["torch_imported"] is False  # the window ran the check, in a child process only
    if importlib.util.find_spec("torch") is not None:  # the interpreter it asked has PyTorch
        from importlib.metadata import version

        assert answer["status"].startswith(f"✓ {sys.executable}: PyTorch {version('torch')} on Python ")


def test_a_stored_calibration_is_shown_at_start_with_its_date(qtbot, main_window) -> None:
    """The sizings of this machine use the calibration stored for it: the tab says so at start, with
    the date it was measured, instead of "Not checked yet"."""
    from core.storage.store import Store
    from telemetry.inventory import collect_inventory

    store = Store.open(None)
    fingerprint = collect_inventory()["fingerprint"]
    store.save_calibration(
        fingerprint,
        {
            "cpu_fp32_matmul_flops": 1.0e11,
            "cpu_linear_train_flops": 8.0e10,
            "cpu_conv_train_flops": 4.0e10,
            "step_overhead": {"per_op_s": 5e-6, "per_step_s": 2e-4},
            "seconds": 61.2,
            "measured_at": "2026-11-20T09:15:00+00:00",
        },
    )
    w = main_window(store)
    qtbot.waitUntil(lambda: w.inventory_tab.inventory is not None, timeout=10000)
    text = w.inventory_tab.torch_status.text()
    assert text.startswith("Using the calibration of 2026-11-20 09:15 UTC (stored for this machine): ")
    assert "training steps reach 80 GFLOP/s on linear and 40 on convolutional layers" in text
    assert "5.0 µs per op" in text and "Not checked yet" not in text
    assert w.sizing_tab.calibration is not None  # and the wizard's sizings of this machine use it


def test_an_unreadable_stored_calibration_says_to_calibrate_again(qtbot, main_window) -> None:
    from core.storage.store import Store
    from telemetry.inventory import collect_inventory

    store = Store.open(None)
    store.save_calibration(collect_inventory()["fingerprint"], {"from": "an old version"})
    w = main_window(store)
    qtbot.waitUntil(lambda: w.inventory_tab.inventory is not None, timeout=10000)
    text = w.inventory_tab.torch_status.text()
    # the date it was stored, and what to do
    assert text.startswith("The calibration stored for this machine (20")
    assert text.endswith("calibrate again to refresh it.")


def test_three_stored_calibrations_are_combined_and_their_spread_shown(qtbot, main_window) -> None:
    from core.storage.store import Store
    from telemetry.inventory import collect_inventory

    store = Store.open(None)
    fingerprint = collect_inventory()["fingerprint"]
    for linear, when in (
        (80e9, "2026-11-20T09:00:00+00:00"),
        (120e9, "2026-11-21T09:00:00+00:00"),
        (100e9, "2026-11-22T09:15:00+00:00"),
    ):
        store.save_calibration(
            fingerprint,
            {
                "cpu_fp32_matmul_flops": 1.0e11,
                "cpu_linear_train_flops": linear,
                "cpu_conv_train_flops": 4.0e10,
                "step_overhead": {"per_op_s": 5e-6, "per_step_s": 2e-4},
                "seconds": 61.2,
                "measured_at": when,
            },
        )
    w = main_window(store)
    qtbot.waitUntil(lambda: w.inventory_tab.inventory is not None, timeout=10000)
    text = w.inventory_tab.torch_status.text()
    assert text.startswith("Using the median of the last 3 calibrations, which measured linear layers 80–120 GFLOP/s")
    assert "(the latest of 2026-11-22 09:15 UTC, stored for this machine)" in text
    assert "training steps reach 100 GFLOP/s on linear" in text  # the median
    assert w.sizing_tab.calibration["cpu_linear_train_flops"] == 100e9 and w.sizing_tab.calibration["rounds"] == 3


def test_a_calibration_on_a_busy_machine_is_reported_with_its_change(qtbot, main_window) -> None:
    w = main_window()
    qtbot.waitUntil(lambda: w.inventory_tab.inventory is not None, timeout=10000)
    from core.estimate.calibration import unsteady_note
    from tests.unit.test_calibration import CAL  # its matrix product: 100 GFLOP/s at the start

    result = {**CAL, "cpu_fp32_matmul_flops_end": 0.6e11, "seconds": 41.0, "measured_at": "2026-11-25T19:30:00+00:00"}
    result["unsteady"] = unsteady_note(result)  # as telemetry.calibrate.run_calibration adds it
    w.inventory_tab._calibrated(result, "fingerprint-of-a-test")
    text = w.inventory_tab.torch_status.text()
    assert text.startswith("Calibrated in 41.0 s: training steps reach 80 GFLOP/s on linear")
    assert "speed changed by -40% during the calibration" in text and "calibrate again when the machine is idle" in text


def test_a_gpu_machines_calibration_says_the_host_speed_its_sizings_use(qtbot, main_window) -> None:
    w = main_window()
    qtbot.waitUntil(lambda: w.inventory_tab.inventory is not None, timeout=10000)
    from tests.unit.test_calibration import CAL

    # as telemetry.calibrate.measure_gpu_host keeps it: a lent H100's host probe of 1.10 ms
    result = {**CAL, "seconds": 95.0, "measured_at": "2026-11-26T09:00:00+00:00"}
    result["host"] = {**(CAL.get("host") or {}), "gpu_host_speed": 1.537, "gpu_host_note": "…"}
    w.inventory_tab._calibrated(result, "fingerprint-of-a-test")
    text = w.inventory_tab.torch_status.text()
    assert "its GPU's host: the host probe's step measured 1.54× the reference host's speed" in text
    assert w.sizing_tab.calibration["host"]["gpu_host_speed"] == 1.537  # what this machine's sizings are given
