"""The Telemetry tab's live plots: resources on the left (load, memory, GPU temperature and power),
training on the right (loss and accuracy, step time), with the sizing's predictions as reference
lines. Fed from the ring buffer by the tab's timer — never one signal per sample — with peak
downsampling and clip-to-view so an hour of 10 Hz samples stays fluid."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from core.output.telemetry_columns import GIB, Series, series_for
from telemetry.series import iterations_at, moving_average

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


class TelemetryPlots(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # the palette's base colour (gui/app.py): a white background left a dark theme's white titles unreadable
        self.view = pg.GraphicsLayoutWidget()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.plots: dict[str, pg.PlotItem] = {}
        for name, title, row, col in (
            ("load", "Load", 0, 0),
            ("memory", "Memory", 1, 0),
            ("gpu", "GPU temperature and power", 2, 0),
            ("loss", "Loss and accuracy", 0, 1),
            ("step", "Step time", 1, 1),
        ):
            p = self.view.addPlot(row=row, col=col, title=title)
            # no grid: its alpha-blended lines cost more than the curves (24 → 46 ms a frame with
            # an hour of samples, software rendering; benchmarks/plot_fps.py)
            p.setDownsampling(auto=True, mode="peak")
            p.setClipToView(True)
            p.addLegend(offset=(5, 5), labelTextSize="8pt")
            p.getAxis("left").enableAutoSIPrefix(False)  # "GiB (×0.001)" helps nobody
            self.plots[name] = p
        self.series: list[Series] = []
        self.column_index: dict[str, int] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.limits: dict[str, float] = {}
        self.cores = 1
        self.prediction: dict[str, Any] | None = None
        self.memory_base = 0.0
        self.prediction_on_gpu = False
        self._labelled: tuple[bool, bool] | None = None
        self.loss_curve = self._curve("loss", "loss", COLOURS[1])
        self.acc_curve = self._curve("loss", "accuracy (running, training batches)", COLOURS[2])
        self.step_curve = self._curve("step", "step time, median of the last 20 (ms)", COLOURS[0])
        ink = pg.getConfigOption("foreground")  # the palette's text colour, dark or light
        label = {"color": ink, "position": 0.02, "anchors": [(0, 1), (0, 1)]}
        dash = pg.mkPen(ink, width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine)
        self.memory_line = pg.InfiniteLine(angle=0, pen=dash, label="predicted", labelOpts=label, movable=False)
        self.step_line = pg.InfiniteLine(angle=0, pen=dash, label="predicted", labelOpts=label, movable=False)
        for line, plot in ((self.memory_line, "memory"), (self.step_line, "step")):
            line.setVisible(False)
            self.plots[plot].addItem(line)  # in the bounds: the prediction stays in view
        for name in ("memory", "gpu", "loss", "step"):  # one time axis: a spike lines up with its iteration
            self.plots[name].setXLink(self.plots["load"])
        self.plots["gpu"].setVisible(False)
        self._label_axes(False, False)

    def _curve(self, plot: str, label: str, colour: str) -> pg.PlotDataItem:
        # one min/max pair per pixel column keeps every spike; a 1-px cosmetic pen paints fastest
        curve = self.plots[plot].plot([], [], name=label, pen=pg.mkPen(colour, width=1), autoDownsampleFactor=1.0)
        return curve

    def configure(
        self,
        columns: Sequence[str],
        limits: Mapping[str, float],
        cores: int,
        prediction: dict[str, Any] | None,
        prediction_on_gpu: bool,
    ) -> None:
        """New run: curves for its columns, its full scales and the sizing's prediction."""
        for curve in self.curves.values():
            for p in self.plots.values():
                p.removeItem(curve)  # and from its legend; a no-op on the other plots
        self.curves = {}
        self.limits = dict(limits)
        self.cores = cores
        self.series = series_for(columns, cores)
        self.column_index = {c: i for i, c in enumerate(columns)}
        for i, s in enumerate(self.series):
            self.curves[s.column] = self._curve(s.plot, s.label, COLOURS[i % len(COLOURS)])
        self.plots["gpu"].setVisible(any(s.plot == "gpu" for s in self.series))
        self.prediction = prediction
        self.prediction_on_gpu = prediction_on_gpu
        self.memory_base = 0.0
        for c in (self.loss_curve, self.acc_curve, self.step_curve):
            c.setData([], [])

    def set_memory_base(self, rss_before: float) -> None:
        """On the CPU the prediction is what the step adds to the process's memory before training."""
        self.memory_base = rss_before

    def update(
        self,
        t: np.ndarray,
        values: np.ndarray,
        progress: Sequence[Mapping[str, Any]],
        *,
        normalised: bool,
        window: int,
        iterations: bool,
    ) -> int:
        """Redraw from a buffer snapshot and the progress history; returns the points drawn."""
        prog_t = np.array([p.get("t", np.nan) for p in progress], dtype=float)
        prog_it = np.array([p.get("iteration", np.nan) for p in progress], dtype=float)
        x = iterations_at(t, prog_t, prog_it) if iterations else t
        drawn = 0
        for s in self.series:
            j = self.column_index[s.column]
            y = values[:, j] if j < values.shape[1] else np.full(len(t), np.nan)
            y = moving_average(y, window)
            if normalised:
                full = self._full_scale(s)
                y = y / full if full else y * np.nan
            else:
                y = y * s.scale
            self.curves[s.column].setData(x, y, skipFiniteCheck=True, connect="finite")
            drawn += len(y)
        px = prog_it if iterations else prog_t
        loss = moving_average(np.array([p.get("loss", np.nan) for p in progress], dtype=float), window)
        if normalised and len(loss) and np.isfinite(loss).any():
            loss = loss / np.nanmax(loss)
        self.loss_curve.setData(px, loss, skipFiniteCheck=True, connect="finite")
        acc = np.array([p.get("accuracy", np.nan) for p in progress], dtype=float)
        self.acc_curve.setData(px, moving_average(acc, window), skipFiniteCheck=True, connect="finite")
        step = np.array([p.get("step_s", np.nan) for p in progress], dtype=float) * 1e3
        self.step_curve.setData(px, step, skipFiniteCheck=True, connect="finite")
        self._reference_lines(normalised)
        self._label_axes(normalised, iterations)
        return drawn

    def _label_axes(self, normalised: bool, iterations: bool) -> None:
        """Units on every axis, also before the first sample (empty plots read 0–1 without any)."""
        if self._labelled != (normalised, iterations):  # a new label repaints the axis: only on change
            self._labelled = (normalised, iterations)
            unit = "fraction of full scale" if normalised else None
            self.plots["load"].setLabel("left", unit or "%")
            self.plots["memory"].setLabel("left", unit or "GiB")
            self.plots["gpu"].setLabel("left", unit or "°C / W")
            self.plots["step"].setLabel("left", "ms")
            self.plots["loss"].setLabel("left", "loss, accuracy")
            for p in self.plots.values():
                p.setLabel("bottom", "iteration" if iterations else "s")

    def _full_scale(self, s: Series) -> float | None:
        if s.column == "proc_cpu_percent":
            return 100.0 * self.cores
        if s.column.endswith("_temp_c"):
            return 100.0
        return self.limits.get(s.limit) if s.limit else None

    def _reference_lines(self, normalised: bool) -> None:
        p = self.prediction or {}
        mem = p.get("peak_memory_bytes")
        if mem:
            level = mem + (0.0 if self.prediction_on_gpu else self.memory_base)
            if normalised:
                key = "gpu0_mem_used_bytes" if self.prediction_on_gpu else "ram_used_bytes"
                full = self.limits.get(key)
                level = level / full if full else np.nan
            else:
                level /= GIB
            self.memory_line.setValue(level)
            self.memory_line.label.setFormat(  # type: ignore[attr-defined]
                "predicted peak (tensors)" if self.prediction_on_gpu else "predicted peak (before training + step)"
            )
        self.memory_line.setVisible(bool(mem) and (self.prediction_on_gpu or self.memory_base > 0))
        step = p.get("step_s")
        if step:
            self.step_line.setValue(step * 1e3)
            self.step_line.label.setFormat(f"predicted {step * 1e3:.1f} ms")  # type: ignore[attr-defined]
        self.step_line.setVisible(bool(step))
