"""The Results tab's details as readable HTML: tables of figures with their units, never a raw
JSON dump where a table serves. One function per kind of result; an unknown shape falls back to a
key/value table of what is there."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from core.errors import TrainRigError
from core.output.experiment_report import experiment_tables
from core.output.run_report import Table, predicted_vs_measured
from core.spec.effective import effective_sections
from core.units import fmt_bytes, fmt_count, fmt_money, fmt_seconds
from gui.models.results_model import local_date
from telemetry.inventory.text import inventory_to_text

Cell = str | float | int | None

CSS = "table{border-collapse:collapse;margin:4px 0 10px 0}td,th{padding:2px 10px 2px 0}th{text-align:left}"


def esc(x: Any) -> str:
    return html.escape(str(x))


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]]) -> str:
    """An HTML table; numbers right-aligned (the caller formats them with their units)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            text = "—" if c is None or c == "" else esc(c)
            align = ' align="right"' if i > 0 else ""
            cells.append(f"<td{align}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table>{'<tr>' + head + '</tr>' if headers else ''}{''.join(body)}</table>"


def pairs(rows: Iterable[tuple[str, str | None]]) -> str:
    """A two-column table of label → value, leaving out what is not recorded."""
    kept = [(f"<b>{esc(k)}</b>", v) for k, v in rows if v not in (None, "")]
    body = "".join(f"<tr><td>{k}</td><td>{esc(v)}</td></tr>" for k, v in kept)
    return f"<table>{body}</table>"


def page(title: str, *parts: str) -> str:
    return f"<html><head><style>{CSS}</style></head><body><h3>{esc(title)}</h3>{''.join(parts)}</body></html>"


def _opt(value: Any, fmt: Callable[[Any], str]) -> str | None:
    return None if value is None else fmt(value)


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{x:+.0%}"


def _score(x: float | None) -> str | None:
    return None if x is None else f"{x:.3f}"


def _gflops(x: float | None) -> str | None:
    return None if x is None else f"{x / 1e9:,.1f} GFLOP/s"


def _rate(x: float | None) -> str | None:
    return None if x is None else f"{x / 1e9:,.1f} GB/s"


# --- runs -----------------------------------------------------------------------------------------
def run_html(run: dict[str, Any], samples: int | None = None) -> str:
    m = run.get("metrics") or {}
    measured = run.get("measured") or {}
    sampling = run.get("sampling") or {}
    status = str(run.get("status") or "")
    if run.get("reason"):
        status += f": {run['reason']}"
    summary = pairs(
        [
            ("Status", status),
            ("Kind", run.get("kind")),
            ("Device", run.get("device")),
            ("Started", local_date(run.get("created"))),
            ("Duration", _opt(run.get("duration_s"), fmt_seconds)),
            ("Exit code", _opt(run.get("exit_code"), str)),
        ]
    )
    metrics = pairs(
        [
            ("Training time", _opt(m.get("training_time_s") or measured.get("training_time_s"), fmt_seconds)),
            ("Median step", _opt(m.get("median_step_s") or measured.get("median_step_s"), fmt_seconds)),
            ("Steps", _opt(m.get("steps") or m.get("iterations"), lambda x: f"{x:,}")),
            ("Epochs", _opt(m.get("epochs"), str)),
            ("Held-out accuracy", _score(m.get("accuracy"))),
            ("Chance accuracy", _score(m.get("chance_accuracy"))),
            ("Macro F1", _score(m.get("macro_f1"))),
            (
                "Peak memory",
                None
                if m.get("peak_memory_bytes") is None
                else f"{fmt_bytes(m['peak_memory_bytes'])} ({m.get('peak_memory_kind') or 'kind not recorded'})",
            ),
            (
                "Training step's memory",
                _opt(measured.get("training_memory_bytes"), fmt_bytes)
                + (
                    " (the peak's growth once PyTorch and the data were loaded)"
                    if "RSS" in str(m.get("peak_memory_kind"))
                    else ""
                )
                if measured.get("training_memory_bytes") is not None
                else None,
            ),
            ("Peak RSS (sampled)", _opt(measured.get("sampled_peak_rss_bytes"), fmt_bytes)),
        ]
    )
    parts = [summary, "<h4>Measured</h4>", metrics]
    pvm = predicted_vs_measured(run)
    if pvm:
        where = (run.get("prediction") or {}).get("device", "this machine")
        parts += [f"<h4>Predicted (sized on {esc(where)}) against measured</h4>"]
        parts.append(table(["", "Predicted", "Measured", "Error"], pvm))
        parts.append("<p><small>Error: predicted ÷ measured − 1 (+: the sizing predicted too much).</small></p>")
    else:
        parts.append("<p><i>This run was not started from a sizing: there is no prediction to compare.</i></p>")
    cols = sampling.get("columns") or []
    rate = sampling.get("rate_hz")
    recorded = f"{samples:,} samples" if samples is not None else "samples"
    parts.append(
        f"<p>Telemetry: {recorded}"
        + (f" at {rate:g} Hz" if rate else "")
        + (f" of {len(cols)} figures" if cols else "")
        + "."
        + "".join(f"<br>{esc(k)}: {esc(v)}" for k, v in (sampling.get("reasons") or {}).items())
        + "</p>"
    )
    return page(f"Run #{run.get('id', '?')}: {run.get('name', '')}", *parts)


# --- sizings --------------------------------------------------------------------------------------
def sizing_html(detail: dict[str, Any]) -> str:
    result = _find(detail, "result") or detail
    doc = detail.get("workload") if isinstance(detail.get("workload"), dict) else {}
    model = result.get("model") or {}
    flops = result.get("flops") or {}
    data = result.get("dataset") or {}
    training = _training_of(doc)
    workload = pairs(
        [
            ("Workload", result.get("workload") or detail.get("name")),
            ("Model", model.get("preset") or model.get("kind")),
            ("Input", _shape(model.get("input_shape"))),
            ("Output", _shape(model.get("output_shape"))),
            ("Parameters", _opt(result.get("parameters"), lambda x: fmt_count(x))),
            ("Training FLOPs per sample", _opt(flops.get("train_per_sample"), lambda x: fmt_count(x, "FLOP"))),
            ("Training FLOPs in all", _opt(flops.get("train_total"), lambda x: fmt_count(x, "FLOP"))),
            ("Samples", _opt(data.get("samples"), lambda x: f"{x:,}")),
            ("Dataset", _opt(data.get("bytes"), fmt_bytes)),
            ("Batch size", _opt((training or {}).get("batch_size"), str)),
            ("Epochs", _opt((training or {}).get("epochs"), str)),
        ]
    )
    currency = str(((doc or {}).get("cost") or {}).get("currency") or "") if isinstance(doc, dict) else ""
    rows = []
    for c in result.get("candidates") or []:
        # each candidate's own currency (a workload without cost.currency is in USD: "164,940" had none)
        cur = str(c.get("currency") or currency or "USD")
        mem = (c.get("memory_per_device") or {}).get("total")
        fits = {True: "yes", False: "no", None: "unknown"}.get(c.get("fits"), "unknown")
        rows.append(
            (
                f"{c.get('device')} × {c.get('count')}",
                fits,
                _opt(mem, fmt_bytes),
                _opt(c.get("step_time_s"), fmt_seconds),
                _opt(c.get("training_time_s"), fmt_seconds),
                _opt(c.get("capex"), lambda x, cur=cur: fmt_money(x, cur).strip()),
                _opt(c.get("tco"), lambda x, cur=cur: fmt_money(x, cur).strip()),
                c.get("buy_or_rent"),
            )
        )
    parts = ["<h4>Workload</h4>", workload]
    if rows:
        parts += [
            f"<h4>Candidates ({len(rows)})</h4>",
            table(
                ["Device", "Fits", "Memory per device", "Step", "Training time", "Capex", "TCO", "Buy or rent"], rows
            ),
        ]
    decision = result.get("decision") or {}
    if isinstance(decision, dict) and decision.get("text"):
        parts.append(f"<h4>Buy or rent</h4><p>{esc(decision['text'])}</p>")
    notes = result.get("notes") or []
    if notes:
        parts.append("<h4>Notes</h4><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes[:20]) + "</ul>")
    title = f"Sizing #{detail.get('id', '?')}: {result.get('workload') or detail.get('name', '')}"
    return page(title, *parts)


# the training settings compared, with the value a workload that leaves them out gets
SETTINGS = (
    ("batch_size", "Batch size", "—"),
    ("epochs", "Epochs", "—"),
    ("optimizer", "Optimizer", "adam"),
    ("precision", "Precision", "fp32"),
    ("checkpointing", "Checkpointing", "none"),
    ("sharding", "Sharding", "none"),
    ("nodes", "Nodes", "1"),
)
CHECKPOINT_WORDS = {"True": "full", "False": "none"}


def _training_of(doc: Any) -> dict[str, Any]:
    """A stored workload's training as it was sized (core.spec.effective): a sizing saved by `size` stores the
    file as written, a preset without its training, and was shown with this table's defaults ("adam" for
    ResNet-50's SGD, no batch or epochs); its own keys as written where it no longer parses."""
    if not isinstance(doc, dict):
        return {}
    try:
        return effective_sections(doc)[1]
    except TrainRigError:
        return dict(doc.get("training") or {}) if isinstance(doc.get("training"), dict) else {}


def sizings_side_by_side_html(details: Sequence[dict[str, Any]]) -> str:
    """Several saved sizings compared: their settings in columns (the ones that differ marked), then
    every candidate of every sizing in one table, the fastest training and the lowest TCO marked."""
    results = [_find(d, "result") or d for d in details]
    docs = [d.get("workload") if isinstance(d.get("workload"), dict) else {} for d in details]
    pairs_ = zip(details, results, strict=True)
    labels = [f"#{d.get('id', '?')} {r.get('workload') or d.get('name', '')}" for d, r in pairs_]
    settings = []
    for key, label, default in SETTINGS:
        values = [str(_training_of(doc).get(key, default)) for doc in docs]
        if key == "checkpointing":
            values = [CHECKPOINT_WORDS.get(v, v) for v in values]
        differ = len(set(values)) > 1
        settings.append((f"<b>{esc(label)}</b>" if differ else esc(label), *[esc(v) for v in values]))
    params = [_opt(r.get("parameters"), lambda x: fmt_count(x)) or "—" for r in results]
    settings.append(("Parameters", *[esc(p) for p in params]))
    rows = []
    for label, doc, r in zip(labels, docs, results, strict=True):
        currency = str(((doc or {}).get("cost") or {}).get("currency") or "")
        for c in r.get("candidates") or []:
            rows.append((label, currency, c))
    times = [c.get("training_time_s") for _l, _c, c in rows if c.get("fits") and c.get("training_time_s")]
    # the lowest TCO in each currency: sizings in JPY and USD marked a 139,464 USD candidate the lowest beside
    # one of 1,036,662 JPY (about 6,900 USD)
    cheapest: dict[str, float] = {}
    for _l, cur, c in rows:
        if c.get("fits") and c.get("tco") is not None:
            cheapest[cur] = min(cheapest.get(cur, c["tco"]), c["tco"])
    fastest = min(times) if times else None
    table_rows = []
    for label, currency, c in rows:
        marks = []
        if c.get("fits") and fastest is not None and c.get("training_time_s") == fastest:
            marks.append("fastest")
        if c.get("fits") and c.get("tco") is not None and c.get("tco") == cheapest.get(currency):
            marks.append("lowest TCO" + (f" in {currency or 'USD'}" if len(cheapest) > 1 else ""))
        table_rows.append(
            (
                label,
                f"{c.get('device')} × {c.get('count')}",
                {True: "yes", False: "no", None: "unknown"}.get(c.get("fits"), "unknown"),
                _opt((c.get("memory_per_device") or {}).get("total"), fmt_bytes),
                _opt(c.get("step_time_s"), fmt_seconds),
                _opt(c.get("training_time_s"), fmt_seconds),
                fmt_money(c["tco"], currency).strip() if c.get("tco") is not None else None,
                ", ".join(marks) or None,
            )
        )
    parts = [
        "<h4>Settings</h4><p>Rows in bold differ between the sizings.</p>",
        table(["", *labels], settings),
        f"<h4>Candidates ({len(table_rows)})</h4>",
        table(["Sizing", "Device", "Fits", "Memory per device", "Step", "Training time", "TCO", ""], table_rows),
    ]
    return page(f"{len(details)} sizings side by side", *parts)


def _shape(s: Any) -> str | None:
    return None if not s else " × ".join(str(x) for x in s)


# --- inventories and calibrations -----------------------------------------------------------------
def inventory_html(detail: dict[str, Any]) -> str:
    snapshot = _find(detail, "snapshot") or detail
    try:
        text = inventory_to_text(snapshot)
    except (KeyError, TypeError, AttributeError):  # a snapshot of an older shape: what it has, as a table
        return page(f"Inventory #{detail.get('id', '?')}", generic(snapshot))
    host = snapshot.get("host") or detail.get("machine") or ""
    return page(f"Inventory #{detail.get('id', '?')}" + (f" of {host}" if host else ""), f"<pre>{esc(text)}</pre>")


def calibration_html(detail: dict[str, Any]) -> str:
    r = _find(detail, "result") or detail
    o = r.get("step_overhead") or {}
    s = r.get("storage") or {}
    figures = pairs(
        [
            ("CPU matmul fp32", _gflops(r.get("cpu_fp32_matmul_flops"))),
            ("CPU matmul bf16", _gflops(r.get("cpu_bf16_matmul_flops"))),
            ("CPU training step, linear layers", _gflops(r.get("cpu_linear_train_flops"))),
            ("CPU training step, convolutions", _gflops(r.get("cpu_conv_train_flops"))),
            ("Memory bandwidth", _rate(r.get("cpu_memory_bandwidth_bps"))),
            ("Framework overhead per step", _opt(o.get("per_step_s"), fmt_seconds)),
            ("Framework overhead per op", _opt(o.get("per_op_s"), fmt_seconds)),
            ("CPU threads", _opt(r.get("threads"), str)),
            ("Storage read", _storage(s)),
            ("Measured with", r.get("python")),
            ("Took", _opt(r.get("seconds"), lambda x: fmt_seconds(float(x)))),
        ]
    )
    gpus = [
        (
            g.get("name"),
            _opt(g.get("fp32_matmul_flops"), lambda x: f"{x / 1e12:,.1f} TFLOP/s"),
            _opt(g.get("tf32_matmul_flops"), lambda x: f"{x / 1e12:,.1f} TFLOP/s"),
            _opt(g.get("bf16_matmul_flops"), lambda x: f"{x / 1e12:,.1f} TFLOP/s"),
            _rate(g.get("memory_bandwidth_bps")),
        )
        for g in r.get("gpus") or []
    ]
    parts = [figures]
    if gpus:
        parts += [
            "<h4>GPUs</h4>",
            table(["GPU", "fp32 matmul", "tf32 matmul", "bf16 matmul", "Memory bandwidth"], gpus),
        ]
    return page(f"{detail.get('name') or 'Calibration'} (#{detail.get('id', '?')})", *parts)


def _storage(s: dict[str, Any]) -> str | None:
    if not s:
        return None
    rate = "unknown" if s.get("read_bps") is None else f"{s['read_bps'] / 1e6:,.0f} MB/s"
    return f"{rate} in {s.get('folder')} ({s.get('note')})"


# --- anything else --------------------------------------------------------------------------------
def generic(detail: dict[str, Any], depth: int = 0) -> str:
    """Scalars as a label/value table; lists of records as tables; nested records as sections."""
    scalars = [(k.replace("_", " "), _scalar(v)) for k, v in detail.items() if not isinstance(v, dict | list)]
    parts = [pairs(scalars)]
    for k, v in detail.items():
        title = esc(k.replace("_", " ").capitalize())
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            keys = list(dict.fromkeys(key for x in v[:200] for key in x if not isinstance(x[key], dict | list)))
            rows = [[_scalar(x.get(key)) for key in keys] for x in v[:200]]
            more = f" (first 200 of {len(v):,})" if len(v) > 200 else ""
            parts.append(f"<h4>{title}{more}</h4>" + table([key.replace("_", " ") for key in keys], rows))
        elif isinstance(v, list) and v:
            parts.append(f"<p><b>{title}</b>: {esc(', '.join(_scalar(x) for x in v[:50]))}</p>")
        elif isinstance(v, dict) and v and depth < 2:
            parts.append(f"<h4>{title}</h4>" + generic(v, depth + 1))
    return "".join(parts)


def experiment_html(detail: dict[str, Any]) -> str:
    """An experiment's summary, the tables of its report (core.output.run_report.experiment_tables):
    per value of its factor, per thread count, per process count or per storage location."""
    name = detail.get("name") or ""
    exp = detail.get("experiment") if isinstance(detail.get("experiment"), dict) else {}
    runs = exp.get("run_ids") or []
    head = pairs(
        [
            ("kind", exp.get("kind")),
            ("varied", exp.get("factor")),
            ("status", exp.get("status")),
            ("runs in this database", ", ".join(f"#{i}" for i in runs) or "none"),
        ]
    )
    body = "".join(table_html(t) for t in experiment_tables(exp))
    summary = exp.get("summary") or {}
    if summary.get("verdict"):
        body += f"<p>{esc(summary['verdict'])}</p>"
    if summary.get("source"):
        body += f"<p>Source: {esc(summary['source'])}</p>"
    return page(f"Experiment #{detail.get('id', '?')}: {name}", head, body)


def table_html(t: Table) -> str:
    """A report table (core.output.run_report) as the details pane shows it."""
    return (
        f"<h4>{esc(t.title)}</h4>"
        + (table(list(t.headers), t.rows) if t.rows else "")
        + (f"<p><small>{esc(t.note)}</small></p>" if t.note else "")
    )


def _scalar(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def _find(detail: dict[str, Any], key: str) -> Any:
    """``detail[key]`` or, one level down, ``detail[x][key]``: the store may wrap the document."""
    if isinstance(detail.get(key), dict):
        return detail[key]
    for v in detail.values():
        if isinstance(v, dict) and isinstance(v.get(key), dict):
            return v[key]
    return None


def run_of(detail: dict[str, Any]) -> dict[str, Any]:
    """The stored run of a run's details (``Store.result_detail``), under the name the user gave it."""
    run = detail.get("run")
    if not isinstance(run, dict):
        return detail
    return {**run, "name": detail.get("name") or run.get("name"), "id": detail.get("id", run.get("id"))}


def details_html(kind: str, detail: dict[str, Any]) -> str:
    """The details page of any kind of result (``Store.result_detail``)."""
    if kind == "run":
        samples = detail.get("sample_count")
        return run_html(run_of(detail), int(samples) if samples is not None else None)
    if kind == "sizing":
        return sizing_html(detail)
    if kind == "inventory":
        return inventory_html(detail)
    if kind == "calibration":
        return calibration_html(detail)
    if kind == "experiment":
        return experiment_html(detail)
    return page(f"{kind.capitalize()} #{detail.get('id', '?')}", generic(detail))
