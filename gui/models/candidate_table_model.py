"""Table model of sized candidates (one row per device × count)."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from core.estimate.profile_scale import ScaleResult
from core.estimate.sizing import CandidateResult
from core.output import glossary
from core.output.measure_report import measured_cell
from core.output.sizing_report import step_accuracy_note, step_breakdown
from core.units import fmt_bytes, fmt_money, fmt_seconds

(
    COL_DEVICE,
    COL_COUNT,
    COL_FITS,
    COL_MEMORY,
    COL_CAPACITY,
    COL_LARGEST,
    COL_STEP,
    COL_MEASURED,
    COL_TIME,
    COL_CAPEX,
    COL_TCO,
    COL_BUY_OR_RENT,
) = range(12)
COLUMN_TERMS = (
    glossary.DEVICE,
    glossary.COUNT,
    glossary.FITS,
    glossary.MEMORY_PER_DEVICE,
    glossary.CAPACITY,
    glossary.LARGEST_BATCH,
    glossary.STEP_TIME,
    glossary.MEASURED_STEP,
    glossary.TRAINING_TIME,
    glossary.CAPEX,
    glossary.TCO,
    glossary.BUY_OR_RENT,
)
HEADERS = [term.label for term in COLUMN_TERMS]
TOOLTIPS = [term.meaning[0].upper() + term.meaning[1:] for term in COLUMN_TERMS]
SORT_ROLE = Qt.ItemDataRole.UserRole
ROW_ROLE = Qt.ItemDataRole.UserRole + 1


def wrapped_tip(text: str) -> str:
    """A long plain-text tooltip as rich text, which Qt word-wraps (a plain one is one line as wide as its text)."""
    return "<qt>" + html.escape(text, quote=False).replace("\n", "<br>") + "</qt>"


class CandidateTableModel(QAbstractTableModel):
    def __init__(self) -> None:
        super().__init__()
        self._rows: list[CandidateResult] = []
        self._texts: list[list[str]] = []  # per row, per column: formatted once, read on every paint
        self._raws: list[list[Any]] = []
        self._measured: ScaleResult | None = None

    @property
    def measured(self) -> ScaleResult | None:
        return self._measured

    def set_measured(self, measured: ScaleResult | None) -> None:
        """The measure-and-scale result the "Measured & scaled" column shows (None clears it)."""
        self._measured = measured
        self.set_rows(self._rows)

    def set_rows(self, rows: list[CandidateResult]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self._texts = [self._row_texts(r) for r in self._rows]
        self._raws = [self._row_raws(r) for r in self._rows]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return HEADERS[section]
            if role == Qt.ItemDataRole.ToolTipRole:
                return TOOLTIPS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r = self._rows[index.row()]
        col = index.column()
        if role == ROW_ROLE:
            return r
        if role == SORT_ROLE:
            return self._raws[index.row()][col]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._texts[index.row()][col]
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == COL_STEP:
                note = step_accuracy_note(r)
                return wrapped_tip(
                    f"{fmt_seconds(r.step.step_s)}, {r.step.bound}-bound: {step_breakdown(r)}"
                    + (f"\n{note}" if note else "")
                )
            if col == COL_BUY_OR_RENT:
                return _buy_or_rent_tip(r)
            if col == COL_MEASURED:
                return measured_cell(self._measured, r.device, r.count, r.step.step_s)[1]
            return "\n".join([r.device.source, *r.assumptions])
        if role == Qt.ItemDataRole.TextAlignmentRole and col != COL_DEVICE:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and col == COL_FITS and r.fits is False:
            from PySide6.QtGui import QColor

            return QColor("#d9534f")
        return None

    def _row_raws(self, r: CandidateResult) -> list[Any]:
        return [
            r.device.name,
            r.count,
            {True: 2, None: 1, False: 0}[r.fits],
            r.memory.total,
            r.capacity_bytes or 0,
            r.largest_batch or 0,
            r.step.step_s,
            measured_cell(self._measured, r.device, r.count, r.step.step_s)[2] or 0.0,
            r.train_time_s,
            r.cost.capex or 0.0,
            r.cost.tco or 0.0,
            r.cost.verdict or "",
        ]

    def _row_texts(self, r: CandidateResult) -> list[str]:
        cur = r.cost.currency
        return [
            r.device.name,
            str(r.count),
            {True: "yes", False: "no", None: "unknown"}[r.fits],
            fmt_bytes(r.memory.total),
            fmt_bytes(r.capacity_bytes),
            "unknown" if r.largest_batch is None else f"{r.largest_batch:,}",
            fmt_seconds(r.step.step_s),
            measured_cell(self._measured, r.device, r.count, r.step.step_s)[0],
            fmt_seconds(r.train_time_s),
            fmt_money(r.cost.capex, cur),
            fmt_money(r.cost.tco, cur),
            _buy_or_rent(r),
        ]


def _buy_or_rent(r: CandidateResult) -> str:
    """ "rent", or "buy (pays off after 12 runs)"; empty when either is not priced."""
    if r.cost.verdict is None:
        return ""
    if r.cost.verdict == "buy" or r.cost.break_even_runs is None:
        return r.cost.verdict
    return f"rent · {r.cost.break_even_runs:,} runs"


def _buy_or_rent_tip(r: CandidateResult) -> str:
    c = r.cost
    if c.verdict is None:
        return f"Renting or buying is not priced for these devices: {c.cloud_note}; {c.purchase_note}"
    tip = (
        f"{c.verdict.capitalize()} costs less per run at the expected use: renting "
        f"{fmt_money(c.cloud_cost, c.currency)} a run ({c.cloud_note}), buying "
        f"{fmt_money(c.buy_per_run, c.currency)} a run (capex, maintenance and energy; {c.purchase_note})"
    )
    if c.break_even_runs is not None:
        tip += f"; owning these devices pays off after {c.break_even_runs:,} runs"
    return tip
