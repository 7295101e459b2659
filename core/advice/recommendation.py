"""The one pipeline from a workload to advice: size every candidate, evaluate the recommendation
rules, choose the candidate to buy and write its bill of materials.

The command line (`size`, `report`), the wizard and the reports all call :func:`recommend`, so a
workload gets the same figures, findings and bill of materials wherever it is sized."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.advice.bom import BomLine, choose_candidate, recommend_bom
from core.advice.rules import Finding, evaluate_rules
from core.estimate.sizing import CandidateResult, SizingResult, seed_figures, size_workload
from core.hardware.catalogue import DeviceSpec
from core.spec.workload import Workload


@dataclass(frozen=True)
class Recommendation:
    """A sized workload with the rules' findings and the bill of materials for its best candidate."""

    result: SizingResult
    findings: tuple[Finding, ...]
    bom: tuple[BomLine, ...]

    @property
    def best(self) -> CandidateResult | None:
        """The candidate to buy (core.advice.bom.choose_candidate), None when nothing fits."""
        return choose_candidate(self.result)


def recommend(
    workload: Workload,
    devices: Sequence[DeviceSpec],
    *,
    host_ram_bytes: int | None = None,
    calibrated: Mapping[str, Mapping[str, Any]] | None = None,
    inventory: Mapping[str, Any] | None = None,
) -> Recommendation:
    """Size ``workload`` on ``devices`` and advise: ``host_ram_bytes`` is this machine's RAM (for the
    page cache and RAM-disk checks), ``calibrated`` the measured rates per device name
    (core.estimate.calibration) and ``inventory`` this machine's inventory for the host rules."""
    result = size_workload(workload, devices, host_ram_bytes=host_ram_bytes, calibrated=calibrated)
    # Hooda's R and T_train on the candidate to buy (the first one when none fits)
    result = replace(result, seed=seed_figures(workload, choose_candidate(result) or result.candidates[0]))
    return Recommendation(result, tuple(evaluate_rules(result, inventory)), tuple(recommend_bom(result)))
