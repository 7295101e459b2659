"""Whole systems around the accelerators (resources/platforms.json): a workstation with 1–4 PCIe
GPUs, a PCIe server, an HGX-class 8-GPU baseboard system, a CPU-only machine, and the network that
joins nodes. Each platform carries its host cost, power, cores, RAM, lanes, power supplies and
the circuit it needs, with sources; the cost model and the bill of materials read them here."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.errors import CatalogueError
from core.hardware.catalogue import DeviceSpec
from core.paths import resource_path


@dataclass(frozen=True)
class Platform:
    id: str
    name: str
    form_factors: tuple[str, ...]  # the device form factors it holds (core.hardware.catalogue.FORM_FACTORS)
    max_devices: int  # accelerators per machine (0: a CPU-only machine)
    sold_in: tuple[int, ...]  # baseboard sizes the accelerators are sold in (HGX: 4, 8); () loose cards
    base_cost_usd: float  # chassis, board, RAM, drives, power supplies, cooling: no accelerators, no CPUs
    cpu_cost_usd: float  # the CPUs the platform is built with (0 where the CPU is the candidate)
    cpu: str  # what those CPUs are
    host_power_w: float  # the host at load without its accelerators (CPUs, RAM, drives, fans, NICs)
    rated_power_w: float | None  # the vendor's system rating, where one is published (DGX H100 10.2 kW)
    cores: int  # physical cores of the platform's CPUs
    ram_gb: int  # RAM it is priced with
    memory_channels: int
    pcie_lanes: int
    psu: str  # power supplies, e.g. "2 × 1,600 W (redundant)"
    circuit: str  # the electrical circuit it needs
    cooling: str
    price_date: str
    source: str

    def devices_bought(self, count: int) -> int:
        """Accelerators paid for to get ``count``: a baseboard platform sells whole boards."""
        if not self.sold_in:
            return count
        board = next((b for b in self.sold_in if b >= count), self.sold_in[-1])
        return board * math.ceil(count / board) if count > board else board


@dataclass(frozen=True)
class NetworkItem:
    id: str
    name: str
    price_usd: float
    per: str  # "gpu" (an adapter per GPU), "port" (a switch port per adapter), "node"
    power_w: float
    price_date: str
    source: str
    gbps: float | None = None  # line rate of an adapter or port


@dataclass(frozen=True)
class PlatformChoice:
    """The machines a candidate is built from: ``machines`` of ``platform`` per node, holding
    ``bought`` accelerators in all (more than the candidate's count where boards are sold whole)."""

    platform: Platform
    machines: int
    bought: int
    note: str


@dataclass(frozen=True)
class Platforms:
    platforms: tuple[Platform, ...]
    network: tuple[NetworkItem, ...]
    about: str

    def by_id(self, pid: str) -> Platform:
        for p in self.platforms:
            if p.id == pid:
                return p
        raise CatalogueError(f"no platform {pid!r} in platforms.json")


def _platform(e: dict[str, Any]) -> Platform:
    return Platform(
        id=str(e["id"]),
        name=str(e["name"]),
        form_factors=tuple(e["form_factors"]),
        max_devices=int(e["max_devices"]),
        sold_in=tuple(int(b) for b in e.get("sold_in", ())),
        base_cost_usd=float(e["base_cost_usd"]),
        cpu_cost_usd=float(e["cpu_cost_usd"]),
        cpu=str(e["cpu"]),
        host_power_w=float(e["host_power_w"]),
        rated_power_w=float(e["rated_power_w"]) if e.get("rated_power_w") else None,
        cores=int(e["cores"]),
        ram_gb=int(e["ram_gb"]),
        memory_channels=int(e["memory_channels"]),
        pcie_lanes=int(e["pcie_lanes"]),
        psu=str(e["psu"]),
        circuit=str(e["circuit"]),
        cooling=str(e["cooling"]),
        price_date=str(e["price_date"]),
        source=str(e["source"]),
    )


def _network(e: dict[str, Any]) -> NetworkItem:
    return NetworkItem(
        id=str(e["id"]),
        name=str(e["name"]),
        price_usd=float(e["price_usd"]),
        per=str(e["per"]),
        power_w=float(e.get("power_w", 0)),
        price_date=str(e["price_date"]),
        source=str(e["source"]),
        gbps=float(e["gbps"]) if e.get("gbps") else None,
    )


@lru_cache(maxsize=2)
def load_platforms(path: str | None = None) -> Platforms:
    p = Path(path) if path else resource_path("platforms.json")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        return Platforms(
            tuple(_platform(e) for e in doc["platforms"]),
            tuple(_network(e) for e in doc["network"]),
            str(doc.get("about", "")),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CatalogueError(f"the platform list {p} cannot be read: {exc}") from exc


def platform_for(device: DeviceSpec, count: int, platforms: Platforms | None = None) -> PlatformChoice | None:
    """The machines that hold ``count`` of ``device`` in one node; None for a device that is only
    rented (TPUs, Trainium: form factor "cloud"). The smallest platform that takes the device's
    form factor and the count wins; beyond the largest, several machines of it."""
    ps = platforms or load_platforms()
    form = device.form_factor or ("socket" if device.kind == "cpu" else "pcie")
    if form == "cloud":
        return None
    fitting = [p for p in ps.platforms if form in p.form_factors]
    if not fitting:
        raise CatalogueError(f"no platform in platforms.json holds a {form} device ({device.name})")
    if form == "socket":
        p = fitting[0]
        return PlatformChoice(p, 1, 0, f"{p.name} with the {device.name}")
    fitting.sort(key=lambda p: p.max_devices)
    for p in fitting:
        if count <= p.max_devices:
            bought = p.devices_bought(count)
            note = f"{p.name}"
            if bought > count:
                note += f" (sold with {bought} GPUs on one baseboard: {bought - count} more than needed are paid for)"
            return PlatformChoice(p, 1, bought, note)
    p = fitting[-1]
    machines = math.ceil(count / p.max_devices)
    bought = p.devices_bought(p.max_devices) * machines if p.sold_in else count
    return PlatformChoice(p, machines, bought, f"{machines} × {p.name} (one holds at most {p.max_devices})")


def network_adapter(platforms: Platforms | None = None) -> NetworkItem:
    """The adapter each GPU gets in a multi-node purchase (``per`` "gpu"); the step time's
    inter-node bandwidth is its line rate."""
    ps = platforms or load_platforms()
    for item in ps.network:
        if item.per == "gpu":
            return item
    raise CatalogueError("platforms.json lists no network adapter (an item with per: gpu)")
