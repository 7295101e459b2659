"""Recommendation rules (resources/rules.json): conditions over a sizing, evaluated to findings.

A rule is data: id, scope, condition, message template, severity, source, where it applies (in
words; the condition says it in names) and an optional "today" note where a seed's advice is
outdated. ``core.advice.rule_context`` turns a sizing (and this machine's inventory, when known)
into the plain names the conditions and messages use; docs/rules.md lists them. The advice is about
the candidate the recommendation chooses (core.advice.bom.choose_candidate), and a seed's rule
speaks only where its paper's measurements apply: the model's size and kind, what bounds the step,
the purpose, the device kind and whether this machine is a candidate at all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.advice.bom import choose_candidate
from core.advice.expressions import ExpressionError, evaluate, names_in
from core.advice.rule_context import (
    APPLICABILITY_NAMES,
    SHARDING_TEXT,
    candidate_context,
    host_facts,
    rule_context,
)
from core.errors import TrainRigError
from core.estimate.memory_plan import memory_plan
from core.estimate.sizing import CandidateResult, SizingResult, size_candidate
from core.paths import resource_path
from core.spec.workload import Workload
from core.units import fmt_seconds

SEVERITIES = ("critical", "warning", "advice", "info")
__all__ = [
    "APPLICABILITY_NAMES",
    "SEVERITIES",
    "Finding",
    "Rule",
    "candidate_context",
    "evaluate_rules",
    "host_facts",
    "load_rules",
    "rule_context",
]


@dataclass(frozen=True)
class Rule:
    id: str
    scope: str
    when: str
    severity: str
    message: str
    source: str
    today: str | None = None
    applies: str = ""  # where the rule applies, in words (the condition says it in names)


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    message: str
    source: str
    today: str | None
    device: str | None
    applies: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@lru_cache(maxsize=2)
def load_rules(path: str | None = None) -> tuple[Rule, ...]:
    doc = json.loads((resource_path("rules.json") if path is None else Path(path)).read_text(encoding="utf-8"))
    rules = []
    for r in doc["rules"]:
        rule = Rule(
            r["id"],
            r["scope"],
            r["when"],
            r["severity"],
            r["message"],
            r["source"],
            r.get("today"),
            r.get("applies", ""),
        )
        if rule.scope not in ("workload", "candidate") or rule.severity not in SEVERITIES:
            raise TrainRigError(f"rule {rule.id}: bad scope or severity")
        if not rule.applies.strip():
            raise TrainRigError(f'rule {rule.id}: says nowhere where it applies ("applies")')
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
    lead = _lead(result)
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    contexts: dict[int, dict[str, Any]] = {}  # one context per candidate, made when first needed
    siblings: dict[str, list[CandidateResult]] = {}  # the counts of each device, as the table lists them
    for c in result.candidates:
        siblings.setdefault(c.device.name, []).append(c)
    for rule in rules:
        if rule.scope == "workload":
            if _fires(rule, base):
                findings.append(_finding(rule, _with_texts(rule, base, result, lead), None))
            continue
        for i, cand in enumerate(result.candidates):
            key = (rule.id, cand.device.name)
            if key in seen:
                continue
            if i not in contexts:
                contexts[i] = {**base, **candidate_context(result, cand, siblings[cand.device.name], lead)}
            ctx = contexts[i]
            if _fires(rule, ctx):
                seen.add(key)
                findings.append(_finding(rule, _with_texts(rule, ctx, result, cand), cand.device.name))
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


def _lead(result: SizingResult) -> CandidateResult:
    """The candidate the advice is about: the one to buy, else (nothing fits) the first."""
    return choose_candidate(result) or result.candidates[0]


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
        rule.applies,
    )


class _Formatter(dict):  # type: ignore[type-arg]
    """str.format_map over the context; a missing or unknown value prints as 'unknown'."""

    def __init__(self, ctx: Mapping[str, Any]) -> None:
        super().__init__({k: ("unknown" if v is None else v) for k, v in ctx.items()})

    def __missing__(self, key: str) -> str:
        return "unknown"

    def format(self, template: str) -> str:
        return template.format_map(self)


def _with_texts(rule: Rule, ctx: dict[str, Any], result: SizingResult, c: CandidateResult) -> dict[str, Any]:
    """``ctx`` with the texts that size alternatives, made only for a message that prints them."""
    wanted = rule.message + (rule.today or "")
    extra = {name: make(result, c) for name, make in _SIZED_TEXTS.items() if "{" + name in wanted}
    return {**ctx, **extra} if extra else ctx


def _fix_text(result: SizingResult, c: CandidateResult) -> str:
    """A concrete way out when memory is short: a micro-batch or batch that fits, more GPUs with the
    workload's own sharding (ZeRO-2 when it shards nothing), checkpointing, or more RAM. Each alternative is
    tried by its memory alone (memory_plan): whether it fits needs no step time."""
    if c.fits is not False:
        return ""
    w = result.workload
    options = []
    if w.training.micro_batch_size is not None:
        auto = replace(w, training=replace(w.training, micro_batch_size=None))
        own = memory_plan(auto, c.device, c.count, c.capacity_bytes if c.device.kind == "cpu" else None)
        if own.fits:
            options.append(f"reduce the micro-batch to {own.micro_batch} ({own.accumulation_steps} accumulation steps)")
    if c.largest_batch and not options:
        options.append(f"reduce the batch to {2 ** int(math.log2(c.largest_batch))}")
    if c.device.kind != "cpu":
        sharding = w.training.sharding if w.training.sharding in ("zero2", "zero3", "fsdp") else "zero2"
        sharded = replace(w, training=replace(w.training, sharding=sharding))
        tried = {x.count for x in result.candidates if x.device.name == c.device.name}
        for n in (2, 4, 8, 16, 32, 64):
            if n <= c.count or n in tried:  # the table's own counts are in the finding already
                continue
            if memory_plan(sharded, c.device, n).fits:  # n per node: "use 16 GPUs" read as fewer than 8 × 4 nodes
                nodes = f" per node ({n * c.nodes} in all)" if c.nodes > 1 else ""
                options.append(f"use {n} GPUs{nodes} with {SHARDING_TEXT[sharding]}")
                break
        if not w.training.checkpointing and not options:
            ckpt = replace(w, training=replace(w.training, checkpointing=True))
            if memory_plan(ckpt, c.device, c.count).fits:
                options.append("turn on activation checkpointing")
        t = w.training
        half = t.precision in ("fp16_mixed", "bf16_mixed")
        if not options and t.sharding == "fsdp" and half and t.large.precision_layout == "autocast":
            # autocast keeps fp32 weights and a half copy of every matmul's whole weight on each GPU (129 GiB
            # for a 70B model): FSDP's own mixed precision gathers the shards in half precision instead
            param = "fp16" if t.precision == "fp16_mixed" else "bf16"
            large = replace(t.large, precision_layout="fsdp_mixed", param_dtype=param)
            if memory_plan(replace(w, training=replace(t, large=large)), c.device, c.count).fits:
                options.append('use FSDP\'s mixed precision (training.precision_layout "fsdp_mixed")')
    elif not options:
        options.append("choose a host with more RAM")
    return (
        " — " + " or ".join(options)
        if options
        else " — no batch, GPU count or sharding fits it: choose a larger device"
    )


def _resized_gain(result: SizingResult, c: CandidateResult, workload: Workload) -> tuple[float, CandidateResult]:
    """How many times shorter training is with ``workload`` than with the sizing's own on ``c``'s
    devices: both sized the same way (the step-time model, without this machine's calibration),
    so the ratio, applied to the table's time, compares like with like."""
    cap = c.capacity_bytes if c.device.kind == "cpu" else None
    base = size_candidate(result.workload, c.device, c.count, cap)
    other = size_candidate(workload, c.device, c.count, cap)
    return (base.train_time_s / other.train_time_s if other.train_time_s else 1.0), other


def _batch_gain_text(result: SizingResult, c: CandidateResult) -> str:
    """What the step-time model gives at a larger batch that still fits (at most 8 × the batch)."""
    t = result.workload.training
    if not c.largest_batch or c.largest_batch < 2 * t.batch_size:
        return ""
    larger = min(2 ** int(math.log2(c.largest_batch)), 8 * t.batch_size)
    gain, _ = _resized_gain(result, c, replace(result.workload, training=replace(t, batch_size=larger)))
    return (
        f"; on {c.device.name} × {c.count} the step-time model gives {fmt_seconds(c.train_time_s / gain)} at batch "
        f"{larger:,} instead of {fmt_seconds(c.train_time_s)} ({gain:.1f}× shorter)"
    )


def _mixed_gain_text(result: SizingResult, c: CandidateResult) -> str:
    """What the step-time model gives in bf16 mixed precision instead of FP32."""
    t = result.workload.training
    gain, other = _resized_gain(result, c, replace(result.workload, training=replace(t, precision="bf16_mixed")))
    return (
        f"; on {c.device.name} × {c.count} the step-time model gives {fmt_seconds(c.train_time_s / gain)} instead of "
        f"{fmt_seconds(c.train_time_s)} ({gain:.1f}× shorter)"
        + ("" if other.fits is not False else ", though it does not fit at that precision")
    )


# Texts that size another configuration: computed only for a finding whose message prints them.
_SIZED_TEXTS = {"fix_text": _fix_text, "batch_gain_text": _batch_gain_text, "mixed_gain_text": _mixed_gain_text}
