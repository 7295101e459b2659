"""The bill's power line (core.advice.bom): supplies, circuit and heat of one machine at its load."""

from __future__ import annotations

import math

from core.advice.bom_line import BomLine
from core.estimate.sizing import CandidateResult
from core.hardware.platforms import PlatformChoice

# Power supply: the devices at their catalogue TDPs and the platform's host (platforms.json), with
# 25 % headroom, TrainRig's margin for transients.
PSU_HEADROOM = 1.25


# Continuous load on a branch circuit at most 80 % of the breaker's rating (US National Electrical Code
# 210.19(A)/210.20(A)); volts × amps × 0.8. Europe's 230 V / 16 A circuit carries 3,680 W the same way.
CIRCUITS = (
    (120 * 15 * 0.8, "one 120 V / 15 A outlet"),
    (120 * 20 * 0.8, "a 120 V / 20 A circuit"),
    (240 * 20 * 0.8, "a 240 V / 20 A circuit (230 V / 16 A in Europe)"),
    (240 * 30 * 0.8, "a 240 V / 30 A circuit"),
)
# The largest single power supply a workstation takes (ATX units stop at 1,600 W on 120 V outlets).
ATX_PSU_MAX_W = 1600


def circuit_for(watts: float) -> str:
    """The electrical circuit a continuous load of ``watts`` needs (CIRCUITS)."""
    for limit, name in CIRCUITS:
        if watts <= limit:
            return name
    n = math.ceil(watts / (240 * 30 * 0.8))
    return f"{n} × 240 V / 30 A circuits or a three-phase feed"


def power_line(best: CandidateResult, choice: PlatformChoice, host_power_w: float | None = None) -> BomLine:
    """Supplies, circuit and cooling of one machine at its load: accelerators at TDP plus the host
    (the workload's ``cost.host_power_w`` where it gives one, as the energy does, else the platform's)
    with 25 % headroom; where the vendor rates the whole system (DGX H100), that rating, which has its
    margin — or the load, where these devices draw more than that system."""
    p = choice.platform
    per_machine = choice.per_machine(best.count) if best.device.kind != "cpu" else 1
    device_w = (best.device.tdp_w or 0) * per_machine
    host_w = p.host_power_w if host_power_w is None else host_power_w
    host_from = p.name if host_power_w is None else "the workload's cost.host_power_w"
    load = device_w + host_w
    if p.rated_power_w:
        supply = math.ceil(max(p.rated_power_w, load) / 100) * 100
        units = f"rated {p.rated_power_w:,.0f} W" if supply == p.rated_power_w else f"{supply:,} W at full load"
        why = f"the vendor's rating ({p.rated_power_w:,.0f} W) for {what_for(best)} {device_w:,.0f} W and the host"
        if supply > p.rated_power_w:
            why += f", which these devices exceed: {device_w:,.0f} W + host {host_w:,.0f} W"
    else:
        supply = math.ceil(load * PSU_HEADROOM / 100) * 100
        units = f"{supply:,} W of supply"
        if supply > ATX_PSU_MAX_W and (p.id in ("desktop", "workstation") or p.id.startswith("cpu")):
            units += f" (above one {ATX_PSU_MAX_W:,} W supply on 120 V: a 2,000 W supply on 200–240 V, or two)"
        why = f"{what_for(best)} {device_w:,.0f} W + host {host_w:,.0f} W ({host_from}) with 25 % headroom"
    if p.psu_w is not None and supply > p.psu_w:  # 5,800 W wanted of "4 × 2,700 W (2+2 redundant)": 5,400
        units += (
            f" — more than the {p.psu_w:,.0f} W its supplies give as priced, redundancy kept: larger supplies, or the "
            "GPUs' power limit set lower (nvidia-smi -pl)"
        )
    return BomLine(
        "Power supply",
        # the heat is what the machine draws at full load, not its supplies' rating with their headroom
        f"{units}; {circuit_for(supply)} per machine; {load * 3.412:,.0f} BTU/h of heat to remove at full load",
        f"{why}; supplies: {p.psu}",
        "device TDPs from the catalogue (vendor data sheets); host power and system ratings from platforms.json; "
        "80 % continuous load per circuit (US NEC 210.19/210.20); 25 % headroom is a TrainRig allowance",
    )


def what_for(best: CandidateResult) -> str:
    return "GPUs" if best.device.kind != "cpu" else best.device.name
