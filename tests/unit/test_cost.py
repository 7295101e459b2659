"""Money and power: the user's currency, and where each figure of the cost model comes from."""

from __future__ import annotations

from typing import Any

import pytest

from core.advice.bom import recommend_bom
from core.advice.recommendation import recommend
from core.errors import WorkloadError
from core.estimate.sizing import size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.hardware.platforms import load_platforms, network_adapter, platform_for
from core.output.report import build_report
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()
PLATFORMS = load_platforms()
EUR = {"currency": "EUR", "exchange_rate": {"per_usd": 0.92, "date": "2026-11-01"}}


def seed(cost: dict[str, Any]) -> dict[str, Any]:
    return {"model": {"preset": "seed-mlp"}, "cost": cost}


def test_a_euro_workload_pays_the_catalogue_price_converted_at_its_rate() -> None:
    # RTX 4090: its purchase price in USD (catalogue); the host is given in the user's currency (EUR)
    w = parse_workload(seed({**EUR, "host_cost": 2500}))
    gpu = find_device("4090", CATALOGUE)
    (c,) = size_workload(w, [gpu]).candidates
    assert c.cost.currency == "EUR"
    assert c.cost.capex == pytest.approx(gpu.purchase_price()[0] * 0.92 + 2500)  # type: ignore[index]


def test_a_currency_without_its_rate_is_refused_naming_the_key() -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(seed({"currency": "EUR"}))
    assert err.value.path == "cost.exchange_rate"
    assert "currency EUR needs the rate per USD and its date" in str(err.value)


def test_a_currency_is_an_iso_code_in_capitals() -> None:
    """ "eur" asked for a rate as EUR but printed "eur"; "usd" was not USD where reports compare; "€€" was taken."""
    rate = {"per_usd": 0.92, "date": "2026-11-01"}
    assert parse_workload(seed({"currency": " eur ", "exchange_rate": rate})).cost.currency == "EUR"
    assert parse_workload(seed({"currency": "usd"})).cost.currency == "USD"
    for bad in ("€€", "EURO", "E1R"):
        with pytest.raises(WorkloadError) as err:
            parse_workload(seed({"currency": bad, "exchange_rate": rate}))
        assert err.value.path == "cost.currency" and "three-letter ISO 4217 code" in str(err.value)


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
    assert gpu.unit_price == pytest.approx(find_device("4090", CATALOGUE).purchase_price()[0] * 0.92)  # type: ignore[index]
    assert "0.92 EUR per USD (2026-11-01)" in " ".join(rec.result.candidates[0].assumptions)


def psu_line(device: str, cost: dict | None = None) -> str:
    w = parse_workload(seed(cost or {}))
    result = size_workload(w, [find_device(device, CATALOGUE)], host_ram_bytes=64 * 2**30)
    (line,) = [b for b in recommend_bom(result) if b.item == "Power supply"]
    return line.reason


def test_the_power_supply_takes_the_cpus_tdp_and_the_platforms_host() -> None:
    # AMD EPYC 9654: 360 W default TDP (AMD product page), in the CPU platform's host
    cpu_host = platform_for(find_device("EPYC 9654", CATALOGUE), 1).platform  # type: ignore[union-attr]
    assert psu_line("EPYC 9654").startswith(f"AMD EPYC 9654 360 W + host {cpu_host.host_power_w:,.0f} W")
    # one RTX 4090 (450 W board power) in a desktop whose host draws its platforms.json figure
    ws = PLATFORMS.by_id("desktop")
    assert psu_line("4090").startswith(f"GPUs 450 W + host {ws.host_power_w:,.0f} W ({ws.name})")
    # the host's draw the workload gives, which the energy and the TCO already took (the supply took the
    # platform's 230 W beside them)
    given = psu_line("4090", {"host_power_w": 300})
    assert given.startswith("GPUs 450 W + host 300 W (the workload's cost.host_power_w)")


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
    # H100 SXM: 700 W in the catalogue, bought in an 8-GPU HGX-class server (platforms.json); four
    # nodes also buy an adapter and a switch port per GPU
    h100 = find_device("H100 SXM", CATALOGUE)
    gpu_usd = h100.purchase_price()[0]  # type: ignore[index]
    hgx = PLATFORMS.by_id("hgx-8")
    server = hgx.base_cost_usd + hgx.cpu_cost_usd
    network = sum(n.price_usd for n in PLATFORMS.network if n.per in ("gpu", "port"))
    network_w = sum(n.power_w for n in PLATFORMS.network if n.per in ("gpu", "port"))
    (one,) = _nodes(1).result.candidates
    (four,) = _nodes(4).result.candidates
    assert one.cost.capex == pytest.approx(8 * gpu_usd + server)  # was 8 GPUs + a 3,000 USD host
    assert four.cost.capex == pytest.approx(4 * (8 * gpu_usd + server) + 32 * network)  # was one node's GPUs
    assert four.cost.machines == 4 and four.cost.platform.platform.id == "hgx-8"  # type: ignore[union-attr]
    assert four.cost.power_w == pytest.approx(4 * (8 * 700 + hgx.host_power_w) + 32 * network_w)
    hours = four.train_time_s / 3600
    assert four.cost.gpu_hours == pytest.approx(32 * hours)
    assert (
        four.cost.cloud_cost == pytest.approx(32 * hours * h100.cloud_usd_per_hour)
        if h100.cloud_usd_per_hour
        else (four.cost.cloud_cost is None)
    )
    assert four.cost.energy_kwh == pytest.approx(four.cost.power_w * 0.7 * hours * 1.2 / 1000)


@pytest.mark.parametrize("nodes", [1, 4])
def test_the_bill_of_materials_lists_the_network_and_totals_the_capex(nodes: int) -> None:
    rec = _nodes(nodes)
    best = rec.best
    assert best is not None and best.nodes == nodes
    report = build_report(rec)
    rows = {r.item: r for r in report.bom}
    assert sum(r.total_price for r in report.bom if r.total_price is not None) == pytest.approx(best.cost.capex)
    assert rows["Accelerator"].quantity == 8 * nodes
    assert rows["Platform"].quantity == nodes and "8-GPU" in rows["Platform"].specification
    assert rows["CPU"].total_price is not None  # the platform's CPUs are priced on the CPU line
    if nodes == 1:
        assert "Network adapters" not in rows and "Network switch" not in rows
        return
    # one adapter per GPU at the rate the step time assumes between nodes, and a switch port each
    nic, switch = rows["Network adapters"], rows["Network switch"]
    adapter = network_adapter()
    assert nic.quantity == switch.quantity == 32 and f"{adapter.gbps:.0f} Gb/s per GPU" in nic.reason
    assert "INTER_NODE_BPS" in nic.reason and nic.total_price == pytest.approx(32 * adapter.price_usd)
    assert switch.total_price is not None and switch.total_price > 0
    assert rows["Accelerator"].specification == "NVIDIA H100 SXM × 8 per node × 4 nodes"
    assert rows["Power supply"].specification.endswith("in each of the 4 nodes")


def test_a_cpu_bill_of_materials_prices_the_cpu_as_the_capex_does() -> None:
    # the bill's total left out the CPU (only the host was priced) while the capex counted it
    rec = recommend(parse_workload(seed({})), [find_device("EPYC 9654", CATALOGUE)], host_ram_bytes=64 * 2**30)
    best = rec.best
    assert best is not None and best.device.kind == "cpu"
    report = build_report(rec)
    (cpu,) = [r for r in report.bom if r.item == "Processor for training"]
    epyc = best.device.purchase_price()[0]  # type: ignore[index]
    assert cpu.total_price == epyc
    machine = best.cost.platform.platform  # type: ignore[union-attr]
    assert sum(r.total_price for r in report.bom if r.total_price is not None) == best.cost.capex
    assert best.cost.capex == epyc + machine.base_cost_usd + machine.cpu_cost_usd
