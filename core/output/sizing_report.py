"""A sizing result as a JSON-ready dict (``size --json``) and as a readable text summary."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from core.advice.recommendation import Recommendation
from core.estimate.cost import OWNED_NOTE
from core.estimate.pass_work import train_flops_per_sample
from core.estimate.published_rates import PUBLISHED_NOTE
from core.estimate.sizing import ENGINE_SOURCE, CandidateResult
from core.output.glossary import verdict_text
from core.paths import resource_path
from core.units import fmt_bytes, fmt_count, fmt_energy, fmt_money, fmt_seconds

FLOP_CONVENTION = (
    "a multiply-add counts 2 FLOP in linear, convolution, recurrent and attention matmuls "
    "(torch.utils.flop_counter); elementwise work is not counted"
)


def candidate_dict(c: CandidateResult, dataset_bytes: int) -> dict[str, Any]:
    mem = c.memory.as_dict()
    return {
        "device": c.device.name,
        "kind": c.device.kind,
        "count": c.count,
        "nodes": c.nodes,
        "fits": c.fits,
        "capacity_bytes": c.capacity_bytes,
        "memory_per_device": mem,
        "largest_batch": c.largest_batch,
        "micro_batch": c.micro_batch,
        "accumulation_steps": c.accumulation_steps,
        "dataset_fits_in_device_memory": (
            None if c.capacity_bytes is None else dataset_bytes + c.memory.total <= c.capacity_bytes
        ),
        "step_time_s": c.step.step_s,
        "step": {
            "compute_s": c.step.compute_s,
            "memory_s": c.step.memory_s,
            "input_s": c.step.input_s,
            "communication_s": c.step.comm_s,
            "overhead_s": c.step.overhead_s,
            "optimizer_s": c.step.optimizer_s,
            "micro_step_s": c.step.micro_step_s,
            "bound": c.step.bound,
            "efficiency": c.step.efficiency,
            "peak_flops": c.step.peak_flops,
            # the host side (core/estimate/host.py): host seconds per step, the device's own work,
            # the DataLoader and copy in the main process, the device's busy fraction; turns_s: what the
            # host and the device being slower in turn add to the slower of the two (core/estimate/host.py)
            "host_s": c.step.host_s,
            "device_s": c.step.device_s,
            "turns_s": c.step.turns_s,
            "loader_s": c.step.loader_s,
            "device_load": c.step.device_load,
            "host_bound": c.step.host_bound,
            "loop": c.step.host.loop.describe() if c.step.host else None,
        },
        "steps_per_epoch": c.steps_per_epoch,
        "training_time_s": c.train_time_s,
        "gpu_hours": c.cost.gpu_hours,
        "power_w": c.cost.power_w,
        "energy_kwh": c.cost.energy_kwh,
        "capex": c.cost.capex,
        "tco": c.cost.tco,
        "run_cost": c.cost.run_cost,
        "cloud_cost": c.cost.cloud_cost,
        "break_even_hours": c.break_even[0],
        "break_even_runs": c.break_even[1],
        "buy_or_rent": c.buy_or_rent,
        "buy_for_use": c.cost.buy_for_use,
        "rent_for_use": c.cost.rent_for_use,
        "use_hours": c.cost.use_hours,
        "cloud_per_hour": c.cost.cloud_per_hour,
        "cloud_price": c.cost.cloud_note,
        "purchase_price": c.cost.purchase_note,
        "platform": None if c.cost.platform is None else c.cost.platform.platform.id,
        "machines": c.cost.machines,
        "capex_lines": [
            {"item": x.item, "quantity": x.quantity, "unit": x.unit, "total": x.total, "source": x.source}
            for x in c.cost.capex_lines
        ],
        "currency": c.cost.currency,
        "meets_deadline": c.meets_deadline,
        "within_budget": c.within_budget,
        "verdict": verdict_text(c.meets_deadline, c.within_budget),
        "assumptions": list(c.assumptions),
        "source": c.device.source,
        "price_date": c.device.price_date,
    }


def sizing_to_dict(rec: Recommendation) -> dict[str, Any]:
    """`size --json` and the sizing saved in the database (docs/glossary.md names each key)."""
    r, findings, bom = rec.result, rec.findings, rec.bom
    w, m, t = r.workload, r.workload.analysis, r.workload.training
    first = r.candidates[0]
    return {
        "workload": w.name,
        "model": {
            "preset": w.model_ref,
            "kind": m.kind,
            "input_shape": list(m.input_shape),
            "input_dtype": m.input_dtype,
            "output_shape": list(m.output_shape),
            **({"traced": dict(m.trace)} if m.trace else {}),
        },
        "parameters": m.parameters,
        "flops": {
            "forward_per_sample": m.forward_flops,
            "train_per_sample": train_flops_per_sample(m, t.checkpointing, t.large),
            "train_total": r.train_flops,
            "convention": FLOP_CONVENTION,
        },
        "memory": {**first.memory.as_dict(), "device": first.device.name, "count": first.count},
        "dataset": {"bytes": r.dataset_bytes, "samples": w.data.samples, **r.dataset_fit},
        "seed": r.seed,
        "candidates": [candidate_dict(c, r.dataset_bytes) for c in r.candidates],
        "layers": [
            {
                "path": row.path,
                "type": row.type,
                "output_shape": list(row.output_shape),
                "params": row.params,
                "flops": row.flops,
                "count": row.count,
            }
            for row in m.rows
        ],
        "notes": list(r.notes),
        "rules": [f.as_dict() for f in findings],
        "recommendation": [line.as_dict() for line in bom],
        "decision": _decision_dict(rec),
        # the candidate recommended (the decision's purchase, else the listed one to buy): the one a results
        # list shows, None when nothing fits
        "recommended": (
            {"device": rec.advised.device.name, "count": rec.advised.count, "nodes": rec.advised.nodes}
            | ({"verdict": rec.decision.verdict} if rec.decision is not None and rec.decision.verdict else {})
            if rec.advised is not None
            else None
        ),
        "source": ENGINE_SOURCE,
    }


def _decision_dict(rec: Recommendation) -> dict[str, Any] | None:
    d = rec.decision
    if d is None:
        return None

    def option(o: Any) -> dict[str, Any] | None:
        if o is None:
            return None
        c = o.candidate
        return {
            "device": c.device.name,
            "count": c.count,
            "nodes": c.nodes,
            "cost_for_use": o.cost_for_use,
            "gives_up": list(o.gives_up),
            "listed": c in rec.result.candidates,
        }

    return {
        "verdict": d.verdict,
        "use": {"device": d.use.device.name, "count": d.use.count, "nodes": d.use.nodes} if d.use else None,
        "buy": option(d.buy),
        "rent": option(d.rent),
        "break_even_runs": d.break_even_runs,
        "break_even_hours": d.break_even_hours,
        "searched": d.searched,
        "searched_for": d.searched_for,
        "text": d.text,
    }


def sizing_to_text(rec: Recommendation) -> str:
    """`size`'s text output."""
    r, findings, bom = rec.result, rec.findings, rec.bom
    w, m, t, d = r.workload, r.workload.analysis, r.workload.training, r.workload.data
    s = r.seed
    lines = [
        f"Workload: {w.name}" + (f" (preset {w.model_ref})" if w.model_ref else ""),
        f"  model: {m.parameters:,} parameters, input {list(m.input_shape)} → output {list(m.output_shape)}",
        f"  data: {d.samples:,} samples × {d.features:,} features, {fmt_bytes(r.dataset_bytes)}"
        # this machine's RAM says nothing about other hardware
        + (_fit_text(r.dataset_fit) if any(c.device.is_this_machine for c in r.candidates) else ""),
        f"  training: batch {t.batch_size}, {t.epochs} epochs, {t.optimizer}, {t.precision}"
        + (", activation checkpointing" if t.checkpointing else "")
        + (f", {t.sharding}" if t.sharding != "none" else ""),
        "",
        *_trace_lines(m.trace),
        "Compute",
        f"  forward: {fmt_count(m.forward_flops, 'FLOP')} per sample; "
        f"training: {fmt_count(r.train_flops, 'FLOP')} in all",
        "",
        "Seed formulas (as published)",
        f"  N_na = {fmt_bytes(float(s['n_na_bytes']))} (Jamgharyan eq. 1: whole training set resident)",
        f"  K1 = {s['k1']:.4g} — {s['k1_meaning']} (Jamgharyan eq. 4)" if s["k1"] is not None else "  K1: n/a",
        f"  T1 = {fmt_count(float(s['t1_ops']), 'op')}, T2 = {fmt_count(float(s['t2_ops']), 'op')} per sample "
        "(Jamgharyan eq. 2, 3)",
        f"  R = {fmt_count(float(s['peak_flops']), 'FLOP/s')} on {s['device']} (Hooda eq. 1; {s['peak_flops_note']})",
        f"  C_train = {fmt_count(float(s['c_train_flop']), 'FLOP')} (Hooda eq. 3; {s['hooda_s_note']}), "
        f"T_train = {fmt_seconds(float(s['t_train_s']))} at peak (Hooda eq. 4; {s['t_train_note']})",
        "",
        "Candidates"
        + (
            f" (money in {r.workload.cost.currency}: {r.workload.cost.rate_text}; catalogue prices converted)"
            if r.workload.cost.currency != "USD"
            else ""
        ),
    ]
    for c in r.candidates:
        mem = c.memory
        fit = {True: "fits", False: "DOES NOT FIT", None: "capacity unknown"}[c.fits]
        lines += [
            f"  {c.device.name} × {c.count}" + (f" × {c.nodes} nodes" if c.nodes > 1 else "") + f": {fit}",
            f"    memory per device: {fmt_bytes(mem.total)} (highest in {mem.peak_phase}"
            + (f", at micro-batch {c.micro_batch}" if c.accumulation_steps > 1 else "")
            + ") of "
            f"{fmt_bytes(c.capacity_bytes)}; at that instant weights {fmt_bytes(mem.weights)}, gradients "
            f"{fmt_bytes(mem.gradients)}, optimizer {fmt_bytes(mem.optimizer_states)}, activations "
            f"{fmt_bytes(mem.activations)}, data {fmt_bytes(mem.data)}, temporaries {fmt_bytes(mem.temporaries)}"
            + (
                f", {'fp8' if r.workload.training.large.fp8 else 'half-precision'} weight copies "
                f"{fmt_bytes(mem.weight_copies)}"
                if mem.weight_copies
                else ""
            )
            + (f", cuBLAS workspace {fmt_bytes(mem.workspace)}" if mem.workspace else "")
            + f", overhead {fmt_bytes(mem.overhead)}"
            + (f", reserve {fmt_bytes(mem.reserve)}" if mem.reserve else ""),
            *(
                [
                    f"    offloaded per device: {fmt_bytes(mem.offload_cpu_bytes)} to host RAM"
                    + (f", {fmt_bytes(mem.offload_nvme_bytes)} to NVMe" if mem.offload_nvme_bytes else "")
                ]
                if mem.offload_cpu_bytes or mem.offload_nvme_bytes
                else []
            ),
            f"    largest batch held at once: {f'{c.largest_batch:,}' if c.largest_batch is not None else 'unknown'}"
            + (
                f"; trains in micro-batches of {c.micro_batch} × {c.accumulation_steps} accumulation steps"
                if c.accumulation_steps > 1
                else ""
            ),
            f"    step {fmt_seconds(c.step.step_s)} ({c.step.bound}-bound: {step_breakdown(c)}), "
            f"training time {fmt_seconds(c.train_time_s)}",
            (
                f"    {OWNED_NOTE} or rent, energy " + fmt_energy(c.cost.energy_kwh)
                if c.cost.owned
                else f"    capex {fmt_money(c.cost.capex, c.cost.currency)}, energy "
                + fmt_energy(c.cost.energy_kwh)
                + f", TCO {fmt_money(c.cost.tco, c.cost.currency)}"
                + f", cloud cost {fmt_money(c.cost.cloud_cost, c.cost.currency)}"
                + (f"; {c.buy_or_rent} for the expected use" if c.buy_or_rent else "")
                + (f", buying pays off after {c.break_even[1]:,} runs" if c.break_even[1] else "")
            ),
        ]
    for note in r.notes:
        lines.append(f"Note: {note}")
    if findings:
        lines += ["", "Findings"]
        for f in findings:
            lines.append(f"  [{f.severity}] {f.message}")
            if f.today:
                lines.append(f"      today: {f.today}")
            if f.applies:
                lines.append(f"      applies to: {f.applies}")
            lines.append(f"      source: {f.source}")
    if rec.decision is not None:
        lines += ["", "Buy or rent", f"  {rec.decision.text}"]
    if bom:
        cur = w.cost.currency
        priced = [b.total for b in bom if b.total is not None]
        head = f"total {fmt_money(sum(priced), cur)}: the capex" if priced else "nothing priced"
        if rec.best is not None and rec.best.cost.owned:
            head = "nothing to buy: this machine trains it"
        elif rec.best is not None and rec.best.cost.systems_for_use > 1:
            head += f", of one system; the expected use needs {rec.best.cost.systems_for_use}"
        lines += ["", f"Recommended bill of materials ({head})"]
        for b in bom:
            price = f" — {b.quantity} × {fmt_money(b.unit_price, cur)}" if b.total is not None else ""
            lines.append(f"  {b.item}: {b.spec}{price}")
            lines.append(f"      why: {b.reason}")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def recorded_step_accuracy() -> dict[str, Any]:
    """resources/step_accuracy.json: the GPU step model against the recorded GPU suites, by what bounds the
    step (benchmarks/step_accuracy.py writes it; its test holds it to the model)."""
    return dict(json.loads(resource_path("step_accuracy.json").read_text(encoding="utf-8")))


def _published() -> dict[str, Any]:
    """The held-out published throughputs' figures resources/step_accuracy.json holds; {} where they cannot
    be read (the note then names the benchmark without figures)."""
    try:
        g = dict(recorded_step_accuracy()["published"])
        int(g["within_25"]), int(g["steps"]), int(g["gpus"]), float(g["mean_abs_error"])
        float(g["geforce_worst"]["error"]), str(g["geforce_worst"]["what"])
        return g
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _recorded(group: str) -> str:
    g = recorded_step_accuracy()["groups"][group]
    nbsp = "\u00a0"  # a figure and its unit stay on one line where the report wraps the text
    mean = f"{float(g['mean_abs_error']) * 100:.0f}{nbsp}%"
    return f"within 25{nbsp}% in {int(g['within_25']):,} of {int(g['steps']):,} (mean error {mean})"


def recorded_accuracy_note(c: CandidateResult) -> str:
    """How close the step model came on recorded steps like this one (bound by the host or the device;
    the host measured by calibrate or not), for an NVIDIA GPU; "" else, and where the figures cannot be
    read (a damaged installation loses the note, not the tooltip or the report)."""
    try:
        return _recorded_note(c)
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _recorded_note(c: CandidateResult) -> str:
    st = c.step
    if c.device.kind != "gpu" or not c.device.runs_cuda or st.host is None:
        return ""
    where = f"on steps recorded on {recorded_step_accuracy()['recorded_on']} (held out)"
    if not st.host_bound:
        return f"This step is the GPU's work: {where}, device-bound steps came {_recorded('device_calibrated')}."
    if st.bound == "host data loading":
        return (
            "This step is the host's data loading (the DataLoader's work in the main process and the copy it waits "
            "for): the recorded GPU steps had their data on the GPU already, so they do not check it."
        )
    if st.bound != "framework overhead":  # paced by what the recorded steps did not have (input, collectives)
        return ""
    if st.host.probed:
        return (
            f"This step is the host's (its CPU dispatching the kernels), at the speed calibrate's host probe measured "
            f"here: {where}, host-bound steps came {_recorded('host_calibrated')} once their host was measured so; "
            "the same step varied by up to half between runs on one host."
        )
    return (
        "This step is the host's (its CPU dispatching the kernels), priced at the reference host's speed: hosts "
        f"differ by up to 2 ×, and {where} host-bound steps came {_recorded('host_reference')} at that speed, "
        f"{_recorded('host_calibrated')} once calibrate measured their host. Where the machine that will train is "
        "at hand, Calibrate measures its host."
    )


def step_accuracy_note(c: CandidateResult) -> str:
    """How close the GPU step model has come to measurements, for an NVIDIA GPU: on recorded steps like this
    one (recorded_accuracy_note) and on published ones; "" else (docs/accuracy.md: the lent GPUs' suites, the
    Lambda benchmark's held-out throughputs and OpenXLA's GEMM table)."""
    if c.device.kind != "gpu" or not c.device.runs_cuda:
        return ""
    recorded = recorded_accuracy_note(c)
    published = _published()
    gpus, figures = "", ""
    if published:
        gpus = f"{published['gpus']} "
        mean = float(published["mean_abs_error"]) * 100
        figures = f", {published['within_25']} of {published['steps']} within 25 %, mean error {mean:.0f} %"
    text = (recorded + " " if recorded else "") + (
        f"How close this model comes: against published training throughputs of {gpus}NVIDIA GPUs (ResNet-50 "
        f"and BERT in fp16, TF32 and fp32, Lambda benchmark) that its constants were not fitted on{figures}; "
        "single matrix products of 256 to 4,096 a side on an H100 and a B200 (OpenXLA's "
        "published timings, held out), 522 of 563 within 25 % in bf16 and 510 of 750 in TF32"
    )
    if c.device.geforce and published:
        worst = published["geforce_worst"]
        slower = abs(float(worst["error"])) * 100
        text += f"; on GeForce cards it has read up to {slower:.0f} % slower than measured ({worst['what']})"
    if any(PUBLISHED_NOTE in a for a in c.assumptions):  # the kernel model priced it at published rates
        text += (
            "; this GPU's matrix products are priced at the rates published PyTorch matmul measurements show (of "
            "this card, or of GeForce cards like it where it has none), not its datasheet peak alone"
        )
    return text + " (docs/accuracy.md)."


def step_breakdown(c: CandidateResult) -> str:
    """The terms of a step time, e.g. "matrix products 9.1 ms + memory-bound 2.0 ms + overhead 0.3 ms"."""
    st = c.step
    sep = " + " if c.device.kind == "cpu" else ", overlapped with "
    text = f"matrix products {fmt_seconds(st.compute_s)} + memory-bound {fmt_seconds(st.memory_s)}"
    text += f"{sep}framework overhead {fmt_seconds(st.overhead_s)}"
    if st.loader_s:
        text += f"{' + ' if c.device.kind == 'cpu' else ', then '}data loading on the host {fmt_seconds(st.loader_s)}"
    if st.host_bound and c.device.kind != "cpu":
        text += f" (host-bound: device load {st.device_load:.0%})"
    if st.turns_s >= 0.05 * st.step_s:
        text += (
            f"; {fmt_seconds(st.turns_s)} more where the host and the device are slower in turn (the device "
            "waits for the host's dispatch, then the host for the device's last kernels)"
        )
    if st.input_s:
        text += f"; input {fmt_seconds(st.input_s)} in parallel"
    if st.comm_s:
        hidden = st.comm_s - st.exposed_comm_s
        text += f"; collectives {fmt_seconds(st.comm_s)}"
        if st.exposed_comm_s <= 1e-9:
            text += " (hidden behind the passes and the wait for data)"
        elif hidden > 1e-9:
            text += f" ({fmt_seconds(hidden)} hidden behind the passes and the wait for data)"
    if st.offload_s:
        text += f"; offload traffic and the CPU's optimizer step {fmt_seconds(st.offload_s)}"
    if st.bubble_s:
        text += f"; pipeline bubble {fmt_seconds(st.bubble_s)}"
    if st.accumulation_steps > 1:
        text += (
            f"; {st.accumulation_steps} micro-steps of {st.micro_batch} per device "
            f"({fmt_seconds(st.micro_step_s)} each before the last, which adds the optimizer step)"
        )
    return text


TRACE_CATEGORIES = {
    "param": "parameters",
    "grad": "gradients",
    "opt": "optimizer state",
    "act": "activations",
    "temp": "temporaries",
    "buffer": "buffers",
    "oth": "other",
}


def _trace_lines(trace: Mapping[str, Any] | None) -> list[str]:
    """What tracing the PyTorch model measured, shown as such."""
    if not trace:
        return []
    cats = trace.get("peak_by_category") or {}
    parts = ", ".join(f"{label} {fmt_bytes(cats[k])}" for k, label in TRACE_CATEGORIES.items() if k in cats)
    lines = [
        f"Traced from {trace.get('file')} on {trace.get('device')} fake tensors (batch {trace.get('batch')}, "
        f"{trace.get('optimizer')})",
        f"  live-tensor peak {fmt_bytes(trace.get('peak_bytes'))}" + (f": {parts}" if parts else ""),
    ]
    for layer in trace.get("layers") or []:
        name = f"{layer['name']} ({layer['type']})" if layer.get("type") else layer["name"]
        lines.append(f"  {name}: {fmt_count(layer['flops_per_sample'], 'FLOP')} forward per sample")
    return [*lines, ""]


def _fit_text(fit: dict[str, Any]) -> str:
    if fit.get("fits_in_ram") is None:
        return ""
    ram = "fits" if fit["fits_in_ram"] else "does not fit"
    disk = "fits" if fit["fits_in_ramdisk"] else "does not fit"
    return f" ({ram} in this machine's RAM of {fmt_bytes(fit['host_ram_bytes'])}; {disk} in a RAM disk)"
