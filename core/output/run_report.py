"""A run's report for purchasing: what ran, on what hardware, the prediction against the
measurement, the telemetry's figures and charts. Built here as data, without Qt (an experiment's
report, from the same pieces: core.output.experiment_report); drawn as a PDF by reports.run_pdf
(the purchasing report's renderer and page rules) and written as CSV by ``result_report_rows``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.output.report_csv import write_rows_csv
from core.output.telemetry_columns import series_for, unit_of
from core.units import fmt_bytes, fmt_seconds

CHART_POINTS = 600  # points per curve in a printed chart: the page has fewer pixels across


# --- data ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int] = frozenset()  # columns of figures, right-aligned
    note: str = ""


@dataclass(frozen=True)
class Curve:
    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    x_label: str
    curves: tuple[Curve, ...]
    reference: tuple[str, float] | None = None  # a dashed line: (what it is, value in the chart's unit)
    marker: tuple[str, float] | None = None  # a dashed vertical line: (what it is, x)


@dataclass(frozen=True)
class ResultReport:
    title: str  # "Run report", "Experiment report"
    subject: str  # "Run #12: seed MLP" — the page header
    created: str
    author: str | None
    summary: str
    tables: tuple[Table, ...]
    charts: tuple[Chart, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunData:
    """A stored run as the report reads it: the run (``Store.result_detail`` decoded, with its name
    and id) and its samples."""

    run: dict[str, Any]
    columns: list[str]
    t: np.ndarray
    values: np.ndarray
    inventory: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --- shared pieces ------------------------------------------------------------------------------
def opt(value: Any, fmt: Callable[[Any], str]) -> str | None:
    return None if value is None else fmt(value)


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{x:+.0%}"


def score(x: float | None) -> str | None:
    return None if x is None else f"{x:.3f}"


def predicted_vs_measured(run: Mapping[str, Any]) -> list[tuple[str, str | None, str | None, str | None]]:
    """(figure, predicted, measured, error of the prediction) for a run that came from a sizing."""
    p, m = run.get("prediction") or {}, run.get("measured") or {}
    rows = []
    if p.get("step_s") is not None or m.get("median_step_s") is not None:
        err = m.get("step_error")
        if err is None and p.get("step_s") and m.get("median_step_s"):
            err = p["step_s"] / m["median_step_s"] - 1
        rows.append(
            ("Step time", opt(p.get("step_s"), fmt_seconds), opt(m.get("median_step_s"), fmt_seconds), _pct(err))
        )
    if p.get("peak_memory_bytes") is not None or m.get("training_memory_bytes") is not None:
        err = m.get("memory_error")
        if err is None and p.get("peak_memory_bytes") and m.get("training_memory_bytes"):
            err = p["peak_memory_bytes"] / m["training_memory_bytes"] - 1
        rows.append(
            (
                "Training memory",
                opt(p.get("peak_memory_bytes"), fmt_bytes),
                opt(m.get("training_memory_bytes"), fmt_bytes),
                _pct(err),
            )
        )
    return rows


def repeat_key(run: Mapping[str, Any]) -> str:
    """Runs with the same key are repeats of one another: the same workload, trainer settings
    (epochs, samples, batch, device, …) and launch, on the same device, differing at most in the
    seed. A run stored without its trainer settings is a repeat of nothing but itself."""
    stored = run.get("workload") if isinstance(run.get("workload"), dict) else {}
    trainer = stored.get("trainer") if isinstance(stored.get("trainer"), dict) else None
    if trainer is None:
        return f"run {run.get('id')}"
    settings = {k: v for k, v in trainer.items() if k != "seed"}
    return json.dumps(
        [stored.get("document"), settings, stored.get("launch"), run.get("device")], sort_keys=True, default=str
    )


def _date(created: str | None) -> str:
    if not created:
        return "—"
    try:
        return datetime.fromisoformat(created).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return created


def cells(rows: Sequence[Sequence[Any]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple("—" if c is None or c == "" else str(c) for c in r) for r in rows)


def _trainer(run: Mapping[str, Any]) -> dict[str, Any]:
    stored = run.get("workload") if isinstance(run.get("workload"), dict) else {}
    return stored.get("trainer") if isinstance(stored.get("trainer"), dict) else {}


def _network(run: Mapping[str, Any]) -> str | None:
    stored = run.get("workload") if isinstance(run.get("workload"), dict) else {}
    doc = stored.get("document") if isinstance(stored.get("document"), dict) else {}
    model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
    if model.get("preset"):
        return f"preset {model['preset']}"
    layers = _trainer(run).get("model", {}).get("layers") if isinstance(_trainer(run).get("model"), dict) else None
    if isinstance(layers, list):
        kinds = [str(la.get("type")) for la in layers if isinstance(la, dict)]
        return f"{len(kinds)} layers ({', '.join(dict.fromkeys(kinds))})"
    trace = model.get("trace") if isinstance(model.get("trace"), dict) else None
    return f"PyTorch code {trace.get('file')}" if trace else None


def _samples(t: Mapping[str, Any]) -> str | None:
    if t.get("csv"):
        return f"from {t['csv']}"
    return None if t.get("samples") is None else f"{t['samples']:,} (synthetic, the model's input shape)"


def what_ran(run: Mapping[str, Any]) -> Table:
    t, m = _trainer(run), run.get("metrics") or {}
    stored = run.get("workload") if isinstance(run.get("workload"), dict) else {}
    doc = stored.get("document") if isinstance(stored.get("document"), dict) else {}
    launch = stored.get("launch") if isinstance(stored.get("launch"), dict) else {}
    status = str(run.get("status") or "")
    if run.get("reason"):
        status += f": {run['reason']}"
    processes = (launch.get("nproc_per_node") or 1) * (launch.get("nnodes") or 1)
    rows = [
        ("Workload", doc.get("name") or run.get("name")),
        ("Network", _network(run)),
        ("Training samples", _samples(t)),
        ("Epochs", opt(m.get("epochs") or t.get("epochs"), str)),
        (
            "Batch size",
            opt(t.get("batch_size"), lambda x: f"{x:,}" + (f" over {processes} processes" if processes > 1 else "")),
        ),
        (
            "Optimizer",
            opt(t.get("optimizer"), str)
            + (f", learning rate {t['learning_rate']:g}" if isinstance(t.get("learning_rate"), int | float) else "")
            if t.get("optimizer")
            else None,
        ),
        ("Precision", t.get("precision")),
        ("Device", run.get("device")),
        ("Seed", opt(t.get("seed"), str)),
        ("Machine", run.get("machine")),
        ("Started", _date(run.get("created"))),
        ("Duration", opt(run.get("duration_s"), fmt_seconds)),
        ("Status", status),
    ]
    return Table("What ran", ("", "Value"), cells([r for r in rows if r[1] is not None]))


def hardware(inv: Mapping[str, Any] | None, machine: str | None) -> Table:
    if not inv:
        return Table(
            "Hardware",
            ("", "Value"),
            cells([("Machine", machine or "unknown")]),
            note="No inventory of this machine is stored (open the Inventory tab once on it, or run "
            "`python main.py inventory --save`).",
        )
    cpu, mem, sw = inv.get("cpu") or {}, inv.get("memory") or {}, inv.get("software") or {}
    gpus = inv.get("gpus") or []
    rows = [
        ("Machine", inv.get("host") or machine),
        ("CPU", cpu.get("model")),
        ("Cores", f"{cpu.get('physical_cores', '?')} physical, {cpu.get('logical_cores', '?')} logical"),
        ("Memory", opt(mem.get("total_bytes"), fmt_bytes)),
        (
            "GPUs",
            ", ".join(f"{g.get('name')} ({fmt_bytes(g.get('memory_bytes'))})" for g in gpus)
            or f"none ({inv.get('gpu_note') or 'no NVIDIA GPU'})",
        ),
        ("Operating system", sw.get("os")),
        ("Python / PyTorch", f"{sw.get('python') or '?'} / {sw.get('pytorch') or 'not found'}"),
    ]
    taken = f"From the inventory taken {_date(inv['taken'])}." if inv.get("taken") else ""
    return Table("Hardware", ("", "Value"), cells(rows), note=taken)


def measured_table(run: Mapping[str, Any]) -> Table:
    m, measured = run.get("metrics") or {}, run.get("measured") or {}
    rows = [
        ("Training time", opt(m.get("training_time_s") or measured.get("training_time_s"), fmt_seconds)),
        ("Median step (after warm-up)", opt(m.get("median_step_s") or measured.get("median_step_s"), fmt_seconds)),
        ("Steps", opt(m.get("steps") or m.get("iterations"), lambda x: f"{x:,}")),
        ("Held-out accuracy", score(m.get("accuracy"))),
        ("Chance accuracy", score(m.get("chance_accuracy"))),
        ("Macro F1", score(m.get("macro_f1"))),
        ("Share of the time waiting for data", opt(m.get("data_wait_share"), lambda x: f"{x:.1%}")),
        (
            "Peak memory",
            None
            if m.get("peak_memory_bytes") is None
            else f"{fmt_bytes(m['peak_memory_bytes'])} ({m.get('peak_memory_kind') or 'kind not recorded'})",
        ),
    ]
    for r in m.get("ranks") or []:
        rows.append(
            (
                f"Rank {r.get('rank')}",
                f"median step {fmt_seconds(r.get('median_step_s'))}, all-reduce {fmt_seconds(r.get('allreduce_s'))} "
                f"({r.get('allreduce_share', 0):.0%} of the step at most)",
            )
        )
    return Table("Measured", ("", "Value"), cells([r for r in rows if r[1] is not None]))


def prediction_table(run: Mapping[str, Any]) -> Table:
    pvm = predicted_vs_measured(run)
    where = (run.get("prediction") or {}).get("device", "this machine")
    if not pvm:
        return Table(
            "Predicted against measured",
            ("", "Predicted", "Measured", "Error"),
            (),
            note="This run was not started from a sizing: there is no prediction to compare.",
        )
    return Table(
        f"Predicted (sized on {where}) against measured",
        ("", "Predicted", "Measured", "Error"),
        cells(pvm),
        frozenset({1, 2, 3}),
        "Error: predicted ÷ measured − 1 (+: the sizing predicted too much).",
    )


def telemetry_table(data: RunData) -> Table:
    """Per sampled figure: its mean, minimum and maximum over the run, in its unit, and how many
    samples had a value (a figure that could not be read is missing, never 0)."""
    rows = []
    n = len(data.t)
    for s in series_for(data.columns, 1):
        j = data.columns.index(s.column)
        if j >= data.values.shape[1]:
            continue
        v = data.values[:, j].astype(float)
        v = v[np.isfinite(v)] * s.scale
        label = s.label.split(" (% of a core")[0] + (" (% of a core)" if s.column == "proc_cpu_percent" else "")
        unit = unit_of(s.column, s.plot)
        if len(v):
            rows.append((label, unit, f"{v.mean():,.2f}", f"{v.min():,.2f}", f"{v.max():,.2f}", f"{len(v):,} of {n:,}"))
        else:
            rows.append((label, unit, "—", "—", "—", f"0 of {n:,}"))
    sampling = data.run.get("sampling") or {}
    rate = sampling.get("rate_hz")
    reasons = "; ".join(f"{k}: {v}" for k, v in (sampling.get("reasons") or {}).items())
    note = (
        f"{n:,} samples" + (f" at {rate:g} Hz" if rate else "") + (f" over {data.t[-1]:,.1f} s" if n else "") + "."
    ) + (f" Not sampled: {reasons}." if reasons else "")
    return Table(
        "Telemetry",
        ("Figure", "Unit", "Mean", "Minimum", "Maximum", "Samples"),
        cells(rows),
        frozenset({2, 3, 4, 5}),
        note,
    )


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """At most CHART_POINTS points: the mean of each stretch (finite values only)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) > CHART_POINTS:
        starts = np.unique(np.linspace(0, len(x), CHART_POINTS, endpoint=False).astype(int))
        counts = np.diff(np.append(starts, len(x)))
        x, y = np.add.reduceat(x, starts) / counts, np.add.reduceat(y, starts) / counts
    return tuple(float(v) for v in x), tuple(float(v) for v in y)


def _column_curve(data: RunData, column: str, scale: float, label: str) -> Curve | None:
    if column not in data.columns or not len(data.t):
        return None
    j = data.columns.index(column)
    if j >= data.values.shape[1]:
        return None
    x, y = _thin(np.asarray(data.t, float), data.values[:, j].astype(float) * scale)
    return Curve(label, x, y) if x else None


def _progress_curve(data: RunData, key: str, scale: float, label: str) -> Curve | None:
    prog = data.run.get("progress") or []
    pts = [(p.get("t"), p.get(key)) for p in prog if isinstance(p, dict)]
    x = np.array([a for a, b in pts if a is not None and b is not None], float)
    y = np.array([b for a, b in pts if a is not None and b is not None], float) * scale
    if not len(x):
        return None
    x, y = _thin(x, y)
    return Curve(label, x, y)


def charts_for(runs: Sequence[tuple[str, RunData]]) -> tuple[Chart, ...]:
    """One chart per sampled figure and per training curve, one curve per run (an experiment's
    runs overlaid, as its summary plot), against seconds since the run started. A GPU figure is
    one chart for all GPUs: for one run a curve per GPU, for several the first GPU's of each (as
    the experiment's table reports it)."""
    columns = list(dict.fromkeys(c for _, d in runs for c in d.columns))
    charts = []
    drawn: set[str] = set()
    for s in series_for(columns, 1):
        if s.column.startswith("gpu"):
            figure = s.column.partition("_")[2]  # util_percent, mem_used_bytes, temp_c, power_w
            if figure in drawn:
                continue
            drawn.add(figure)
            gpus = [c for c in series_for(columns, 1) if c.column.startswith("gpu") and c.column.endswith(figure)]
            title = "GPU " + s.label.split(" ", 2)[2].split(" (")[0]  # "GPU 0 load (%)" → "GPU load"
            if len(runs) == 1:
                pairs = [(g.label.split(" ", 2)[0] + " " + g.label.split(" ", 2)[1], g.column) for g in gpus]
                curves = [c for label, col in pairs if (c := _column_curve(runs[0][1], col, s.scale, label))]
            else:
                curves = [c for label, d in runs if (c := _column_curve(d, gpus[0].column, s.scale, label))]
        else:
            title = s.label.split(" (")[0]
            curves = [c for label, d in runs if (c := _column_curve(d, s.column, s.scale, label)) is not None]
        if curves:
            charts.append(Chart(title, unit_of(s.column, s.plot), "s", tuple(curves)))
    for key, title, scale, unit in (("loss", "Training loss", 1.0, ""), ("step_s", "Step time", 1e3, "ms")):
        curves = [c for label, d in runs if (c := _progress_curve(d, key, scale, label)) is not None]
        if curves:
            ref = None
            if key == "step_s" and len(runs) == 1:
                p = (runs[0][1].run.get("prediction") or {}).get("step_s")
                ref = ("predicted step", p * 1e3) if p else None
            charts.append(Chart(title, unit, "s", tuple(curves), ref))
    return tuple(charts)


# --- a run --------------------------------------------------------------------------------------
def run_summary(run: Mapping[str, Any]) -> str:
    m, t = run.get("metrics") or {}, _trainer(run)
    status = str(run.get("status") or "unknown")
    head = f"{run.get('name') or 'The run'} ran on {run.get('device') or 'an unknown device'}"
    if run.get("machine"):
        head += f" of {run['machine']}"
    if t.get("epochs"):
        head += f" for {t['epochs']} epoch{'s' if t['epochs'] != 1 else ''}"
    parts = [head + f" and {status}" + (f" ({run['reason']})" if run.get("reason") else "") + "."]
    if m.get("training_time_s") is not None:
        parts.append(
            f"Training took {fmt_seconds(m['training_time_s'])}"
            + (f", held-out accuracy {m['accuracy']:.3f}" if m.get("accuracy") is not None else "")
            + (f" (chance {m['chance_accuracy']:.3f})" if m.get("chance_accuracy") else "")
            + (f", macro F1 {m['macro_f1']:.3f}" if m.get("macro_f1") is not None else "")
            + "."
        )
    for figure, pred, meas, err in predicted_vs_measured(run):
        if pred and meas and err:
            parts.append(f"{figure}: predicted {pred}, measured {meas} ({err}).")
    return " ".join(parts)


def run_report(data: RunData, created: str, author: str | None = None) -> ResultReport:
    run = data.run
    subject = f"Run #{run.get('id', '?')}: {run.get('name') or ''}".rstrip(": ")
    return ResultReport(
        "Run report",
        subject,
        created,
        author,
        run_summary(run),
        (
            what_ran(run),
            hardware(data.inventory, run.get("machine")),
            prediction_table(run),
            measured_table(run),
            telemetry_table(data),
        ),
        charts_for([(f"#{run.get('id', '?')}", data)]),
        tuple(str(n) for n in (run.get("notes"),) if n),
    )


# --- CSV ----------------------------------------------------------------------------------------
def result_report_rows(report: ResultReport) -> list[list[Any]]:
    """The report as CSV rows: a title block, then each table under its title with its header row,
    separated by an empty row. The samples themselves are *Export samples…*'s."""
    out: list[list[Any]] = [
        [report.title, report.subject],
        ["made", report.created],
        *([["by", report.author]] if report.author else []),
        ["summary", report.summary],
    ]
    for t in report.tables:
        out += [[], [t.title], list(t.headers), *[list(r) for r in t.rows]]
        if t.note:
            out.append([t.note])
    for n in report.notes:
        out += [[], [n]]
    return out


def write_result_csv(report: ResultReport, path: Path) -> None:
    """The report's tables as CSV, whole or not at all."""
    write_rows_csv(result_report_rows(report), path)


# --- from the store -----------------------------------------------------------------------------
def load_run(store: Any, run_id: int) -> RunData | None:
    """A stored run with its samples and the inventory of the machine it ran on (``Store``); None
    when it is not in the database."""
    detail = store.result_detail("run", run_id)
    if not detail or not isinstance(detail.get("run"), dict):
        return None
    run = {**detail["run"], "name": detail.get("name") or detail["run"].get("name"), "id": int(run_id)}
    run["notes"] = detail.get("notes")
    columns, t, values = store.run_series(run_id)
    inv_id = run.get("inventory_id")
    if inv_id is None:  # none was taken before the run: the machine's newest
        return RunData(run, list(columns), t, values, newest_inventory(store, run.get("machine")))
    return RunData(run, list(columns), t, values, inventory_of(store, int(inv_id)))


def inventory_of(store: Any, inventory_id: int) -> dict[str, Any] | None:
    """A stored inventory snapshot with the date it was ``taken``; None when it is not there."""
    inv = store.result_detail("inventory", inventory_id) or {}
    snapshot = inv.get("snapshot")
    return {**snapshot, "taken": inv.get("created")} if isinstance(snapshot, dict) else None


def newest_inventory(store: Any, machine: str | None) -> dict[str, Any] | None:
    """The newest inventory stored for ``machine`` (a host name)."""
    if not machine:
        return None
    newest = store.results(kind=["inventory"], machine=machine, limit=1)
    return inventory_of(store, int(newest[0]["id"])) if newest else None
