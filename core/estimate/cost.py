"""Cost of owning and of renting (Hooda §3.3.4; SPEC 3.4, 3.5a): whole systems priced from their
platform (core/hardware/platforms.py), energy, TCO, cost per run, each device's own dated on-demand
cloud price, and buy or rent for the workload's expected use.

Every amount is in the workload's currency: catalogue, platform and cloud prices are USD and are
converted at the workload's rate; prices the user gives are taken as that currency."""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.hardware.catalogue import DeviceSpec
from core.hardware.platforms import PlatformChoice, load_platforms, platform_for
from core.spec.workload import HOURS_PER_YEAR, CostSpec


@dataclass(frozen=True)
class CapexLine:
    """One priced part of a purchase: what, how many in all nodes, unit and total price (in the
    workload's currency), and where the price comes from."""

    role: str  # "device", "platform" (or the user's "host"), "cpus", "adapter", "switch"
    item: str
    quantity: int
    unit: float
    total: float
    source: str


@dataclass(frozen=True)
class CostEstimate:
    capex: float | None  # sum of capex_lines; None when a device has no purchase price (rented only)
    capex_lines: tuple[CapexLine, ...]  # accelerators, host machines, host CPUs, network: the bill's prices
    platform: PlatformChoice | None  # the machines per node (None: rented only)
    machines: int  # machines in all nodes
    power_w: float | None  # devices at TDP + each machine's host + network, every node
    energy_kwh: float | None  # of one training run, at the set utilisation and PUE
    energy_cost: float | None
    run_cost: float | None  # energy + amortised capex + maintenance for the hours of one run
    tco: float | None  # capex + energy and maintenance over the amortisation period
    maintenance: float | None  # over the amortisation period
    cloud_per_hour: float | None  # renting the same devices on demand, per hour (None: no public offer)
    cloud_cost: float | None  # one run rented
    cloud_note: str  # the on-demand price used, its date and source, or why there is none
    gpu_hours: float  # hours of the run × every device of every node
    use_hours: float  # the expected use: runs × the run's hours, or hours per year × amortisation years
    runs_in_use: float  # runs of this training the expected use amounts to on these devices
    buy_for_use: float | None  # capex + energy for the use + maintenance over the amortisation period
    rent_for_use: float | None  # the use's hours rented
    break_even_hours: float | None  # hours of training after which owning beats renting the same devices
    break_even_runs: int | None  # the same in runs of this workload
    purchase_note: str  # which price the devices are bought at (street / launch), with its date
    currency: str
    rent_allowed: bool = True  # the workload's cost.rent_allowed: false keeps the data on site
    owned: bool = False  # already here (this machine): nothing is bought or rented (DeviceSpec.owned)
    # systems bought for the expected use: more than one where the runs take longer than one system's busy hours
    # over the amortisation period (5,000 runs of 24.5 h were priced as one RTX 4090's: 14 years of training)
    systems_for_use: int = 1
    # one system's training hours over the amortisation period: years × 8,760 × utilisation, or the hours a year asked
    life_hours: float = math.inf

    @property
    def buy_per_run(self) -> float | None:
        """Owning, per run of this training at the expected use (capex, maintenance, energy)."""
        return None if self.buy_for_use is None else self.buy_for_use / max(self.runs_in_use, 1e-12)

    @property
    def verdict(self) -> str | None:
        """ "buy" or "rent", whichever costs less for the expected use; "buy" where the workload rules renting
        out (each candidate read "rent · 532 runs" beside the decision to buy); "use" for devices already
        here; None when one is unknown."""
        if self.owned:
            return "use"
        if not self.rent_allowed:
            return None if self.buy_for_use is None else "buy"
        if self.buy_for_use is None or self.rent_for_use is None:
            return None
        return "rent" if self.rent_for_use < self.buy_for_use else "buy"


OWNED_NOTE = "already here: nothing to buy"
# what a buyer meets beside the price (the catalogue's availability): a Tesla P40 was advised without it
AVAILABILITY = {"used-market": "sold used only", "end-of-life": "no longer made: new stock while it lasts"}


def device_cloud_price(device: DeviceSpec, cost: CostSpec) -> tuple[float | None, str]:
    """Per device-hour in the workload's currency and where it comes from: the workload's own
    ``cloud_per_gpu_hour`` when set (overrides every device), else the device's dated on-demand price
    from the catalogue, else None."""
    if cost.cloud_per_gpu_hour is not None:
        return cost.cloud_per_gpu_hour, f"{cost.cloud_per_gpu_hour:g} {cost.currency} per device-hour (workload)"
    if device.cloud_usd_per_hour is not None:
        when = f", {device.cloud_price_date}" if device.cloud_price_date else ""
        price = cost.from_usd(device.cloud_usd_per_hour)
        converted = f" ({device.cloud_usd_per_hour:g} USD)" if cost.currency != "USD" else ""
        return price, f"{price:.3g} {cost.currency}{converted} per device-hour on demand{when}"
    return None, "no public on-demand offer in the catalogue: renting not priced"


def estimate_cost(device: DeviceSpec, count: int, nodes: int, train_hours: float, cost: CostSpec) -> CostEstimate:
    """Cost of ``nodes`` nodes, each with ``count`` devices in the machines of their platform, for a
    run of ``train_hours``; renting prices the same devices for the same hours."""
    nodes = max(1, nodes)
    devices = count * nodes
    platforms = load_platforms()
    owned = nodes == 1 and device.owned(count)
    # more of this machine than it has (× 2 of its one GPU, or several nodes of it) is neither here nor a thing to
    # buy as "this machine" (it was priced as a new 2-GPU system, its CPU rented at the per-GPU-hour price)
    beyond = device.is_this_machine and not owned
    # this machine is not bought again (a server was priced around its CPU) nor rented (its CPU got the
    # workload's cloud price per device-hour)
    choice = None if owned or beyond else platform_for(device, count, platforms)
    lines: list[CapexLine] = []
    capex: float | None = None
    power: float | None = None
    purchase = None if beyond else device.purchase_price()
    machines = 0
    purchase_note = OWNED_NOTE if owned else "not sold: rented only"
    if beyond:
        listed = f"the catalogue's {device.catalogue_match}" if device.catalogue_match else "a catalogue device"
        purchase_note = f"more than this machine has: list {listed} to price more"
    if owned and device.tdp_w is not None and cost.host_power_w is not None:
        power = device.tdp_w * count + cost.host_power_w
    if choice is not None and (purchase is not None or device.kind == "cpu"):
        p = choice.platform
        machines = choice.machines * nodes
        if purchase is not None:
            usd, kind, date = purchase
            purchase_note = (
                f"your price {cost.from_usd(usd):,.0f} {cost.currency} (set in the workload)"
                if kind == "quoted"
                else f"{kind} price {usd:,.0f} USD" + (f" ({date})" if date else "") + ", an estimate"
            ) + (f"; {AVAILABILITY[device.availability]}" if device.availability in AVAILABILITY else "")
            bought = (choice.bought or count) * nodes if device.kind != "cpu" else nodes
            unit = cost.from_usd(usd)
            src = f"{purchase_note}; {device.source}"
            if device.kind != "cpu" and p.sold_in and bought > devices:
                src = f"sold on {p.sold_in[-1]}-GPU baseboards: {bought} bought for the {devices} used; {src}"
            lines.append(CapexLine("device", device.name, bought, unit, unit * bought, src))
        if cost.host_cost is not None:
            host = cost.host_cost
            lines.append(CapexLine("platform", "Host", machines, host, host * machines, "workload cost settings"))
        elif p.base_cost_usd or p.cpu_cost_usd:  # none where the device's price is the whole server's (GH200)
            base = cost.from_usd(p.base_cost_usd)
            name = f"{p.name}: chassis, board, RAM, drives, power supplies"
            lines.append(CapexLine("platform", name, machines, base, base * machines, p.source))
            if p.cpu_cost_usd:
                cpu = cost.from_usd(p.cpu_cost_usd)
                lines.append(CapexLine("cpus", f"Host CPUs: {p.cpu}", machines, cpu, cpu * machines, p.source))
        host_w = cost.host_power_w if cost.host_power_w is not None else p.host_power_w
        power = (device.tdp_w or 0) * devices + host_w * machines if device.tdp_w is not None else None
        if machines > 1:  # nodes, or one node's devices in several machines (4 × GH200: four servers), joined
            for item in platforms.network:
                qty = devices if item.per in ("gpu", "port") else nodes
                unit = cost.from_usd(item.price_usd)
                role = {"gpu": "adapter", "port": "switch"}.get(item.per, "network")
                lines.append(CapexLine(role, item.name, qty, unit, unit * qty, f"{item.source} ({item.price_date})"))
                if power is not None:
                    power += item.power_w * qty
        if purchase is not None:
            capex = sum(line.total for line in lines)
    energy_kwh = power * cost.utilisation * train_hours * cost.pue / 1000 if power is not None else None
    energy_cost = energy_kwh * cost.electricity_per_kwh if energy_kwh is not None else None
    per_device, cloud_note = (
        (None, "already here: not rented" if owned else purchase_note)
        if owned or beyond
        else device_cloud_price(device, cost)
    )
    cloud_per_hour = per_device * devices if per_device is not None else None
    gpu_hours = train_hours * devices
    use_hours = (
        cost.hours_per_year * cost.amortisation_years if cost.hours_per_year is not None else cost.runs * train_hours
    )
    tco = run_cost = buy_for_use = break_even = maintenance = None
    break_even_runs = None
    busy_hours = cost.amortisation_years * HOURS_PER_YEAR * cost.utilisation
    # hours a year say how long one system trains (up to 8,760): its life is the use's hours, not 70 % of the
    # clock, and one system gives them; runs beyond its busy hours need more systems
    life = use_hours if cost.hours_per_year is not None else busy_hours
    systems = 1 if cost.hours_per_year is not None else max(1, math.ceil(use_hours / busy_hours - 1e-9))
    if capex is not None and power is not None:
        own_per_hour = power * cost.utilisation * cost.pue / 1000 * cost.electricity_per_kwh
        maintenance = capex * cost.maintenance_percent / 100 * cost.amortisation_years
        tco = capex + own_per_hour * HOURS_PER_YEAR * cost.amortisation_years + maintenance
        run_cost = own_per_hour * train_hours + (capex + maintenance) * train_hours / busy_hours
        buy_for_use = systems * (capex + maintenance) + own_per_hour * use_hours
        if cloud_per_hour is not None and cloud_per_hour > own_per_hour:
            break_even = (capex + maintenance) / (cloud_per_hour - own_per_hour)
            if break_even > life:  # owning never pays off within the system's life: no break-even to give
                break_even = None
            else:
                break_even_runs = math.ceil(break_even / train_hours) if train_hours > 0 else None
    return CostEstimate(
        capex=capex,
        capex_lines=tuple(lines),
        platform=choice,
        machines=machines,
        power_w=power,
        energy_kwh=energy_kwh,
        energy_cost=energy_cost,
        run_cost=run_cost,
        tco=tco,
        maintenance=maintenance,
        cloud_per_hour=cloud_per_hour,
        cloud_cost=cloud_per_hour * train_hours if cloud_per_hour is not None else None,
        cloud_note=cloud_note,
        gpu_hours=gpu_hours,
        use_hours=use_hours,
        runs_in_use=use_hours / train_hours if train_hours > 0 else float(cost.runs),
        buy_for_use=buy_for_use,
        rent_for_use=cloud_per_hour * use_hours if cloud_per_hour is not None else None,
        break_even_hours=break_even,
        break_even_runs=break_even_runs,
        purchase_note=purchase_note,
        currency=cost.currency,
        rent_allowed=cost.rent_allowed,
        owned=owned,
        systems_for_use=systems,
        life_hours=life,
    )
