"""The results page's "Measure on this GPU": disabled with the reason on a machine without a GPU,
a failure shown as a message from the worker thread, and the "Measured & scaled" column."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt

from core.estimate.profile_read import read_profile_file
from core.estimate.profile_scale import scale_profile
from core.hardware.catalogue import find_device, load_catalogue
from core.spec.workload import parse_workload
from gui.models.candidate_table_model import COL_DEVICE, COL_MEASURED, COL_STEP
from gui.wizard.measure_panel import MEASURE_TIP, MeasurePanel
from telemetry.machine import GpuSummary
from telemetry.pytorch_env import TorchEnvironment
from tests.machines import NO_GPU

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"


def test_without_a_gpu_the_button_is_disabled_and_says_why(qtbot, main_window) -> None:
    w = main_window()
    panel = w.sizing_tab.results.measure_panel
    machine = w.sizing_tab.machine
    assert machine is not None
    if machine.gpus:  # a developer's machine with a GPU: check the same on a machine without one
        w.sizing_tab.results.measure_panel.set_machine(NO_GPU)
    assert not panel.button.isEnabled()
    tip = panel.button.toolTip()
    assert "needs an NVIDIA GPU" in tip and "has none" in tip and "--trace" in tip
    assert not panel.progress.isVisible() and not panel.cancel_button.isVisible()


def test_with_a_gpu_the_button_is_enabled_with_what_it_does(qtbot) -> None:
    panel = MeasurePanel()
    qtbot.addWidget(panel)
    gpu = GpuSummary(name="NVIDIA H100 80GB HBM3", memory_bytes=85520809984, uuid="GPU-0")
    panel.set_machine(replace(NO_GPU, gpus=(gpu,), gpu_note=""))
    assert panel.button.isEnabled() and panel.button.toolTip() == MEASURE_TIP
    panel.set_machine(NO_GPU)
    assert not panel.button.isEnabled()


def test_a_failed_measurement_is_a_message_and_the_window_stays_usable(qtbot, monkeypatch) -> None:
    import gui.wizard.measure_panel as module

    env = TorchEnvironment("python3", True, "PyTorch 2.13.0+cpu, CPU-only build", cuda_available=False)
    monkeypatch.setattr(module, "find_torch_environment", lambda python=None: env)
    panel = MeasurePanel()
    qtbot.addWidget(panel)
    panel.show()
    workload = parse_workload(
        {
            "name": "tiny",
            "model": {"input_shape": [4], "layers": [{"type": "linear", "out_features": 2}]},
            "data": {"samples": 100, "outputs": 2},
            "training": {"batch_size": 8, "epochs": 1},
        }
    )
    panel.start(workload, [], load_catalogue())
    assert panel.running and panel.cancel_button.isVisible()
    qtbot.waitUntil(lambda: not panel.running, timeout=10000)
    assert "cannot use the GPU" in panel.status.text() and "CPU-only" in panel.status.text()
    assert not panel.cancel_button.isVisible()


def test_the_table_marks_the_candidates_that_use_the_measured_step(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    doc = {**wiz.doc, "hardware": {"candidates": ["H100 SXM", "H100 PCIe", "TPU v4"], "gpu_count": 1}}
    wiz.load_document(doc)
    wiz.go(5)
    assert wiz.recommendation is not None
    cat = load_catalogue()
    devices = [c.device for c in wiz.recommendation.result.candidates]
    result = scale_profile(
        read_profile_file(FIXTURES / "h100-sxm-bert-base-bf16.trace.json"), find_device("H100 SXM", cat), devices
    )
    assert wiz.results.table.isColumnHidden(COL_MEASURED)  # nothing measured: no empty column
    wiz._measuring_key = _key(wiz)
    wiz._measured(result)
    assert not wiz.results.table.isColumnHidden(COL_MEASURED)
    proxy = wiz.results.proxy
    rows = {proxy.index(r, COL_DEVICE).data(): r for r in range(proxy.rowCount())}
    pcie = proxy.index(rows["NVIDIA H100 PCIe"], COL_MEASURED)
    assert pcie.data().startswith("● ") and "ms" in pcie.data()
    assert "Measured on NVIDIA H100 80GB HBM3" in pcie.data(
        Qt.ItemDataRole.ToolTipRole
    ) and "The model predicts" in pcie.data(Qt.ItemDataRole.ToolTipRole)
    tpu = proxy.index(rows["Google TPU v4"], COL_MEASURED)
    assert tpu.data() == "" and "TPU" in tpu.data(Qt.ItemDataRole.ToolTipRole)
    # the step's tooltip says how close the GPU model has come to published measurements (not for a TPU)
    step_tip = proxy.index(rows["NVIDIA H100 PCIe"], COL_STEP).data(Qt.ItemDataRole.ToolTipRole)
    assert "48 of 48 within 25 %, mean error 9 %" in step_tip and "GeForce" not in step_tip
    # and on the lent GPUs' recorded steps like this one, as rich text Qt word-wraps
    assert step_tip.startswith("<qt>") and "recorded" in step_tip.split("How close")[0]
    assert "published PyTorch matmul" not in step_tip  # one submission for the H100 PCIe: not used
    assert "How close" not in proxy.index(rows["Google TPU v4"], COL_STEP).data(Qt.ItemDataRole.ToolTipRole)
    assert proxy.headerData(COL_MEASURED, Qt.Orientation.Horizontal) == "Measured & scaled"
    # another batch: the measurement no longer describes this step and is dropped
    wiz._what_if({"batch_size": 17, "gpus": 1, "precision": wiz.doc["training"].get("precision", "fp32")})
    assert wiz.measured is None and wiz.results.table.isColumnHidden(COL_MEASURED)
    assert proxy.index(rows["NVIDIA H100 PCIe"], COL_MEASURED).data() == ""
    assert "measure again" in wiz.results.measure_panel.status.text()


def _key(wiz):
    from gui.wizard.wizard import _measure_key

    return _measure_key(wiz.recommendation.result.workload)
