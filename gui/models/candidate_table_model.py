"""Table model of sized candidates (one row per device × count)."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QStandardItem, QStandardItemModel

from core.estimate.profile_scale import ScaleResult
from core.estimate.sizing import CandidateResult
from core.output import glossary
from core.output.figure_notes import capex_note, tco_note, time_note
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


class CandidateTableModel(QStandardItemModel):
    """The candidates' cells held by Qt itself: a view paints and sizes them (every cell, every role, on
    each what-if change) without a call into Python, which took a fifth of a what-if change's time."""

    def __init__(self) -> None:
        super().__init__(0, len(HEADERS))
        for col, (header, tip) in enumerate(zip(HEADERS, TOOLTIPS, strict=True)):
            item = QStandardItem(header)
            item.setToolTip(tip)
            self.setHorizontalHeaderItem(col, item)
        self._rows: list[CandidateResult] = []
        self._measured: ScaleResult | None = None
        self.epochs = 1  # the workload's, for the training time's tooltip (the results page sets it with the rows)

    @property
    def measured(self) -> ScaleResult | None:
        return self._measured

    def set_measured(self, measured: ScaleResult | None) -> None:
        """The measure-and-scale result the "Measured & scaled" column shows (None clears it); the same
        one again changes nothing (each what-if change passes it before its new rows)."""
        if measured is self._measured:
            return
        self._measured = measured
        self.set_rows(self._rows)

    def set_rows(self, rows: list[CandidateResult]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.setRowCount(0)
        for r in self._rows:
            self.appendRow(self._row_items(r))
        self.endResetModel()

    def _row_items(self, r: CandidateResult) -> list[QStandardItem]:
        """One row's cells: text, sort value, the row's result, alignment, colour and tooltip."""
        common_tip = "\n".join([r.device.source, *r.assumptions])
        tips = {
            COL_DEVICE: f"{r.device.name} × {r.count}\n{common_tip}",  # the name whole where the column elides it
            COL_BUY_OR_RENT: _buy_or_rent_tip(r),
            COL_MEASURED: measured_cell(self._measured, r.device, r.count, r.step.step_s)[1],
            # what the figure is made of (each repeated the device's datasheet source)
            COL_CAPEX: wrapped_tip(capex_note(r)),
            COL_TCO: wrapped_tip(tco_note(r)),
            COL_TIME: time_note(r, self.epochs),
        }
        note = step_accuracy_note(r)
        tips[COL_STEP] = wrapped_tip(
            f"{fmt_seconds(r.step.step_s)}, {r.step.bound}-bound: {step_breakdown(r)}" + (f"\n{note}" if note else "")
        )
        items = []
        for col, (text, raw) in enumerate(zip(self._row_texts(r), self._row_raws(r), strict=True)):
            item = QStandardItem(text)
            item.setEditable(False)
            item.setData(raw, SORT_ROLE)
            item.setData(r, ROW_ROLE)
            item.setToolTip(tips.get(col, common_tip))
            if col not in (COL_DEVICE, COL_BUY_OR_RENT):  # figures right; words left (the last column, which takes
                # a wide window's spare width, put "rent · 369,206 runs" a thousand pixels from its row)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if col == COL_FITS and r.fits is False:
                item.setForeground(QColor("#d9534f"))
            items.append(item)
        return items

    def _row_raws(self, r: CandidateResult) -> list[Any]:
        return [
            r.device.name,
            r.count * r.nodes,
            {True: 2, None: 1, False: 0}[r.fits],
            r.memory.total,
            r.capacity_bytes or 0,
            r.largest_batch or 0,
            r.step.step_s,
            measured_cell(self._measured, r.device, r.count, r.step.step_s)[2] or 0.0,
            r.train_time_s,
            r.cost.capex or 0.0,
            r.cost.tco or 0.0,
            r.buy_or_rent or "",
        ]

    def _row_texts(self, r: CandidateResult) -> list[str]:
        cur = r.cost.currency
        return [
            r.device.name,
            str(r.count) if r.nodes == 1 else f"{r.count} × {r.nodes:,} nodes",  # 10,000 nodes read "1"
            {True: "yes", False: "no", None: "unknown"}[r.fits],
            fmt_bytes(r.memory.total),
            fmt_bytes(r.capacity_bytes),
            "unknown" if r.largest_batch is None else f"{r.largest_batch:,}",
            fmt_seconds(r.step.step_s),
            measured_cell(self._measured, r.device, r.count, r.step.step_s)[0],
            fmt_seconds(r.train_time_s),
            "owned" if r.cost.owned else fmt_money(r.cost.capex, cur),  # this machine: not "unknown"
            "—" if r.cost.owned and r.cost.tco is None else fmt_money(r.cost.tco, cur),
            _buy_or_rent(r),
        ]


def _buy_or_rent(r: CandidateResult) -> str:
    """ "rent", or "buy (pays off after 12 runs)"; empty when either is not priced."""
    if r.buy_or_rent is None:
        return ""
    if r.buy_or_rent == "use":
        return "use: already here"
    if r.buy_or_rent == "buy" or r.break_even[1] is None:
        return r.buy_or_rent
    return f"rent · {r.break_even[1]:,} runs"


def _buy_or_rent_tip(r: CandidateResult) -> str:
    c = r.cost
    if r.fits is False:
        return "It does not fit: there is nothing to buy or rent (Findings say what would fit)"
    if c.owned:
        return "This machine: already here, so nothing is bought or rented for it"
    if c.verdict is None:
        return f"Renting or buying is not priced for these devices: {c.cloud_note}; {c.purchase_note}"
    if not c.rent_allowed:
        return (
            "Buy: renting is ruled out in the workload (cost.rent_allowed: false). For comparison, renting costs "
            f"{fmt_money(c.cloud_cost, c.currency)} a run, buying {fmt_money(c.buy_per_run, c.currency)} a run"
        )
    tip = (
        f"{c.verdict.capitalize()} costs less per run at the expected use: renting "
        f"{fmt_money(c.cloud_cost, c.currency)} a run ({c.cloud_note}), buying "
        f"{fmt_money(c.buy_per_run, c.currency)} a run (capex, maintenance and energy; {c.purchase_note})"
    )
    if c.break_even_runs is not None:
        tip += f"; owning these devices pays off after {c.break_even_runs:,} runs"
    return tip
