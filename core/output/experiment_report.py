"""An experiment's report: its summary as tables by kind (one-factor as Finocchiaro's Tables
4.1–4.5, thread scaling, process scaling, storage), its runs, the hardware and the base workload,
and every run's telemetry overlaid; and ``load_report``, a run's or an experiment's report from the
store. The pieces they share are core.output.run_report's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import TrainRigError
from core.output.experiment_summary import RESOURCES
from core.output.run_report import (
    Chart,
    Curve,
    ResultReport,
    RunData,
    Table,
    cells,
    charts_for,
    hardware,
    load_run,
    newest_inventory,
    opt,
    run_report,
    score,
    what_ran,
)
from core.units import fmt_bytes, fmt_seconds


def _spread(x: Any, fmt: str, scale: float = 1.0) -> str:
    if not isinstance(x, dict) or x.get("mean") is None:
        return "—"
    text = fmt.format(x["mean"] * scale)
    return text + (f" ± {fmt.format(x['sd'] * scale)}" if x.get("n", 1) > 1 else "")


def _error(pred: float | None, meas: Any) -> str:
    if not pred or not isinstance(meas, dict) or not meas.get("mean"):
        return "—"
    return f"{pred / meas['mean'] - 1:+.0%}"


def one_factor_tables(factor: str, rows: Sequence[Mapping[str, Any]]) -> tuple[Table, ...]:
    """Finocchiaro's Tables 4.1–4.5: per value, time, accuracy and macro F1 (mean ± spread over
    repeats), the measured step and memory beside the predicted ones; then each resource's mean
    and maximum."""
    column = factor.rpartition(".")[2]  # the field's own name heads the column: "batch_size"
    main = Table(
        f"Per value of {factor} (the layout of Finocchiaro's Tables 4.1–4.5)",
        (
            column,
            "Training time (s)",
            "Accuracy",
            "Macro F1",
            "Step measured",
            "Step predicted",
            "Error",
            "Memory measured",
            "Memory predicted",
            "Runs",
        ),
        cells(
            [
                (
                    _scalar(r.get("value")),
                    _spread(r.get("training_time_s"), "{:.2f}"),
                    _spread(r.get("accuracy"), "{:.3f}"),
                    _spread(r.get("macro_f1"), "{:.3f}"),
                    _spread(r.get("step_s"), "{:.3g} ms", 1e3),
                    opt(r.get("predicted_step_s"), fmt_seconds),
                    _error(r.get("predicted_step_s"), r.get("step_s")),
                    _spread(r.get("training_memory_bytes"), "{:,.1f} MiB", 2**-20),
                    opt(r.get("predicted_memory_bytes"), fmt_bytes),
                    f"{r.get('runs', 0)}" + (f" ({r['failed']} failed)" if r.get("failed") else ""),
                )
                for r in rows
            ]
        ),
        frozenset(range(1, 10)),
        "Mean ± sample standard deviation over the repeats; error: predicted ÷ measured − 1.",
    )
    labels = [label for label in RESOURCES if any(label in (r.get("resources_mean_max") or {}) for r in rows)]
    if not labels:
        return (main,)

    def cell(r: Mapping[str, Any], label: str) -> str:
        pair = (r.get("resources_mean_max") or {}).get(label)
        if not pair:
            return "—"
        mean, peak = pair
        if "bytes" in label:
            return f"{mean / 2**20:,.0f} / {peak / 2**20:,.0f}"
        return f"{mean:,.1f} / {peak:,.1f}"

    resources = Table(
        "Resources during the runs, mean / maximum",
        (column, *(label.replace("(bytes)", "(MiB)") for label in labels)),
        cells([(_scalar(r.get("value")), *(cell(r, label) for label in labels)) for r in rows]),
        frozenset(range(1, len(labels) + 1)),
    )
    return main, resources


def _scalar(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def generic_tables(summary: Mapping[str, Any]) -> tuple[Table, ...]:
    """An experiment kind without a layout of its own: each list of records as a table, the rest
    as figures."""
    tables, figures = [], []
    for key, value in summary.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            headers = list(dict.fromkeys(k for v in value for k in v))
            tables.append(
                Table(
                    key.replace("_", " ").capitalize(),
                    tuple(h.replace("_", " ") for h in headers),
                    cells(
                        [
                            [
                                _scalar(v.get(h)) if not isinstance(v.get(h), dict | list) else json.dumps(v.get(h))
                                for h in headers
                            ]
                            for v in value
                        ]
                    ),
                )
            )
        elif isinstance(value, str | int | float) and key not in ("factor",):
            figures.append((key.replace("_", " ").capitalize(), _scalar(value)))
    if figures:
        tables.insert(0, Table("Figures", ("", "Value"), cells(figures)))
    return tuple(tables)


def threads_table(summary: Mapping[str, Any]) -> Table:
    """Wünsche's Fig. 1 as measured: per thread count the step of 64 samples and the rate."""
    points = [p for p in summary.get("points") or [] if isinstance(p, Mapping) and p.get("step_s")]
    return Table(
        "Step of 64 samples per thread count (Wünsche 2016, Fig. 1)",
        ("threads", "step", "samples/s"),
        cells([(p.get("threads"), fmt_seconds(p["step_s"]), f"{64 / p['step_s']:,.0f}") for p in points]),
        frozenset({1, 2}),
        f"This machine: {summary['physical']} physical and {summary.get('logical', '?')} logical cores."
        if summary.get("physical")
        else "",
    )


def scaling_table(summary: Mapping[str, Any]) -> Table:
    """A process scaling (core.output.scaling): per process count the measurement, the sizing's
    prediction for that many devices and Wünsche's published expectations."""
    cuts = summary.get("published_cuts") or {}
    groups = list(cuts)

    def s(x: Any) -> str | None:
        return fmt_seconds(x) if isinstance(x, int | float) else None

    def x(v: Any, fmt: str) -> str | None:
        return fmt.format(v) if isinstance(v, int | float) else None

    rows = [
        (
            r.get("processes"),
            r.get("ranks"),
            r.get("status"),
            s(r.get("training_time_s")),
            s(r.get("epoch_s")),
            s(r.get("step_s")),
            x(r.get("speed_up"), "{:.2f}×"),
            x(r.get("cut_from_previous"), "{:+.0%}"),
            x(r.get("allreduce_share"), "{:.0%}"),
            s(r.get("predicted_step_s"))
            if r.get("predicted_step_s")
            else str(r.get("prediction_note") or "").split(":")[0],
            x(r.get("predicted_speed_up"), "{:.2f}×"),
            *[s((r.get("wuensche_s") or {}).get(g)) for g in groups],
        )
        for r in summary.get("rows") or []
        if isinstance(r, Mapping)
    ]
    headers = (
        "processes",
        "ranks",
        "status",
        "training time",
        "epoch",
        "step",
        "speed-up",
        "cut per doubling",
        "all-reduce share",
        "sizing: step",
        "sizing: speed-up",
        *[f"Wünsche {g} ({cuts[g]:.0%})" for g in groups],
    )
    notes = dict.fromkeys(
        str(r.get("prediction_note"))
        for r in summary.get("rows") or []
        if isinstance(r, Mapping) and not r.get("predicted_step_s") and ":" in str(r.get("prediction_note") or "")
    )
    return Table(
        "Per process count: measured, the sizing's prediction and Wünsche 2016's published cuts",
        headers,
        cells(rows),
        frozenset(range(3, len(headers))),
        " ".join(f"Sizing: {n[0].upper()}{n[1:]}." for n in notes),
    )


def storage_table(summary: Mapping[str, Any]) -> Table:
    """Panaite & Leba's comparison as measured: per location its tier, the files, the epoch, the
    rate training consumed them at, the share of the time spent waiting for data, and the time the
    sizing assumes for reading an epoch from that tier."""
    rows = [r for r in summary.get("rows") or [] if isinstance(r, Mapping)]
    pages = dict.fromkeys(str(r["page_cache"]) for r in rows if r.get("page_cache"))

    def rate(x: Any) -> str | None:
        return f"{x / 2**20:,.1f} MiB/s" if isinstance(x, int | float) and x else None

    return Table(
        "Per location (Panaite & Leba 2024)",
        (
            "location",
            "tier",
            "files",
            "bytes per file",
            "epoch",
            "files read at",
            "waiting for data",
            "sizing: read an epoch",
        ),
        cells(
            [
                (
                    r.get("location"),
                    r.get("tier"),
                    f"{r.get('files', 0):,} {r.get('format') or ''}".strip(),
                    opt(r.get("bytes_per_file"), lambda b: f"{b:,.0f} B"),
                    opt(r.get("epoch_s"), fmt_seconds),
                    rate(r.get("consumed_bps")),
                    opt(r.get("data_wait_share"), lambda x: f"{x:.0%}"),
                    opt(r.get("predicted_read_s"), fmt_seconds) or "tier unknown",
                )
                for r in rows
            ]
        ),
        frozenset({2, 3, 4, 5, 6, 7}),
        " ".join(f"{p[0].upper()}{p[1:]}" + ("" if p.endswith(".") else ".") for p in pages),
    )


def experiment_tables(exp: Mapping[str, Any]) -> tuple[Table, ...]:
    """An experiment's summary as tables, by its kind (a kind without a layout: its records)."""
    summary = exp.get("summary") or {}
    kind = exp.get("kind")
    if kind == "one-factor":
        return one_factor_tables(str(exp.get("factor")), summary.get("rows") or [])
    if kind == "threads":
        return (threads_table(summary),)
    if kind == "scaling":
        return (scaling_table(summary),)
    if kind == "storage":
        return (storage_table(summary),)
    return generic_tables(summary)


def summary_charts(exp: Mapping[str, Any]) -> tuple[Chart, ...]:
    """The figure the paper drew for the experiment, where it drew one: thread scaling's rate by
    thread count with the physical cores marked (Wünsche, Fig. 1); process scaling's training time
    by process count beside Wünsche's published cuts."""
    summary = exp.get("summary") or {}
    if exp.get("kind") == "threads":
        points = [p for p in summary.get("points") or [] if isinstance(p, Mapping) and p.get("step_s")]
        if not points:
            return ()
        xs = tuple(float(p["threads"]) for p in points)
        ys = tuple(64 / float(p["step_s"]) for p in points)
        physical = summary.get("physical")
        marker = (f"{physical} physical cores", float(physical)) if physical else None
        curve = Curve("measured", xs, ys)
        return (
            Chart(
                "Training rate by thread count (Wünsche 2016, Fig. 1)", "samples/s", "threads", (curve,), None, marker
            ),
        )
    if exp.get("kind") == "scaling":
        rows = [r for r in summary.get("rows") or [] if isinstance(r, Mapping) and r.get("training_time_s")]
        if not rows:
            return ()
        xs = tuple(float(r["processes"]) for r in rows)
        curves = [Curve("measured", xs, tuple(float(r["training_time_s"]) for r in rows))]
        for group, cut in (summary.get("published_cuts") or {}).items():
            expected = [(r.get("wuensche_s") or {}).get(group) for r in rows]
            if all(isinstance(e, int | float) for e in expected):
                curves.append(Curve(f"Wünsche {group} ({cut:.0%} a doubling)", xs, tuple(float(e) for e in expected)))
        return (Chart("Training time by process count", "s", "processes", tuple(curves)),)
    return ()


def experiment_summary_text(exp: Mapping[str, Any], runs: Sequence[RunData]) -> str:
    plan = exp.get("plan") or {}
    values = plan.get("values") or [r.get("value") for r in (exp.get("summary") or {}).get("rows", [])]
    kind = exp.get("kind")
    what = {
        "one-factor": f"One-factor experiment on {exp.get('factor')}",
        "threads": "Thread scaling (Wünsche 2016, Fig. 1)",
        "storage": "Storage comparison (Panaite & Leba 2024)",
        "scaling": "Process scaling through torchrun and DistributedDataParallel",
    }.get(str(kind), f"Experiment ({kind})")
    text = what + (f" at {', '.join(_scalar(v) for v in values)}" if values else "")
    if plan.get("repeats", 1) > 1:
        text += f", {plan['repeats']} repeats of each (seeds 0 to {plan['repeats'] - 1})"
    if exp.get("machine"):
        text += f", on {exp['machine']}"
    text += f"; {exp.get('status') or 'status unknown'}."
    if runs:
        done = sum(1 for d in runs if d.run.get("status") == "finished")
        text += f" {done} of {len(runs)} runs in this database finished."
    verdict = (exp.get("summary") or {}).get("verdict")
    if verdict:
        text += f" {verdict[0].upper()}{verdict[1:]}" + ("" if verdict.endswith(".") else ".")
    return text


def _curve_label(run: Mapping[str, Any]) -> str:
    """An experiment's run by its id and what sets it apart: "#4 training.batch_size=128 #2" (the
    part of its name after the experiment's)."""
    return f"#{run.get('id')} {str(run.get('name') or '').rpartition(': ')[2]}".strip()


def runs_table(runs: Sequence[RunData]) -> Table:
    rows = []
    for d in runs:
        r, m = d.run, d.run.get("metrics") or {}
        rows.append(
            (
                f"#{r.get('id')}",
                r.get("name"),
                r.get("status"),
                r.get("device"),
                opt(m.get("training_time_s"), fmt_seconds),
                opt(m.get("median_step_s"), fmt_seconds),
                score(m.get("accuracy")),
                score(m.get("macro_f1")),
            )
        )
    return Table(
        "Runs",
        ("Run", "Name", "Status", "Device", "Training time", "Median step", "Accuracy", "Macro F1"),
        cells(rows),
        frozenset({4, 5, 6, 7}),
    )


def experiment_report(
    exp: Mapping[str, Any],
    runs: Sequence[RunData],
    created: str,
    author: str | None = None,
    inventory: Mapping[str, Any] | None = None,
) -> ResultReport:
    summary = exp.get("summary") or {}
    tables = experiment_tables(exp)
    first = runs[0] if runs else None
    notes = []
    if summary.get("source"):
        notes.append(f"Source: {summary['source']}")
    if exp.get("notes"):
        notes.append(str(exp["notes"]))
    return ResultReport(
        "Experiment report",
        f"Experiment #{exp.get('id', '?')}: {exp.get('name') or ''}".rstrip(": "),
        created,
        author,
        experiment_summary_text(exp, runs),
        (
            *tables,
            *((runs_table(runs),) if runs else ()),
            hardware(inventory, exp.get("machine")),
            *((what_ran(first.run),) if first else ()),
        ),
        (*summary_charts(exp), *charts_for([(_curve_label(d.run), d) for d in runs])),
        tuple(notes),
    )


def load_report(store: Any, kind: str, item_id: int, created: str, author: str | None = None) -> ResultReport:
    """The report of a stored run or experiment. TrainRigError when it is not there or is of
    another kind (sizings have the purchasing report)."""
    if kind == "run":
        data = load_run(store, item_id)
        if data is None:
            raise TrainRigError(f"run #{item_id} is not in this database")
        return run_report(data, created, author)
    if kind == "experiment":
        detail = store.result_detail("experiment", item_id) or {}
        exp = detail.get("experiment")
        if not isinstance(exp, dict):
            raise TrainRigError(f"experiment #{item_id} is not in this database")
        exp = {**exp, "name": detail.get("name") or exp.get("name"), "notes": detail.get("notes")}
        runs = [d for i in exp.get("run_ids") or [] if (d := load_run(store, int(i))) is not None]
        inventory = runs[0].inventory if runs else newest_inventory(store, exp.get("machine"))
        return experiment_report(exp, runs, created, author, inventory)
    raise TrainRigError(
        f"a {kind} has no run report: runs and experiments have one, a sizing has the purchasing report"
    )
