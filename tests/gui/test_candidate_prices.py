"""The wizard's candidates page: each device shows its price with its kind and date, and the user
can set their own price for a device (a vendor's quote), which the results' capex then uses."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from core.hardware.platforms import load_platforms


def _item(page, name: str):
    return next(
        page.list.item(i) for i in range(page.list.count()) if page.list.item(i).data(Qt.ItemDataRole.UserRole) == name
    )


def test_your_price_replaces_the_estimate_in_the_results(main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    page = wiz.candidates
    name = "NVIDIA GeForce RTX 4090"
    item = _item(page, name)
    usd, kind, date = next(d for d in wiz.catalogue if d.name == name).purchase_price()
    assert item.text() == f"{name} — {kind} {usd:,.0f} USD, {date}"
    assert "an estimate; set your own with Your price…" in item.toolTip()
    page.list.setCurrentItem(item)
    assert page.price_button.isEnabled()
    page.set_price(name, 1500)
    assert item.text() == f"{name} — your price 1,500"
    wiz.go(5)
    assert wiz.doc["hardware"]["prices"] == {name: 1500.0}
    (gpu,) = [c for c in wiz.result.candidates if c.device.name == name]
    desktop = load_platforms().by_id("desktop")
    assert gpu.cost.capex == pytest.approx(1500 + desktop.base_cost_usd + desktop.cpu_cost_usd)
    assert "your price 1,500 USD (set in the workload)" in gpu.cost.purchase_note
    page.set_price(name, None)  # back to the catalogue's estimate
    wiz.go(5)
    assert "prices" not in wiz.doc["hardware"]
    (gpu,) = [c for c in wiz.result.candidates if c.device.name == name]
    assert gpu.cost.capex == pytest.approx(usd + desktop.base_cost_usd + desktop.cpu_cost_usd)


def test_this_machine_has_no_price_to_set_and_filters_say_what_zero_means(main_window) -> None:
    w = main_window()
    page = w.sizing_tab.candidates
    page.list.setCurrentRow(0)  # this machine: already bought
    assert not page.price_button.isEnabled()
    assert page.max_price.value() == 0 and page.max_price.text() == "no limit"
    assert page.min_memory.text() == "any"


def test_a_workload_with_prices_opens_with_them(main_window, tmp_path) -> None:
    import json

    w = main_window()
    doc = {
        "name": "quoted",
        "model": {"preset": "seed-mlp"},
        "hardware": {"candidates": ["NVIDIA GeForce RTX 4090"], "prices": {"NVIDIA GeForce RTX 4090": 1650}},
    }
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert w.sizing_tab.open_file(path)
    assert _item(w.sizing_tab.candidates, "NVIDIA GeForce RTX 4090").text().endswith("your price 1,650")
