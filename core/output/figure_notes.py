"""What a candidate's figure is made of, in a line: the tooltips of the wizard's candidate table (its capex,
TCO and training time repeated the device's datasheet source instead)."""

from __future__ import annotations

from core.estimate.cost import OWNED_NOTE
from core.estimate.sizing import CandidateResult
from core.units import fmt_amount, fmt_money, fmt_seconds


def capex_note(c: CandidateResult) -> str:
    """ "Capex 3,399 USD = 1 × NVIDIA GeForce RTX 4090 at 1,900 + 1 × Desktop … at 800 + …; street price …"."""
    cost = c.cost
    if cost.owned:
        return f"{c.device.name}: {OWNED_NOTE}"
    if cost.capex is None:
        return f"Not priced: {cost.purchase_note}"
    parts = " + ".join(f"{line.quantity:,} × {line.item} at {fmt_amount(line.unit)}" for line in cost.capex_lines)
    return f"Capex {fmt_money(cost.capex, cost.currency)} = {parts}; {cost.purchase_note}"


def tco_note(c: CandidateResult) -> str:
    """ "TCO 6,911 USD = capex 3,399 + energy 2,967 + maintenance 545 over the amortisation period …"."""
    cost = c.cost
    if cost.tco is None or cost.capex is None or cost.maintenance is None:
        return f"{c.device.name}: {OWNED_NOTE} (its power is not known)" if cost.owned else "Not priced"
    energy = cost.tco - cost.capex - cost.maintenance
    watts = f"; {cost.power_w:,.0f} W with its host" if cost.power_w is not None else ""
    return (
        f"TCO {fmt_money(cost.tco, cost.currency)} = capex {fmt_amount(cost.capex)} + energy {fmt_amount(energy)} + "
        f"maintenance {fmt_amount(cost.maintenance)} over the amortisation period (Hooda 2023 §3.3.4){watts}"
    )


def time_note(c: CandidateResult, epochs: int) -> str:
    """ "Training time 2.81 min = 159 steps an epoch × 400 epochs × 2.65 ms a step", or where the workload's scaling
    model sets the time of several devices, the product beside what that model gives."""
    product = c.steps_per_epoch * epochs * c.step.step_s
    plural = "" if epochs == 1 else "s"
    parts = f"{c.steps_per_epoch:,} steps an epoch × {epochs:,} epoch{plural} × {fmt_seconds(c.step.step_s)}"
    if abs(c.train_time_s - product) <= 1e-6 * max(product, 1e-12):
        return f"Training time {fmt_seconds(c.train_time_s)} = {parts} a step"
    return (
        f"Training time {fmt_seconds(c.train_time_s)}: the workload's scaling model (training.scaling_model, Wünsche "
        f"2016) scales one device's time to {c.count * c.nodes}; {parts} a step would be {fmt_seconds(product)}"
    )
