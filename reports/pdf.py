"""The purchasing report as a PDF: QTextDocument laid out on QPdfWriter pages with a header,
page numbers, tables whose header rows repeat across pages, charts at print resolution."""

from __future__ import annotations

import html
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QLocale, QMarginsF, QRectF, QSizeF, Qt, QUrl
from PySide6.QtGui import (
    QFont,
    QGuiApplication,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextDocument,
)

from core.errors import OutputError
from core.output import glossary
from core.output.report import Report
from core.storage.files import write_atomically
from core.units import fmt_amount, fmt_bytes, fmt_money, fmt_seconds, fmt_sig
from reports.charts import memory_chart, time_cost_chart
from reports.paginate import Blocks, Breaks, lay_out

DPI = 300
HEADER_H, FOOTER_H = 90, 90  # device pixels at 300 dpi
CSS = (
    "<style>h1{font-size:18pt;color:#1f3b63} h2{font-size:12pt;color:#1f3b63;margin-top:14px} "
    "td,th{font-size:8pt} p{font-size:9pt} .note{color:#555;font-size:8pt}</style>"
)


def ensure_app() -> QGuiApplication:
    """A Qt application for painting; offscreen when there is no display (CLI, CI)."""
    app = QGuiApplication.instance()
    if app is None:
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and sys.platform.startswith("linux"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QGuiApplication([])
    assert isinstance(app, QGuiApplication)
    return app


def default_page_size() -> str:
    us = QLocale.system().measurementSystem() == QLocale.MeasurementSystem.ImperialUSSystem
    return "letter" if us else "a4"


def write_pdf(report: Report, path: Path, page_size: str | None = None) -> int:
    """Write ``report`` to ``path`` whole or not at all; returns the number of pages. OutputError
    (one line) when it cannot be written; the file that was there is then untouched."""
    return write_document(path, lambda tmp: render_pdf(report, tmp, page_size))


def write_document(path: Path, render: Callable[[Path], int]) -> int:
    """``render(tmp)`` paints a PDF into a temporary file that replaces ``path`` once complete;
    returns its pages."""
    pages = 0

    def write(tmp: Path) -> None:
        nonlocal pages
        pages = render(tmp)

    write_atomically(Path(path), write, verify_pdf)
    return pages


def verify_pdf(path: Path) -> None:
    """A PDF is complete when it ends with its %%EOF marker (a full disk cuts it short silently)."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 1024))
        if b"%%EOF" not in f.read():
            raise OutputError("it came out incomplete (is the disk full?)")


def render_pdf(report: Report, path: Path, page_size: str | None = None) -> int:
    """Paint ``report`` into ``path`` (use write_pdf for a file the user asked for); returns the
    number of pages."""
    ensure_app()
    images = {"timecost.png": time_cost_chart(report.candidates, report.currency)}
    if report.memory is not None:
        images["memory.png"] = memory_chart(report.memory, _capacity(report), report.memory_device)
    return paint_pages(
        path,
        Page(report.title, report.author, f"TrainRig · {report.workload}", report.created, page_size),
        images,
        lambda width, breaks: report_blocks(report, width, breaks),
    )


@dataclass(frozen=True)
class Page:
    """What every page of a document carries: the PDF's title and author, the header's left line
    and its date, and the paper."""

    title: str
    author: str | None
    header: str
    created: str
    page_size: str | None = None


def paint_pages(
    path: Path,
    page: Page,
    images: dict[str, QImage],
    build: Callable[[float, Breaks], tuple[str, Blocks]],
) -> int:
    """Lay the HTML that ``build(width, breaks)`` makes out on the pages of a PDF at ``path`` (rows,
    totals and headings kept together: reports.paginate), with a header and page numbers on each;
    ``images`` are the pictures its <img src> names. Returns the number of pages."""
    ensure_app()
    writer = QPdfWriter(str(path))
    size = (
        QPageSize.PageSizeId.Letter if (page.page_size or default_page_size()) == "letter" else QPageSize.PageSizeId.A4
    )
    writer.setPageSize(QPageSize(size))
    writer.setResolution(DPI)
    writer.setPageMargins(QMarginsF(16, 14, 16, 14), QPageLayout.Unit.Millimeter)
    writer.setTitle(page.title)
    writer.setCreator("TrainRig")
    if page.author:
        writer.setAuthor(page.author)  # the PDF's Author field, not only the header line
    body = writer.pageLayout().paintRectPixels(DPI)
    width, height = body.width(), body.height() - HEADER_H - FOOTER_H
    doc = QTextDocument()
    doc.documentLayout().setPaintDevice(writer)
    font = QFont("DejaVu Sans")
    font.setPointSizeF(9)
    doc.setDefaultFont(font)
    doc.setPageSize(QSizeF(width, height))
    doc.setDocumentMargin(0)
    for name, image in images.items():
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), image)
    lay_out(doc, lambda breaks: build(width, breaks))
    pages = doc.pageCount()
    painter = QPainter()
    if not painter.begin(writer):  # Qt cannot open the file: stop before thousands of "not active" lines
        raise OutputError("Qt cannot open the file for writing")
    small = QFont("DejaVu Sans")
    small.setPointSizeF(7.5)
    for n in range(pages):
        if n:
            writer.newPage()
        painter.setFont(small)
        painter.setPen(Qt.GlobalColor.darkGray)
        head = QRectF(0, 0, width, HEADER_H - 20)
        painter.drawText(head, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom, page.header)
        painter.drawText(head, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom, page.created)
        painter.drawLine(0, HEADER_H - 10, int(width), HEADER_H - 10)
        painter.drawText(
            QRectF(0, HEADER_H + height + 20, width, FOOTER_H - 20),
            Qt.AlignmentFlag.AlignCenter,
            f"Page {n + 1} of {pages}",
        )
        painter.save()
        painter.translate(0, HEADER_H - n * height)
        doc.drawContents(painter, QRectF(0, n * height, width, height))
        painter.restore()
    painter.end()
    return pages


def _capacity(report: Report) -> int | None:
    for c in report.candidates:
        if f"{c.device} × {c.count}" == report.memory_device:
            return c.capacity_bytes
    return None


def _buy_or_rent(verdict: str | None, runs: int | None) -> str:
    if verdict is None:
        return "—"
    return verdict + (f" · {runs:,} runs" if runs and verdict == "rent" else "")


def css_px(device_px: float) -> int:
    """QTextDocument reads <img width> in 96-dpi pixels and scales them to the printer's 300 dpi."""
    return int(device_px * 96 / DPI)


def _e(text: object) -> str:
    return html.escape(str(text))


def _device_count(device: str, count: int, nodes: int = 1) -> str:
    """The device and its count ("H100 SXM × 8", "× 4 per node × 2 nodes"), never wrapped between the two."""
    per = f" per node ×&nbsp;{nodes}&nbsp;nodes" if nodes > 1 else ""
    return _e(device.replace("NVIDIA ", "")) + f"&nbsp;×&nbsp;{count}{per}"


def report_html(r: Report, width: float, breaks: Breaks | None = None) -> str:
    """The report as the HTML QTextDocument lays out, with page breaks before the rows and headings
    in ``breaks`` (reports.paginate)."""
    return report_blocks(r, width, breaks or Breaks())[0]


def report_blocks(r: Report, width: float, breaks: Breaks) -> tuple[str, Blocks]:
    b = Blocks(breaks)
    _table, _h2 = b.table, b.heading
    cur = r.currency
    parts = [
        CSS,
        f"<h1>{_e(r.title)}</h1>",
        f"<p>Workload <b>{_e(r.workload)}</b> · made {_e(r.created)}"
        + (f" by {_e(r.author)}" if r.author else "")
        + (f" on {_e(r.machine)}" if r.machine else "")
        + "</p>",
        _h2("Summary"),
        f"<p>{_e(r.summary)}</p>",
    ]
    parts += [
        _h2("Requirements"),
        _table(
            ["", "Value", "How it was obtained"],
            [[_e(a), f"<b>{_e(b)}</b>", _e(c)] for a, b, c in r.requirements],
            [28, 30, 42],
        ),
    ]
    if r.memory is not None:
        parts.append(f"<p><img src='memory.png' width='{css_px(width)}'></p>")
    parts += [
        _h2("Seed formulas (as published)"),
        _table(["Formula", "Value", "Source"], [[_e(a), _e(b), _e(c)] for a, b, c in r.seed], [30, 40, 30]),
    ]
    cand_rows = [
        [
            _device_count(c.device, c.count, c.nodes),
            {True: "yes", False: "<b>no</b>", None: "?"}[c.fits],
            _e(fmt_bytes(c.memory_bytes)),
            _e(fmt_seconds(c.train_time_s)),
            _e(fmt_amount(c.capex)),
            _e("—" if c.energy_kwh is None else fmt_sig(c.energy_kwh)),
            _e(fmt_amount(c.tco)),
            _e(fmt_amount(c.cloud)),
            _e(_buy_or_rent(c.buy_or_rent, c.break_even_runs)),
            _e((c.verdict or "").replace("deadline ", "").replace("within budget", "in budget")),
        ]
        for c in r.candidates
    ]
    g = glossary
    headers = [
        f"{g.DEVICE.label} × {g.COUNT.label.lower()}",
        g.FITS.label,
        g.MEMORY_PER_DEVICE.label,
        g.TRAINING_TIME.label,
        f"{g.CAPEX.label} ({cur})",
        f"{g.ENERGY.label} (kWh)",
        f"{g.TCO.label} ({cur})",
        f"{g.CLOUD_COST.label} ({cur})",
        g.BUY_OR_RENT.label,
        g.VERDICT.label,
    ]
    parts += [
        _h2("Candidates"),
        _table(headers, cand_rows, [16, 5, 9, 9, 10, 8, 10, 8, 12, 13], {2, 3, 4, 5, 6, 7}),
        "<p class='note'>Capex: the devices, the machines that hold them and, across nodes, the network. TCO: "
        "capex plus energy and maintenance over the amortisation period. Cloud: one run on the same devices rented "
        "on demand at each device's dated price. Buy or rent: which costs less for the expected use, and for "
        "\u201crent\u201d the runs after which buying the same devices pays off.</p>",
        f"<p><img src='timecost.png' width='{css_px(width * 0.75)}'></p>",
    ]
    bom_rows = [
        [
            _e(b.item),
            _e(b.specification),
            _e("" if b.quantity is None else b.quantity),
            _e(fmt_money(b.unit_price, cur) if b.unit_price is not None else "—"),
            _e(fmt_money(b.total_price, cur) if b.total_price is not None else "—"),
            _e(b.reason),
        ]
        for b in r.bom
    ]
    priced = [b.total_price for b in r.bom if b.total_price is not None]
    of = f", one system: the expected use needs {r.systems}" if r.systems > 1 else ""
    total_row = (  # a bill with nothing priced (this machine, nothing fits) has no "Total 0.00"
        [
            f"<tr><td colspan='4'><b>Total (priced lines){_e(of)}</b></td>"
            f"<td align='right'><b>{_e(fmt_money(sum(priced), cur))}</b></td><td></td></tr>"
        ]
        if priced
        else []
    )
    parts += [
        _h2("Bill of materials"),
        _table(
            ["Item", "Specification", "Qty", "Unit price", "Total", "Why"],
            bom_rows,
            [12, 24, 5, 11, 11, 37],
            {2, 3, 4},
            total_row,
        ),
    ]
    parts.append(_h2("Findings"))
    if r.findings:
        parts.append(
            _table(
                ["Severity", "Finding", "Source"],
                [
                    [
                        _e(f.severity),
                        _e(f.message) + (f"<br><i>Today: {_e(f.today)}</i>" if f.today else ""),
                        _e(f.source),
                    ]
                    for f in r.findings
                ],
                [10, 60, 30],
            )
        )
    else:
        parts.append("<p>No rule fired.</p>")
    parts += [
        _h2("Assumptions"),
        _table(["Assumption", "Value and source"], [[_e(a), _e(b)] for a, b in r.assumptions], [25, 75]),
    ]
    for note in r.notes:
        parts.append(f"<p class='note'>Note: {_e(note)}</p>")
    if r.inventory_text:
        parts += [
            _h2("Appendix: the machine this report was made on"),
            f"<p style='font-family:DejaVu Sans Mono;font-size:7pt;white-space:pre-wrap'>{_e(r.inventory_text)}</p>",
        ]
    return "".join(parts), b
