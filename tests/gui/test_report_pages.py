"""The PDF's pages (reports.paginate): no table row split over two pages, no total alone at the top
of a page, no heading alone at the foot of one — on the real report of the Llama example, laid out
on pages of several heights so that the page ends fall in many places."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.advice.recommendation import recommend
from core.hardware.catalogue import find_device, load_catalogue
from core.output.report import build_report
from core.spec.workload import parse_workload

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama-8b-finetune.json"
WIDTH = 2100  # device pixels at 300 dpi: an A4 page's text width


@pytest.fixture(scope="module")
def report():
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    catalogue = load_catalogue()
    rec = recommend(parse_workload(doc), [find_device(n, catalogue) for n in doc["hardware"]["candidates"]])
    return build_report(rec)


def _document(height: int):
    from PySide6.QtCore import QSizeF
    from PySide6.QtGui import QFont, QTextDocument

    doc = QTextDocument()
    font = QFont("DejaVu Sans")
    font.setPointSizeF(9)
    doc.setDefaultFont(font)
    doc.setPageSize(QSizeF(WIDTH, height))
    doc.setDocumentMargin(0)
    return doc


@pytest.mark.parametrize("height", [900, 1150, 1400, 1750, 2300, 2900])
def test_nothing_breaks_badly_after_lay_out(qapp, report, height: int) -> None:
    from reports.paginate import Breaks, first_bad_break, lay_out
    from reports.pdf import report_blocks

    doc = _document(height)
    breaks = lay_out(doc, lambda b: report_blocks(report, WIDTH, b))
    assert first_bad_break(doc, report_blocks(report, WIDTH, breaks)[1].keep_with_previous) is None
    # and the breaks moved only what needed it: the report is at most a few pages longer
    plain = _document(height)
    plain.setHtml(report_blocks(report, WIDTH, Breaks())[0])
    assert doc.pageCount() <= plain.pageCount() + len(breaks.rows) + len(breaks.headings)


def test_page_ends_do_fall_on_rows_without_lay_out(qapp, report) -> None:
    """The check above is not empty: laid out plainly, some of these page heights split a row, leave
    a total or a heading alone."""
    from reports.paginate import Breaks, first_bad_break
    from reports.pdf import report_blocks

    bad = 0
    for height in (900, 1150, 1400, 1750, 2300, 2900):
        doc = _document(height)
        text, blocks = report_blocks(report, WIDTH, Breaks())
        doc.setHtml(text)
        bad += first_bad_break(doc, blocks.keep_with_previous) is not None
    assert bad >= 3


def test_the_bill_total_spans_its_label_columns(report) -> None:
    from reports.pdf import report_html

    text = report_html(report, WIDTH)
    assert "<td colspan='4'><b>Total (priced lines)</b></td>" in text
