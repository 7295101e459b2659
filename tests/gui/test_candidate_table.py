"""The results page's candidate table, held by Qt's item model (a view paints it without calling Python), and
its memory bar, whose items are set only where they change."""

from __future__ import annotations

import copy

from PySide6.QtCore import QSortFilterProxyModel, Qt

from core.estimate.sizing import size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.network.presets import load_presets
from core.spec.workload import parse_workload
from core.units import fmt_bytes
from gui.models.candidate_table_model import (
    COL_COUNT,
    COL_DEVICE,
    COL_FITS,
    COL_MEMORY,
    COL_STEP,
    HEADERS,
    ROW_ROLE,
    SORT_ROLE,
    CandidateTableModel,
)


def _sized():
    preset = load_presets()["llama-8b"]
    doc = copy.deepcopy({k: preset[k] for k in ("name", "model", "data", "training")})
    doc["hardware"] = {"gpu_count": {"min": 1, "max": 8}}
    cat = load_catalogue()
    return size_workload(parse_workload(doc), [find_device("H100 SXM", cat), find_device("RTX 4090", cat)])


def test_every_cell_shows_its_candidate_and_sorts_by_the_raw_figure(qtmodeltester) -> None:
    result = _sized()
    model = CandidateTableModel()
    model.set_rows(list(result.candidates))
    qtmodeltester.check(model)
    assert model.rowCount() == len(result.candidates) and model.columnCount() == len(HEADERS)
    for row, c in enumerate(result.candidates):
        assert model.index(row, COL_DEVICE).data() == c.device.name
        assert model.index(row, COL_COUNT).data() == str(c.count)
        assert model.index(row, COL_MEMORY).data() == fmt_bytes(c.memory.total)
        assert model.index(row, COL_MEMORY).data(SORT_ROLE) == c.memory.total
        assert model.index(row, COL_DEVICE).data(ROW_ROLE) is c
        assert f"{c.step.bound}-bound" in model.index(row, COL_STEP).data(Qt.ItemDataRole.ToolTipRole)
        assert c.device.source in model.index(row, COL_DEVICE).data(Qt.ItemDataRole.ToolTipRole)
        # an 8B model's Adam states do not fit one 24 GB card: "no", in red
        if c.fits is False:
            assert model.index(row, COL_FITS).data() == "no"
            assert model.index(row, COL_FITS).data(Qt.ItemDataRole.ForegroundRole).color().name() == "#d9534f"
    assert {model.index(r, COL_FITS).data() for r in range(model.rowCount())} >= {"no"}
    assert model.headerData(COL_MEMORY, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    # sorted by memory through the page's proxy: the smallest figure first, by bytes and not by text
    proxy = QSortFilterProxyModel()
    proxy.setSourceModel(model)
    proxy.setSortRole(SORT_ROLE)
    proxy.sort(COL_MEMORY)
    shown = [proxy.index(r, COL_MEMORY).data(SORT_ROLE) for r in range(proxy.rowCount())]
    assert shown == sorted(c.memory.total for c in result.candidates)


def test_the_same_measurement_again_leaves_the_table_as_it_is() -> None:
    model = CandidateTableModel()
    model.set_rows(list(_sized().candidates))
    resets = []
    model.modelReset.connect(lambda: resets.append(1))
    model.set_measured(None)  # what each what-if change passes when nothing was measured
    assert resets == [] and model.rowCount() > 0


def test_the_memory_bar_shows_the_last_breakdown_it_was_given(qtbot) -> None:
    from gui.widgets.memory_bar import MemoryBar
    from reports.charts import PARTS

    bar = MemoryBar()
    qtbot.addWidget(bar)
    small = next(c for c in _sized_preset("seed-mlp").candidates if c.count == 1)
    large = next(c for c in _sized().candidates if c.count == 8)
    for c in (small, large, small):  # MiB, GiB and back: every text and part follows the last one
        bar.show_breakdown(c.memory, c.capacity_bytes, c.device.name)
        stacked = max(sum(getattr(c.memory, name) for name, _ in PARTS), c.memory.total)
        cap = c.capacity_bytes or 0
        largest = max(stacked, cap if cap <= 3 * stacked else 0)  # a far larger capacity is named, not drawn
        unit = "GiB" if largest >= 2**31 else "MiB"
        assert bar.plot.getAxis("bottom").labelText == unit
        for (name, _), (sample, label) in zip(PARTS, bar.legend.items, strict=True):
            value = getattr(c.memory, name)
            assert label.isVisible() == sample.isVisible() == bar.bars[name].isVisible() == (value > 0)
            if value > 0:
                assert label.text == f"{name.replace('_', ' ')} {fmt_bytes(value)}"
        assert fmt_bytes(c.memory.total) in bar.plot.getPlotItem().titleLabel.text


def _sized_preset(name: str):
    preset = load_presets()[name]
    doc = copy.deepcopy({k: preset[k] for k in ("name", "model", "data", "training")})
    return size_workload(parse_workload(doc), [find_device("H100 SXM", load_catalogue())])


def test_the_buy_or_rent_column_is_in_view_beside_this_machines_long_name(qtbot, main_window) -> None:
    """This machine's CPU name ("this machine (Intel(R) Xeon(R) Processor, 2 cores)") made the Device column
    so wide that the last column, buy or rent, sat out of a 1366 × 768 window behind a scroll bar."""
    from gui.models.candidate_table_model import COL_BUY_OR_RENT

    w = main_window()
    w.resize(1366, 768)
    wiz = w.sizing_tab
    w.tabs.setCurrentWidget(wiz)
    wiz.go(1)
    wiz.model_page.preset.setCurrentIndex(wiz.model_page.preset.findData("gpt2-small"))
    wiz.candidates.check("NVIDIA H100 SXM")
    wiz.candidates.max_gpus.setValue(8)
    wiz.go(5)
    table = wiz.results.table
    names = [table.model().index(r, COL_DEVICE).data() for r in range(table.model().rowCount())]
    assert any(n.startswith("this machine (") for n in names) and len(names) >= 6, names
    qtbot.waitUntil(lambda: table.horizontalHeader().length() <= table.viewport().width())
    assert not table.horizontalScrollBar().isVisible()
    right = table.columnViewportPosition(COL_BUY_OR_RENT) + table.columnWidth(COL_BUY_OR_RENT)
    assert right <= table.viewport().width()
    fm = table.fontMetrics()
    assert table.columnWidth(COL_DEVICE) >= fm.horizontalAdvance("NVIDIA GeForce RTX 4090")  # GPU names whole
    row = names.index(next(n for n in names if n.startswith("this machine (")))
    tip = table.model().index(row, COL_DEVICE).data(Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith(names[row])  # the elided name, whole in its tooltip
    # a width the user drags stays through the next what-if change
    table.setColumnWidth(COL_DEVICE, 400)
    wiz.results.batch.setValue(wiz.results.batch.value() + 16)
    qtbot.waitUntil(lambda: wiz.result is not None and wiz.result.workload.training.batch_size % 16 == 0)
    assert table.columnWidth(COL_DEVICE) == 400


def test_the_memory_bar_opens_on_the_candidate_recommended(qtbot, main_window, tmp_path) -> None:
    """The table ranks the faster H100 PCIe first; the recommendation is the RTX 4090, which costs less a run:
    the table selected the top row and the memory bar drew the top row beside "Recommended: RTX 4090". (The
    case first found: this machine within a 1,000 USD budget above the RTX 4090, now advised itself.)"""
    import json

    wiz = main_window().sizing_tab
    path = tmp_path / "gpt2.json"
    doc = {
        "model": {"preset": "gpt2-small"},
        "hardware": {"candidates": ["H100 PCIe", "4090"]},
        "cost": {"rent_allowed": False},
    }
    path.write_text(json.dumps(doc))
    assert wiz.open_file(path)
    page = wiz.results
    first = page.proxy.data(page.proxy.index(0, 0), ROW_ROLE)
    best = wiz.recommendation.best
    assert first.device.name == "NVIDIA H100 PCIe" and best.device.name == "NVIDIA GeForce RTX 4090"
    (selected,) = page.table.selectionModel().selectedRows()
    assert page.proxy.data(selected, ROW_ROLE) is best
    assert "NVIDIA GeForce RTX 4090 × 1" in page.memory_bar.plot.getPlotItem().titleLabel.text


def test_a_bill_with_nothing_priced_has_no_total(qtbot, main_window, tmp_path) -> None:
    """Nothing fits, nothing is priced: the bill ended "Total — the capex — 0.00", its lines "included in the
    platform's price"."""
    import json

    wiz = main_window().sizing_tab
    path = tmp_path / "big.json"
    doc = {"model": {"preset": "llama-8b"}, "hardware": {"candidates": ["4090"]}, "cost": {"budget": 100}}
    path.write_text(json.dumps(doc))
    assert wiz.open_file(path)
    assert all(c.fits is False for c in wiz.result.candidates) and wiz.recommendation.best is None
    tree = wiz.results.bom
    items = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    assert items and all(i.text(0) != "Total" for i in items)
    assert all(i.toolTip(2) == "not priced" for i in items)
