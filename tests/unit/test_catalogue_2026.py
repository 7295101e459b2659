"""The 2026 catalogue and the platforms a purchase is built on: every price dated and sourced,
FP8 where the silicon has it, peer-to-peer as the driver allows it, and whole machines around
the devices (baseboards sold whole, a server CPU in a server)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.errors import CatalogueError
from core.hardware.catalogue import (
    FORM_FACTORS,
    DeviceSpec,
    catalogue_entries,
    device_from_entry,
    find_device,
    load_catalogue,
)
from core.hardware.platforms import load_platforms, platform_for
from core.paths import resource_path

CATALOGUE = load_catalogue()
MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
AVAILABILITY = ("current", "end-of-life", "used-market", "cloud-only")


def _dev(query: str) -> DeviceSpec:
    return find_device(query, CATALOGUE)


@pytest.mark.parametrize(
    ("query", "name"),
    [
        # the new devices by the names a buyer types
        ("PRO 6000", "NVIDIA RTX PRO 6000 Blackwell"),
        ("MI300X", "AMD Instinct MI300X"),
        ("Gaudi 3", "Intel Gaudi 3"),
        ("GH200", "NVIDIA GH200 96GB"),
        ("H100 NVL", "NVIDIA H100 NVL"),
        ("5080", "NVIDIA GeForce RTX 5080"),
        ("5070 Ti", "NVIDIA GeForce RTX 5070 Ti"),
        ("5060 Ti", "NVIDIA GeForce RTX 5060 Ti 16 GB"),
        ("NVIDIA GeForce RTX 5070", "NVIDIA GeForce RTX 5070"),  # the exact name beats "5070 Ti"
        # and the short names that resolved before still do
        ("H100 PCIe", "NVIDIA H100 PCIe"),
        ("H100 SXM", "NVIDIA H100 SXM"),
        ("4090", "NVIDIA GeForce RTX 4090"),
        ("5090", "NVIDIA GeForce RTX 5090"),
        ("RTX 6000 Ada", "NVIDIA RTX 6000 Ada"),
        ("P40", "NVIDIA Tesla P40"),
        ("NVIDIA T4", "NVIDIA T4"),
    ],
)
def test_new_and_old_devices_are_found_by_their_short_names(query: str, name: str) -> None:
    assert _dev(query).name == name


def test_a_name_shared_by_two_new_cards_is_ambiguous_not_a_silent_pick() -> None:
    with pytest.raises(CatalogueError, match="ambiguous") as err:
        _dev("5070")
    assert "RTX 5070 Ti" in str(err.value)


def test_every_device_that_can_be_bought_has_a_dated_sourced_price() -> None:
    for d in CATALOGUE:
        assert d.form_factor in FORM_FACTORS, d.name
        assert d.availability in AVAILABILITY, d.name
        if d.form_factor == "cloud":
            assert d.availability == "cloud-only" and d.purchase_price() is None, d.name
            continue
        price = d.purchase_price()
        assert price is not None, d.name
        usd, kind, date = price
        assert usd > 0 and date and MONTH.match(date), (d.name, price)
        assert "price:" in d.source, d.name  # says which price is the launch one and where it comes from
        if d.street_price_usd is not None:
            assert kind == "street" and "street price:" in d.source, d.name


def test_every_cloud_price_is_one_device_hour_with_its_date_and_offer() -> None:
    priced = [d for d in CATALOGUE if d.cloud_usd_per_hour is not None]
    assert len(priced) >= 25
    for d in priced:
        assert 0 < d.cloud_usd_per_hour < 20, d.name  # per device-hour, not per 8-GPU instance
        assert d.cloud_price_date and MONTH.match(d.cloud_price_date), d.name
        assert d.cloud_price_source and "USD" in d.cloud_price_source, d.name
    for d in CATALOGUE:
        if d.cloud_usd_per_hour is None:  # no offer: the entry says so instead of borrowing a price
            assert d.cloud_price_source, d.name
    assert all(d.cloud_usd_per_hour for d in CATALOGUE if d.availability == "cloud-only")


def test_cloud_prices_differ_by_device_as_the_offers_do() -> None:
    # one price per GPU-hour for an RTX 3090, a T4 and an H100 alike was the old error
    assert _dev("3090").cloud_usd_per_hour == 0.22  # RunPod, 2026-08
    assert _dev("NVIDIA T4").cloud_usd_per_hour == 0.526  # AWS g4dn.xlarge
    assert _dev("H100 SXM").cloud_usd_per_hour == 3.25  # Verda 8 x H100, 26.00 / 8
    assert _dev("B200").cloud_usd_per_hour == pytest.approx(48.88 / 8, abs=0.01)
    assert _dev("Quadro M4000").cloud_usd_per_hour is None  # nobody rents it
    assert _dev("EPYC 9654").cloud_usd_per_hour is None  # clouds run custom EPYC SKUs


def test_street_price_beside_the_launch_price() -> None:
    p40 = _dev("P40")
    assert p40.price_usd == 5699 and 200 <= p40.street_price_usd <= 300  # used, not its launch price
    assert p40.purchase_price() == (280, "street", "2026-06")
    rtx4090 = _dev("4090")
    assert rtx4090.price_usd == 1599 and rtx4090.street_price_usd > 1599  # above launch in 2026
    assert _dev("5090").street_price_usd > _dev("5090").price_usd


@pytest.mark.parametrize(
    ("query", "fp8_tflops"),
    [
        ("H100 SXM", 1979),  # data sheet 3,958 with sparsity / 2
        ("H100 PCIe", 1513),
        ("B200", 4500),
        ("L40S", 733),
        ("4090", 330.3),  # Ada whitepaper v2.02: FP8 with FP32 accumulate, GeForce half rate
        ("MI300X", 2614.9),
        ("Gaudi 3", 1835),
    ],
)
def test_fp8_is_the_dense_datasheet_peak(query: str, fp8_tflops: float) -> None:
    assert _dev(query).fp8_flops == pytest.approx(fp8_tflops * 1e12)


def test_fp8_exactly_where_the_silicon_has_it() -> None:
    fp8_architectures = {"Ada Lovelace", "Hopper", "Blackwell", "CDNA 3", "Gaudi 3"}
    for e in catalogue_entries():
        has = e.get("fp8_tflops") is not None
        assert has == (e.get("architecture") in fp8_architectures), e["name"]
        if has and e["kind"] == "gpu" and e["vendor"] == "NVIDIA":
            # FP8 with FP32 accumulate runs at twice the FP16/BF16 rate on every NVIDIA part here
            # (the L40S data sheet rounds to 362.05 and 733)
            assert e["fp8_tflops"] == pytest.approx(2 * e["fp16_tflops"], rel=0.02), e["name"]


def test_geforce_cards_since_ada_have_no_peer_to_peer() -> None:
    geforce = [d for d in CATALOGUE if re.search(r"GeForce RTX [45]0", d.name)]
    assert len(geforce) == 6
    for d in geforce:
        assert d.p2p is False and not d.nvlink, d.name
    # the 3090 reaches a second card only over its NVLink bridge; data-centre parts over NVLink
    assert _dev("3090").p2p is True and _dev("3090").nvlink
    assert _dev("H100 SXM").p2p is True and _dev("RTX 6000 Ada").p2p is True
    for e in catalogue_entries():
        if e.get("p2p") is not None:
            assert e.get("p2p_source"), e["name"]


@pytest.mark.parametrize(
    ("query", "count", "platform", "bought"),
    [
        ("H100 SXM", 1, "hgx-4", 4),  # SXM parts come on baseboards: one GPU means a 4-GPU board
        ("H100 SXM", 6, "hgx-8", 8),
        ("B200", 1, "hgx-4", 4),
        ("MI300X", 1, "hgx-8", 8),  # OAM: an 8-module UBB
        ("Gaudi 3", 2, "hgx-8", 8),
        ("GH200", 1, "gh200-server", 1),
        ("4090", 4, "workstation", 4),
        ("PRO 6000", 4, "workstation", 4),
        ("4090", 8, "pcie-server", 8),
        ("H100 NVL", 8, "pcie-server", 8),
        # two 32 GB RTX 5090s (more than the desktop's 64 GB of RAM) went in the 1U server built for passive cards
        ("5090", 2, "workstation", 2),
        ("6000 Ada", 2, "workstation", 2),
        ("NVIDIA L4", 2, "pcie-server-small", 2),  # a passive card still needs a server's airflow
    ],
)
def test_devices_are_bought_in_the_machines_they_are_sold_in(
    query: str, count: int, platform: str, bought: int
) -> None:
    choice = platform_for(_dev(query), count)
    assert choice is not None
    assert (choice.platform.id, choice.machines, choice.bought) == (platform, 1, bought)


@pytest.mark.parametrize(
    ("query", "platform"),
    [
        ("EPYC 9654", "cpu-server"),
        ("Xeon Platinum 8480+", "cpu-server"),
        ("E5-2683", "cpu-server"),
        ("Threadripper PRO 7995WX", "cpu-workstation"),
        ("w9-3495X", "cpu-workstation"),
        ("Ryzen 9 7950X", "cpu-machine"),
        ("Ryzen 7 2700", "cpu-machine"),
    ],
)
def test_a_cpu_candidate_is_priced_in_the_machine_of_its_segment(query: str, platform: str) -> None:
    choice = platform_for(_dev(query), 1)
    assert choice is not None and choice.platform.id == platform and choice.bought == 0


def test_a_users_cpu_without_a_segment_is_placed_by_its_name() -> None:
    def cpu(name: str) -> DeviceSpec:
        return device_from_entry({"name": name, "kind": "cpu", "fp32_tflops": 2}, origin="user")

    assert platform_for(cpu("AMD EPYC 9755"), 1).platform.id == "cpu-server"  # type: ignore[union-attr]
    assert platform_for(cpu("Intel Xeon w7-3465X"), 1).platform.id == "cpu-workstation"  # type: ignore[union-attr]
    assert platform_for(cpu("Lab desktop i7"), 1).platform.id == "cpu-machine"  # type: ignore[union-attr]


def test_cloud_only_devices_need_no_machine() -> None:
    assert platform_for(_dev("TPU v4"), 8) is None


def test_platform_figures_are_positive_dated_and_sourced() -> None:
    ps = load_platforms()
    assert "PROVISIONAL" not in ps.about
    assert {p.id for p in ps.platforms} >= {"cpu-machine", "cpu-workstation", "cpu-server", "workstation"} | {
        "pcie-server",
        "hgx-4",
        "hgx-8",
        "gh200-server",
    }
    for p in ps.platforms:
        assert "PROVISIONAL" not in p.source, p.id
        assert len(p.source) > 80 and MONTH.match(p.price_date), p.id
        assert p.host_power_w > 0 and p.ram_gb > 0 and p.pcie_lanes > 0, p.id
        assert p.psu and p.circuit and p.cooling, p.id
        if p.id != "gh200-server":  # the GH200 entry's price is a whole 1-superchip server
            assert p.base_cost_usd > 0, p.id
        if "socket" not in p.form_factors and p.id != "gh200-server":
            assert p.cpu_cost_usd > 0 and p.cores > 0, p.id
    for item in ps.network:
        assert item.price_usd > 0 and item.power_w > 0 and MONTH.match(item.price_date), item.id
        assert "PROVISIONAL" not in item.source and item.source, item.id
    assert {i.per for i in ps.network} == {"gpu", "port"}


def test_an_eight_gpu_system_is_rated_like_a_dgx_not_a_desktop_supply() -> None:
    hgx = load_platforms().by_id("hgx-8")
    assert hgx.rated_power_w == 10_200  # DGX H100 data sheet, not a 7,500 W supply
    assert hgx.host_power_w + 8 * 700 <= hgx.rated_power_w
    assert "3,300 W" in hgx.psu and "200–240 V" in hgx.circuit
    ws = load_platforms().by_id("workstation")
    assert "240 V / 20 A" in ws.circuit and "second" in ws.psu  # 4 big cards need two supplies


def _platforms_file(tmp_path: Path, change: dict[str, Any]) -> str:
    doc = json.loads(resource_path("platforms.json").read_text(encoding="utf-8"))
    doc["platforms"][0].update(change)
    path = tmp_path / "platforms.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"form_factors": ["pcie", "nvl72"]}, "form_factors"),
        ({"price_date": "2026"}, "YYYY-MM"),
        ({"source": ""}, "source"),
        ({"base_cost_usd": -1}, "base_cost_usd"),
        ({"host_power_w": "60 W"}, "host_power_w"),
    ],
)
def test_an_edited_platform_list_with_a_bad_figure_names_the_platform(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(CatalogueError, match=message) as err:
        load_platforms(_platforms_file(tmp_path, change))
    assert "cpu-machine" in str(err.value)


def test_the_catalogue_about_text_explains_the_new_fields() -> None:
    about = json.loads(resource_path("catalogue.json").read_text(encoding="utf-8"))["about"]
    for field in ("fp8_tflops", "street_price_usd", "cloud_usd_per_hour", "form_factor", "availability", "p2p"):
        assert field in about, field
