"""Cost of owning and of renting: capex, energy, TCO, cost per run, cloud equivalent (Hooda §3.3.4)."""

from __future__ import annotations

from dataclasses import dataclass

from core.hardware.catalogue import DeviceSpec
from core.spec.workload import CostSpec

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class CostEstimate:
    capex: float | None  # devices × count × nodes (converted from USD) + host per node, in ``currency``
    power_w: float | None  # devices of every node at TDP plus one host per node
    energy_kwh: float | None  # of one training run, at the set utilisation and PUE
    energy_cost: float | None
    run_cost: float | None  # energy + amortised capex + maintenance for the hours of one run
    tco: float | None  # capex + energy and maintenance over the amortisation period
    cloud_cost: float  # GPU-hours of the run at the cloud price
    gpu_hours: float  # hours of the run × every device of every node
    break_even_hours: float | None  # hours of training after which owning beats renting
    currency: str


def estimate_cost(device: DeviceSpec, count: int, nodes: int, train_hours: float, cost: CostSpec) -> CostEstimate:
    """Cost of ``nodes`` machines with ``count`` devices each (and one host each) for a run of
    ``train_hours``. The inter-node network has no price in the catalogue and is not counted
    (the bill of materials lists it, unpriced)."""
    devices = count * max(1, nodes)
    power = None
    if device.tdp_w is not None:
        power = device.tdp_w * devices + cost.host_power_w * nodes
    capex = None
    if device.price_usd is not None:
        capex = cost.from_usd(device.price_usd) * devices + cost.host_cost * nodes  # catalogue prices are USD
    energy_kwh = power * cost.utilisation * train_hours * cost.pue / 1000 if power is not None else None
    energy_cost = energy_kwh * cost.electricity_per_kwh if energy_kwh is not None else None
    tco = run_cost = break_even = None
    if capex is not None and power is not None and energy_cost is not None:
        yearly_energy = power * cost.utilisation * HOURS_PER_YEAR * cost.pue / 1000 * cost.electricity_per_kwh
        maintenance = capex * cost.maintenance_percent / 100
        tco = capex + (yearly_energy + maintenance) * cost.amortisation_years
        busy_hours = cost.amortisation_years * HOURS_PER_YEAR * cost.utilisation
        run_cost = energy_cost + (capex + maintenance * cost.amortisation_years) * train_hours / busy_hours
        own_per_hour = power * cost.pue / 1000 * cost.electricity_per_kwh
        rent_per_hour = cost.cloud_per_gpu_hour * devices
        if rent_per_hour > own_per_hour:
            break_even = capex / (rent_per_hour - own_per_hour)
    gpu_hours = train_hours * devices
    return CostEstimate(
        capex,
        power,
        energy_kwh,
        energy_cost,
        run_cost,
        tco,
        gpu_hours * cost.cloud_per_gpu_hour,
        gpu_hours,
        break_even,
        cost.currency,
    )
