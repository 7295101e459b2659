"""The purchasing report as plain data: one model, rendered to PDF (reports/pdf.py) and CSV.

Everything a renderer shows is decided here — figures, their units and sources — so the PDF,
the CSV and later run or experiment reports stay consistent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.advice.bom import BomLine
from core.advice.ranking import rank_candidates
from core.advice.recommendation import Recommendation
from core.advice.rules import Finding
from core.estimate.activations import activation_note
from core.estimate.cost import AVAILABILITY, OWNED_NOTE
from core.estimate.gpu_notes import kernel_assumptions
from core.estimate.memory import MemoryBreakdown
from core.estimate.op_work import BANDWIDTH_EFFICIENCY
from core.estimate.pass_work import OVERHEAD_PER_OP_S, OVERHEAD_PER_OPERATOR_S
from core.estimate.sizing import CandidateResult, SizingResult
from core.estimate.timing import DEFAULT_EFFICIENCY, STORAGE_READ_BPS
from core.hardware.catalogue import DeviceSpec
from core.output.glossary import MEMORY_PER_DEVICE, verdict_text
from core.output.sizing_report import step_accuracy_note
from core.spec.workload import CostSpec
from core.units import fmt_bytes, fmt_count, fmt_money, fmt_seconds, fmt_sig


@dataclass(frozen=True)
class BomRow:
    item: str
    specification: str
    quantity: int | None
    unit_price: float | None
    total_price: float | None
    reason: str
    source: str


@dataclass(frozen=True)
class CandidateRow:
    device: str
    count: int
    fits: bool | None
    memory_bytes: int
    capacity_bytes: int | None
    train_time_s: float
    capex: float | None
    energy_kwh: float | None
    tco: float | None
    cloud: float | None
    break_even_h: float | None
    verdict: str
    buy_or_rent: str | None = None
    break_even_runs: int | None = None
    nodes: int = 1  # the count is per node ("A100 × 4" of 2 nodes read as 4 GPUs, 8 bought)


@dataclass(frozen=True)
class Report:
    title: str
    workload: str
    created: str
    author: str
    machine: str
    currency: str
    summary: str
    requirements: tuple[tuple[str, str, str], ...]  # label, value, source
    seed: tuple[tuple[str, str, str], ...]  # formula, value, source
    memory: MemoryBreakdown | None
    memory_device: str
    candidates: tuple[CandidateRow, ...]
    bom: tuple[BomRow, ...]
    findings: tuple[Finding, ...]
    assumptions: tuple[tuple[str, str], ...]
    inventory_text: str
    notes: tuple[str, ...] = field(default=())
    decision: tuple[str, str] | None = None  # the verdict ("use", "buy", "rent") and its paragraph, for the CSV
    systems: int = 1  # systems the expected use needs: the bill is one system's


def build_report(
    rec: Recommendation,
    *,
    author: str = "",
    machine: str = "",
    inventory_text: str = "",
    created: dt.datetime | None = None,
) -> Report:
    result, findings, bom = rec.result, rec.findings, rec.bom
    w, m, t, d, c = (
        result.workload,
        result.workload.analysis,
        result.workload.training,
        result.workload.data,
        result.workload.cost,
    )
    best = rec.best
    cur = c.currency
    s = result.seed
    when = (created or dt.datetime.now()).strftime("%Y-%m-%d %H:%M")
    return Report(
        title=f"Hardware for training: {w.name}",
        workload=w.name,
        created=when,
        author=author,
        machine=machine,
        currency=cur,
        summary=_summary(rec),
        requirements=(
            ("Parameters", f"{m.parameters:,}", "counted per layer; equal to PyTorch's count (docs/accuracy.md)"),
            (
                "Forward FLOPs per sample",
                fmt_count(m.forward_flops, "FLOP"),
                "2 per multiply-add, as torch.utils.flop_counter",
            ),
            (
                "Training compute",
                fmt_count(result.train_flops, "FLOP"),
                "3 × forward × samples × epochs (+1 forward with checkpointing)",
            ),
            ("Training data", f"{d.samples:,} samples, {fmt_bytes(result.dataset_bytes)}", "workload"),
            (
                "Training settings",
                f"batch {t.batch_size}, {t.epochs} epoch{'' if t.epochs == 1 else 's'}, {t.optimizer}, {t.precision}"
                + (", checkpointing" if t.checkpointing else "")
                + (f", {t.sharding}" if t.sharding != "none" else "")
                + (f", {t.large.attention} attention" if t.large.attention != "auto" else ""),
                "workload",
            ),
            (
                MEMORY_PER_DEVICE.label + (f" ({best.device.name} × {best.count})" if best else ""),
                fmt_bytes(best.memory.total) if best else "no candidate fits",
                "step replay of saved tensors, optimizer state and overheads (docs/sizing.md)",
            ),
        ),
        seed=(
            (
                "N_na (memory with the training set resident)",
                fmt_bytes(float(s["n_na_bytes"])),
                str(s["sources"]["n_na_bytes"]),
            ),  # type: ignore[index]
            (
                "K1 (network memory redundancy)",
                "n/a" if s["k1"] is None else f"{s['k1']:.4g} — {s['k1_meaning']}",
                str(s["sources"]["k1"]),
            ),  # type: ignore[index]
            (
                "T1 / T2 (operations per sample)",
                f"{fmt_count(float(s['t1_ops']), 'op')} / {fmt_count(float(s['t2_ops']), 'op')}",
                f"{s['sources']['t1_ops']}; {s['sources']['t2_ops']}",
            ),  # type: ignore[index]
            (
                "R (peak FLOP/s per device)",
                f"{fmt_count(float(s['peak_flops']), 'FLOP/s')} on {s['device']}",
                str(s["sources"]["peak_flops"]),
            ),  # type: ignore[index]
            (
                f"C_train (S in {s['hooda_s_unit']})",
                f"{fmt_count(float(s['c_train_flop']), 'FLOP')} ({s['hooda_s_note']})",
                str(s["sources"]["c_train_flop"]),
            ),  # type: ignore[index]
            (
                "T_train at peak",
                f"{fmt_seconds(float(s['t_train_s']))} ({s['t_train_note']})",
                str(s["sources"]["t_train_s"]),
            ),  # type: ignore[index]
        ),
        memory=best.memory if best else (result.candidates[0].memory if result.candidates else None),
        memory_device=f"{best.device.name} × {best.count}" if best else result.candidates[0].device.name,
        candidates=tuple(_candidate_row(x) for x in rank_candidates(result.candidates)),
        bom=tuple(_bom_rows(bom)),
        findings=tuple(findings),
        assumptions=_assumptions(result, best),
        inventory_text=inventory_text,
        notes=tuple(result.notes),
        decision=(rec.decision.verdict, rec.decision.text) if rec.decision and rec.decision.verdict else None,
        systems=best.cost.systems_for_use if best is not None else 1,
    )


def _summary(rec: Recommendation) -> str:
    result, best = rec.result, rec.best
    c = result.workload.cost
    decision = rec.decision.text if rec.decision is not None else ""
    if best is None:
        micro = result.workload.training.micro_batch_size
        return (
            "None of the candidates can hold this training step in memory, "
            + (
                f"at the micro-batch of {micro} set in the workload. "
                if micro is not None
                else "even with a micro-batch of one sample and gradient accumulation. "
            )
            + "The findings below say what would fit (a smaller micro-batch, more GPUs with sharding, "
            "activation checkpointing, or a larger device)."
        )
    advised = rec.advised or best
    # renting wins: the summary leads with it, the purchase follows "if bought"
    rented = rec.rented
    parts = [
        f"Recommended: {'rent ' if rented else ''}{advised.label}" + (f"; {OWNED_NOTE}." if best.cost.owned else ".")
    ]
    deadline = (
        f"The deadline of {c.deadline_hours:g} h is {'met' if advised.meets_deadline else 'missed'}."
        if c.deadline_hours is not None
        else ""
    )
    if rented and advised is not best:
        parts.append(f"It trains the workload in {fmt_seconds(advised.train_time_s)}. {deadline}".strip())
        parts.append(f"If bought instead: {best.label}.")
    parts.append(
        f"It trains the workload in {fmt_seconds(best.train_time_s)} "
        f"({fmt_sig(best.cost.gpu_hours)} device-hours), needing {fmt_bytes(best.memory.total)} per device "
        f"of {fmt_bytes(best.capacity_bytes)}."
    )
    if best.cost.capex is not None:
        platform = best.cost.platform
        parts.append(
            ("Bought, the hardware would cost " if rented and advised is best else "Hardware cost ")
            + fmt_money(best.cost.capex, c.currency)
            + (f" as {best.cost.machines} × {platform.platform.name}" if platform is not None else "")
            + f" (devices at their {best.cost.purchase_note}); total cost of ownership over "
            f"{c.amortisation_years:g} years {fmt_money(best.cost.tco, c.currency)}."
        )
    if decision:
        parts.append(decision)
    if deadline and not (rented and advised is not best):
        parts.append(deadline)
    if c.budget is not None and best.within_budget is not None and not (rented and advised is not best):
        parts.append(
            f"The budget of {fmt_money(c.budget, c.currency)} is {'respected' if best.within_budget else 'exceeded'}."
        )
    return " ".join(parts)


def _candidate_row(c: CandidateResult) -> CandidateRow:
    return CandidateRow(
        c.device.name,
        c.count,
        c.fits,
        c.memory.total,
        c.capacity_bytes,
        c.train_time_s,
        c.cost.capex,
        c.cost.energy_kwh,
        c.cost.tco,
        c.cost.cloud_cost,
        c.break_even[0],
        verdict_text(c.meets_deadline, c.within_budget),
        c.buy_or_rent,
        c.break_even[1],
        c.nodes,
    )


def _bom_rows(bom: Sequence[BomLine]) -> list[BomRow]:
    """The bill's rows with the capex's prices (core.advice.bom.priced): their total is the capex."""
    return [
        BomRow(line.item, line.spec, line.quantity, line.unit_price, line.total, line.reason, line.source)
        for line in bom
    ]


def _assumptions(result: SizingResult, best: CandidateResult | None) -> tuple[tuple[str, str], ...]:
    t = result.workload.training
    # the checkpointing policy, attention kernel and model-parallel splits, for the recommended
    # device's kind (core.estimate.activations.activation_note; None when all are the defaults)
    kind = "cpu" if best is not None and best.device.kind == "cpu" else "gpu"
    kernels = activation_note(t.large, t.checkpointing, kind, t.precision)
    gpu = kernel_assumptions(best.device, result.workload.analysis, t, best.micro_batch) if best is not None else []
    c, d = result.workload.cost, result.workload.data
    out = [
        (
            "Exchange rate",
            c.rate_text
            + (
                ", set in the workload: catalogue prices (USD) and the USD defaults of the host, the cloud "
                f"price and electricity are converted; prices you give are taken as {c.currency}"
                if c.currency != "USD"
                else ""
            ),
        ),
        ("Electricity", f"{c.electricity_per_kwh:g} {c.currency}/kWh, PUE {c.pue:g}, utilisation {c.utilisation:.0%}"),
        ("Amortisation", f"{c.amortisation_years:g} years, maintenance {c.maintenance_percent:g} % of capex a year"),
        (
            "Cloud price",
            f"{c.cloud_per_gpu_hour:g} {c.currency} per device-hour for every device (set in the workload)"
            if c.cloud_per_gpu_hour is not None
            else "each device's dated on-demand price from the catalogue (below); none: renting not priced",
        ),
        (
            "Host",
            (f"{c.host_cost:,.0f} {c.currency}" if c.host_cost is not None else "the platform's price")
            + " and "
            + (f"{c.host_power_w:g} W" if c.host_power_w is not None else "the platform's power")
            + " per machine (resources/platforms.json, docs/advice.md)",
        ),
        (
            "Expected use",
            (
                f"{c.hours_per_year:,.0f} h of training a year for {c.amortisation_years:g} years"
                if c.hours_per_year is not None
                else f"{c.runs} run(s) of this training"
            )
            + ": buying (capex, maintenance, energy) is weighed against renting the same hours; resale value "
            "is not counted",
        ),
        *(
            [
                (
                    "Nodes",
                    f"{result.workload.training.nodes} nodes: capex, power, energy, device-hours and the cloud "
                    "cost count every node's devices and machines, and the network between them (an adapter "
                    "and a switch port per GPU)",
                )
            ]
            if result.workload.training.nodes > 1
            else []
        ),
        *([("Activations and kernels", kernels)] if kernels is not None else []),
        # what the layout and precision cost on the recommended GPU's kernels (NCHW transposes, bf16 batch
        # norm, cuDNN's TF32 and algorithm search), as the sizing says it
        *([("GPU kernels", f"{best.device.name}: " + "; ".join(gpu))] if gpu else []),
        ("Storage read rate", f"{d.storage}: {STORAGE_READ_BPS[d.storage] / 1e6:,.0f} MB/s (typical datasheet figure)"),
        (
            "Efficiency",
            "; ".join(dict.fromkeys(f"{x.device.name}: {x.assumptions[0]}" for x in result.candidates))
            + " — defaults (until `calibrate` measures a machine): "
            + ", ".join(f"{k[0]} {k[1]} {v:.0%}" for k, v in DEFAULT_EFFICIENCY.items())
            + f"; framework overhead {OVERHEAD_PER_OP_S * 1e6:g} µs per framework call on a CPU, "
            + f"{OVERHEAD_PER_OPERATOR_S * 1e6:g} µs per dispatched operator on a GPU's reference host; "
            + "elementwise layers and the optimizer "
            + "at the bytes they move over "
            + ", ".join(f"{k} {v:.0%}" for k, v in BANDWIDTH_EFFICIENCY.items())
            + " of the datasheet bandwidth",
        ),
    ]
    accuracy = step_accuracy_note(best) if best is not None else ""
    if accuracy:  # the recommended GPU's step time against recorded and published measurements
        out.append(("Step time against measurements", f"{best.device.name}: {accuracy}"))
    accumulating = [x for x in result.candidates if x.accumulation_steps > 1]
    if accumulating or result.workload.training.micro_batch_size is not None:
        out.append(
            (
                "Micro-batches",
                "; ".join(
                    f"{x.device.name} × {x.count}: micro-batch {x.micro_batch} × {x.accumulation_steps} "
                    "accumulation steps"
                    for x in accumulating
                )
                + ("; " if accumulating else "")
                + "a batch per device that does not fit at once runs as micro-batches (the largest that fits, or "
                "training.micro_batch_size) whose gradients are summed before one optimizer step: memory is that "
                "of one micro-batch with the gradients kept; each micro-step pays its compute, memory-bound work "
                "and per-step framework overhead, the optimizer step and the all-reduce run once per step",
            )
        )
    for cand in {x.device.name: x for x in result.candidates}.values():
        dev = cand.device
        out.append((dev.name, f"{_price_text(dev, c)}; rent: {_rent_text(cand)}; {dev.source}"))
    return tuple(out)


def _price_text(dev: DeviceSpec, c: CostSpec) -> str:
    """What one device costs to buy and where the figure comes from: the user's price, or the
    catalogue's street or launch price, which are estimates with their dates."""
    bought = dev.purchase_price()
    if bought is None:
        return "not sold"
    usd, kind, date = bought
    if kind == "quoted":
        return f"your price {c.from_usd(usd):,.0f} {c.currency} per device (set in the workload)"
    text = f"{kind} price {usd:,.0f} USD ({date or 'undated'})"
    if c.currency != "USD":
        text += f" = {c.from_usd(usd):,.0f} {c.currency}"
    if kind == "street" and dev.price_usd is not None:
        text += f" (launch {dev.price_usd:,.0f} USD, {dev.price_date})"
    sold = f"; {AVAILABILITY[dev.availability]}" if dev.availability in AVAILABILITY else ""
    return text + ", an estimate: set your own price in the workload (hardware.prices) or the wizard" + sold


def _rent_text(cand: CandidateResult) -> str:
    return cand.cost.cloud_note + (f" ({cand.device.cloud_price_source})" if cand.device.cloud_price_source else "")
