"""Whole systems around the accelerators (resources/platforms.json): a workstation with 1–4 PCIe
GPUs, a PCIe server, HGX-class 4- and 8-GPU baseboard systems, a GH200 server, CPU-only machines
(desktop, workstation, server: a CPU candidate is priced in the one its segment calls for), and
the network that joins nodes. Each platform carries its host cost, power, cores, RAM, lanes,
power supplies and the circuit it needs, with sources; the cost model and the bill of materials
read them here."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.errors import CatalogueError
from core.hardware.catalogue import FORM_FACTORS, DeviceSpec
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
    passive_cards: bool = False  # its airflow cools passively cooled data-centre cards (T4, L40S, H100 PCIe)
    psu_w: float | None = None  # what its supplies deliver as priced, redundancy kept (4 × 2,700 W, 2+2: 5,400 W)

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

    def per_machine(self, count: int) -> int:
        """The devices one machine holds of ``count`` in a node (a node of four GH200s is four servers of one)."""
        return math.ceil(count / max(1, self.machines))


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


_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
NETWORK_UNITS = ("gpu", "port", "node")


def _text(e: dict[str, Any], key: str, where: str) -> str:
    value = e[key]
    if not isinstance(value, str) or not value.strip():
        raise CatalogueError(f"{where}: {key} must be a non-empty text")
    return value


def _number(e: dict[str, Any], key: str, where: str, *, positive: bool = False) -> float:
    """A figure that is a number and not negative (or > 0 with ``positive``); bool is no number."""
    value = e[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CatalogueError(f"{where}: {key} must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise CatalogueError(f"{where}: {key} must be {'above' if positive else 'at least'} 0, got {value!r}")
    return float(value)


def _date(e: dict[str, Any], key: str, where: str) -> str:
    value = _text(e, key, where)
    if not _DATE.match(value):
        raise CatalogueError(f"{where}: {key} must be a YYYY-MM month, got {value!r}")
    return value


def _platform(e: dict[str, Any]) -> Platform:
    where = f"platform {e.get('id')!r}"
    forms = tuple(e["form_factors"])
    unknown = [f for f in forms if f not in FORM_FACTORS]
    if not forms or unknown:
        raise CatalogueError(f"{where}: form_factors must be some of {', '.join(FORM_FACTORS)}, got {list(forms)}")
    sold_in = tuple(int(b) for b in e.get("sold_in", ()))
    if any(b <= 0 for b in sold_in) or list(sold_in) != sorted(sold_in):
        raise CatalogueError(f"{where}: sold_in must list board sizes above 0 in rising order, got {list(sold_in)}")
    max_devices = int(_number(e, "max_devices", where))
    if sold_in and sold_in[-1] > max_devices:
        raise CatalogueError(f"{where}: a board of {sold_in[-1]} does not fit max_devices {max_devices}")
    rated = e.get("rated_power_w")
    return Platform(
        id=_text(e, "id", where),
        name=_text(e, "name", where),
        form_factors=forms,
        max_devices=max_devices,
        sold_in=sold_in,
        base_cost_usd=_number(e, "base_cost_usd", where),
        cpu_cost_usd=_number(e, "cpu_cost_usd", where),
        cpu=_text(e, "cpu", where),
        host_power_w=_number(e, "host_power_w", where, positive=True),
        rated_power_w=_number(e, "rated_power_w", where, positive=True) if rated is not None else None,
        cores=int(_number(e, "cores", where)),
        ram_gb=int(_number(e, "ram_gb", where, positive=True)),
        memory_channels=int(_number(e, "memory_channels", where)),
        pcie_lanes=int(_number(e, "pcie_lanes", where, positive=True)),
        psu=_text(e, "psu", where),
        circuit=_text(e, "circuit", where),
        cooling=_text(e, "cooling", where),
        price_date=_date(e, "price_date", where),
        source=_text(e, "source", where),
        passive_cards=_flag(e, "passive_cards", where),
        psu_w=_number(e, "psu_w", where, positive=True) if e.get("psu_w") is not None else None,
    )


def _flag(e: dict[str, Any], key: str, where: str) -> bool:
    value = e.get(key, False)
    if not isinstance(value, bool):
        raise CatalogueError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def _network(e: dict[str, Any]) -> NetworkItem:
    where = f"network item {e.get('id')!r}"
    per = _text(e, "per", where)
    if per not in NETWORK_UNITS:
        raise CatalogueError(f"{where}: per must be one of {', '.join(NETWORK_UNITS)}, got {per!r}")
    return NetworkItem(
        id=_text(e, "id", where),
        name=_text(e, "name", where),
        price_usd=_number(e, "price_usd", where, positive=True),
        per=per,
        power_w=_number(e, "power_w", where) if "power_w" in e else 0.0,
        price_date=_date(e, "price_date", where),
        source=_text(e, "source", where),
        gbps=_number(e, "gbps", where, positive=True) if e.get("gbps") is not None else None,
    )


@lru_cache(maxsize=2)
def load_platforms(path: str | None = None) -> Platforms:
    p = Path(path) if path else resource_path("platforms.json")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        platforms = tuple(_platform(e) for e in doc["platforms"])
        network = tuple(_network(e) for e in doc["network"])
    except CatalogueError as exc:
        raise CatalogueError(f"the platform list {p}: {exc}") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CatalogueError(f"the platform list {p} cannot be read: {exc}") from exc
    for items, what in ((platforms, "platform"), (network, "network item")):
        ids = [i.id for i in items]
        if len(set(ids)) != len(ids):
            raise CatalogueError(f"the platform list {p} names a {what} id twice: {ids}")
    return Platforms(platforms, network, str(doc.get("about", "")))


MAX_TOWER_DEVICES = 4  # the workstation's slots: more actively cooled cards go in a PCIe server


def platform_for(device: DeviceSpec, count: int, platforms: Platforms | None = None) -> PlatformChoice | None:
    """The machines that hold ``count`` of ``device`` in one node; None for a device that is only
    rented (TPUs, Trainium: form factor "cloud"). The smallest platform that takes the device's
    form factor and the count wins (a passively cooled card only in a platform whose airflow cools
    it; one priced with RAM for the GPUs' memory when there is one); beyond the largest,
    several machines of it."""
    ps = platforms or load_platforms()
    form = device.form_factor or ("socket" if device.kind == "cpu" else "pcie")
    if form == "cloud":
        return None
    fitting = [p for p in ps.platforms if form in p.form_factors]
    if device.extra.get("cooling") == "passive":
        fitting = [p for p in fitting if p.passive_cards]
    if not fitting:
        raise CatalogueError(f"no platform in platforms.json holds a {form} device ({device.name})")
    if form == "socket":
        p = _socket_platform(device, fitting)
        return PlatformChoice(p, 1, 0)
    # an actively cooled card goes in a tower built for it (desktop, workstation) where one holds the count; the
    # servers whose airflow passive cards need take it only beyond (two RTX 5090s went in a 1U passive-card server)
    active = device.extra.get("cooling") != "passive"
    fitting.sort(key=lambda p: (active and p.passive_cards and count <= MAX_TOWER_DEVICES, p.max_devices))
    # host RAM at least the GPUs' memory (core.advice.bom's Memory line): two 96 GB cards go in a
    # workstation, not a 64 GB desktop
    ram_needed = (device.memory_bytes or 0) * count
    roomy = [p for p in fitting if p.ram_gb * 10**9 >= ram_needed]
    for p in roomy + fitting:
        if count <= p.max_devices:
            return PlatformChoice(p, 1, p.devices_bought(count))
    p = fitting[-1]
    machines = math.ceil(count / p.max_devices)
    bought = p.devices_bought(p.max_devices) * machines if p.sold_in else count
    return PlatformChoice(p, machines, bought)


def network_adapter(platforms: Platforms | None = None) -> NetworkItem:
    """The adapter each GPU gets in a multi-node purchase (``per`` "gpu"); the step time's
    inter-node bandwidth is its line rate."""
    ps = platforms or load_platforms()
    for item in ps.network:
        if item.per == "gpu":
            return item
    raise CatalogueError("platforms.json lists no network adapter (an item with per: gpu)")


# the socket platform for each CPU segment (resources/platforms.json ids)
SOCKET_PLATFORMS = {"desktop": "cpu-machine", "workstation": "cpu-workstation", "server": "cpu-server"}


def cpu_segment(device: DeviceSpec) -> str:
    """The CPU's market segment, "desktop", "workstation" or "server": the catalogue entry's
    ``segment``, else read from the name (EPYC and Xeon other than Xeon W are server parts,
    Threadripper and Xeon W workstation parts, anything else a desktop part — a user's CPU
    usually names its family)."""
    segment = str(device.extra.get("segment") or "")
    if segment in SOCKET_PLATFORMS:
        return segment
    name = device.name.lower()
    if "threadripper" in name or re.search(r"\bxeon w", name):
        return "workstation"
    if "epyc" in name or "xeon" in name:
        return "server"
    return "desktop"


def _socket_platform(device: DeviceSpec, fitting: list[Platform]) -> Platform:
    """A server CPU is priced in a server, a workstation CPU in a workstation, a desktop CPU in a
    desktop; a platform list without the segment's platform falls back to its first socket one."""
    wanted = SOCKET_PLATFORMS[cpu_segment(device)]
    return next((p for p in fitting if p.id == wanted), fitting[0])
