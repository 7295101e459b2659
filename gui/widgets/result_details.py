"""The details of one result: a readable page of its figures and, for a run, its telemetry plotted
as the Telemetry tab plots a live run (the same widget, fed from the store instead of the buffer);
for a thread or process scaling, the figure the paper drew (the report's chart, drawn live)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QTextBrowser, QVBoxLayout, QWidget

from core.output.experiment_report import summary_charts
from core.output.run_report import Chart
from gui.widgets.result_html import details_html, page, run_of
from gui.widgets.telemetry_plots import COLOURS, TelemetryPlots


class ResultDetails(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(False)
        self.plots = TelemetryPlots()
        self.plots.setMinimumWidth(360)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.setObjectName("result_details")  # its sizes are remembered (gui/main_window.py)
        self.split.addWidget(self.text)
        self.split.addWidget(self.plots)
        self.figure = pg.PlotWidget()  # the palette's colours (gui/app.py), dark themes included
        self.figure.setMinimumWidth(360)
        self.figure.setVisible(False)
        self.split.addWidget(self.figure)
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        self.split.setSizes([460, 900])  # the figures' tables readable beside the plots
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.split)
        self.kind: str | None = None
        self.detail: dict[str, Any] | None = None
        self.show_message("Select a result to see its details; select several runs and Compare to overlay them.")

    def show_message(self, text: str) -> None:
        self.kind, self.detail = None, None
        self.text.setHtml(page("", f"<p>{text}</p>"))
        self.plots.setVisible(False)
        self.figure.setVisible(False)

    def show_html(self, html: str, kind: str | None = None) -> None:
        """A page of several results (sizings side by side): text only."""
        self.kind, self.detail = kind, None
        self.text.setHtml(html)
        self.text.verticalScrollBar().setValue(0)
        self.plots.setVisible(False)
        self.figure.setVisible(False)

    def show_result(self, kind: str, detail: dict[str, Any], series: Any = None) -> None:
        """``series`` is a run's ``(columns, t, values)`` from the store (None for other kinds)."""
        self.kind, self.detail = kind, detail
        self.text.setHtml(details_html(kind, detail))
        self.text.verticalScrollBar().setValue(0)
        has_plot = kind == "run" and series is not None
        self.plots.setVisible(has_plot)
        if has_plot:
            self._plot_run(run_of(detail), *series)
        exp = detail.get("experiment") if kind == "experiment" else None
        charts = summary_charts(exp) if isinstance(exp, dict) else ()
        self.figure.setVisible(bool(charts))
        # an experiment's table is wide: its figure goes below it; a run's telemetry beside its figures
        vertical = bool(charts)
        if vertical != (self.split.orientation() == Qt.Orientation.Vertical):
            self.split.setOrientation(Qt.Orientation.Vertical if vertical else Qt.Orientation.Horizontal)
            self.split.setSizes([460, 900, 0] if not vertical else [300, 0, 300])  # a splitter keeps a new pane at 0
        if charts:
            self._draw_figure(charts[0])

    def _draw_figure(self, chart: Chart) -> None:
        plot = self.figure.getPlotItem()
        plot.clear()
        if plot.legend is None:
            plot.addLegend(offset=(-10, 10))
        plot.setTitle(chart.title, size="9pt")
        plot.setLabel("left", chart.unit)
        plot.setLabel("bottom", chart.x_label)
        for i, curve in enumerate(chart.curves):
            pen = pg.mkPen(
                COLOURS[i % len(COLOURS)],
                width=2 if i == 0 else 1,
                style=Qt.PenStyle.SolidLine if i == 0 else Qt.PenStyle.DashLine,
            )
            plot.plot(curve.x, curve.y, pen=pen, symbol="o" if i == 0 else None, symbolSize=6, name=curve.label)
        if chart.marker:
            name, x = chart.marker
            pen = pg.mkPen("#444", style=Qt.PenStyle.DashLine)
            line = pg.InfiniteLine(x, angle=90, pen=pen, label=name, labelOpts={"color": "#333", "position": 0.95})
            plot.addItem(line)
        plot.setYRange(0, max(max(c.y) for c in chart.curves) * 1.1, padding=0)
        counts = sorted({x for c in chart.curves for x in c.x})  # threads or processes: whole numbers
        plot.getAxis("bottom").setTicks([[(x, f"{x:g}") for x in counts]])

    def _plot_run(self, run: dict[str, Any], columns: list[str], t: np.ndarray, values: np.ndarray) -> None:
        sampling = run.get("sampling") or {}
        prediction = run.get("prediction")
        on_gpu = str(run.get("device") or "cpu") != "cpu"
        self.plots.configure(columns, sampling.get("limits") or {}, os.cpu_count() or 1, prediction, on_gpu)
        metrics = run.get("metrics") or {}
        if metrics.get("rss_before_bytes"):
            self.plots.set_memory_base(float(metrics["rss_before_bytes"]))
        values = values if values.ndim == 2 else np.empty((len(t), len(columns)))
        self.plots.update(t, values, list(run.get("progress") or []), normalised=False, window=1, iterations=False)
