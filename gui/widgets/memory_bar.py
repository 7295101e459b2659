"""A stacked horizontal bar of a memory breakdown against the device capacity (pyqtgraph).

The bar segments, legend entries and lines are made once and updated in place: rebuilding
pyqtgraph items on every what-if change would cost more than the whole sizing.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from core.estimate.memory import MemoryBreakdown
from core.units import fmt_bytes
from reports.charts import PARTS


class MemoryBar(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideAxis("left")
        self.plot.setMinimumHeight(120)
        self.legend = self.plot.addLegend(offset=(5, 5), colCount=4)
        self.bars: dict[str, pg.BarGraphItem] = {}
        for name, color in PARTS:
            bar = pg.BarGraphItem(x0=[0], y=[0], width=[0], height=[0.6], brush=color, pen=None)
            self.plot.addItem(bar)
            self.legend.addItem(bar, name.replace("_", " "))
            self.bars[name] = bar
        self.peak = pg.InfiniteLine(pos=0, angle=90, pen=pg.mkPen(pg.getConfigOption("foreground"), width=2))
        self.capacity = pg.InfiniteLine(pos=0, angle=90, pen=pg.mkPen("#d9534f", width=2, style=Qt.PenStyle.DashLine))
        self.plot.addItem(self.peak)
        self.plot.addItem(self.capacity)
        self.plot.setYRange(-0.5, 1.2, padding=0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)
        self.setToolTip(
            "Memory of one device at the highest instant of a steady-state training step: the parts alive "
            "then (gradients computed so far, activations not yet freed, autocast's half-precision weight copies, "
            "scratch, cuBLAS workspace), then the runtime overhead and any reserve, so the bar ends at the memory "
            "per device (solid line). Red dashed line: device capacity."
        )

    def show_breakdown(self, mem: MemoryBreakdown, capacity: int | None, title: str) -> None:
        values = {name: getattr(mem, name) for name, _ in PARTS}
        stacked = sum(values.values())
        # the axis follows the workload; a far larger capacity is named instead of squashing the bar
        show_cap = capacity is not None and capacity <= 3 * max(stacked, mem.total)
        largest = max(stacked, mem.total, capacity if show_cap and capacity else 0)
        unit, scale = ("GiB", 2**30) if largest >= 2**31 else ("MiB", 2**20)
        # each item is set only where it changes: a set text lays the legend or the axis out again, a what-if
        # change's largest cost in this bar
        if self.plot.getAxis("bottom").labelText != unit:
            self.plot.setLabel("bottom", unit)
        x0 = 0.0
        for (name, _), (sample, label) in zip(PARTS, self.legend.items, strict=True):
            width = values[name] / scale
            shown = width > 0
            if shown or self.bars[name].isVisible():
                self.bars[name].setOpts(x0=[x0], width=[width])
            for item in (self.bars[name], sample, label):
                if item.isVisible() != shown:
                    item.setVisible(shown)
            text = f"{name.replace('_', ' ')} {fmt_bytes(values[name])}"
            if shown and label.text != text:
                label.setText(text)
            x0 += width
        self.peak.setValue(mem.total / scale)
        self.peak.setVisible(True)  # after a clear()
        self.capacity.setVisible(show_cap)
        cap_text = ""
        if capacity is not None and show_cap:
            self.capacity.setValue(capacity / scale)
        elif capacity is not None:
            cap_text = f"; capacity {fmt_bytes(capacity)} (off the scale)"
        self.plot.setTitle(
            f"{title}: memory per device {fmt_bytes(mem.total)}, highest in {mem.peak_phase}{cap_text}", size="9pt"
        )
        self.plot.setXRange(0, largest / scale * 1.08 or 1.0, padding=0)

    def clear(self, title: str) -> None:
        """No breakdown to show (the workload is not sized): bars, legend and lines hidden, ``title`` says why."""
        for (name, _), (sample, label) in zip(PARTS, self.legend.items, strict=True):
            for item in (self.bars[name], sample, label):
                item.setVisible(False)
        self.peak.setVisible(False)
        self.capacity.setVisible(False)
        self.plot.setTitle(title, size="9pt")
