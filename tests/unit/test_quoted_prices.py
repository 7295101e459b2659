"""The user's own price for a device (hardware.prices, a vendor's quote) replaces the catalogue's
street or launch price, which the report marks as dated estimates."""

from __future__ import annotations

import pytest

from core.advice.recommendation import recommend
from core.errors import WorkloadError
from core.hardware.catalogue import find_device, load_catalogue
from core.output.report import build_report
from core.spec.workload import parse_workload
from telemetry.candidates import resolve_candidates

CATALOGUE = load_catalogue()
EUR = {"currency": "EUR", "exchange_rate": {"per_usd": 0.92, "date": "2026-11-01"}, "host_cost": 2500}


def workload(prices: dict | None = None, cost: dict | None = None):
    hw = {"candidates": ["NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000"]}
    if prices is not None:
        hw["prices"] = prices
    return parse_workload({"model": {"preset": "seed-mlp"}, "hardware": hw, "cost": cost or {"host_cost": 2500}})


def test_your_price_sets_the_capex_in_your_currency() -> None:
    w = workload({"NVIDIA GeForce RTX 4090": 1750}, EUR)
    devices, _ = resolve_candidates([], w)
    rec = recommend(w, devices)
    by_name = {c.device.name: c for c in rec.result.candidates}
    quoted = by_name["NVIDIA GeForce RTX 4090"]
    # 1,750 EUR as quoted, not the catalogue's USD price converted, plus the 2,500 EUR host
    assert quoted.cost.capex == pytest.approx(1750 + 2500)
    assert quoted.device.purchase_price()[1] == "quoted"  # type: ignore[index]
    assert "your price 1,750 EUR (set in the workload)" in quoted.cost.purchase_note
    # the other candidate keeps the catalogue's estimate, and says it is one
    other = by_name["NVIDIA RTX A6000"]
    usd, kind, _ = find_device("RTX A6000", CATALOGUE).purchase_price()  # type: ignore[misc]
    assert other.cost.capex == pytest.approx(usd * 0.92 + 2500) and kind in ("street", "launch")
    assert ", an estimate" in other.cost.purchase_note
    # and that the RTX A6000 is no longer made
    assert other.cost.purchase_note.endswith("; no longer made: new stock while it lasts")
    rows = dict(build_report(rec).assumptions)
    assert rows["NVIDIA GeForce RTX 4090"].startswith("your price 1,750 EUR per device (set in the workload)")
    assert "an estimate: set your own price in the workload (hardware.prices)" in rows["NVIDIA RTX A6000"]


def test_a_price_for_a_device_that_is_not_a_candidate_changes_nothing() -> None:
    plain = recommend(workload(), resolve_candidates([], workload())[0])
    other = workload({"NVIDIA H100 SXM": 20000})
    priced = recommend(other, resolve_candidates([], other)[0])
    assert [c.cost.capex for c in priced.result.candidates] == [c.cost.capex for c in plain.result.candidates]


@pytest.mark.parametrize(
    ("prices", "path", "text"),
    [
        ([1799], "hardware.prices", "must be an object of device name to price"),
        ({"RTX 4090": 0}, "hardware.prices.RTX 4090", "must be a price above 0, got 0"),
        ({"RTX 4090": "cheap"}, "hardware.prices.RTX 4090", "must be a price above 0, got 'cheap'"),
        ({"RTX 4090": True}, "hardware.prices.RTX 4090", "must be a price above 0, got True"),
    ],
)
def test_bad_prices_are_refused_naming_the_key(prices, path: str, text: str) -> None:
    with pytest.raises(WorkloadError) as err:
        workload(prices)
    assert err.value.path == path and text in str(err.value)
