"""What a procurement expert's review of the advice found (2026-11-27): a use longer than one system's life
priced as one system, break-evens past the hardware's life, and summaries that named a purchase beside a
decision to rent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.advice.recommendation import Recommendation, recommend
from core.hardware.catalogue import find_device, load_catalogue
from core.output.report import build_report
from core.output.sizing_report import sizing_to_dict
from core.spec.workload import HOURS_PER_YEAR, parse_workload

CATALOGUE = load_catalogue()
ROOT = Path(__file__).resolve().parents[2]
RESNET = {
    "name": "resnet",
    "model": {"preset": "resnet-50"},
    "data": {"samples": 1_281_167, "format": "jpeg"},
    "training": {"batch_size": 256, "epochs": 90, "optimizer": "sgd_momentum", "precision": "bf16_mixed"},
}


def advise(doc: dict[str, Any], names: list[str]) -> Recommendation:
    return recommend(parse_workload(doc), [find_device(n, CATALOGUE) for n in names], catalogue=CATALOGUE)


def test_runs_beyond_one_systems_life_are_priced_on_as_many_systems_as_they_need() -> None:
    """5,000 runs of a day each were priced as one RTX 4090 (14 years of training): 3.58 USD a run to buy against
    8.34 to rent."""
    one = advise({**RESNET, "cost": {"runs": 1}}, ["RTX 4090"]).result.candidates[0]
    rec = advise({**RESNET, "cost": {"runs": 5000}}, ["RTX 4090"])
    c = rec.result.candidates[0].cost
    life = 3 * HOURS_PER_YEAR * 0.7  # the defaults: 3 years at 70 % use
    hours = 5000 * rec.result.candidates[0].train_time_s / 3600
    assert c.life_hours == pytest.approx(life) and c.systems_for_use == -(-hours // life) > 1
    assert one.cost.capex is not None and one.cost.maintenance is not None and c.buy_for_use is not None
    assert c.buy_for_use > c.systems_for_use * (one.cost.capex + one.cost.maintenance)
    d = rec.decision
    assert d is not None and d.buy is not None and f"({c.systems_for_use} such systems: one trains" in d.text
    # hours a year are one system's hours: one system however many
    yearly = advise({**RESNET, "cost": {"hours_per_year": 8000}}, ["RTX 4090"]).result.candidates[0].cost
    assert yearly.systems_for_use == 1


def test_a_break_even_after_the_hardwares_life_is_not_given() -> None:
    """The Llama example without its cloud price said buying 4 × A100 'pays off after 1,338 runs': 24,929 hours,
    past the 18,396 busy hours of its three years."""
    doc = json.loads((ROOT / "examples" / "llama-8b-finetune.json").read_text(encoding="utf-8"))
    doc["cost"].pop("cloud_per_gpu_hour", None)
    rec = advise(doc, doc["hardware"]["candidates"])
    for c in rec.result.candidates:
        if c.cost.break_even_hours is not None:
            assert c.cost.break_even_hours <= c.cost.life_hours
    d = rec.decision
    assert d is not None and d.verdict == "rent" and d.buy is not None and d.buy.candidate.cost.break_even_runs is None
    assert "renting the same devices costs less over their 3 years" in d.text and "pays off after" not in d.text


def test_where_renting_wins_the_summaries_recommend_the_rental() -> None:
    """The report opened "Recommended: 4 × NVIDIA A100 80GB SXM" above "Rent. Renting NVIDIA H100 SXM × 8"."""
    doc = json.loads((ROOT / "examples" / "llama-8b-finetune.json").read_text(encoding="utf-8"))
    doc["cost"].pop("cloud_per_gpu_hour", None)
    rec = advise(doc, doc["hardware"]["candidates"])
    assert rec.decision is not None and rec.decision.rent is not None and rec.best is not None
    rented = rec.decision.rent.candidate
    assert rec.advised is rented and rec.best is not rented
    summary = build_report(rec).summary
    assert summary.startswith(f"Recommended: rent {rented.label}. It trains the workload in")
    assert f"If bought instead: {rec.best.label}." in summary
    assert sizing_to_dict(rec)["recommended"] == {
        "device": rented.device.name,
        "count": rented.count,
        "nodes": 1,
        "verdict": "rent",
    }


def test_a_summary_counts_every_node() -> None:
    """ "Recommended: 2 × NVIDIA A100 80GB SXM" for 2 per node × 2 nodes."""
    doc = json.loads((ROOT / "examples" / "llama-8b-finetune.json").read_text(encoding="utf-8"))
    doc["training"]["nodes"] = 2
    doc["cost"] = {"rent_allowed": False}
    rec = advise(doc, ["A100 80GB"])
    assert rec.best is not None and rec.best.nodes == 2
    assert build_report(rec).summary.startswith(
        f"Recommended: NVIDIA A100 80GB SXM × {rec.best.count} per node × 2 nodes."
    )


def test_a_missed_deadline_looks_for_the_cheapest_purchase_that_meets_it() -> None:
    """ "Buy. Buying RTX 3060 × 1 … 1,949 USD" for a 1 h deadline it misses by 8 times, 50,000 USD of budget
    unspent and nothing searched."""
    doc = {
        "name": "gpt2",
        "model": {"preset": "gpt2-small"},
        "data": {"samples": 500_000},
        "training": {"batch_size": 512, "epochs": 1, "optimizer": "adamw", "precision": "bf16_mixed"},
        "cost": {"deadline_hours": 1, "budget": 50_000, "rent_allowed": False},
    }
    rec = advise(doc, ["RTX 3060"])
    (listed,) = rec.result.candidates
    assert listed.fits and listed.meets_deadline is False
    d = rec.decision
    assert d is not None and d.searched > 0 and d.buy is not None
    bought = d.buy.candidate
    assert bought.meets_deadline and bought.cost.capex is not None and bought.cost.capex <= 50_000
    assert (
        f"Nothing listed meets the deadline of 1 h within the budget of 50,000 USD; {bought.label} is the cheapest"
        in d.text
    )
    # the cheapest that meets it, not the fastest the budget buys
    eight = advise({**doc, "hardware": {"gpu_count": 8}}, [bought.device.name]).result.candidates[0]
    assert (
        eight.meets_deadline and eight.cost.buy_per_run is not None and bought.cost.buy_per_run < eight.cost.buy_per_run
    )
    # a deadline nothing within the budget meets leaves the listed purchase
    tight = advise({**doc, "cost": {"deadline_hours": 1, "budget": 2_000, "rent_allowed": False}}, ["RTX 3060"])
    assert tight.decision is not None and tight.decision.buy is not None
    assert tight.decision.buy.candidate.device.name == listed.device.name
