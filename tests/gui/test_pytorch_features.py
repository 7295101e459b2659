"""Window features that use the Python with PyTorch in a child process: calibration, tracing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from core.storage.store import Store

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="CI installs torch==2.13.0")


def test_calibrate_button_feeds_this_machine_sizings(qtbot, main_window) -> None:
    store = Store.open(None)
    w = main_window(store)
    tab = w.inventory_tab
    tab.calibrate()
    assert tab.progress.isVisible() and not tab.calibrate_button.isEnabled()
    qtbot.waitUntil(lambda: tab.calibration is not None or "failed" in tab.torch_status.text(), timeout=120000)
    assert tab.calibration is not None, tab.torch_status.text()
    assert "Calibrated in" in tab.torch_status.text()
    assert store.latest_calibration(tab.inventory["fingerprint"]) is not None
    this = next(c for c in w.sizing_tab.result.candidates if c.device.name.startswith("this machine"))
    assert "(calibrated)" in this.assumptions[0]


def test_import_pytorch_model_traces_it_into_the_wizard(qtbot, main_window, tmp_path: Path) -> None:
    code = tmp_path / "net.py"
    code.write_text(
        "import torch.nn as nn\n\ndef make():\n    return nn.Sequential(nn.Linear(75, 64), nn.ReLU(),"
        " nn.Linear(64, 10))\n"
    )
    w = main_window()
    page = w.sizing_tab.model_page
    page.trace_file(code, "make")
    qtbot.waitUntil(lambda: page.traced is not None or page.problem() is not None, timeout=120000)
    assert page.traced is not None, page.problem()
    assert page.use_code.isChecked() and "<b>5,514</b> parameters" in page.counts.text()  # 75·64+64 + 64·10+10
    assert w.sizing_tab.result.workload.analysis.parameters == 5514
    page.trace_file(tmp_path / "net.py", "nothing_here")
    qtbot.waitUntil(lambda: page._trace_job is None and page.problem() is not None, timeout=120000)
    assert "defines no function 'nothing_here'" in page.problem()


def test_a_model_imported_as_pytorch_code_trains_on_the_telemetry_tab(qtbot, main_window, tmp_path: Path) -> None:
    code = tmp_path / "net.py"
    code.write_text(
        "import torch.nn as nn\n\ndef make():\n    return nn.Sequential(nn.Linear(75, 32), nn.ReLU(),"
        " nn.Linear(32, 10))\n"
    )
    store = Store.open(tmp_path / "t.db")
    w = main_window(store)
    page = w.sizing_tab.model_page
    page.trace_file(code, "make")  # what Import PyTorch model… does once the user agreed
    qtbot.waitUntil(lambda: page.traced is not None or page.problem() is not None, timeout=120000)
    assert page.traced is not None, page.problem()
    qtbot.waitUntil(
        lambda: w.sizing_tab.result is not None and w.sizing_tab.result.workload.analysis.parameters == 2762
    )
    tab = w.telemetry_tab
    tab.epochs.setValue(1)
    tab.samples.setValue(600)
    tab.run_wizard_workload()
    qtbot.waitUntil(lambda: tab.run is not None and tab.run.done, timeout=180000)
    assert tab.run.status == "finished", tab.run.reason
    stored = store.run(tab.run.run_id)
    assert stored["workload"]["trainer"]["model"]["torch"] == {"file": str(code.resolve()), "factory": "make"}
    # the same traced model from a workload file: its code was not agreed to in this session
    page.trusted_code.clear()
    tab.run_wizard_workload()
    qtbot.waitUntil(lambda: "agreed to run that code" in tab.status.text(), timeout=60000)
