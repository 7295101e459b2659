"""One line of the bill of materials (core.advice.bom): what, its specification, why, its source and price."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BomLine:
    item: str
    spec: str
    reason: str
    source: str
    # what the capex pays for this line (core.estimate.cost.CapexLine), in the workload's currency;
    # None: included in another line's price (RAM, drives and supplies in the platform's) or unpriced
    quantity: int | None = None
    unit_price: float | None = None
    total: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)
