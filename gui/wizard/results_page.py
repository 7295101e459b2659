"""Results page: what-if controls, ranked candidates, memory, time vs cost, seed formulas,
findings and the bill of materials — recomputed on every change."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import pyqtgraph as pg
from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.advice.bom import BomLine
from core.advice.ranking import rank_candidates
from core.advice.recommendation import Recommendation
from core.advice.rules import Finding
from core.estimate.cost import OWNED_NOTE
from core.estimate.sizing import CandidateResult, SizingResult
from core.output.chart_labels import place_labels
from core.units import TIME_TICKS, fmt_bytes, fmt_count, fmt_money, fmt_seconds
from core.vocabulary import PRECISION_BYTES
from gui.models.candidate_table_model import COL_DEVICE, COL_MEASURED, ROW_ROLE, SORT_ROLE, CandidateTableModel
from gui.widgets.flow_layout import flow_row, labelled
from gui.widgets.memory_bar import MemoryBar
from gui.widgets.tab_widget import TabWidget
from gui.wizard.base import combo, set_value, spin
from gui.wizard.measure_panel import MeasurePanel

SEED_TIPS = {
    "n_na": "Jamgharyan 2024 eq. 1 (after Subbotin 2003): N_na = η_b·S·(N + N_M) + η_w·N_w + η_v·N_v — "
    "memory with the whole training set resident",
    "k1": "Jamgharyan 2024 eq. 4: K1 = N_w / (S·N), the redundancy of the network memory",
    "t": "Jamgharyan 2024 eq. 2 and 3: T1 = Σ_μ Σ_i T^(μ,i) (sequential), T2 = Σ_μ max_i T^(μ,i) "
    "(hardware-parallel), operations per sample",
    "r": "Hooda 2023 eq. 1: R = 2·N·C (CUDA cores × boost clock × 2)",
    "c": "Hooda 2023 eq. 3 and 4: C_train = O_f·O_b·P·S·E with O_f = 2, O_b = 3; T_train = C_train / R "
    "(real throughput typically 15–25 % lower)",
}
# Findings' severity badges: white bold text on a dark fill reads in light and dark themes alike
# (contrast ≥ 4.5:1, WCAG AA, for each fill)
SEVERITY_COLORS = {"critical": "#b52b27", "warning": "#975a00", "advice": "#1d5f91", "info": "#56606b"}


def findings_html(findings: Sequence[Finding], muted: str) -> str:
    """The findings as wrapped paragraphs: a severity badge, the message, what is true today and the
    source in the theme's muted text colour ``muted``."""
    if not findings:
        return "<p>No rule fired.</p>"
    parts = []
    for f in findings:
        badge = (
            f"<span style='background-color:{SEVERITY_COLORS[f.severity]};color:#ffffff;font-weight:bold'>"
            f"&nbsp;{html.escape(f.severity)}&nbsp;</span>"
        )
        today = f"<br><i>Today: {html.escape(f.today)}</i>" if f.today else ""
        source = f"<br><span style='color:{muted}'>Source: {html.escape(f.source)}</span>" if f.source else ""
        parts.append(f"<p style='margin-bottom:8px'>{badge} {html.escape(f.message)}{today}{source}</p>")
    return "".join(parts)


class TimeAxis(pg.AxisItem):
    """A log-scale time axis: the plot's x is log10 of seconds, the ticks read 1 min, 1 h, 1 day."""

    TICKS: ClassVar[dict[float, str]] = dict(TIME_TICKS)

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:
        ticks = [math.log10(t) for t in self.TICKS if minVal <= math.log10(t) <= maxVal]
        return [(1.0, ticks)] if ticks else super().tickValues(minVal, maxVal, size)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        named = {round(math.log10(t), 6): label for t, label in self.TICKS.items()}
        return [named.get(round(v, 6), fmt_seconds(10.0**v)) for v in values]


class ResultsPage(QWidget):
    """Shows a SizingResult; the what-if controls emit ``what_if`` with changed training values."""

    what_if = Signal(dict)
    run_here = Signal()  # "Run it here": train this workload on this machine in the Telemetry tab

    def __init__(self) -> None:
        super().__init__()
        self.result: SizingResult | None = None
        self.batch = spin(1, 100_000_000, "What if: global batch size")
        self.gpus = spin(1, 4096, "What if: most GPUs per candidate")
        self.precision = combo(tuple(PRECISION_BYTES), "What if: training precision")
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.run_here_button = QPushButton("Run it here")
        self.run_here_button.setToolTip("Train this workload on this machine in the Telemetry tab")
        self.run_here_button.setEnabled(False)
        self.run_here_button.clicked.connect(self.run_here)
        whatif = QHBoxLayout()  # the verdict beside the what-if fields, which wrap where the window is narrow
        fields = (("Batch", self.batch), ("GPUs up to", self.gpus), ("Precision", self.precision))
        whatif.addWidget(flow_row(*(labelled(label, w) for label, w in fields), self.run_here_button))
        whatif.addWidget(self.verdict, 1)
        self.measure_panel = MeasurePanel()
        self.model = CandidateTableModel()
        self.proxy = QSortFilterProxyModel()
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setTabKeyNavigation(False)  # Tab leaves the table (the arrows move in it)
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # keep the ranking until a header is clicked
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # every column as wide as its contents (the device's name up to a GPU's, below), the last one takes
        # what is left of a wide window (no empty band right of the table)
        self.table.horizontalHeader().setStretchLastSection(True)
        # the device's name at most as wide as a GPU's: this machine's CPU name ("this machine (Intel(R) Xeon(R)
        # Processor, 2 cores)") pushed the last column, buy or rent, out of a 1366-pixel window
        self.table.horizontalHeader().setSectionResizeMode(COL_DEVICE, QHeaderView.ResizeMode.Interactive)
        self._device_width = 0
        # the "Measured & scaled" column only once something was measured on this GPU
        self.model.modelReset.connect(lambda: self.table.setColumnHidden(COL_MEASURED, self.model.measured is None))
        self.table.setColumnHidden(COL_MEASURED, True)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)  # a cell is one line: the last column wrapped "rent · 12 runs" out of sight
        self.memory_bar = MemoryBar()
        self.scatter = pg.PlotWidget(axisItems={"bottom": TimeAxis(orientation="bottom")})
        self.scatter.setLabel("bottom", "training time (log scale)")
        self.scatter.setLabel("left", "capex")
        self.scatter.setMenuEnabled(False)
        self._labels: list[tuple[pg.TextItem, float, float]] = []  # each label, at its point's x, y
        self._texts: list[pg.TextItem] = []  # the labels' items, reused from one result to the next
        self._points: pg.ScatterPlotItem | None = None
        self.scatter.getViewBox().sigResized.connect(self._place_labels)
        self.scatter.getViewBox().sigRangeChanged.connect(self._place_labels)
        self.scatter.setToolTip(
            "Each point is a device × count: lower left is faster and cheaper; hollow = does not fit"
        )
        self.seed = QLabel()
        self.seed.setWordWrap(True)
        self.seed.setTextFormat(Qt.TextFormat.RichText)
        # findings wrap in full (a tree elided them with "…"), selectable, with their sources
        self.findings = QTextBrowser()
        self.findings.setOpenLinks(False)
        self.findings.setToolTip("What the recommendation rules found, each with the paper or guide it comes from")
        self.bom = QTreeWidget()
        # the columns first: a resize mode set before them was lost ("Recommendatio", "this machine …")
        self.bom.setHeaderLabels(["Item", "Recommendation", "Price", "Why"])
        self.bom.setRootIsDecorated(False)
        self.bom.setWordWrap(True)  # a long reason wraps in its row
        for col in (0, 1, 2):
            self.bom.header().setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.bom.header().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.decision = QLabel()
        self.decision.setWordWrap(True)
        self.decision.setTextFormat(Qt.TextFormat.RichText)
        self.decision.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.decision.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.decision.setToolTip(
            "Buying (capex, maintenance, energy) against renting the same devices on demand at each device's "
            "dated cloud price, for the expected use set on the Goal page (docs/advice.md)"
        )
        tabs = TabWidget()
        tabs.addTab(self.memory_bar, "Memory")
        tabs.addTab(self.scatter, "Time vs cost")
        tabs.addTab(self.findings, "Findings")
        tabs.addTab(self.bom, "Bill of materials")
        tabs.addTab(self.decision, "Buy or rent")
        seed_box = QGroupBox("Seed formulas (as published)")
        QVBoxLayout(seed_box).addWidget(self.seed)
        self.tabs = tabs
        self._scatter_stale = False
        tabs.currentChanged.connect(self._show_scatter_if_shown)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setObjectName("wizard_results")  # its sizes are remembered (gui/main_window.py)
        split.addWidget(self.table)
        split.addWidget(tabs)
        split.setSizes([180, 260])
        layout = QVBoxLayout(self)
        layout.addLayout(whatif)
        layout.addWidget(self.measure_panel)
        layout.addWidget(split, 1)
        layout.addWidget(seed_box)
        self.batch.valueChanged.connect(self._what_if)
        self.gpus.valueChanged.connect(self._what_if)
        self.precision.currentIndexChanged.connect(self._what_if)
        self.table.selectionModel().selectionChanged.connect(self._show_selected)

    def set_controls(self, doc: dict[str, Any]) -> None:
        t, hw = doc.get("training", {}), doc.get("hardware", {})
        gc = hw.get("gpu_count", 1)
        for w in (self.batch, self.gpus, self.precision):
            w.blockSignals(True)
        set_value(self.batch, int(t.get("batch_size", 32)))
        set_value(self.gpus, int(gc.get("max", 1) if isinstance(gc, dict) else gc))
        self.precision.setCurrentIndex(max(0, self.precision.findData(t.get("precision", "fp32"))))
        for w in (self.batch, self.gpus, self.precision):
            w.blockSignals(False)

    def _what_if(self) -> None:
        self.what_if.emit(
            {"batch_size": self.batch.value(), "gpus": self.gpus.value(), "precision": self.precision.currentData()}
        )

    def show_result(self, rec: Recommendation) -> None:
        result = self.result = rec.result
        here = any(c.device.is_this_machine for c in result.candidates)
        self.run_here_button.setEnabled(here)
        self.run_here_button.setToolTip(
            "Train this workload on this machine in the Telemetry tab"
            if here
            else "Add 'this machine' to the candidates to compare a run here with its sizing"
        )
        self.model.epochs = result.workload.training.epochs
        self.model.set_rows(rank_candidates(result.candidates))
        self._fit_device_column()
        # selecting draws the memory bar: of the candidate recommended (the top row could be another, an
        # in-budget one ranked first), else of the top one
        self.table.selectRow(self._row_of(rec.advised))
        self._scatter_stale = True  # drawn when its tab is shown: a hidden chart's redraw is a tenth of a change
        self._show_scatter_if_shown()
        self._show_seed(result)
        self._show_findings(rec.findings)
        self._show_bom(rec.bom, result.workload.cost.currency, rec.best)
        self._show_decision(rec)
        best = rec.advised  # the rental where renting wins: "Recommended: A100 × 4 (rent …)" named the purchase
        c = result.workload.cost
        if best is None:
            self.verdict.setText("<b style='color:#d9534f'>No candidate fits.</b> See Findings for a way out.")
        else:
            extra = []
            if c.deadline_hours is not None:
                extra.append(f"deadline {c.deadline_hours:g} h {'met' if best.meets_deadline else 'missed'}")
            rented = rec.rented
            if c.budget is not None and best.within_budget is not None and not rented:  # a capex: not a rental's
                extra.append("within budget" if best.within_budget else "over budget")
            if rec.decision is not None and rec.decision.use is not None:
                extra.append("already here: nothing to buy")
            elif rec.decision is not None and rec.decision.verdict == "buy":  # "rent" leads the line already
                extra.append("buy for the expected use")
            listed = ""
            if best not in result.candidates:  # the catalogue's best where nothing listed is within budget or in time
                late = rec.decision is not None and rec.decision.searched_for == "deadline"
                listed = f" (from the catalogue: nothing listed {'meets the deadline' if late else 'is within budget'})"
            mode = "rent " if rented else ""
            said = [n for n in result.notes if n.startswith("training.")]  # what the sizing read differently
            self.verdict.setText(
                f"Recommended: {mode}<b>{html.escape(best.label)}</b>{listed} — trains in "
                f"{fmt_seconds(best.train_time_s)}"
                + (f" ({', '.join(extra)})" if extra else "")
                + "".join(f"<br><i>{html.escape(n)}</i>" for n in said)
            )

    def _fit_device_column(self) -> None:
        """The Device column as wide as its names, at most a GPU's name wide (a longer name is elided, whole in
        its tooltip); set again only when the names need another width, so a width the user dragged stays."""
        cap = self.table.fontMetrics().horizontalAdvance("NVIDIA GeForce RTX 4090 ×") + 16
        header = self.table.horizontalHeader().sectionSizeHint(COL_DEVICE)  # "Device" whole, with no rows too
        width = max(min(self.table.sizeHintForColumn(COL_DEVICE), cap), header)
        if width != self._device_width:
            self._device_width = width
            self.table.setColumnWidth(COL_DEVICE, width)

    def _row_of(self, best: CandidateResult | None) -> int:
        """The table's row (as sorted) of ``best``; 0 when it is not listed (a catalogue configuration)."""
        if best is not None:
            for row in range(self.proxy.rowCount()):
                c = self.proxy.data(self.proxy.index(row, 0), ROW_ROLE)
                if (c.device.name, c.count) == (best.device.name, best.count):
                    return row
        return 0

    def show_unsized(self, why: str) -> None:
        """No figures for the workload as the pages hold it (``why``): the last sizing's are taken away, not
        left standing beside a workload they are not for."""
        self.result = None
        self.model.set_rows([])
        self.memory_bar.clear("Not sized")
        self.verdict.setText(f"<b style='color:#d9534f'>Not sized:</b> {html.escape(why)}")
        self.run_here_button.setEnabled(False)
        self.seed.setText("")
        self.findings.setHtml("")
        self.bom.clear()
        self.decision.setText("")

    def _show_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            c = self.proxy.data(rows[0], ROW_ROLE)
            self.memory_bar.show_breakdown(c.memory, c.capacity_bytes, f"{c.device.name} × {c.count}")

    def _show_scatter_if_shown(self) -> None:
        if self._scatter_stale and self.result is not None and self.tabs.currentWidget() is self.scatter:
            self._scatter_stale = False
            self._show_scatter(self.result)

    def _show_scatter(self, result: SizingResult) -> None:
        """The candidates' training time against capex. Its items are made once and reused: a what-if
        change moves the points and relabels, where making them anew took a fifth of its time."""
        fg = pg.getConfigOption("foreground")
        if self._points is None:  # hovering a point names it, also where its label had no free place
            self._points = pg.ScatterPlotItem(hoverable=True, tip=lambda x, y, data: data)
            self.scatter.addItem(self._points)
        spots, skipped = [], []
        self._labels = []
        for c in sorted(result.candidates, key=lambda c: (c.cost.capex or 0, c.train_time_s)):
            if c.cost.capex is None:
                skipped.append(c.device.name)
                continue
            label = f"{c.device.name.replace('NVIDIA ', '')} × {c.count}"
            x = math.log10(max(c.train_time_s, 1e-3))
            spots.append(
                {
                    "pos": (x, c.cost.capex),
                    "size": 10,
                    "brush": pg.mkBrush("#4e79a7") if c.fits else pg.mkBrush(None),
                    "pen": pg.mkPen(fg),
                    "data": label,
                }
            )
            if len(self._texts) == len(self._labels):
                self._texts.append(pg.TextItem(color=fg, anchor=(0, 0)))
                self.scatter.addItem(self._texts[-1])
            text = self._texts[len(self._labels)]
            if text.toPlainText() != label:  # a label set again lays the chart out again
                text.setText(label, color=fg)
            self._labels.append((text, x, c.cost.capex))
        for text in self._texts[len(self._labels) :]:  # the pool's texts this result does not use
            text.setVisible(False)
        self._points.setData(spots=spots)
        if spots:  # explicit ranges: one point alone would give a degenerate axis
            xs = [sp["pos"][0] for sp in spots]
            ys = [sp["pos"][1] for sp in spots]
            self.scatter.setXRange(min(xs) - 0.5, max(xs) + 1.0, padding=0)
            self.scatter.setYRange(0, max(ys) * 1.25 or 1.0, padding=0)
        self._place_labels()
        currency = result.workload.cost.currency
        if self.scatter.getAxis("left").labelText != f"capex ({currency})":
            self.scatter.setLabel("left", f"capex ({currency})")
        note = f" · not plotted (no price): {', '.join(skipped)}" if skipped else ""
        title = f"training time vs capex; hollow: does not fit{note}"
        if self.scatter.getPlotItem().titleLabel.text != title:
            self.scatter.setTitle(title, size="9pt")

    def _place_labels(self) -> None:
        """Each point's label beside it where it overlaps no point or label (core.output.chart_labels,
        as in the report), in the view's pixels; a label with no free place is hidden."""
        vb = self.scatter.getViewBox()
        w, h = vb.width(), vb.height()
        if not self._labels or w < 10 or h < 10:
            return
        (x0, x1), (y0, y1) = vb.viewRange()
        sx, sy = w / (x1 - x0), h / (y1 - y0)
        points = [((x - x0) * sx, (y1 - y) * sy) for _, x, y in self._labels]
        sizes = [(t.boundingRect().width(), t.boundingRect().height()) for t, _, _ in self._labels]
        for (text, _, _), spot in zip(self._labels, place_labels(points, sizes, (0, 0, w, h), 5, 2), strict=True):
            text.setVisible(spot is not None)
            if spot is not None:
                text.setPos(x0 + spot[0] / sx, y1 - spot[1] / sy)

    def _show_seed(self, r: SizingResult) -> None:
        s = r.seed
        k1 = "n/a" if s["k1"] is None else f"{s['k1']:.4g}"
        self.seed.setText(
            f"<span title='{SEED_TIPS['n_na']}'>N<sub>na</sub> = {fmt_bytes(float(s['n_na_bytes']))}</span> · "
            f"<span title='{SEED_TIPS['k1']}'>K1 = {k1} — {html.escape(str(s['k1_meaning']))}</span><br>"
            f"<span title='{SEED_TIPS['t']}'>T1 = {fmt_count(float(s['t1_ops']), 'op')}, "
            f"T2 = {fmt_count(float(s['t2_ops']), 'op')} per sample</span> · "
            f"<span title='{SEED_TIPS['r']}'>R = {fmt_count(float(s['peak_flops']), 'FLOP/s')} "
            f"({html.escape(str(s['device']))})</span><br>"
            f"<span title='{SEED_TIPS['c']}'>C<sub>train</sub> = {fmt_count(float(s['c_train_flop']), 'FLOP')}, "
            f"T<sub>train</sub> = {fmt_seconds(float(s['t_train_s']))} at peak</span>"
        )
        self.seed.setToolTip("\n".join(SEED_TIPS.values()))

    def _show_findings(self, findings: Sequence[Finding]) -> None:
        self.findings.setHtml(findings_html(findings, self.palette().color(QPalette.ColorRole.PlaceholderText).name()))
        self._tab_text(2, f"Findings ({len(findings)})")

    def _show_bom(self, bom: Sequence[BomLine], currency: str, best: CandidateResult | None) -> None:
        self.bom.clear()
        priced = any(b.total is not None for b in bom)  # nothing is where nothing fits
        unpriced = "included in the platform's price" if priced else "not priced"
        if best is not None and best.cost.owned:
            unpriced = OWNED_NOTE
        systems = best.cost.systems_for_use if best is not None else 1
        for b in bom:
            price = "" if b.total is None else f"{b.quantity} × {fmt_money(b.unit_price, currency)}"
            item = QTreeWidgetItem([b.item, b.spec, price, b.reason])
            item.setToolTip(3, f"{b.reason}\n\nSource: {b.source}")
            item.setToolTip(1, b.spec)
            item.setToolTip(2, unpriced if b.total is None else f"{b.total:,.0f} {currency}")
            self.bom.addTopLevelItem(item)
        if priced:  # a bill with nothing priced has no total (it read "Total — the capex — 0.00")
            total = sum(b.total for b in bom if b.total is not None)
            of = f" of one system: the expected use needs {systems}" if systems > 1 else ""
            item = QTreeWidgetItem(["Total", f"the capex{of}", fmt_money(total, currency), ""])
            font = item.font(0)
            font.setBold(True)
            for col in range(3):
                item.setFont(col, font)
            self.bom.addTopLevelItem(item)

    def _tab_text(self, index: int, text: str) -> None:
        """A tab's title, set only when it changes: setting it, even to the same text, lays the tabs and the
        table above them out again and repaints both (4 ms of a what-if change on a two-core VM)."""
        if self.tabs.tabText(index) != text:
            self.tabs.setTabText(index, text)

    def _show_decision(self, rec: Recommendation) -> None:
        d = rec.decision
        if d is None or d.verdict is None:
            self.decision.setText("Nothing that fits can be bought or rented at a known price.")
            self._tab_text(4, "Buy or rent")
            return
        head, _, rest = d.text.partition(". ")  # "Rent. Renting … ": the verdict in bold
        self.decision.setText(f"<p><b>{html.escape(head)}.</b> {html.escape(rest)}</p>")
        self._tab_text(4, "Buy or rent: use this machine" if d.verdict == "use" else f"Buy or rent: {d.verdict}")
