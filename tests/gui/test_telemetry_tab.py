"""The Telemetry tab offscreen: a real run of the wizard's workload plotted live and finished, a
second run cancelled with its samples kept, and closing the window while a run is in progress."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from core.storage.store import Store

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and signals as on POSIX")
ROOT = Path(__file__).resolve().parents[2]


def test_a_run_from_the_tab_is_plotted_live_finishes_and_a_second_is_cancelled(
    qtbot, main_window, tmp_path: Path, monkeypatch
) -> None:
    asked: list[str] = []
    answer = [QMessageBox.StandardButton.Yes]  # if an assertion fails mid-run, closing must not block
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[1]) or answer[0])
    store = Store.open(tmp_path / "t.db")
    w = main_window(store)
    tab = w.telemetry_tab
    w.tabs.setCurrentWidget(tab)
    w.resize(1400, 900)
    tab.epochs.setValue(3)
    tab.samples.setValue(3000)
    run_here = w.sizing_tab.results.run_here_button
    assert run_here.isEnabled()  # the starter workload has a this-machine candidate
    w.tabs.setCurrentWidget(w.sizing_tab)
    qtbot.mouseClick(run_here, Qt.MouseButton.LeftButton)
    assert w.tabs.currentWidget() is tab
    qtbot.waitUntil(lambda: tab.run is not None and tab.run.latest is not None, timeout=60_000)
    qtbot.waitUntil(lambda: tab.plots.curves["cpu_percent"].getData()[0] is not None, timeout=10_000)
    live = len(tab.plots.curves["cpu_percent"].getData()[0])
    assert live >= 3 and tab.frames >= 1  # points arrive while it trains
    qtbot.waitUntil(lambda: "epoch" in tab.progress.format() and "ETA" in tab.progress.format(), timeout=5_000)
    if os.environ.get("TRAINRIG_SCREENSHOTS"):
        tab.grab().save(str(ROOT / "docs/screenshot-telemetry-running.png"))
    qtbot.waitUntil(lambda: tab.run.done and not tab.timer.isActive(), timeout=180_000)
    run = tab.run
    assert run.status == "finished", run.reason
    assert tab.progress.value() == 1000 and tab.progress.format().startswith("finished")
    assert tab.status.text().startswith("Finished in") and "held-out accuracy" in tab.status.text()
    x, y = tab.plots.curves["proc_rss_bytes"].getData()
    # the trainer's RSS in GiB, well above 50 MiB (a sample the sampler could not read is a gap, NaN)
    assert len(x) >= live and np.nanmax(y) > 0.05
    lx, loss = tab.plots.loss_curve.getData()
    assert len(lx) >= 2 and loss[-1] < loss[0]
    assert tab.plots.step_line.isVisible()  # the wizard's this-machine step time as a reference
    assert "Step time</b>: predicted" in tab.comparison.text() and "measured" in tab.comparison.text()
    assert store.run(run.run_id)["status"] == "finished"
    # the wizard's next sizing of this network here is corrected by what the run measured
    here = next(c for c in w.sizing_tab.result.candidates if c.device.is_this_machine)
    assert any("corrected by 1 local training run(s) on this machine" in a for a in here.assumptions)
    tab.normalised.setChecked(True)
    tab.smoothing.setValue(50)
    tab.x_axis.setCurrentIndex(1)
    nx, ny = tab.plots.curves["cpu_percent"].getData()
    assert ny[~(ny != ny)].max() <= 1.0 and nx.max() <= run.metrics["iterations"]
    if os.environ.get("TRAINRIG_SCREENSHOTS"):
        tab.normalised.setChecked(False)
        tab.smoothing.setValue(1)
        tab.x_axis.setCurrentIndex(0)
        tab.grab().save(str(ROOT / "docs/screenshot-telemetry.png"))

    tab.epochs.setValue(500)  # long enough to cancel
    qtbot.mouseClick(tab.start_last, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: tab.run is not run and tab.run is not None, timeout=60_000)
    second = tab.run
    qtbot.waitUntil(lambda: second.latest is not None and second.sampler.buffer.total >= 10, timeout=60_000)
    asked: list[str] = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[1]) or QMessageBox.StandardButton.No)
    assert not w.close() and asked == ["A run is in progress"]  # the user said no: still open
    qtbot.keyClick(tab, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: second.done and not tab.timer.isActive(), timeout=20_000)
    assert second.status == "cancelled"
    assert tab.status.text().startswith("Cancelled: cancelled by the user")
    stored = store.run(second.run_id)
    assert stored["status"] == "cancelled"
    assert len(store.run_samples(second.run_id)[1]) >= 10  # the samples up to the cancel are kept
    assert w.close()  # nothing running: closes without asking again
    assert asked == ["A run is in progress"]


def test_a_workload_the_trainer_cannot_run_is_refused_in_the_tab(qtbot, main_window, write_json) -> None:
    w = main_window()
    tab = w.telemetry_tab
    tab.run_file(write_json({"name": "gpt", "model": {"preset": "gpt2-small"}}))
    qtbot.waitUntil(lambda: "does not support the layer type" in tab.status.text(), timeout=30_000)
    assert tab.run is None and tab.start_file.isEnabled() and not tab.cancel_button.isEnabled()


def test_a_stored_run_is_run_again_from_the_results_tab_with_its_settings(qtbot, main_window, tmp_path) -> None:
    import json

    from core.spec.workload import parse_workload
    from telemetry.training import trainer_spec

    doc = json.loads((ROOT / "examples/seed-mlp.json").read_text())
    spec = trainer_spec(parse_workload(doc), epochs=1, samples=600, seed=3)
    store = Store.open(tmp_path / "t.db")
    old = store.start_run("trained", "seed MLP", workload={"document": doc, "trainer": spec}, device="cpu")
    store.finish_run(old, "finished", exit_code=0)
    w = main_window(store)
    results, tab = w.results_tab, w.telemetry_tab
    w.tabs.setCurrentWidget(results)
    results.refresh()
    qtbot.waitUntil(lambda: results.model.rowCount() == 1, timeout=5000)
    results.select_keys([("run", old)])
    qtbot.mouseClick(results.buttons["rerun"], Qt.MouseButton.LeftButton)
    assert w.tabs.currentWidget() is tab
    qtbot.waitUntil(lambda: tab.run is not None and tab.run.done and not tab.timer.isActive(), timeout=120_000)
    assert tab.run.status == "finished", tab.run.reason
    again = store.run(tab.run.run_id)
    assert again["name"] == f"run #{old} (seed MLP) (re-run)"
    assert again["workload"]["trainer"] == spec  # epochs 1, 600 samples, seed 3: as it ran, not the tab's
    assert again["metrics"]["epochs"] == 1
    # a run of several processes is re-run from the command line; the tab says how
    assert not tab.rerun({"document": doc, "trainer": spec, "launch": {"nproc_per_node": 2, "nnodes": 1}}, "run #9")
    assert "--nproc-per-node 2" in tab.status.text()
    assert not tab.rerun({"document": doc}, "run #10")
    assert tab.status.text() == "run #10 was stored without its trainer settings: it cannot be re-run."


def test_a_one_factor_experiment_from_the_tab_runs_each_value_and_lands_in_the_results_tab(
    qtbot, main_window, tmp_path
) -> None:
    from gui.widgets.experiment_dialog import ExperimentDialog

    store = Store.open(tmp_path / "t.db")
    w = main_window(store)
    tab, results = w.telemetry_tab, w.results_tab
    w.tabs.setCurrentWidget(tab)
    tab.epochs.setValue(1)
    tab.samples.setValue(600)
    dialog = ExperimentDialog(None, tab)
    qtbot.addWidget(dialog)
    dialog.file = ROOT / "examples/seed-mlp.json"
    dialog.field.setCurrentText("batch_size")
    assert dialog.values.text() == "64,128,256,512"  # the factor's starting values
    # a bad value is refused in the dialog, naming it, and nothing runs
    dialog.values.setText("64,0")
    dialog.accept()
    assert dialog.request is None and dialog.message.text().startswith("Not started: ")
    assert "batch_size=0" in dialog.message.text()
    dialog.values.setText("64,128,256")
    dialog.accept()
    assert dialog.request is not None and len(dialog.request.variants) == 3
    tab.start_experiment(dialog.request)
    assert tab.running and not tab.start_file.isEnabled() and tab.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: tab.experiment_progress is not None, timeout=60_000)
    qtbot.waitUntil(lambda: tab.experiment is None, timeout=180_000)
    assert tab.status.text().startswith("Experiment finished: 3 runs of batch_size (64, 128, 256); experiment #1")
    assert tab.start_file.isEnabled() and tab.show_experiment.isEnabled()
    exp = store.experiment(1)
    assert exp["kind"] == "one-factor" and exp["status"] == "finished" and len(exp["run_ids"]) == 3
    assert [r["value"] for r in exp["summary"]["rows"]] == [64, 128, 256]
    assert all(r["runs"] == 1 and r["accuracy"]["mean"] > 0 for r in exp["summary"]["rows"])
    # Show in Results: its table; Compare overlays its three runs
    qtbot.mouseClick(tab.show_experiment, Qt.MouseButton.LeftButton)
    assert w.tabs.currentWidget() is results and results.selected_keys() == [("experiment", 1)]
    qtbot.waitUntil(lambda: "Per value of batch_size" in results.details.text.toPlainText(), timeout=10_000)
    qtbot.mouseClick(results.buttons["compare"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(results.compare.runs) == 3, timeout=20_000)
    assert set(results.compare.curve_counts().values()) == {3}
    if os.environ.get("TRAINRIG_SCREENSHOTS"):
        results.grab().save(str(ROOT / "docs/screenshot-experiment.png"))


def test_cancel_while_a_run_is_being_prepared_starts_nothing(qtbot, main_window, monkeypatch) -> None:
    """Cancel was enabled while the run was sized and PyTorch looked for, but did nothing then: the trainer
    started a moment later (and did so too after closing the window while preparing)."""
    import threading
    from types import SimpleNamespace

    import gui.tabs.telemetry_tab as telemetry_tab

    release, started, found = threading.Event(), [], []

    def find(python):
        release.wait(10)
        found.append(python)
        return SimpleNamespace(ok=True, python="python3", message="")

    monkeypatch.setattr(telemetry_tab, "find_torch_environment", find)
    monkeypatch.setattr(telemetry_tab, "training_run", lambda *a, **k: started.append(a) or pytest.fail("started"))
    w = main_window()
    tab = w.telemetry_tab
    tab.run_wizard_workload()
    qtbot.waitUntil(lambda: "Preparing" in tab.status.text())
    assert tab.cancel_button.isEnabled() and tab.running
    tab.cancel()
    assert tab.status.text() == "Cancelled before the trainer started: no run was made."
    assert not tab.running and tab.start_wizard.isEnabled() and not tab.cancel_button.isEnabled()
    release.set()  # the preparation ends after the cancel
    qtbot.waitUntil(lambda: bool(found))
    qtbot.wait(300)  # its result delivered to the window's thread
    assert started == [] and tab.run is None
    assert tab.status.text() == "Cancelled before the trainer started: no run was made."
