"""The one pipeline from a workload to advice: size every candidate, evaluate the recommendation
rules, choose the candidate to buy and write its bill of materials.

The command line (`size`, `report`), the wizard and the reports all call :func:`recommend`, so a
workload gets the same figures, findings and bill of materials wherever it is sized."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.advice.bom import BomLine, choose_candidate, recommend_bom
from core.advice.purchase import Decision, decide
from core.advice.rules import Finding, evaluate_rules
from core.estimate.sizing import CandidateResult, SizingResult, seed_figures, size_workload
from core.hardware.catalogue import DeviceSpec, load_catalogue
from core.spec.workload import Workload


@dataclass(frozen=True)
class Recommendation:
    """A sized workload with the rules' findings and the bill of materials for its best candidate."""

    result: SizingResult
    findings: tuple[Finding, ...]
    bom: tuple[BomLine, ...]
    decision: Decision | None = None  # buy or rent, and the purchase within budget (core.advice.purchase)

    @property
    def best(self) -> CandidateResult | None:
        """The candidate recommended, None when nothing fits: this machine where it does the job, else the
        decision's purchase (a catalogue configuration within the budget when nothing listed is), else the
        listed one (core.advice.bom.choose_candidate)."""
        if self.decision is not None and self.decision.use is not None:
            return self.decision.use
        if self.decision is not None and self.decision.buy is not None:
            return self.decision.buy.candidate
        return choose_candidate(self.result)

    @property
    def advised(self) -> CandidateResult | None:
        """What the decision advises: the rental where renting wins (the bill of materials stays the purchase's,
        "if bought"), else ``best``. The summaries lead with it ("Recommended: 4 × A100" opened a report whose
        decision was to rent 8 × H100)."""
        if self.rented and self.decision is not None and self.decision.rent is not None:
            return self.decision.rent.candidate
        return self.best

    @property
    def rented(self) -> bool:
        """The decision is to rent: the summaries lead with the rental and hold it to no purchase budget."""
        return self.decision is not None and self.decision.verdict == "rent"


def recommend(
    workload: Workload,
    devices: Sequence[DeviceSpec],
    *,
    host_ram_bytes: int | None = None,
    calibrated: Mapping[str, Mapping[str, Any]] | None = None,
    inventory: Mapping[str, Any] | None = None,
    catalogue: Sequence[DeviceSpec] | None = None,
) -> Recommendation:
    """Size ``workload`` on ``devices`` and advise: ``host_ram_bytes`` is this machine's RAM (for the
    page cache and RAM-disk checks), ``calibrated`` the measured rates per device name
    (core.estimate.calibration), ``inventory`` this machine's inventory for the host rules and
    ``catalogue`` the devices the budget search may propose (default: the shipped catalogue)."""
    result = size_workload(workload, devices, host_ram_bytes=host_ram_bytes, calibrated=calibrated)
    decision = decide(
        result,
        load_catalogue() if catalogue is None else catalogue,
        host_ram_bytes=host_ram_bytes,
        calibrated=calibrated,
    )
    best = decision.use or (decision.buy.candidate if decision.buy is not None else None)
    # Hooda's R and T_train on the candidate to buy (the first one when none fits)
    result = replace(result, seed=seed_figures(workload, best or choose_candidate(result) or result.candidates[0]))
    return Recommendation(
        result, tuple(evaluate_rules(result, inventory)), tuple(recommend_bom(result, best)), decision
    )
