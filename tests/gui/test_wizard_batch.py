"""A what-if batch larger than the dataset: sized as the one batch an epoch is, and said on the results page."""

from __future__ import annotations

from PySide6.QtCore import Qt


def test_a_batch_beyond_the_dataset_is_said_beside_the_recommendation(qtbot, main_window) -> None:
    wiz = main_window().sizing_tab
    wiz.go(5)
    page = wiz.results
    page.batch.setValue(100_000_000)
    qtbot.waitUntil(lambda: wiz.result is not None and "100,000,000" in page.verdict.text())
    assert wiz.result.workload.training.batch_size == wiz.result.workload.data.samples
    assert "is more than the 80,909 samples: each epoch is one batch of 80,909" in page.verdict.text()


def test_every_node_is_counted_in_the_table_and_the_recommendation(qtbot, main_window) -> None:
    """With 10,000 nodes the table's Count read 1 and the recommendation "RTX 4090 × 1" beside a capex of 74.7 M."""
    from gui.models.candidate_table_model import COL_COUNT, COL_DEVICE

    wiz = main_window().sizing_tab
    wiz.candidates.check("this-machine", False)
    wiz.training.nodes.setValue(4)
    wiz.go(5)
    page = wiz.results
    rows = {
        page.proxy.index(r, COL_DEVICE).data(): page.proxy.index(r, COL_COUNT).data()
        for r in range(page.proxy.rowCount())
    }
    assert rows == {"NVIDIA GeForce RTX 4090": "1 × 4 nodes"}
    assert "<b>NVIDIA GeForce RTX 4090 × 1 per node × 4 nodes</b>" in page.verdict.text()


def test_a_figures_tooltip_says_what_it_is_made_of(qtbot, main_window) -> None:
    """Capex, TCO and training time repeated the RTX 4090's datasheet source."""
    from gui.models.candidate_table_model import COL_BUY_OR_RENT as COL_BUY
    from gui.models.candidate_table_model import COL_CAPEX, COL_DEVICE, COL_TCO, COL_TIME

    wiz = main_window().sizing_tab
    wiz.go(5)
    page = wiz.results
    row = next(r for r in range(page.proxy.rowCount()) if "4090" in page.proxy.index(r, COL_DEVICE).data())
    tip = {col: page.proxy.index(row, col).data(Qt.ItemDataRole.ToolTipRole) for col in (COL_CAPEX, COL_TCO, COL_TIME)}
    assert "Capex 3,399 USD = 1 × NVIDIA GeForce RTX 4090 at 1,900" in tip[COL_CAPEX]
    assert "TCO " in tip[COL_TCO] and "= capex 3,399 + energy " in tip[COL_TCO]
    assert tip[COL_TIME].startswith("Training time ") and "steps an epoch × 400 epochs" in tip[COL_TIME]
    # figures right-aligned, the buy-or-rent words left: in the last column, which takes a wide window's spare
    # width, they sat a thousand pixels from their row
    align = {col: page.proxy.index(row, col).data(Qt.ItemDataRole.TextAlignmentRole) for col in (COL_CAPEX, COL_BUY)}
    assert align[COL_CAPEX] & Qt.AlignmentFlag.AlignRight and not align[COL_BUY]


def test_a_rental_is_not_held_to_the_purchase_budget_and_many_systems_are_said(qtbot, main_window, tmp_path) -> None:
    """ "Recommended: rent H100 SXM × 1 … (deadline 100 h met, over budget)": the budget is a capex, not a rental's
    140 USD; and a use that needs seven systems showed one system's capex as the bill's total."""
    import json

    wiz = main_window().sizing_tab
    doc = {
        "name": "r",
        "model": {"preset": "resnet-50"},
        "data": {"samples": 1_281_167, "format": "jpeg"},
        "training": {"batch_size": 256, "epochs": 90, "optimizer": "sgd_momentum", "precision": "bf16_mixed"},
        "hardware": {"candidates": ["RTX 3060", "H100 SXM"]},
        "cost": {"deadline_hours": 100, "budget": 20_000},
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert wiz.open_file(path)
    wiz.go(5)
    assert wiz.recommendation.decision.verdict == "rent"
    text = wiz.results.verdict.text()
    assert text.startswith("Recommended: rent <b>") and "budget" not in text
    doc["hardware"] = {"candidates": ["RTX 4090"]}
    doc["cost"] = {"runs": 5000, "rent_allowed": False}
    path.write_text(json.dumps(doc))
    assert wiz.open_file(path)
    wiz.go(5)
    systems = wiz.recommendation.best.cost.systems_for_use
    bill = wiz.results.bom
    total = bill.topLevelItem(bill.topLevelItemCount() - 1)
    assert systems > 1 and total.text(1) == f"the capex of one system: the expected use needs {systems}"
