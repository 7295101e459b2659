"""The steps `size` and `report` share: read the workload (tracing PyTorch code), detect this
machine, resolve the candidates, apply this machine's calibration, then the one core pipeline
(core.advice.recommendation.recommend)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.advice.recommendation import Recommendation
from core.hardware.catalogue import DeviceSpec
from core.spec.workload import parse_workload, read_workload_document
from core.storage.store import Store
from telemetry.candidates import recommend_here
from telemetry.machine import MachineSummary
from telemetry.tracer import resolve_torch_models


@dataclass(frozen=True)
class SizingRun:
    document: Any
    recommendation: Recommendation
    devices: list[DeviceSpec]
    machine: MachineSummary
    inventory: dict[str, Any]


def ask_on_terminal(question: str) -> bool:
    """Yes from a person at a terminal; never yes when no one can answer (a script, CI, a pipe)."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def size_file(path: str, candidates: list[str], store: Store | None, trust_code: bool = False) -> SizingRun:
    document = read_workload_document(path)
    base = Path(path).resolve().parent
    workload = parse_workload(resolve_torch_models(document, base, trust_code=trust_code, ask=ask_on_terminal))
    rec, devices, machine, inventory = recommend_here(workload, candidates, store)
    return SizingRun(document, rec, devices, machine, inventory)
