"""An experiment's summary table as Finocchiaro's Tables 4.1–4.5 lay it out: per value of the
factor, training time, accuracy and macro F1 (mean ± spread over repeats), the mean and maximum of
each resource the telemetry sampled (CPU, RAM, GPU load, VRAM), and the sizing's predicted step and
memory beside the measured ones."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.units import fmt_seconds

# sampled columns the table reports, by the name a user reads (GPU columns: the first GPU's)
RESOURCES = {
    "CPU (% of the machine)": "cpu_percent",
    "process CPU (% of a core)": "proc_cpu_percent",
    "RAM used (bytes)": "ram_used_bytes",
    "process memory (bytes)": "proc_rss_bytes",
    "GPU load (%)": "gpu0_util_percent",
    "VRAM used (bytes)": "gpu0_mem_used_bytes",
}


@dataclass(frozen=True)
class Spread:
    """Mean and sample standard deviation of repeats (0 for one repeat); None when nothing was measured."""

    mean: float
    sd: float
    n: int

    def text(self, fmt: str = "{:.3g}") -> str:
        return fmt.format(self.mean) + (f" ± {fmt.format(self.sd)}" if self.n > 1 else "")


@dataclass(frozen=True)
class ExperimentRow:
    value: Any
    runs: int  # finished runs of this value
    failed: int  # runs that did not finish (their figures are left out)
    training_time_s: Spread | None
    accuracy: Spread | None
    macro_f1: Spread | None
    step_s: Spread | None  # measured median step
    predicted_step_s: float | None
    peak_memory_bytes: Spread | None  # measured training memory
    predicted_memory_bytes: float | None
    resources: dict[str, tuple[float, float]] = field(default_factory=dict)  # label: (mean, max)


def spread(values: Sequence[float | None]) -> Spread | None:
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return None
    return Spread(statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0, len(xs))


def summarise(
    values: Sequence[Any],
    runs: Sequence[tuple[Any, Mapping[str, Any], Mapping[str, Sequence[float]]]],
) -> list[ExperimentRow]:
    """``runs``: (value, the stored run, its sampled columns by name) for every run of the
    experiment; one row per value in ``values``' order. Runs that did not finish count in
    ``failed`` and give no figure."""
    rows = []
    for value in values:
        mine = [(run, cols) for v, run, cols in runs if v == value]
        done = [(run, cols) for run, cols in mine if run.get("status") == "finished"]

        def metric(key: str, done: list = done) -> Spread | None:
            return spread([(run.get("metrics") or {}).get(key) for run, _ in done])

        def measured(key: str, done: list = done) -> Spread | None:
            return spread([(run.get("measured") or {}).get(key) for run, _ in done])

        predictions = [run.get("prediction") or {} for run, _ in done]
        resources: dict[str, tuple[float, float]] = {}
        for label, column in RESOURCES.items():
            xs = [float(x) for _, cols in done for x in cols.get(column, ()) if x is not None and math.isfinite(x)]
            if xs:
                resources[label] = (statistics.fmean(xs), max(xs))
        rows.append(
            ExperimentRow(
                value,
                len(done),
                len(mine) - len(done),
                metric("training_time_s"),
                metric("accuracy"),
                metric("macro_f1"),
                measured("median_step_s"),
                next((p["step_s"] for p in predictions if p.get("step_s") is not None), None),
                measured("training_memory_bytes"),
                next((p["peak_memory_bytes"] for p in predictions if p.get("peak_memory_bytes") is not None), None),
                resources,
            )
        )
    return rows


def summary_text(factor: str, rows: Sequence[ExperimentRow]) -> str:
    """The table as text, the paper's columns first, then each resource's mean and maximum."""
    w = max(len(factor), *(len(str(r.value)) for r in rows), 5)
    columns = f"{'time (s)':>14}  {'accuracy':>14}  {'macro F1':>14}  {'step measured / predicted':>27}  runs"
    lines = [f"{factor:>{w}}  {columns}"]
    for r in rows:
        step = "—"
        if r.step_s is not None:
            pred = fmt_seconds(r.predicted_step_s) if r.predicted_step_s is not None else "—"
            step = f"{fmt_seconds(r.step_s.mean)} / {pred}"
        failed = f" ({r.failed} failed)" if r.failed else ""
        lines.append(
            f"{r.value!s:>{w}}  {_cell(r.training_time_s, '{:.2f}'):>14}  {_cell(r.accuracy):>14}  "
            f"{_cell(r.macro_f1):>14}  {step:>27}  {r.runs}{failed}"
        )
    labels = [label for label in RESOURCES if any(label in r.resources for r in rows)]
    if labels:
        lines += ["", "Resources sampled during the runs, mean / max (bytes in MiB):"]
        lines.append(f"{factor:>{w}}  " + "  ".join(labels))
        for r in rows:
            cells = []
            for label in labels:
                mean, peak = r.resources.get(label, (math.nan, math.nan))
                scale = 2**-20 if "bytes" in label else 1.0
                cells.append(f"{mean * scale:,.0f} / {peak * scale:,.0f}".rjust(len(label)))
            lines.append(f"{r.value!s:>{w}}  " + "  ".join(cells))
    return "\n".join(lines)


def _cell(s: Spread | None, fmt: str = "{:.3f}") -> str:
    return "—" if s is None else s.text(fmt)
