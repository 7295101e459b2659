"""The Results tab offscreen on a store of recorded runs: filter as you type, details, compare two
runs (two curves on every metric's plot), delete with undo, exports and a damaged archive."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from gui.models.results_model import COL_KIND, COL_NAME, PAGE
from gui.tabs.results_tab import ResultsTab
from tests.gui.results_data import filled_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tab(qtbot, tmp_path):
    store, ids = filled_store(tmp_path / "results.db")
    t = ResultsTab(store)
    qtbot.addWidget(t)
    t.resize(1366, 800)
    t.show()
    qtbot.waitUntil(lambda: t.model.rowCount() == 6, timeout=5000)
    t.ids = ids
    yield t
    store.close()


def _names(t: ResultsTab) -> list[str]:
    return [t.model.index(r, COL_NAME).data() for r in range(t.model.rowCount())]


def _select_runs(t: ResultsTab, *names: str) -> None:
    rows = [_names(t).index(n) for n in names]
    t.select_rows(rows)
    assert sorted(t.selected_run_ids()) == sorted(t.model.key(r)[1] for r in rows)


def test_typing_filters_and_two_runs_overlay_with_two_curves_per_metric(qtbot, tab) -> None:
    qtbot.keyClicks(tab.search, "mlp-")
    qtbot.waitUntil(lambda: sorted(_names(tab)) == ["mlp-a wide", "mlp-b deep"], timeout=3000)
    assert tab.count.text() == "2 results"
    _select_runs(tab, "mlp-a wide", "mlp-b deep")
    assert tab.buttons["compare"].isEnabled() and not tab.buttons["rename"].isEnabled()
    qtbot.mouseClick(tab.buttons["compare"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(tab.compare.curves), timeout=10_000)
    assert tab.pane.currentWidget() is tab.compare
    counts = tab.compare.curve_counts()
    # each sampled figure and each of the trainer's progress figures: one plot, one curve per run
    assert set(counts) == {
        "cpu_percent",
        "proc_cpu_percent",
        "ram_used_bytes",
        "proc_rss_bytes",
        "loss",
        "accuracy",
        "step_s",
    }
    assert set(counts.values()) == {2}
    labels = [f"#{tab.ids[k]} {n}" for k, n in (("mlp-a", "mlp-a wide"), ("mlp-b", "mlp-b deep"))]
    assert sorted(c.name() for c in tab.compare.curves["loss"]) == sorted(labels)
    assert all(label in tab.compare.legend.text() for label in labels)  # one legend names the runs
    curve = tab.compare.curves["proc_rss_bytes"][0]
    x, y = curve.xData, curve.yData  # all of it (getData is what the view clips and downsamples)
    assert x[-1] == pytest.approx(19.9) and 0.5 < np.nanmax(y) <= 1.5  # GiB, in seconds
    # normalised: a fraction of full scale (the CPU's 100 %, the machine's RAM)
    tab.compare.normalised.setChecked(True)
    cpu = tab.compare.curves["cpu_percent"][0].yData
    assert 0.05 < np.nanmax(cpu) <= 1.0
    # x in iterations: both runs stored their progress, so the option is there and rescales x
    assert tab.compare.x_axis.model().item(1).isEnabled()
    tab.compare.x_axis.setCurrentIndex(1)
    x_it = next(c for c in tab.compare.curves["loss"] if c.name().endswith("mlp-b deep")).xData
    assert x_it[-1] == 2000  # 20 s at 100 iterations a second
    tab.compare.smoothing.setValue(50)
    assert set(tab.compare.curve_counts().values()) == {2}
    # predicted against measured for the run that came from a sizing; the other says it had none
    table = tab.compare.table
    rows = {table.item(r, 0).text(): [table.item(r, c).text() for c in range(7)] for r in range(table.rowCount())}
    b = rows[f"#{tab.ids['mlp-b']} mlp-b deep"]
    assert b[1:4] == ["8 ms", "10 ms", "-20%"]
    assert rows[f"#{tab.ids['mlp-a']} mlp-a wide"][1] == "no sizing"
    if os.environ.get("TRAINRIG_SCREENSHOTS"):
        tab.grab().save(str(ROOT / "docs/screenshot-results-compare.png"))


def test_details_show_a_runs_figures_and_its_telemetry(qtbot, tab) -> None:
    _select_runs(tab, "mlp-b deep")
    qtbot.waitUntil(lambda: tab.details.kind == "run", timeout=5000)
    text = tab.details.text.toPlainText()
    assert "Held-out accuracy" in text and "0.860" in text and "Predicted (sized on this machine)" in text
    assert "-20%" in text and "200 samples at 10 Hz" in text
    assert tab.details.plots.isVisible()
    curve = tab.details.plots.curves["proc_rss_bytes"]
    x, y = curve.xData, curve.yData
    assert len(x) == 200 and np.nanmax(y) > 0.5
    # a calibration's figures as a table, not JSON
    row = [tab.model.index(r, COL_KIND).data() for r in range(tab.model.rowCount())].index("Calibration")
    tab.select_rows([row])
    qtbot.waitUntil(lambda: tab.details.kind == "calibration", timeout=5000)
    text = tab.details.text.toPlainText()
    assert "120.0 GFLOP/s" in text and "1,500 MB/s" in text and "{" not in text
    assert not tab.details.plots.isVisible()
    row = [tab.model.index(r, COL_KIND).data() for r in range(tab.model.rowCount())].index("Sizing")
    tab.select_rows([row])
    qtbot.waitUntil(lambda: tab.details.kind == "sizing", timeout=5000)
    text = tab.details.text.toPlainText()
    assert "Candidates (2)" in text and "RTX 4090" in text and "Training FLOPs" in text


def test_delete_asks_then_undo_brings_the_run_and_its_samples_back(qtbot, tab, monkeypatch) -> None:
    store, run_id = tab.store, tab.ids["cnn"]
    samples_before = len(store.run_series(run_id)[1])
    asked: list[str] = []
    answer = [QMessageBox.StandardButton.No]
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or answer[0])
    _select_runs(tab, "small cnn")
    tab.delete_selected()
    assert "samples are deleted" in asked[0] and tab.model.total == 6  # said No: nothing gone
    answer[0] = QMessageBox.StandardButton.Yes
    tab.table.setFocus()
    qtbot.keyClick(tab.table, Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: tab.model.total == 5, timeout=5000)
    assert "small cnn" not in _names(tab) and store.result_detail("run", run_id) is None
    assert tab.undo_button.isVisible() and tab.message.text().startswith("Deleted 1 result")
    qtbot.keyClick(tab.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: tab.model.total == 6, timeout=5000)
    assert "small cnn" in _names(tab) and not tab.undo_button.isVisible()
    assert len(store.run_series(run_id)[1]) == samples_before == 100


def test_exports_the_selected_runs_samples_and_refuses_a_damaged_archive(qtbot, tab, tmp_path) -> None:
    _select_runs(tab, "mlp-a wide", "small cnn")
    out = tmp_path / "samples.csv"
    tab.export_samples_to(out, tab.selected_run_ids())
    qtbot.waitUntil(lambda: tab.message.text().startswith("Wrote") or "not written" in tab.message.text(), timeout=5000)
    assert tab.message.text().startswith("Wrote 300 samples of 2 runs")
    with out.open(newline="") as f:
        rows = list(csv.reader(f))
    assert len(rows) == 301  # a header and every sample, full resolution
    bad = tmp_path / "broken.trainrig-results.zip"
    bad.write_bytes(b"PK\x03\x04 this is not a whole archive")
    tab.import_archive_from(bad)
    qtbot.waitUntil(lambda: not tab.busy, timeout=5000)
    assert "broken.trainrig-results.zip was not imported, nothing was changed" in tab.message.text()
    assert "Traceback" not in tab.message.text() and "unexpected error" not in tab.message.text()
    assert tab.model.total == 6


def test_an_archive_moves_results_to_another_database_once(qtbot, tab, tmp_path) -> None:
    archive = tmp_path / "all.trainrig-results.zip"
    tab.export_archive_to(archive, None)
    qtbot.waitUntil(lambda: not tab.busy, timeout=10_000)
    assert tab.message.text().startswith("Wrote 6 results"), tab.message.text()
    from core.storage.store import Store

    other = ResultsTab(Store.open(tmp_path / "other.db"))
    qtbot.addWidget(other)
    other.show()
    assert other.model.total == 0
    for _ in range(2):
        other.import_archive_from(archive)
        qtbot.waitUntil(lambda: not other.busy, timeout=10_000)
    assert other.model.total == 6 and "already here, skipped" in other.message.text()
    assert sorted(_names(other)) == sorted(_names(tab))
    other.store.close()


@pytest.fixture
def big_tab(qtbot):
    """A tab on 10,000 runs (held by the fixture: the tab is deleted after the test, not in it)."""
    from core.storage.store import Store

    store = Store.open(None)
    for i in range(10_000):
        store.start_run("trained", f"bulk {i}", device="cpu")
    t = ResultsTab(store)
    qtbot.addWidget(t)
    t.resize(1366, 800)
    t.show()
    yield t
    store.close()


def test_ten_thousand_results_load_a_page_at_a_time(qtbot, big_tab) -> None:
    t = big_tab
    assert t.model.total == 10_000 and t.model.rowCount() == PAGE  # not 10,000 rows formatted at once
    assert t.count.text() == "10,000 results"
    t.table.scrollToBottom()
    qtbot.waitUntil(lambda: t.model.rowCount() > PAGE, timeout=3000)  # the view asks for the next page


def test_a_saved_sizing_opens_in_the_wizard_from_the_results_tab(qtbot, main_window) -> None:
    from gui.wizard.wizard import starter_document

    w = main_window()
    wizard = w.sizing_tab
    qtbot.waitUntil(lambda: wizard.result is not None, timeout=10_000)
    wizard.save_sizing()
    wizard.load_document({**starter_document(), "name": "something else"})
    w.tabs.setCurrentWidget(w.results_tab)
    tab = w.results_tab
    qtbot.waitUntil(lambda: "Sizing" in [tab.model.index(r, COL_KIND).data() for r in range(tab.model.rowCount())])
    row = [tab.model.index(r, COL_KIND).data() for r in range(tab.model.rowCount())].index("Sizing")
    tab.select_rows([row])
    assert tab.buttons["open_wizard"].isEnabled()
    qtbot.mouseClick(tab.buttons["open_wizard"], Qt.MouseButton.LeftButton)
    assert w.tabs.currentWidget() is wizard and wizard.doc["name"] == "seed MLP"
    assert tab.message.text().startswith("Opened sizing #")


def test_an_experiment_shows_its_summary_table(qtbot) -> None:
    from core.storage.store import Store
    from gui.widgets.result_html import details_html

    store = Store.open(None)
    ids = []
    for b in (64, 128):
        rid = store.start_run("trained", f"seed MLP: training.batch_size={b}", device="cpu")
        store.finish_run(rid, "finished", metrics={"training_time_s": 3.0, "accuracy": 0.8})
        ids.append(rid)
    rows = [
        {
            "value": 64,
            "runs": 1,
            "failed": 0,
            "training_time_s": {"mean": 12.5, "sd": 0.0, "n": 1},
            "accuracy": {"mean": 0.801, "sd": 0.01, "n": 2},
            "macro_f1": None,
            "step_s": {"mean": 0.004, "sd": 0, "n": 1},
            "predicted_step_s": 0.003,
        },
        {
            "value": 128,
            "runs": 0,
            "failed": 1,
            "training_time_s": None,
            "accuracy": None,
            "macro_f1": None,
            "step_s": None,
            "predicted_step_s": None,
        },
    ]
    eid = store.save_experiment(
        "seed MLP: training.batch_size", "one-factor", "training.batch_size", {}, ids, {"rows": rows}
    )
    html = details_html("experiment", store.result_detail("experiment", eid))
    for text in (
        "Experiment #1: seed MLP: training.batch_size",
        "one-factor",
        "#1, #2",
        "12.50",
        "0.801 ± 0.010",
        "4 ms",
        "3 ms",
        "0 (1 failed)",
    ):
        assert text in html, text


def test_a_process_scaling_shows_its_table_verdict_and_source(qtbot) -> None:
    from core.output.scaling import scaling_rows, summary_json
    from core.storage.store import Store
    from gui.widgets.result_html import details_html

    def run(t: float, shares: tuple[float, ...]) -> dict:
        ranks = [{"rank": i, "allreduce_share": s} for i, s in enumerate(shares)]
        return {"status": "finished", "metrics": {"training_time_s": t, "median_step_s": t / 40, "ranks": ranks}}

    rows = scaling_rows([(1, run(10.0, ())), (2, run(9.0, (0.05, 0.07)))], {1: 0.25}, {2: "not modelled: shared CPU"})
    store = Store.open(None)
    eid = store.save_experiment("seed MLP: processes", "scaling", "processes", {}, [], summary_json(rows, []))
    html = details_html("experiment", store.result_detail("experiment", eid))
    for text in (
        "scaling",
        "Wünsche CNTK/MXNet (35%)",
        "Wünsche Torch/TensorFlow (10%)",
        "1.11×",  # 10 s → 9 s
        "+10%",
        "7%",  # the slowest rank's all-reduce share
        "not modelled",  # in its cell; the reason under the table
        "Sizing: Not modelled: shared CPU.",
        "6.5 s",  # CNTK/MXNet: 10 s × 0.65
        "7.2 s",  # Caffe: 10 s × 0.72
        "within the published range, closest to Torch/TensorFlow (10%)",
        "Source: Wünsche 2016",
    ):
        assert text in html, text


def test_two_sizings_side_by_side_show_their_settings_and_every_candidate(qtbot, tab) -> None:
    from tests.gui.results_data import save_real_sizing

    store = tab.store
    doc = store.result_detail("sizing", tab.ids["sizing"])
    assert doc is not None
    other = save_real_sizing(store, "starter MLP, second look")
    tab.refresh()
    qtbot.waitUntil(lambda: tab.model.rowCount() == 7, timeout=5000)
    kinds = [tab.model.index(r, COL_KIND).data() for r in range(tab.model.rowCount())]
    rows = [r for r, k in enumerate(kinds) if k == "Sizing"]
    assert len(rows) == 2
    tab.select_rows(rows)
    qtbot.waitUntil(lambda: tab.details.kind == "sizings", timeout=5000)
    text = tab.details.text.toPlainText()
    assert "2 sizings side by side" in text
    assert f"#{tab.ids['sizing']} starter MLP" in text and f"#{other} starter MLP, second look" in text
    # both sizings' two candidates, each named with its sizing, the fastest and cheapest marked
    assert "Candidates (4)" in text and text.count("RTX 4090 × 1") == 2
    assert "fastest" in text and "lowest TCO" in text
    assert not tab.details.plots.isVisible()


def test_repeats_are_drawn_as_their_mean_in_a_band(qtbot, tab) -> None:
    from tests.gui.results_data import record_run

    again = record_run(tab.store, "mlp-a wide", step_s=0.004, accuracy=0.80, rss_gib=2.5)  # a repeat of mlp-a
    tab.refresh()
    qtbot.waitUntil(lambda: tab.model.rowCount() == 7, timeout=5000)
    tab.select_keys([("run", tab.ids["mlp-a"]), ("run", again), ("run", tab.ids["mlp-b"])])
    tab.compare_selected()
    qtbot.waitUntil(lambda: len(tab.compare.runs) == 3, timeout=10_000)
    compare = tab.compare
    assert set(compare.curve_counts().values()) == {3}  # off: one curve per run
    assert compare.repeats.isEnabled()
    compare.repeats.setChecked(True)
    # on: the two repeats are one curve, their mean, in a band; mlp-b alone
    assert set(compare.curve_counts().values()) == {2}
    assert {len(b) for b in compare.bands.values()} == {1}
    mean = next(c for c in compare.curves["proc_rss_bytes"] if "mean ± sd of 2 repeats" in c.name())
    assert f"(#{tab.ids['mlp-a']}, #{again})" in mean.name() and "mean ± sd of 2 repeats" in compare.legend.text()
    # the RSS grows to 1.5 and 2.5 GiB: the mean ends near 2, the band ± 0.7 around it
    assert mean.yData[-1] == pytest.approx(2.0, abs=0.02)
    upper, lower = (item.yData for item in compare.bands["proc_rss_bytes"][0].curves)
    assert upper[-1] - lower[-1] == pytest.approx(2 * np.sqrt(0.5), abs=0.03)
    compare.repeats.setChecked(False)
    assert set(compare.curve_counts().values()) == {3}


def test_a_runs_and_an_experiments_report_are_written_as_pdf_and_csv(qtbot, tab, tmp_path) -> None:
    import shutil
    import subprocess

    run_id = tab.ids["mlp-b"]
    tab.select_keys([("run", run_id)])
    assert tab.buttons["export_report"].isEnabled() and tab.buttons["rerun"].isEnabled()
    pdf = tmp_path / "run report.pdf"
    tab.export_report_to(pdf, "run", run_id)
    qtbot.waitUntil(lambda: tab.message.text().startswith("Wrote"), timeout=20_000)
    assert tab.message.text().startswith("Wrote run report.pdf (") and "run report.csv" in tab.message.text()
    rows = list(csv.reader((tmp_path / "run report.csv").open(encoding="utf-8-sig")))
    assert rows[0] == ["Run report", f"Run #{run_id}: mlp-b deep"]
    assert ["Step time", "8 ms", "10 ms", "'-20%"] in rows
    assert pdf.read_bytes().startswith(b"%PDF")
    if shutil.which("pdftotext"):  # CI installs poppler-utils
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        for phrase in ("Run report", "What ran", "Predicted", "Telemetry over time", "Page 1 of"):
            assert phrase in text, phrase
    # a sizing has the purchasing report instead; the action says so
    tab.select_keys([("sizing", tab.ids["sizing"])])
    assert not tab.buttons["export_report"].isEnabled()
    tab.export_report()
    assert "a sizing's purchasing report is the Sizing wizard's Export report" in tab.message.text()
    # a folder that does not exist: nothing written, the reason named
    tab.export_report_to(tmp_path / "missing" / "r.pdf", "run", run_id)
    assert tab.message.text().startswith("The report was not written:")
    assert not (tmp_path / "missing").exists()


def test_a_thread_scaling_shows_its_figure_with_the_physical_cores_marked(qtbot, tab) -> None:
    points = [{"threads": 1, "step_s": 0.004}, {"threads": 2, "step_s": 0.0025}, {"threads": 4, "step_s": 0.005}]
    summary = {"physical": 2, "logical": 2, "points": points, "verdict": "fastest at 2 thread(s)", "source": "Wünsche"}
    eid = tab.store.save_experiment("seed MLP: thread scaling", "threads", "threads", {}, [], summary)
    tab.refresh()
    tab.select_keys([("experiment", eid)])
    qtbot.waitUntil(lambda: tab.details.figure.isVisible(), timeout=10_000)
    assert "Step of 64 samples per thread count" in tab.details.text.toPlainText()
    plot = tab.details.figure.getPlotItem()
    (curve,) = plot.listDataItems()
    assert list(curve.xData) == [1, 2, 4] and list(curve.yData) == [16_000, 25_600, 12_800]  # 64 / step
    marker = next(i for i in plot.items if isinstance(i, pg.InfiniteLine))
    assert marker.value() == 2 and marker.label.format == "2 physical cores"
    # a run's details show its telemetry instead
    tab.select_keys([("run", tab.ids["mlp-a"])])
    qtbot.waitUntil(lambda: tab.details.plots.isVisible(), timeout=10_000)
    assert not tab.details.figure.isVisible()


def test_a_sizings_details_give_every_amount_its_currency(qtbot) -> None:
    """Capex and TCO read "164,940" in a sizing's details (its workload sets no currency: USD)."""
    from core.storage.store import Store
    from gui.widgets.result_html import details_html
    from tests.gui.results_data import save_real_sizing

    store = Store.open(None)
    sid = save_real_sizing(store)
    detail = store.result_detail("sizing", sid)
    gpu = next(c for c in detail["result"]["candidates"] if c["device"] == "NVIDIA GeForce RTX 4090")
    html = details_html("sizing", detail)
    assert f"{gpu['capex']:,.0f} USD" in html and f"{gpu['tco']:,.0f} USD" in html


def test_an_empty_list_says_how_to_fill_it(qtbot, main_window) -> None:
    w = main_window()
    tab = w.results_tab
    tab.refresh()
    assert tab.model.total == 0
    text = tab.details.text.toPlainText()
    assert text.startswith("No results yet. Save a sizing from the wizard (Save sizing, Ctrl+S)")
    assert not tab.buttons["export_archive"].isEnabled() and tab.buttons["import_archive"].isEnabled()
    assert tab.compare.legend.text().startswith("No runs to compare yet")
    from tests.gui.results_data import save_real_sizing

    save_real_sizing(tab.store)
    tab.refresh()
    assert tab.model.total == 1 and tab.buttons["export_archive"].isEnabled()
