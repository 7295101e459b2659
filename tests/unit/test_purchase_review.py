"""What a procurement expert's review of the advice found (2026-11-27): a use longer than one system's life
priced as one system, break-evens past the hardware's life, and summaries that named a purchase beside a
decision to rent."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.advice.recommendation import Recommendation, recommend
from core.estimate.sizing import size_candidate
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
        f"Nothing listed meets the deadline of 1 h within the budget of 50,000 USD; buying {bought.label} is the "
        "cheapest" in d.text
    )
    # the cheapest that meets it, not the fastest the budget buys
    eight = advise({**doc, "hardware": {"gpu_count": 8}}, [bought.device.name]).result.candidates[0]
    assert (
        eight.meets_deadline and eight.cost.buy_per_run is not None and bought.cost.buy_per_run < eight.cost.buy_per_run
    )
    # the fewest of that device that meet it: one fewer misses it
    fewer = {1: None, 2: 1, 4: 2, 8: 4}[bought.count]
    if fewer is not None:
        less = advise({**doc, "hardware": {"gpu_count": fewer}}, [bought.device.name]).result.candidates[0]
        assert less.meets_deadline is False
    # a deadline nothing within the budget meets leaves the listed purchase
    tight = advise({**doc, "cost": {"deadline_hours": 1, "budget": 2_000, "rent_allowed": False}}, ["RTX 3060"])
    assert tight.decision is not None and tight.decision.buy is not None
    assert tight.decision.buy.candidate.device.name == listed.device.name


def test_one_nodes_devices_in_several_machines_are_networked_and_each_machine_is_sized_alone() -> None:
    """Four GH200s (one per server) were priced without a network, their step assumed NVLink between the
    servers, and the bill held their RAM together against one server's ("512 GB … more than the 480 GB the
    platform is priced with"), gave them one 21-core host and listed "480 GB RAM in 0 channels — 4 × 0.00 USD"."""
    doc = {
        "name": "llama",
        "model": {"preset": "llama-8b"},
        "data": {"samples": 200_000},
        "training": {
            "batch_size": 64,
            "epochs": 2,
            "optimizer": "adamw",
            "precision": "bf16_mixed",
            "sharding": "fsdp",
        },
        "hardware": {"gpu_count": 4},
        "cost": {"rent_allowed": False},
    }
    rec = advise(doc, ["GH200"])
    best = rec.best
    assert best is not None and best.cost.platform is not None and best.cost.platform.machines == 4
    roles = {line.role: line for line in best.cost.capex_lines}
    assert roles["adapter"].quantity == 4 and roles["switch"].quantity == 4 and "platform" not in roles
    assert any("4 per node in 4 × GH200 server" in a for a in best.assumptions)
    # the gradients cross the network: the collectives are those of four machines, not of one NVLink node
    linked = replace(best.device, form_factor="sxm")  # the same superchip were four on one NVLink board
    assert best.step.comm_s > 5 * size_candidate(parse_workload(doc), linked, 4).step.comm_s
    bill = {line.item: line for line in rec.bom}
    assert bill["Memory"].spec.startswith("480 GB on the module, as the platform is priced")
    assert "0 channels" not in bill["Platform"].spec and bill["Platform"].total is None
    assert "each machine's 1 GPU(s) × " in bill["CPU"].reason and bill["CPU"].spec.startswith("≥ 8 physical cores")
    # the rules' cores too: each server's host feeds its one GPU ("at least 21 physical cores per node")
    (cores,) = [f.message for f in rec.findings if "a multi-core CPU is mandatory" in f.message]
    assert cores.endswith("at least 8 physical cores per host.")


def test_the_heat_to_remove_is_the_load_not_the_supplies_rating() -> None:
    """Two RTX 4090s draw 1,130 W at full load; the bill said 5,118 BTU/h, its 1,500 W of supplies × 3.412."""
    rec = advise({**RESNET, "cost": {"rent_allowed": False}, "hardware": {"gpu_count": 2}}, ["RTX 4090"])
    power = next(line for line in rec.bom if line.item == "Power supply")
    assert rec.best is not None and rec.best.cost.platform is not None
    load = 2 * (rec.best.device.tdp_w or 0) + rec.best.cost.platform.platform.host_power_w
    assert f"{load * 3.412:,.0f} BTU/h of heat to remove at full load" in power.spec


def test_a_batch_larger_than_the_dataset_is_sized_as_the_one_batch_an_epoch_is() -> None:
    """A batch of 10^8 over 80,909 samples was sized in micro-batches of 1,607,075 × 63, 36 h of training against
    2.81 min, with nothing said."""
    whole = advise({"name": "s", "model": {"preset": "seed-mlp"}, "training": {"batch_size": 80_909}}, ["RTX 4090"])
    rec = advise({"name": "s", "model": {"preset": "seed-mlp"}, "training": {"batch_size": 10**8}}, ["RTX 4090"])
    assert rec.result.workload.training.batch_size == 80_909
    assert rec.result.candidates[0].train_time_s == whole.result.candidates[0].train_time_s
    assert any(
        n.startswith("training.batch_size 100,000,000 is more than the 80,909 samples") for n in rec.result.notes
    )


def test_bf16_on_a_gpu_without_it_is_said() -> None:
    """A Tesla P40 (Pascal) was sized at "77 % of the bf16_mixed peak" with nothing said: it has no bf16."""
    doc = {"name": "g", "model": {"preset": "gpt2-small"}, "training": {"precision": "bf16_mixed"}}
    said = {
        name: [a for a in advise(doc, [name]).result.candidates[0].assumptions if "no bf16 arithmetic" in a]
        for name in ("Tesla P40", "T4", "A100 80GB")
    }
    assert said["A100 80GB"] == [] and "fp32 runs fastest" in said["Tesla P40"][0]
    assert said["T4"][0].startswith("compute capability 7.5 has no bf16") and "fp16_mixed" in said["T4"][0]


def test_a_card_sold_used_or_no_longer_made_says_so() -> None:
    """A Tesla P40 (280 USD, used) was advised in a server with nothing said of where to buy one."""
    doc = {"name": "s", "model": {"preset": "seed-mlp"}, "cost": {"rent_allowed": False}}
    rec = advise(doc, ["Tesla P40"])
    assert rec.decision is not None and "an estimate; sold used only)" in rec.decision.text
    rows = dict(build_report(rec).assumptions)
    assert "or the wizard; sold used only" in rows["NVIDIA Tesla P40"]
    assert advise(doc, ["H100 SXM"]).result.candidates[0].cost.purchase_note.endswith("an estimate")  # sold new


def test_devices_bought_on_a_board_are_not_left_idle() -> None:
    """A100 × 2 per node × 2 nodes was advised: two 4-GPU boards bought, half their GPUs idle, 18.6 h of training
    where all four per node take 9.21 h for the network ports of the other two."""
    doc = json.loads((ROOT / "examples" / "llama-8b-finetune.json").read_text(encoding="utf-8"))
    doc["training"]["nodes"] = 2
    doc["cost"] = {"rent_allowed": False}
    rec = advise(doc, ["A100 80GB"])
    by_count = {c.count: c for c in rec.result.candidates}
    two, four = by_count[2], by_count[4]
    assert two.fits and four.fits and two.train_time_s > 1.5 * four.train_time_s
    bought = [sum(line.quantity for line in c.cost.capex_lines if line.role == "device") for c in (two, four)]
    assert bought == [8, 8]
    assert rec.best is four


def llama_70b(nodes: int) -> dict[str, Any]:
    """A Llama-3-70B-shaped causal LM in bf16 under FSDP with checkpointing, on ``nodes`` nodes of 8 GPUs."""
    layers = [
        {"type": "embedding", "num_embeddings": 128256, "embedding_dim": 8192},
        {
            "type": "repeat",
            "times": 80,
            "layers": [
                {
                    "type": "transformer_block",
                    "nhead": 64,
                    "kv_heads": 8,
                    "dim_feedforward": 28672,
                    "dropout": 0.0,
                    "norm_first": True,
                    "causal": True,
                    "bias": False,
                    "norm": "rmsnorm",
                    "mlp": "swiglu",
                }
            ],
        },
        {"type": "rmsnorm"},
        {"type": "linear", "out_features": 128256, "bias": False},
    ]
    doc = {
        "name": "70b",
        "model": {"input_shape": [4096], "input_dtype": "int64", "layers": layers},
        "data": {"samples": 100_000, "outputs": 4096, "dtype": "int64", "format": "raw"},
        "training": {
            "batch_size": 128,
            "epochs": 1,
            "optimizer": "adamw",
            "precision": "bf16_mixed",
            "checkpointing": True,
            "sharding": "fsdp",
            "nodes": nodes,
        },
        "hardware": {"gpu_count": 8},
    }
    return doc


def test_more_gpus_to_fit_are_counted_per_node() -> None:
    """B200 × 8 on 4 nodes (32 GPUs) was told "use 16 GPUs with FSDP", fewer than it had; one node, "use 64"."""
    doc = llama_70b(4)
    messages = [f.message for f in advise(doc, ["B200"]).findings if "B200" in f.message and "GPUs" in f.message]
    assert any("use 16 GPUs per node (64 in all) with FSDP" in m for m in messages), messages


def test_supplies_that_cannot_carry_the_load_with_redundancy_are_said() -> None:
    """Eight RTX 4090s want 5,800 W of supply; the server's "4 × 2,700 W (2+2 redundant)" give 5,400 W."""
    doc = {
        "name": "g",
        "model": {"preset": "gpt2-small"},
        "hardware": {"gpu_count": 8},
        "cost": {"rent_allowed": False},
    }
    power = next(line for line in advise(doc, ["RTX 4090"]).bom if line.item == "Power supply")
    assert power.spec.startswith("5,800 W of supply — more than the 5,400 W its supplies give as priced")
    one = next(
        line for line in advise({**doc, "hardware": {"gpu_count": 1}}, ["RTX 4090"]).bom if line.item == "Power supply"
    )
    assert "more than the" not in one.spec


W1 = {"name": "w1", "model": {"preset": "seed-mlp"}, "training": {"epochs": 64000}}


def test_a_deadline_only_the_catalogue_meets_weighs_renting_too() -> None:
    """A 1 h deadline nothing listed met was met by buying two Gaudi 3s for 186,668 USD, while renting an MI300X
    from the catalogue did it for 0.26 USD a run."""
    rec = advise({**W1, "cost": {"deadline_hours": 1}}, ["RTX 3060"])
    d = rec.decision
    assert d is not None and d.searched_for == "deadline" and d.verdict == "rent" and d.rent is not None
    rented = d.rent.candidate
    assert rented not in rec.result.candidates and rented.meets_deadline and rented.cost.cloud_cost is not None
    assert d.buy is not None and rented.cost.cloud_cost < d.buy.per_run
    assert f"Nothing listed meets the deadline of 1 h; renting {rented.label} is the cheapest of" in d.text


def test_a_deadline_nothing_meets_within_the_budget_is_said() -> None:
    """With a budget nothing met, 96 configurations were sized and the text said nothing of the missed deadline."""
    rec = advise({**W1, "cost": {"deadline_hours": 1, "budget": 2000, "rent_allowed": False}}, ["RTX 3060"])
    d = rec.decision
    assert d is not None and d.searched > 0 and d.verdict == "buy"
    assert (
        f"Nothing listed, nor any of {d.searched} catalogue configurations sized, meets the deadline of 1 h within"
        in d.text
    )


def test_a_search_for_the_budget_says_the_best_not_the_cheapest() -> None:
    """Over budget, the catalogue's fastest within it was called "the cheapest … that does"."""
    doc = {**RESNET, "cost": {"deadline_hours": 100, "budget": 20_000, "rent_allowed": False}}
    rec = advise(doc, ["RTX 3060", "H100 SXM"])
    d = rec.decision
    assert d is not None and d.searched_for == "budget" and "is the best of" in d.text and "cheapest" not in d.text


def test_hours_a_year_break_even_within_the_hours_asked() -> None:
    """8,760 h a year: "Buy" beside "renting the same devices costs less over their 3 years" (the break-even was
    held to 70 % of the clock, the use was all of it)."""
    rec = advise({**RESNET, "cost": {"hours_per_year": 8760, "cloud_per_gpu_hour": 0.3}}, ["RTX 4090"])
    c = rec.result.candidates[0].cost
    assert c.life_hours == 3 * 8760 and c.break_even_hours is not None and c.break_even_hours <= c.life_hours
    d = rec.decision
    assert d is not None and d.verdict == "buy" and "costs less over their" not in d.text and "pays off after" in d.text


def test_fsdps_own_mixed_precision_is_offered_where_autocast_does_not_fit() -> None:
    """H100s were told "no batch, GPU count or sharding fits it: choose a larger device" for a 70B model whose
    autocast layout keeps a 129 GiB half copy of its weights on each GPU; FSDP's mixed precision fits it."""
    doc = llama_70b(4)
    rec = advise(doc, ["H100 SXM"])
    assert not rec.result.candidates[0].fits
    (finding,) = [f.message for f in rec.findings if f.message.startswith("NVIDIA H100 SXM × 8: memory")]
    assert finding.endswith('— use FSDP\'s mixed precision (training.precision_layout "fsdp_mixed").')
    doc["training"]["precision_layout"] = "fsdp_mixed"
    assert advise(doc, ["H100 SXM"]).result.candidates[0].fits
