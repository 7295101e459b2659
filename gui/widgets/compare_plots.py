"""Compare runs: one plot per metric, one curve per run in the same colour on every plot, named in
one legend above them;
normalised or in units, a moving-average window, x in seconds or iterations; below, for the runs
that came from a sizing, what was predicted against what was measured and the prediction's error.

The runs' samples are read by the tab off the GUI thread (``RunCurves``); this widget only draws."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.output.run_report import repeat_key
from core.output.telemetry_columns import series_for, unit_of
from gui.widgets.result_html import predicted_vs_measured
from gui.widgets.telemetry_plots import COLOURS
from telemetry.series import iterations_at, mean_band, moving_average

MAX_RUNS = 100  # curves per plot; past this a legend is unreadable (TensorBoard draws 10–100)
TABLE_ROWS = 4  # rows of the predicted-against-measured table shown before it scrolls
PROGRESS_METRICS = (
    ("loss", "Training loss", 1.0, ""),
    ("accuracy", "Training accuracy", 1.0, ""),
    ("step_s", "Step time", 1e3, "ms"),
)


@dataclass
class RunCurves:
    """One run's stored telemetry, read from the store for a comparison."""

    run_id: int
    name: str
    columns: list[str]
    t: np.ndarray
    values: np.ndarray  # n × len(columns), NaN where a sample was missing
    progress: list[dict[str, Any]] = field(default_factory=list)
    limits: dict[str, float] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def has_iterations(self) -> bool:
        return any(p.get("iteration") is not None and p.get("t") is not None for p in self.progress)

    def label(self) -> str:
        return f"#{self.run_id} {self.name}"


NO_RUNS = "No runs to compare yet: select runs or an experiment in the list above and press Compare."


class ComparePlots(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runs: list[RunCurves] = []
        self.normalised = QCheckBox("Normalised [0, 1]")
        self.normalised.setToolTip(
            "Each figure as a fraction of its full scale (the machine's RAM, 100 % load, the GPU's memory and "
            "power limit), or of the run's own maximum where there is none (loss, step time)"
        )
        self.smoothing = QSpinBox()
        self.smoothing.setRange(1, 5000)
        self.smoothing.setSpecialValueText("none")
        self.smoothing.setToolTip("Moving-average window in samples (1: none; Finocchiaro used 50 and 100)")
        self.x_axis = QComboBox()
        self.x_axis.addItems(["seconds", "iterations"])
        self.x_axis.setToolTip("Iterations come from the trainer's progress messages stored with each run")
        self.repeats = QCheckBox("Mean ± band of repeats")
        self.repeats.setToolTip(
            "Runs of the same workload with the same settings on the same device, differing only in the seed (an "
            "experiment's repeats), drawn as one curve, their mean, in a band of ± one standard deviation. The "
            "repeats are interpolated onto the stretch of x that all of them cover; gaps are bridged."
        )
        self.note = QLabel()
        self.note.setWordWrap(True)
        bar = QHBoxLayout()
        bar.addWidget(self.normalised)
        bar.addWidget(QLabel("Smoothing"))
        bar.addWidget(self.smoothing)
        bar.addWidget(QLabel("x axis"))
        bar.addWidget(self.x_axis)
        bar.addWidget(self.repeats)
        bar.addWidget(self.note, 1)
        self.view = pg.GraphicsLayoutWidget()
        self.table = QTableWidget(0, 7)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table (the arrows move in it)
        self.table.setHorizontalHeaderLabels(
            ["Run", "Predicted step", "Measured step", "Error", "Predicted memory", "Measured memory", "Error"]
        )
        self.table.horizontalHeaderItem(3).setToolTip("Predicted ÷ measured − 1: + when the sizing predicted too much")
        self.table.horizontalHeaderItem(6).setToolTip("Predicted ÷ measured − 1: + when the sizing predicted too much")
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setToolTip("Each run has one colour on every plot; a dashed line is its predicted step time")
        self.legend.setText(NO_RUNS)  # the pane opened blank
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.legend)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.table)
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, list[pg.PlotDataItem]] = {}
        self._pool: dict[str, pg.PlotItem] = {}
        self.normalised.toggled.connect(self.redraw)
        self.smoothing.valueChanged.connect(self.redraw)
        self.x_axis.currentIndexChanged.connect(self.redraw)
        self.repeats.toggled.connect(self.redraw)
        self.bands: dict[str, list[pg.FillBetweenItem]] = {}

    # --- data -----------------------------------------------------------------------------------
    def set_runs(self, runs: list[RunCurves]) -> None:
        self.runs = runs[:MAX_RUNS]
        notes = []
        if len(runs) > MAX_RUNS:
            notes.append(f"the first {MAX_RUNS} of {len(runs)} runs are drawn")
        iterations = bool(self.runs) and all(r.has_iterations for r in self.runs)
        item = self.x_axis.model().item(1)  # type: ignore[attr-defined]
        item.setEnabled(iterations)
        if not iterations:
            self.x_axis.setCurrentIndex(0)
            if self.runs:
                without = [r.label() for r in self.runs if not r.has_iterations]
                notes.append(
                    f"x in iterations: not stored for {', '.join(without[:3])}{'…' if len(without) > 3 else ''}"
                )
        self.note.setText("; ".join(notes))
        self._fill_table()
        self.repeats.setEnabled(any(len(g) > 1 for g in self.groups(True)))
        self.redraw()

    def _metrics(self) -> list[tuple[str, str, str, float, str]]:
        """(key, title, plot group, scale to units, unit) of every metric one of the runs has."""
        columns = list(dict.fromkeys(c for r in self.runs for c in r.columns))
        out = []
        for s in series_for(columns, 1):
            title = s.label.split(" (")[0] if s.column == "proc_cpu_percent" else s.label
            unit = unit_of(s.column, s.plot)
            out.append((s.column, title.replace(" (°C)", "").replace(" (W)", ""), s.plot, s.scale, unit))
        for key, title, scale, unit in PROGRESS_METRICS:
            if any(any(p.get(key) is not None for p in r.progress) for r in self.runs):
                out.append((key, title, "progress", scale, unit))
        return out

    # --- drawing --------------------------------------------------------------------------------
    def redraw(self) -> None:
        # The plots are kept (self._pool) and only taken out of the layout: a PlotItem deleted with
        # its legend still anchored to its ViewBox raises "already deleted" from the event loop
        self.view.clear()
        self.plots, self.curves, self.bands = {}, {}, {}
        self._fill_legend()
        if not self.runs:
            return
        metrics = self._metrics()
        iterations = self.x_axis.currentIndex() == 1
        normalised, window = self.normalised.isChecked(), self.smoothing.value()
        ncols = 1 if len(metrics) <= 2 else 2 if len(metrics) <= 4 else 3

        first: pg.PlotItem | None = None
        for i, (key, title, _group, scale, unit) in enumerate(metrics):
            plot = self._plot(key)
            plot.clear()  # its curves and their legend entries
            plot.setTitle(title, size="9pt")
            plot.setLabel("left", "fraction" if normalised else unit or "")
            if normalised:  # [0, 1] on every plot, as Finocchiaro draws them: comparable at a glance
                plot.setYRange(0.0, 1.05, padding=0)
            else:
                plot.enableAutoRange(axis="y")
            # the x axis is shared: drawn and named only under the lowest plot of each column
            lowest = i + ncols >= len(metrics)
            plot.setLabel("bottom", ("iteration" if iterations else "s") if lowest else None)
            plot.showAxis("bottom", lowest)  # after setLabel, which shows the axis
            self.view.addItem(plot, row=i // ncols, col=i % ncols)
            if first is None:
                first = plot
                plot.setXLink(None)
            else:
                plot.setXLink(first)
            self.plots[key] = plot
            self.curves[key], self.bands[key] = [], []
            for g, members in enumerate(self.groups()):
                series = [
                    xy
                    for j in members
                    if (
                        xy := self._series(
                            self.runs[j], key, scale, iterations=iterations, normalised=normalised, window=window
                        )
                    )
                    is not None
                ]
                if not series:
                    continue
                colour = self.colour(g)
                run = self.runs[members[0]]
                if len(series) == 1:
                    x, y = series[0]
                else:  # the repeats' mean in a band of ± one standard deviation
                    x, y, sd = mean_band(series)
                    # the band's edges: curves of the band alone (a PlotDataItem without a pen
                    # draws no path, and the fill between two such is empty)
                    upper, lower = pg.PlotCurveItem(x, y + sd), pg.PlotCurveItem(x, y - sd)
                    fill = pg.mkColor(colour)
                    fill.setAlpha(60)
                    band = pg.FillBetweenItem(upper, lower, brush=pg.mkBrush(fill))
                    plot.addItem(band)
                    self.bands[key].append(band)
                curve = plot.plot(
                    x,
                    y,
                    name=self.group_label(members),
                    pen=pg.mkPen(colour, width=2 if len(series) > 1 else 1),
                    skipFiniteCheck=True,
                    connect="finite",
                )
                self.curves[key].append(curve)
                predicted = (run.detail.get("prediction") or {}).get("step_s")
                if key == "step_s" and predicted and not normalised:
                    dash = pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine)
                    plot.addItem(pg.InfiniteLine(predicted * 1e3, angle=0, pen=dash, movable=False))

    def _plot(self, key: str) -> pg.PlotItem:
        plot = self._pool.get(key)
        if plot is None:
            plot = pg.PlotItem()
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
            plot.getAxis("left").enableAutoSIPrefix(False)
            self._pool[key] = plot
        return plot

    def _series(
        self, run: RunCurves, key: str, scale: float, *, iterations: bool, normalised: bool, window: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        prog_t = np.array([p.get("t", np.nan) for p in run.progress], dtype=float)
        prog_it = np.array([p.get("iteration", np.nan) for p in run.progress], dtype=float)
        if key in run.columns:
            j = run.columns.index(key)
            if j >= run.values.shape[1] or not len(run.t):
                return None
            y = moving_average(run.values[:, j].astype(float), window)
            x = iterations_at(run.t, prog_t, prog_it) if iterations else run.t
            full = run.limits.get(key)
        elif key in ("loss", "accuracy", "step_s"):
            y = np.array([p.get(key, np.nan) for p in run.progress], dtype=float)
            if not np.isfinite(y).any():
                return None
            y = moving_average(y, window)
            x = prog_it if iterations else prog_t
            full = 1.0 if key == "accuracy" else None
        else:
            return None
        if normalised:
            if not full:
                finite = y[np.isfinite(y)]
                full = float(np.max(np.abs(finite))) if len(finite) else None
            y = y / full if full else y * np.nan
        else:
            y = y * scale
        return np.asarray(x, dtype=float), y

    def colour(self, j: int) -> Any:
        return COLOURS[j] if len(self.runs) <= len(COLOURS) else pg.intColor(j, hues=len(self.runs))

    def groups(self, repeats: bool | None = None) -> list[list[int]]:
        """The runs drawn as one curve each, as indices into ``runs``: repeats together when
        *Mean ± band of repeats* is on (core.output.run_report.repeat_key), else each alone."""
        if not (self.repeats.isChecked() if repeats is None else repeats):
            return [[j] for j in range(len(self.runs))]
        by_key: dict[str, list[int]] = {}
        for j, run in enumerate(self.runs):
            by_key.setdefault(repeat_key({**run.detail, "id": run.run_id}), []).append(j)
        return list(by_key.values())

    def group_label(self, members: list[int]) -> str:
        if len(members) == 1:
            return self.runs[members[0]].label()
        first = self.runs[members[0]]
        ids = ", ".join(f"#{i}" for i in sorted(self.runs[j].run_id for j in members))
        return f"{first.name.removesuffix(' #1')}: mean ± sd of {len(members)} repeats ({ids})"

    def _fill_legend(self) -> None:
        def name(g: int, members: list[int]) -> str:
            colour = pg.mkColor(self.colour(g)).name()
            label = html.escape(self.group_label(members))
            return f'<span style="color:{colour}; font-weight:bold">━━</span>&nbsp;{label}'

        self.legend.setText(" &nbsp;&nbsp; ".join(name(g, m) for g, m in enumerate(self.groups())) or NO_RUNS)

    def _fill_table(self) -> None:
        self.table.setRowCount(len(self.runs))
        for i, run in enumerate(self.runs):
            rows = {r[0]: r for r in predicted_vs_measured(run.detail)}
            step = rows.get("Step time", ("", None, None, None))
            mem = rows.get("Training memory", ("", None, None, None))
            cells = [run.label(), step[1], step[2], step[3], mem[1], mem[2], mem[3]]
            if not run.detail.get("prediction"):
                cells[1] = cells[4] = "no sizing"
            for c, text in enumerate(cells):
                item = QTableWidgetItem("—" if text in (None, "") else str(text))
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if c == 1 and text == "no sizing":
                    item.setToolTip("This run was not started from a sizing: nothing was predicted")
                self.table.setItem(i, c, item)
        self.table.resizeColumnsToContents()
        # only where a run came from a sizing; as tall as its rows (up to TABLE_ROWS, then it scrolls)
        self.table.setVisible(any(r.detail.get("prediction") for r in self.runs))
        rows = min(len(self.runs), TABLE_ROWS)
        height = self.table.horizontalHeader().height() + rows * self.table.verticalHeader().defaultSectionSize()
        self.table.setMaximumHeight(height + 2 * self.table.frameWidth() + 2)

    def curve_counts(self) -> dict[str, int]:
        """Curves per metric plot (what a test or the status line checks)."""
        return {k: len(v) for k, v in self.curves.items()}
