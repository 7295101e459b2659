"""Money and power: the user's currency, and where each figure of the cost model comes from."""

from __future__ import annotations

from typing import Any

import pytest

from core.advice.bom import recommend_bom
from core.advice.recommendation import recommend
from core.errors import WorkloadError
from core.estimate.sizing import size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.output.report import build_report
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()
EUR = {"currency": "EUR", "exchange_rate": {"per_usd": 0.92, "date": "2026-11-01"}}


def seed(cost: dict[str, Any]) -> dict[str, Any]:
    return {"model": {"preset": "seed-mlp"}, "cost": cost}


def test_a_euro_workload_pays_the_catalogue_price_converted_at_its_rate() -> None:
    # RTX 4090: 1,599 USD launch list price; the host is given in the user's currency (EUR)
    w = parse_workload(seed({**EUR, "host_cost": 2500}))
    (c,) = size_workload(w, [find_device("4090", CATALOGUE)]).candidates
    assert c.cost.currency == "EUR"
    assert c.cost.capex == pytest.approx(1599 * 0.92 + 2500)  # 3,971.08 EUR; was 4,099 "EUR" unconverted


def test_a_currency_without_its_rate_is_refused_naming_the_key() -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(seed({"currency": "EUR"}))
    assert err.value.path == "cost.exchange_rate"
    assert "currency EUR needs the rate per USD and its date" in str(err.value)


@pytest.mark.parametrize(
    ("rate", "words"),
    [
        ({"per_usd": 0.92}, "cost.exchange_rate.date"),
        ({"per_usd": 0.92, "date": "1 November"}, "cost.exchange_rate.date"),
        ({"per_usd": -1, "date": "2026-11-01"}, "cost.exchange_rate.per_usd"),
    ],
)
def test_an_incomplete_rate_is_refused(rate: dict[str, Any], words: str) -> None:
    with pytest.raises(WorkloadError, match=words.replace(".", r"\.")):
        parse_workload(seed({"currency": "EUR", "exchange_rate": rate}))


def test_the_report_shows_the_rate_its_date_and_converted_unit_prices() -> None:
    w = parse_workload(seed(EUR))
    rec = recommend(w, [find_device("4090", CATALOGUE)])
    report = build_report(rec)
    assumptions = dict(report.assumptions)
    assert "1 USD = 0.92 EUR on 2026-11-01" in assumptions["Exchange rate"]
    (gpu,) = [r for r in report.bom if r.item == "Accelerator"]
    assert gpu.unit_price == pytest.approx(1599 * 0.92)
    assert "0.92 EUR per USD (2026-11-01)" in " ".join(rec.result.candidates[0].assumptions)


def psu_line(device: str) -> str:
    w = parse_workload(seed({}))
    result = size_workload(w, [find_device(device, CATALOGUE)], host_ram_bytes=64 * 2**30)
    (line,) = [b for b in recommend_bom(result) if b.item == "Power supply"]
    return line.reason


def test_the_power_supply_takes_the_cpus_tdp_from_the_catalogue() -> None:
    # AMD EPYC 9654: 360 W default TDP (AMD product page); was a flat 250 W for any CPU
    assert "CPU 360 W (AMD EPYC 9654" in psu_line("EPYC 9654")
    # one RTX 4090 wants ≥ 8 cores: the catalogue's lowest-TDP CPU with 8 cores, Ryzen 7 2700 at 65 W
    assert "CPU 65 W (AMD Ryzen 7 2700" in psu_line("4090")


def test_a_cuda_gpu_counts_the_context_measured_on_an_h100() -> None:
    # docs/accuracy.md: beyond PyTorch's pool the CUDA context, kernels and handles took 779 MiB on
    # an H100 (driver 580, CUDA 13, PyTorch 2.11); the engine counted 768 MiB
    (c,) = size_workload(parse_workload(seed({})), [find_device("H100 SXM", CATALOGUE)]).candidates
    assert c.memory.overhead == 779 * 2**20 + int(0.05 * c.memory.tensor_peak)


def _nodes(nodes: int) -> Any:
    w = parse_workload(
        {
            "model": {"preset": "gpt2-small"},
            "training": {"nodes": nodes, "sharding": "ddp"},
            "hardware": {"gpu_count": 8},
        }
    )
    return recommend(w, [find_device("H100 SXM", CATALOGUE)])


def test_every_node_is_bought_powered_and_rented() -> None:
    # H100 SXM: 31,120 USD (HGX H100 baseboard price / 8, 2023-09) and 700 W in the catalogue;
    # host 3,000 USD and 250 W per node (defaults)
    (one,) = _nodes(1).result.candidates
    (four,) = _nodes(4).result.candidates
    assert one.cost.capex == 8 * 31_120 + 3_000 == 251_960
    assert four.cost.capex == 4 * 8 * 31_120 + 4 * 3_000 == 1_007_840  # was one node's GPUs only
    assert four.cost.power_w == 4 * (8 * 700 + 250)
    hours = four.train_time_s / 3600
    assert four.cost.gpu_hours == pytest.approx(32 * hours)
    assert four.cost.cloud_cost == pytest.approx(32 * hours * 2.50)
    assert four.cost.energy_kwh == pytest.approx(4 * (8 * 700 + 250) * 0.7 * hours * 1.2 / 1000)


@pytest.mark.parametrize("nodes", [1, 4])
def test_the_bill_of_materials_lists_the_network_and_totals_the_capex(nodes: int) -> None:
    rec = _nodes(nodes)
    best = rec.best
    assert best is not None and best.nodes == nodes
    report = build_report(rec)
    rows = {r.item: r for r in report.bom}
    assert sum(r.total_price for r in report.bom if r.total_price is not None) == pytest.approx(best.cost.capex)
    assert rows["Accelerator"].quantity == 8 * nodes
    assert rows["Host"].quantity == nodes
    if nodes == 1:
        assert "Network adapters" not in rows and "Network switch" not in rows
        return
    # one 100 Gb/s adapter per GPU (the rate the step time assumes between nodes) and a switch
    nic, switch = rows["Network adapters"], rows["Network switch"]
    assert nic.quantity == 32 and "100 Gb/s" in nic.specification and "INTER_NODE_BPS" in nic.reason
    assert "≥ 32 ports" in switch.specification
    assert nic.total_price is None and "price not in the catalogue" in nic.specification
    assert rows["Accelerator"].specification == "NVIDIA H100 SXM × 8 per node × 4 nodes"
    assert rows["Power supply"].specification.endswith("in each of the 4 nodes")


def test_a_cpu_bill_of_materials_prices_the_cpu_as_the_capex_does() -> None:
    # the bill's total left out the CPU (only the host was priced) while the capex counted it
    rec = recommend(parse_workload(seed({})), [find_device("EPYC 9654", CATALOGUE)], host_ram_bytes=64 * 2**30)
    best = rec.best
    assert best is not None and best.device.kind == "cpu"
    report = build_report(rec)
    (cpu,) = [r for r in report.bom if r.item == "Processor for training"]
    assert cpu.total_price == 11_805
    assert sum(r.total_price for r in report.bom if r.total_price is not None) == best.cost.capex == 11_805 + 3_000
