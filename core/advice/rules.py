"""Recommendation rules (resources/rules.json): conditions over a sizing, evaluated to findings.

A rule is data: id, scope, condition, message template, severity, source and an optional "today"
note where a seed's advice is outdated. ``rule_context`` turns a sizing (and this machine's
inventory, when known) into the plain names the conditions and messages use; docs/rules.md
lists them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.advice.expressions import ExpressionError, evaluate, names_in
from core.advice.host import host_cores, l3_cache_mb, loader_cores, loader_cores_per_gpu, page_cache_ram_bytes
from core.errors import TrainRigError
from core.estimate.memory import checkpoint_bytes
from core.estimate.sizing import CandidateResult, SizingResult, fits_in_half_of_ram, size_candidate
from core.estimate.timing import FORMAT_SIZE_FACTOR, dataset_bytes_on_disk
from core.paths import resource_path
from core.units import fmt_bytes, fmt_count, fmt_seconds

SEVERITIES = ("critical", "warning", "advice", "info")


@dataclass(frozen=True)
class Rule:
    id: str
    scope: str
    when: str
    severity: str
    message: str
    source: str
    today: str | None = None


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    message: str
    source: str
    today: str | None
    device: str | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@lru_cache(maxsize=2)
def load_rules(path: str | None = None) -> tuple[Rule, ...]:
    doc = json.loads((resource_path("rules.json") if path is None else Path(path)).read_text(encoding="utf-8"))
    rules = []
    for r in doc["rules"]:
        rule = Rule(r["id"], r["scope"], r["when"], r["severity"], r["message"], r["source"], r.get("today"))
        if rule.scope not in ("workload", "candidate") or rule.severity not in SEVERITIES:
            raise TrainRigError(f"rule {rule.id}: bad scope or severity")
        try:
            names_in(rule.when)
        except ExpressionError as exc:
            raise TrainRigError(f"rule {rule.id}: {exc}") from exc
        rules.append(rule)
    return tuple(rules)


def evaluate_rules(
    result: SizingResult, inventory: Mapping[str, Any] | None = None, rules: Sequence[Rule] | None = None
) -> list[Finding]:
    """Findings for a sizing, most severe first; candidate rules once per device (first count that fires)."""
    rules = rules if rules is not None else load_rules()
    base = rule_context(result, inventory)
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    contexts: dict[int, dict[str, Any]] = {}  # one context per candidate, made when first needed
    for rule in rules:
        if rule.scope == "workload":
            if _fires(rule, base):
                findings.append(_finding(rule, base, None))
            continue
        for i, cand in enumerate(result.candidates):
            key = (rule.id, cand.device.name)
            if key in seen:
                continue
            if i not in contexts:
                contexts[i] = {**base, **candidate_context(result, cand)}
            ctx = contexts[i]
            if _fires(rule, ctx):
                seen.add(key)
                if "{fix_text}" in rule.message:  # sizes alternatives: only for a finding that shows them
                    ctx = {**ctx, "fix_text": _fix_text(result, cand)}
                findings.append(_finding(rule, ctx, cand.device.name))
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


def _fires(rule: Rule, ctx: Mapping[str, Any]) -> bool:
    try:
        return bool(evaluate(rule.when, ctx))
    except ExpressionError as exc:
        raise TrainRigError(f"rule {rule.id}: {exc}") from exc


def _finding(rule: Rule, ctx: Mapping[str, Any], device: str | None) -> Finding:
    fmt = _Formatter(ctx)
    return Finding(
        rule.id,
        rule.severity,
        fmt.format(rule.message),
        rule.source,
        fmt.format(rule.today) if rule.today else None,
        device,
    )


class _Formatter(dict):  # type: ignore[type-arg]
    """str.format_map over the context; a missing or unknown value prints as 'unknown'."""

    def __init__(self, ctx: Mapping[str, Any]) -> None:
        super().__init__({k: ("unknown" if v is None else v) for k, v in ctx.items()})

    def __missing__(self, key: str) -> str:
        return "unknown"

    def format(self, template: str) -> str:
        return template.format_map(self)


def rule_context(result: SizingResult, inventory: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The names workload-scope rules use (docs/rules.md)."""
    w, m, t, d = result.workload, result.workload.analysis, result.workload.training, result.workload.data
    cands = result.candidates
    primary = cands[0]
    gpu_counts = [c.count for c in cands if c.device.kind != "cpu"] or [1]
    fastest = min(cands, key=lambda c: c.train_time_s)
    layer_types = {r.type for r in m.rows}
    vision = "conv2d" in layer_types or (m.kind == "summary" and len(m.input_shape) == 3)
    language = bool(layer_types & {"embedding", "lstm", "gru", "multihead_attention"})
    host = host_facts(inventory)
    ram = host["host_ram_bytes"]
    ramdisk_fit = (
        ""
        if ram is None
        else (
            " — it fits in this machine's RAM"
            if fits_in_half_of_ram(result.dataset_bytes, ram)
            else " — it does not fit in this machine's RAM"
        )
    )
    steps = math.ceil(d.samples / t.batch_size)
    k1 = result.seed.get("k1")
    return {
        **host,
        "params": m.parameters,
        "params_text": fmt_count(m.parameters),
        "samples": d.samples,
        "samples_text": f"{d.samples:,}",
        "dataset_bytes": result.dataset_bytes,
        "dataset_text": fmt_bytes(result.dataset_bytes),
        "ram_for_dataset": fmt_bytes(page_cache_ram_bytes(d)),
        "ramdisk_fit_text": ramdisk_fit,
        "k1": k1,
        "k1_text": "unknown" if k1 is None else f"{k1:.3g}",
        "n_na_bytes": result.seed.get("n_na_bytes"),
        "batch": t.batch_size,
        "epochs": t.epochs,
        "steps_per_epoch": steps,
        "steps_per_epoch_text": f"{steps:,}",
        "optimizer": t.optimizer,
        "precision": t.precision,
        "checkpointing": t.checkpointing,
        "sharding": t.sharding,
        "nodes": t.nodes,
        "reserve_percent": t.reserve_percent,
        "storage": d.storage,
        "data_format": d.format,
        "data_format_upper": d.format.upper(),
        "jpeg_ratio": f"{FORMAT_SIZE_FACTOR[d.format] / FORMAT_SIZE_FACTOR['jpeg']:.2g}",
        "reads_text": fmt_bytes(dataset_bytes_on_disk(d) * t.epochs),
        "checkpoint_text": fmt_bytes(checkpoint_bytes(m.parameters, t.optimizer)),
        "purpose": w.goal.purpose,
        "concurrent_runs": w.goal.concurrent_runs,
        "l3_wanted_mb": l3_cache_mb(w.goal.concurrent_runs),
        "gpu_count_max": max(gpu_counts),
        "cores_needed": host_cores(max(gpu_counts), loader_cores_per_gpu(result, max(gpu_counts))),
        "loader_cores": loader_cores(max(gpu_counts), loader_cores_per_gpu(result, max(gpu_counts))),
        "model_is_vision": vision,
        "model_is_language": language,
        "model_domain": "vision" if vision else "language" if language else "neural",
        "primary_is_cpu": primary.device.kind == "cpu",
        "primary_bound": primary.step.bound,
        "primary_step": fmt_seconds(primary.step.step_s),
        "primary_input": fmt_seconds(primary.step.input_s),
        "primary_time": fmt_seconds(primary.train_time_s),
        "best_time": f"{fmt_seconds(fastest.train_time_s)} ({fastest.device.name} × {fastest.count})",
    }


def candidate_context(result: SizingResult, c: CandidateResult) -> dict[str, Any]:
    """The names candidate-scope rules add, for one device × count."""
    dev, mem = c.device, c.memory
    tensor_cores = dev.extra.get("tensor_cores")
    has_tensor = bool(tensor_cores) or (dev.kind in ("tpu", "accelerator") and dev.half_flops is not None)
    bandwidth = dev.bandwidth / 1e9 if dev.bandwidth else None
    link = dev.interconnect or "PCIe"
    return {
        "device": dev.name,
        "count": c.count,
        "fits": bool(c.fits),
        "capacity_bytes": c.capacity_bytes,
        "capacity_text": fmt_bytes(c.capacity_bytes),
        "need_text": fmt_bytes(mem.total),
        "need_at_text": _need_at_text(result, c),
        "micro_batch": c.micro_batch,
        "accumulation_steps": c.accumulation_steps,
        "batch_per_device": _per_device(result, c),
        "batch_per_device_text": f"{_per_device(result, c):,}",
        "n_na_text": fmt_bytes(float(result.seed.get("n_na_bytes") or 0)),
        "is_gpu": dev.kind != "cpu",
        "has_tensor_cores": has_tensor,
        "fp32_peak": fmt_count(dev.fp32_flops, "FLOP/s"),
        "half_peak": fmt_count(dev.half_flops, "FLOP/s") if dev.half_flops else "unknown",
        "tf32_peak": fmt_count(dev.tf32_flops, "FLOP/s") if dev.tf32_flops else "n/a",
        "bandwidth_gbs": bandwidth,
        "largest_batch": c.largest_batch,
        "largest_batch_text": "unknown" if c.largest_batch is None else f"{c.largest_batch:,}",
        "has_nvlink": "nvlink" in link.lower(),
        "interconnect": link,
        "comm_text": fmt_seconds(c.step.comm_s),
        # host memory is reached over PCIe; NVLink joins the GPUs to each other
        "gpu_host_traffic": "an unknown rate"
        if dev.host_link_bw is None
        else f"{c.count * dev.host_link_bw / 1e9:,.0f} GB/s",
        "host_link": dev.host_link or "a host link the catalogue does not give",
        "overhead_share": c.step.overhead_s / c.step.step_s if c.step.step_s else 0.0,
        "overhead_pct": f"{c.step.overhead_s / c.step.step_s:.0%}" if c.step.step_s else "unknown",
        "activation_share": mem.activations / mem.tensor_peak if mem.tensor_peak else 0.0,
        "activation_pct": f"{mem.activations / mem.tensor_peak:.0%}" if mem.tensor_peak else "unknown",
    }


def _per_device(result: SizingResult, c: CandidateResult) -> int:
    return -(-result.workload.training.batch_size // (c.count * c.nodes))


def _need_at_text(result: SizingResult, c: CandidateResult) -> str:
    """Where the memory per device was taken: the batch when it runs in one pass, else the micro-batch."""
    if c.accumulation_steps == 1 and c.micro_batch == _per_device(result, c):
        return f"batch {result.workload.training.batch_size}"
    if result.workload.training.micro_batch_size is None and c.micro_batch == 1:
        return "a micro-batch of one sample per device, with gradient accumulation"
    return f"micro-batch {c.micro_batch}"


def _fix_text(result: SizingResult, c: CandidateResult) -> str:
    """A concrete way out when memory is short: a micro-batch or batch that fits, or GPUs with ZeRO-2."""
    if c.fits is not False:
        return ""
    w = result.workload
    options = []
    if w.training.micro_batch_size is not None:
        auto = replace(w, training=replace(w.training, micro_batch_size=None))
        own = size_candidate(auto, c.device, c.count, c.capacity_bytes if c.device.kind == "cpu" else None)
        if own.fits:
            options.append(f"reduce the micro-batch to {own.micro_batch} ({own.accumulation_steps} accumulation steps)")
    if c.largest_batch and not options:
        options.append(f"reduce the batch to {2 ** int(math.log2(c.largest_batch))}")
    if c.device.kind != "cpu":
        zero2 = replace(w, training=replace(w.training, sharding="zero2"))
        for n in (2, 4, 8, 16, 32, 64):
            if n <= c.count:
                continue
            if size_candidate(zero2, c.device, n).fits:
                options.append(f"use {n} GPUs with ZeRO-2")
                break
        if not w.training.checkpointing and not options:
            ckpt = replace(w, training=replace(w.training, checkpointing=True))
            if size_candidate(ckpt, c.device, c.count).fits:
                options.append("turn on activation checkpointing")
    return (
        " — " + " or ".join(options)
        if options
        else " — no batch, GPU count or sharding fits it: choose a larger device"
    )


def host_facts(inventory: Mapping[str, Any] | None) -> dict[str, Any]:
    """The names taken from this machine's inventory (all None when it is not known)."""
    inv = inventory or {}
    cpu, mem = inv.get("cpu") or {}, inv.get("memory") or {}
    blas = (inv.get("software") or {}).get("blas") or []
    l3 = [c for c in (cpu.get("caches") or []) if c.get("level") == 3]
    return {
        "host_physical_cores": cpu.get("physical_cores"),
        "host_logical_cores": cpu.get("logical_cores"),
        "host_sockets": cpu.get("sockets"),
        "host_ram_bytes": mem.get("total_bytes"),
        "host_memory_channels": mem.get("channels"),
        "host_blas_threads": max((b.get("threads") or 0 for b in blas), default=None) or None,
        "host_tlb": cpu.get("tlb") or "unknown",
        "host_l3_mb": round(sum(c["total_bytes"] for c in l3) / 2**20) if l3 else None,
    }
