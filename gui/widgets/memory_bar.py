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
        parts = [(name, color, getattr(mem, name)) for name, color in PARTS if getattr(mem, name) > 0]
        stacked = sum(v for _, _, v in parts)
        # the axis follows the workload; a far larger capacity is named instead of squashing the bar
        show_cap = capacity is not None and capacity <= 3 * max(stacked, mem.total)
        largest = max(stacked, mem.total, capacity if show_cap and capacity else 0)
        unit, scale = ("GiB", 2**30) if largest >= 2**31 else ("MiB", 2**20)
        self.plot.setLabel("bottom", unit)
        x0 = 0.0
        for name, color, value in parts:
            item = pg.BarGraphItem(x0=[x0], y=[0], width=[value / scale], height=[0.6], brush=color, pen=None)
            self.plot.addItem(item)
            self.legend.addItem(item, f"{name.replace('_', ' ')} {fmt_bytes(value)}")
            x0 += value / scale
        fg = pg.getConfigOption("foreground")
        self.plot.addItem(pg.InfiniteLine(pos=mem.total / scale, angle=90, pen=pg.mkPen(fg, width=2)))
        cap_text = ""
        if capacity is not None:
            if show_cap:
                pen = pg.mkPen("#d9534f", width=2, style=Qt.PenStyle.DashLine)
                self.plot.addItem(pg.InfiniteLine(pos=capacity / scale, angle=90, pen=pen))
            else:
                cap_text = f"; capacity {fmt_bytes(capacity)} (off the scale)"
        self.plot.setTitle(f"{title}: peak {fmt_bytes(mem.total)} ({mem.peak_phase}){cap_text}", size="9pt")
        self.plot.setXRange(0, largest / scale * 1.08 or 1.0, padding=0)
        self.plot.setYRange(-0.5, 1.2, padding=0)
