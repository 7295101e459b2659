"""A stacked horizontal bar of a memory breakdown against the device capacity (pyqtgraph)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from core.memory import MemoryBreakdown
from core.units import fmt_bytes

PARTS = [
    ("weights", "#4e79a7"),
    ("gradients", "#f28e2b"),
    ("optimizer_states", "#59a14f"),
    ("activations", "#e15759"),
    ("data", "#76b7b2"),
    ("overhead", "#9c755f"),
    ("reserve", "#bab0ac"),
]


class MemoryBar(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideAxis("left")
        self.plot.setLabel("bottom", "GiB")
        self.plot.setMinimumHeight(120)
        self.legend = self.plot.addLegend(offset=(5, 5), colCount=4)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)
        self.setToolTip(
            "Memory of one device for a steady-state training step. The parts are shown side by side; "
            "the peak (black line) is lower than their sum when they are not alive at the same time. "
            "Red dashed line: device capacity."
        )

    def show_breakdown(self, mem: MemoryBreakdown, capacity: int | None, title: str) -> None:
        self.plot.clear()
        self.legend.clear()
        gib = 2**30
        x0 = 0.0
        for name, color in PARTS:
            width = getattr(mem, name) / gib
            if width <= 0:
                continue
            item = pg.BarGraphItem(x0=[x0], y=[0], width=[width], height=[0.6], brush=color, pen=None)
            self.plot.addItem(item)
            self.legend.addItem(item, f"{name.replace('_', ' ')} {fmt_bytes(getattr(mem, name))}")
            x0 += width
        peak = pg.InfiniteLine(pos=mem.total / gib, angle=90, pen=pg.mkPen(pg.getConfigOption("foreground"), width=2))
        self.plot.addItem(peak)
        if capacity:
            cap = pg.InfiniteLine(
                pos=capacity / gib, angle=90, pen=pg.mkPen("#d9534f", width=2, style=Qt.PenStyle.DashLine)
            )
            self.plot.addItem(cap)
        self.plot.setTitle(f"{title}: peak {fmt_bytes(mem.total)} ({mem.peak_phase})", size="9pt")
        right = max(x0, mem.total / gib, (capacity or 0) / gib) * 1.05 or 1.0
        self.plot.setXRange(0, right, padding=0)
        self.plot.setYRange(-0.5, 1.2, padding=0)
