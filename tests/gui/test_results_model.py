"""The Results table's model without a view: pages fetched lazily, figures with units, raw sort
values, the store's sorting and filtering, and Qt's own consistency checks (qtmodeltester)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from core.storage.store import Store
from gui.models.results_model import (
    COL_ACCURACY,
    COL_DATE,
    COL_F1,
    COL_KIND,
    COL_MEASURED,
    COL_MEMORY,
    COL_NAME,
    COL_PREDICTED,
    COL_TAGS,
    COL_TIME,
    COLUMNS,
    KEY_ROLE,
    SORT_ROLE,
    ResultsModel,
)
from tests.gui.results_data import filled_store, record_run

DISPLAY = Qt.ItemDataRole.DisplayRole


def _column(model: ResultsModel, col: int, role: int = DISPLAY) -> list:
    return [model.index(r, col).data(role) for r in range(model.rowCount())]


def _row_named(model: ResultsModel, name: str) -> int:
    return _column(model, COL_NAME).index(name)


def test_every_kind_is_listed_newest_first_with_figures_in_units() -> None:
    store, ids = filled_store()
    model = ResultsModel(store)
    model.refresh()
    assert model.rowCount() == model.total == 6
    kinds = _column(model, COL_KIND)
    assert sorted(kinds) == ["Calibration", "Inventory", "Run", "Run", "Run", "Sizing"]
    created = _column(model, COL_DATE, SORT_ROLE)
    assert created == sorted(created, reverse=True)  # newest first
    assert [model.index(r, 0).data(KEY_ROLE) for r in range(6)].count(("run", ids["mlp-b"])) == 1
    r = _row_named(model, "mlp-b deep")
    text = {c: model.index(r, c).data(DISPLAY) for c in range(len(COLUMNS))}
    assert text[COL_MEASURED] == "10 ms" and text[COL_PREDICTED] == "8 ms"
    assert text[COL_TIME] == "20 s" and text[COL_ACCURACY] == "0.860" and text[COL_F1] == "0.810"
    assert text[COL_MEMORY] == "768 MiB"  # the step's memory: the peak RSS's growth over the 256 MiB before
    assert model.index(r, COL_MEASURED).data(SORT_ROLE) == 0.010  # the raw seconds sort, not the text
    assert "median training step" in model.index(r, COL_MEASURED).data(Qt.ItemDataRole.ToolTipRole)
    a = _row_named(model, "mlp-a wide")
    assert model.index(a, COL_PREDICTED).data(DISPLAY) == ""  # no sizing: blank, never 0
    assert "not recorded" in model.index(a, COL_PREDICTED).data(Qt.ItemDataRole.ToolTipRole)
    sizing = _column(model, COL_KIND).index("Sizing")
    assert model.index(sizing, COL_NAME).data() == "starter MLP"


def test_pages_are_fetched_lazily_as_a_view_scrolls() -> None:
    store = Store.open(None)
    for i in range(23):
        store.start_run("trained", f"run {i:02d}", device="cpu")
    model = ResultsModel(store, page=10)
    model.refresh()
    assert (model.rowCount(), model.total, model.canFetchMore()) == (10, 23, True)
    model.fetchMore()
    assert model.rowCount() == 20
    model.fetchMore()
    assert (model.rowCount(), model.canFetchMore()) == (23, False)
    names = _column(model, COL_NAME)
    assert len(set(names)) == 23  # each page continues where the last ended: no row twice


def test_sorting_is_the_stores_order_by_the_raw_figure() -> None:
    store, _ = filled_store()
    model = ResultsModel(store, page=2)  # sorting re-queries: the first page is the smallest of all
    model.set_filters(kind="run")
    model.sort(COL_MEASURED, Qt.SortOrder.AscendingOrder)
    model.fetch_all()
    assert _column(model, COL_NAME) == ["mlp-a wide", "mlp-b deep", "small cnn"]
    model.sort(COL_MEASURED, Qt.SortOrder.DescendingOrder)
    assert _column(model, COL_NAME)[0] == "small cnn"
    model.sort(COL_ACCURACY, Qt.SortOrder.DescendingOrder)
    model.fetch_all()
    assert _column(model, COL_ACCURACY) == ["0.860", "0.810", "0.640"]


def test_filters_by_text_kind_and_tag() -> None:
    store, ids = filled_store()
    model = ResultsModel(store)
    model.set_filters(text="mlp")
    names = set(_column(model, COL_NAME))
    assert {"mlp-a wide", "mlp-b deep"} <= names and "small cnn" not in names
    model.set_filters(kind="run")
    assert model.rowCount() == 3 and set(_column(model, COL_KIND)) == {"Run"}
    store.set_tags("run", ids["cnn"], ["baseline", "paper"])
    model.set_filters(tag="paper")
    assert _column(model, COL_NAME) == ["small cnn"] and _column(model, COL_TAGS) == ["baseline, paper"]
    model.set_filters(text="no such thing anywhere")
    assert model.rowCount() == 0 and not model.canFetchMore()


def test_qt_model_tester_finds_the_model_consistent(qtmodeltester) -> None:
    store, _ = filled_store()
    for i in range(5):
        record_run(store, f"extra {i}", step_s=0.02, accuracy=0.5, seconds=2)
    model = ResultsModel(store, page=4)
    model.refresh()
    qtmodeltester.check(model)
    model.sort(COL_NAME, Qt.SortOrder.AscendingOrder)
    qtmodeltester.check(model)


def test_a_model_without_a_database_is_empty() -> None:
    model = ResultsModel(None)
    model.refresh()
    assert model.rowCount() == 0 and not model.canFetchMore()
