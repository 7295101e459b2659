"""The main window and the Sizing tab, driven offscreen with pytest-qt."""

from __future__ import annotations

import json
import sys

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase

from core.store import Store
from gui.main_window import MainWindow
from gui.models.candidate_table_model import COL_DEVICE, COL_FITS, COL_MEMORY, CandidateTableModel


def make_window(qtbot, store=None) -> MainWindow:
    w = MainWindow(store or Store.open(None))
    qtbot.addWidget(w)
    w.show()
    tab = w.sizing_tab
    qtbot.waitUntil(lambda: tab.machine is not None, timeout=5000)
    return w


def table_texts(model: CandidateTableModel, column: int) -> list[str]:
    return [model.index(r, column).data() for r in range(model.rowCount())]


def test_a_font_is_installed_so_text_is_not_empty_boxes(qapp) -> None:
    assert QFontDatabase.families(), "install fonts-dejavu-core: Qt draws no text without a font"


def test_first_start_sizes_the_seed_mlp_on_this_machine_and_a_4090(qtbot, cli, write_json) -> None:
    w = make_window(qtbot)
    tab = w.sizing_tab
    assert tab.preset.currentData() == "seed-mlp"
    devices = table_texts(tab.model, COL_DEVICE)
    assert devices[0].startswith("this machine") and devices[1] == "NVIDIA GeForce RTX 4090"
    assert table_texts(tab.model, COL_FITS) == ["yes", "yes"]
    assert "569,354 parameters" in tab.summary.text()
    # the same figures as `size --json` for the same workload
    _code, out, _ = cli("size", str(write_json(tab.workload_document())), "-c", "4090", "--json", "--no-save")
    doc = json.loads(out)
    gui_4090 = tab.result.candidates[1]
    assert gui_4090.memory.total == doc["candidates"][0]["memory_per_device"]["total"]
    assert gui_4090.train_time_s == doc["candidates"][0]["train_time_s"]
    assert "K1 = 0.09383" in tab.seed.text() and "K1 &lt; 1" in tab.seed.text()


def test_changing_the_batch_recomputes_at_once(qtbot) -> None:
    w = make_window(qtbot)
    tab = w.sizing_tab
    before = tab.result.candidates[1].memory.total
    tab.batch.setValue(8192)
    after = tab.result.candidates[1].memory.total
    assert after > before
    assert tab.model.index(1, COL_MEMORY).data() != ""


def test_a_bad_workload_file_shows_why_and_keeps_the_inputs(qtbot, tmp_path) -> None:
    w = make_window(qtbot)
    tab = w.sizing_tab
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"preset": "seed-mlp"}, "training": {"batch_size": -4}}')
    result_before = tab.result
    assert tab.load_workload_file(bad) is False
    assert "training.batch_size: must be a positive integer" in tab.message.text()
    assert tab.result is result_before and tab.batch.value() == 512


def test_a_transformer_preset_that_does_not_fit_says_so(qtbot) -> None:
    w = make_window(qtbot)
    tab = w.sizing_tab
    tab.preset.setCurrentIndex(tab.preset.findData("llama-8b"))
    assert "8,030,261,248 parameters" in tab.summary.text()
    assert table_texts(tab.model, COL_FITS)[1] == "no"  # one RTX 4090 cannot train an 8B model
    assert tab.model.index(1, COL_FITS).data(Qt.ItemDataRole.ForegroundRole) is not None


def test_save_sizing_records_it(qtbot) -> None:
    store = Store.open(None)
    w = make_window(qtbot, store)
    tab = w.sizing_tab
    tab.save_sizing()
    (row,) = store.sizings()
    assert row["name"] == "seed-mlp"


def test_window_geometry_is_remembered(qtbot) -> None:
    w = make_window(qtbot)
    w.resize(760, 560)  # inside the offscreen screen (800×600): restoreGeometry clamps to it
    w.tabs.setCurrentIndex(0)
    w.close()
    again = make_window(qtbot)
    assert (again.width(), again.height()) == (760, 560)


def test_repainting_does_not_leak_references_to_none(qtbot) -> None:
    # PySide6 6.12.0 on Python 3.11 decrements None on every paint until the app aborts.
    w = make_window(qtbot)
    w.grab()
    before = sys.getrefcount(None)
    for _ in range(300):
        w.sizing_tab.table.viewport().repaint()
        w.sizing_tab.memory_bar.plot.viewport().repaint()
    assert sys.getrefcount(None) >= before - 50
