"""Purchase scenarios an ML infrastructure lead would size (tests/fixtures/purchases/*.json): the
decisions TrainRig makes for each — fits with accumulation, whole systems priced per node and
platform, buy or rent with its break-even, the best option within budget, rules that stay silent
outside their conditions, and a bill of materials whose total is the capex."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from core.advice.recommendation import Recommendation, recommend
from core.hardware.catalogue import find_device, load_catalogue
from core.hardware.platforms import load_platforms
from core.spec.workload import parse_workload

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "purchases"
CATALOGUE = load_catalogue()
PLATFORMS = load_platforms()
RAM = 64 * 2**30


def scenario(name: str, **cost: Any) -> dict[str, Any]:
    doc = json.loads((SCENARIOS / f"{name}.json").read_text(encoding="utf-8"))
    doc = copy.deepcopy(doc)
    doc.setdefault("cost", {}).update(cost)
    return doc


def advise(doc: dict[str, Any], candidates: list[str] | None = None) -> Recommendation:
    names = candidates if candidates is not None else doc["hardware"]["candidates"]
    return recommend(parse_workload(doc), [find_device(n, CATALOGUE) for n in names], host_ram_bytes=RAM)


def bom_total(rec: Recommendation) -> float:
    return sum(line.total for line in rec.bom if line.total is not None)


@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIOS.glob("*.json")))
def test_every_scenario_gets_a_purchase_whose_bill_is_its_capex(name: str) -> None:
    rec = advise(scenario(name))
    best = rec.best
    assert best is not None and best.fits, name
    assert best.cost.capex is not None and bom_total(rec) == pytest.approx(best.cost.capex), name
    assert rec.decision is not None and rec.decision.verdict in ("buy", "rent"), name
    # every priced line names where its price comes from
    assert all(line.source for line in rec.bom if line.total is not None), name


def test_an_8b_fine_tune_on_60k_fits_with_accumulation_within_budget_and_deadline() -> None:
    rec = advise(scenario("lab-llama-8b"))
    best = rec.best
    assert best is not None
    assert best.cost.capex is not None and best.cost.capex <= 60_000
    assert best.meets_deadline and best.accumulation_steps > 1 and best.micro_batch >= 1
    # the 8 × A100/H100 servers that fit are over budget: not what is recommended
    assert all(c.within_budget is False for c in rec.result.candidates if "SXM" in c.device.name and c.fits)


def test_gpt2_small_trains_on_one_consumer_gpu_in_micro_batches() -> None:
    # "565 GiB needed at batch 512" treated the global batch as resident: one RTX 4090 fits a
    # micro-batch and accumulates the rest
    rec = advise(scenario("startup-gpt2"), ["RTX 4090"])
    (c,) = [x for x in rec.result.candidates if x.count == 1]
    assert c.fits and 1 <= c.micro_batch < 512 and c.micro_batch * c.accumulation_steps >= 512
    assert c.largest_batch is not None and c.largest_batch <= 9_765_625


def test_the_largest_batch_never_exceeds_the_dataset() -> None:
    rec = advise(scenario("student-mlp"))
    samples = rec.result.workload.data.samples
    assert all(c.largest_batch is None or c.largest_batch <= samples for c in rec.result.candidates)


def test_capex_and_power_scale_with_nodes_and_the_network_is_bought() -> None:
    four = advise(scenario("multinode-gpt2")).best
    one_doc = scenario("multinode-gpt2")
    one_doc["training"]["nodes"] = 1
    one = advise(one_doc).best
    assert four is not None and one is not None
    network = sum(n.price_usd for n in PLATFORMS.network if n.per in ("gpu", "port"))
    network_w = sum(n.power_w for n in PLATFORMS.network if n.per in ("gpu", "port"))
    assert four.cost.capex == pytest.approx(4 * one.cost.capex + 32 * network)  # type: ignore[operator]
    assert four.cost.power_w == pytest.approx(4 * one.cost.power_w + 32 * network_w)  # type: ignore[operator]
    assert four.cost.machines == 4 and one.cost.machines == 1


def test_sxm_gpus_are_bought_on_whole_baseboards_and_passive_cards_in_servers() -> None:
    doc = scenario("bert-one-day")
    h100 = advise(doc, ["H100 SXM"]).result.candidates[0]
    assert h100.count == 1 and h100.cost.platform is not None
    board = h100.cost.platform.platform
    assert board.sold_in and h100.cost.platform.bought == board.sold_in[0] >= 4
    gpu_line = next(line for line in h100.cost.capex_lines if line.role == "device")
    assert gpu_line.quantity == board.sold_in[0]  # a whole board is paid for, one GPU used
    l40s = advise(doc, ["L40S"]).result.candidates[0]
    assert l40s.cost.platform is not None and l40s.cost.platform.platform.passive_cards  # a server's airflow
    r4090 = advise(doc, ["RTX 4090"]).result.candidates[0]
    assert r4090.cost.platform is not None and r4090.cost.platform.platform.id == "desktop"


def test_a_one_off_fine_tune_rents_and_buying_pays_off_after_the_break_even_runs() -> None:
    rec = advise(scenario("bert-one-day"))
    d = rec.decision
    assert d is not None and d.verdict == "rent"
    assert d.rent is not None and d.rent.cost_for_use < 10  # about a dollar of rented time, not a 3,000 USD purchase
    assert d.break_even_runs is not None and d.break_even_runs > 1
    assert f"{d.break_even_runs:,} runs" in d.text
    # from that many runs on, buying wins
    later = advise(scenario("bert-one-day", runs=d.break_even_runs)).decision
    assert later is not None and later.verdict == "buy"


def test_hours_a_year_decide_buy_or_rent_over_the_amortisation_period() -> None:
    light = advise(scenario("hospital-resnet50", hours_per_year=100)).decision
    heavy = advise(scenario("hospital-resnet50", hours_per_year=8000)).decision
    assert light is not None and heavy is not None
    assert light.verdict == "rent" and heavy.verdict == "buy"
    assert "8,000 h of training a year for 3 years" in heavy.text


def test_one_workstation_under_15k_with_the_cores_to_decode_its_jpegs() -> None:
    rec = advise(scenario("hospital-resnet50"))
    best = rec.best
    assert best is not None and best.cost.capex is not None and best.cost.capex <= 15_000
    assert best.cost.machines == 1 and best.cost.platform is not None
    assert best.cost.platform.platform.id in ("desktop", "workstation")
    cpu = next(line for line in rec.bom if line.item == "CPU")
    assert "decoding JPEG" in cpu.reason  # the input pipeline's cores, from the decode model


def test_when_nothing_listed_fits_the_budget_the_best_catalogue_option_within_it_is_recommended() -> None:
    rec = advise(scenario("lab-llama-8b"), ["H100 SXM"])
    assert all(c.within_budget is False or not c.fits for c in rec.result.candidates)
    d = rec.decision
    assert d is not None and d.buy is not None and d.searched > 0
    alt = d.buy.candidate
    assert alt not in rec.result.candidates and alt.fits
    assert alt.cost.capex is not None and alt.cost.capex <= 60_000
    assert d.buy.gives_up and "gives up" in d.text
    assert rec.best is alt and bom_total(rec) == pytest.approx(alt.cost.capex)


def test_a_cpu_only_server_gets_no_gpu_advice() -> None:
    rec = advise(scenario("lstm-cpu-server"))
    best = rec.best
    assert best is not None and best.device.kind == "cpu"
    assert not any(line.item == "Accelerator" for line in rec.bom)
    cpu_lines = [line for line in rec.bom if line.item in ("CPU", "Memory", "Power supply")]
    assert not any("GPU" in line.spec or "GPU" in line.reason for line in cpu_lines)
    fired = {f.rule for f in rec.findings}
    assert not fired & {"memory-four-channels", "memory-bandwidth-vs-gpus", "nvlink-multi-gpu", "gpu-tensor-cores"}
    memory = next(line for line in rec.bom if line.item == "Memory")
    platform = best.cost.platform.platform  # type: ignore[union-attr]
    assert f"in {platform.memory_channels} channels" in memory.spec


def test_a_desktop_cpu_is_not_given_four_channels() -> None:
    rec = advise(scenario("student-mlp"), ["Ryzen 9 7950X"])
    memory = next(line for line in rec.bom if line.item == "Memory")
    assert "in 2 channels" in memory.spec  # the 7950X's DDR5 has two channels, not four


def test_an_llm_gets_no_seed_heuristic_meant_for_small_networks() -> None:
    fired = {f.rule for f in advise(scenario("lab-llama-8b")).findings}
    assert not fired & {"hp-batch-dominates-time", "cpu-itanium-large-samples", "cpu-tlb-single-network"}
    assert "gpu-k1-redundant" not in fired


def test_data_that_must_stay_on_site_is_bought_not_rented() -> None:
    free = advise(scenario("hospital-resnet50")).decision
    on_site = advise(scenario("hospital-resnet50", rent_allowed=False)).decision
    assert free is not None and free.verdict == "rent"
    assert on_site is not None and on_site.verdict == "buy" and on_site.rent is None
    assert "Renting is ruled out in the workload" in on_site.text
    # and each candidate's buy-or-rent says so too: they read "rent · N runs" beside the decision to buy
    rec = advise(scenario("hospital-resnet50", rent_allowed=False))
    priced = [c for c in rec.result.candidates if c.cost.buy_for_use is not None]
    assert priced and all(c.cost.verdict == "buy" for c in priced)
    assert any(c.cost.verdict == "rent" for c in advise(scenario("hospital-resnet50")).result.candidates)


def test_an_eight_gpu_board_drawing_more_than_the_dgx_rating_is_sized_for_its_load() -> None:
    # B200 × 8 (1,000 W each) in the HGX-class platform rated like a DGX H100 (10.2 kW): the supply
    # and the circuit follow the 12.6 kW these devices and the host draw, not the H100 system's rating
    rec = advise(scenario("multinode-gpt2"), ["B200"])
    best = rec.best
    assert best is not None and best.cost.platform is not None
    hgx = best.cost.platform.platform
    load = 8 * (best.device.tdp_w or 0) + hgx.host_power_w
    assert hgx.rated_power_w is not None and load > hgx.rated_power_w
    power = next(line for line in rec.bom if line.item == "Power supply")
    assert power.spec.startswith(f"{load:,.0f} W at full load") and "which these devices exceed" in power.reason


def test_a_candidate_that_does_not_fit_is_neither_bought_nor_rented() -> None:
    """It read "rent · 2,212 runs" in the table, the PDF and the CSV beside "does not fit"."""
    from dataclasses import replace

    from core.output.sizing_report import sizing_to_dict

    root = Path(__file__).resolve().parents[2]
    w = parse_workload(json.loads((root / "examples" / "llama-8b-finetune.json").read_text()))
    rec = recommend(w, [find_device("H100 SXM", load_catalogue())])
    misses = [c for c in rec.result.candidates if c.fits is False]
    assert misses and all(c.buy_or_rent is None and c.cost.verdict is not None for c in misses)
    rows = {(c["device"], c["count"]): c for c in sizing_to_dict(rec)["candidates"]}
    assert all(rows[(c.device.name, c.count)]["buy_or_rent"] is None for c in misses)
    # nor does buying them pay off after some number of runs ("DOES NOT FIT … buying pays off after 2,330 runs")
    assert all(rows[(c.device.name, c.count)]["break_even_runs"] is None for c in misses)
    paying = next(c for c in rec.result.candidates if c.fits and c.cost.break_even_runs)
    assert paying.break_even == (paying.cost.break_even_hours, paying.cost.break_even_runs)
    assert replace(paying, fits=False).break_even == (None, None)
    assert any(c.buy_or_rent for c in rec.result.candidates if c.fits)
