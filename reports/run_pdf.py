"""A run's or an experiment's report as a PDF, on the purchasing report's pages: the same header,
page numbers and rules (a table's header row repeats on every page it spans, no row is split, no
heading ends a page), its tables, then one chart per figure."""

from __future__ import annotations

import html
from pathlib import Path

from core.output.run_report import ResultReport, Table
from reports.charts import line_chart
from reports.paginate import Blocks, Breaks
from reports.pdf import CSS, Page, css_px, ensure_app, paint_pages, write_document


def write_result_pdf(report: ResultReport, path: Path, page_size: str | None = None) -> int:
    """Write ``report`` to ``path`` whole or not at all; returns the number of pages (OutputError
    when it cannot be written; the file that was there is then untouched)."""
    return write_document(path, lambda tmp: render_result_pdf(report, tmp, page_size))


def render_result_pdf(report: ResultReport, path: Path, page_size: str | None = None) -> int:
    ensure_app()  # the charts paint with fonts
    images = {f"chart{i}.png": line_chart(c) for i, c in enumerate(report.charts)}
    page = Page(
        f"{report.title}: {report.subject}", report.author, f"TrainRig · {report.subject}", report.created, page_size
    )
    return paint_pages(path, page, images, lambda width, breaks: result_blocks(report, width, breaks))


def _e(text: object) -> str:
    return html.escape(str(text))


def _table(b: Blocks, t: Table) -> list[str]:
    parts = [b.heading(t.title)]
    if t.rows:
        widths = [30, 70] if len(t.headers) == 2 else None
        parts.append(b.table(list(t.headers), [[_e(c) for c in r] for r in t.rows], widths, set(t.right)))
    if t.note:
        parts.append(f"<p class='note'>{_e(t.note)}</p>")
    return parts


def result_blocks(r: ResultReport, width: float, breaks: Breaks) -> tuple[str, Blocks]:
    b = Blocks(breaks)
    parts = [
        CSS,
        f"<h1>{_e(r.title)}</h1>",
        f"<p><b>{_e(r.subject)}</b> · made {_e(r.created)}" + (f" by {_e(r.author)}" if r.author else "") + "</p>",
        b.heading("Summary"),
        f"<p>{_e(r.summary)}</p>",
    ]
    for t in r.tables:
        parts += _table(b, t)
    figures = [i for i, c in enumerate(r.charts) if c.x_label != "s"]  # the experiment's own figure
    over_time = [i for i, c in enumerate(r.charts) if c.x_label == "s"]
    if figures:
        parts.append(b.heading("Figure"))
        parts += [f"<p><img src='chart{i}.png' width='{css_px(width)}'></p>" for i in figures]
    if over_time:
        parts.append(b.heading("Telemetry over time"))
        parts.append(
            "<p class='note'>Sampled during the run"
            + ("s" if len({c.label for i in over_time for c in r.charts[i].curves}) > 1 else "")
            + ", against seconds since each started; where a run has more samples than the page has room "
            "for, each point is the mean of its stretch.</p>"
        )
        parts += [f"<p><img src='chart{i}.png' width='{css_px(width)}'></p>" for i in over_time]
    for note in r.notes:
        parts.append(f"<p class='note'>Note: {_e(note)}</p>")
    return "".join(parts), b
