"""The order of the candidate table (the wizard's results page, the reports): candidates that fit
first, then the deadline and budget verdicts, then training time — except where the step is
host-bound. A host-bound step (core/estimate/host.py) takes about the same time on a faster GPU
(shorter only by the kernels the host waits for after its last dispatch), so
ranking GPUs by a few per cent of speed would put the dearest card first for nothing: there,
candidates whose training times are within EQUAL_TIME of each other count as equally fast and the
cheaper comes first."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from core.estimate.sizing import CandidateResult

EQUAL_TIME = 0.10  # training times within 10 % of each other: equal for a host-bound workload


def host_bound_workload(candidates: Sequence[CandidateResult]) -> bool:
    """Whether the workload is host-bound: the fastest fitting accelerator's step is set by its host."""
    gpus = [c for c in candidates if c.device.kind != "cpu" and c.fits is not False]
    if not gpus:
        return False
    return min(gpus, key=lambda c: c.train_time_s).step.host_bound


def rank_candidates(candidates: Sequence[CandidateResult]) -> list[CandidateResult]:
    """``candidates`` in the table's order (module docstring)."""
    groups: dict[int, int] = {}
    if host_bound_workload(candidates):
        first = None
        group = -1
        for c in sorted(candidates, key=lambda c: c.train_time_s):
            if first is None or c.train_time_s > first * (1 + EQUAL_TIME):
                first, group = c.train_time_s, group + 1
            groups[id(c)] = group

    def key(c: CandidateResult) -> tuple[Any, ...]:
        capex = c.cost.capex if c.cost.capex is not None else math.inf
        speed: tuple[Any, ...] = (groups[id(c)], capex, c.train_time_s) if groups else (c.train_time_s, capex)
        return (not c.fits, c.meets_deadline is False, c.within_budget is False, *speed)

    return sorted(candidates, key=key)
