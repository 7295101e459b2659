"""Keeping the PDF's rows, totals and headings together across pages.

QTextDocument lays HTML out on pages, but it splits a table row whose cells wrap over a page's end
("GeForce RTX 4090 ×" at the foot of one page, "2" on the next), leaves a heading alone at the
foot of a page, and moves a total row to the next page on its own. The report's tables and
headings are built by `Blocks`, which numbers them; `lay_out` lays the document out, finds the
first row or heading that breaks badly, and builds the HTML again with a page break before it (the
table split in two, its header repeated), until nothing breaks badly."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtGui import QTextBlock, QTextDocument, QTextTable

# space under a table, so that the next heading does not touch it (QTextDocument drops a heading's
# top margin after a table)
GAP = "<p style='margin:0;font-size:5pt'>&nbsp;</p>"
MAX_PASSES = 60


@dataclass(frozen=True)
class Breaks:
    """Page breaks to put before data rows and headings, by their number in the document."""

    rows: frozenset[int] = frozenset()
    headings: frozenset[int] = frozenset()


@dataclass
class Blocks:
    """Builds the report's headings and tables, numbering their data rows and headings in document
    order, with a page break before those in ``breaks``."""

    breaks: Breaks = field(default_factory=Breaks)
    rows: int = 0
    headings: int = 0
    keep_with_previous: set[int] = field(default_factory=set)  # rows (totals) not to open a page alone

    def heading(self, text: str) -> str:
        n, self.headings = self.headings, self.headings + 1
        style = " style='page-break-before:always'" if n in self.breaks.headings else ""
        return f"<h2{style}>{html.escape(text)}</h2>"

    def table(
        self,
        headers: list[str],
        rows: list[list[str]],
        widths: list[int] | None = None,
        right: set[int] | None = None,
        totals: list[str] | None = None,
    ) -> str:
        """A table whose header row repeats on every page it spans. ``rows``: cells as HTML;
        ``totals``: whole ``<tr>`` rows after them (a total spanning columns) that never open a
        page alone."""
        right = right or set()
        head = "".join(
            f"<th align='{'right' if i in right else 'left'}'"
            + (f" width='{widths[i]}%'" if widths else "")
            + f">{html.escape(h)}</th>"
            for i, h in enumerate(headers)
        )

        def cell(i: int, c: str) -> str:
            # a figure is never split over two lines: "43,884,000 JPY" broke after its second comma and read
            # "43,884,00"
            if i in right:
                return f"<td align='right' style='white-space:nowrap'>{c}</td>"
            return f"<td align='left'>{c}</td>"

        trs = ["<tr>" + "".join(cell(i, c) for i, c in enumerate(r)) + "</tr>" for r in rows]
        for t in totals or []:
            self.keep_with_previous.add(self.rows + len(trs))
            trs.append(t)
        segments: list[list[str]] = [[]]
        for tr in trs:
            if self.rows in self.breaks.rows and segments[-1]:
                segments.append([])
            segments[-1].append(tr)
            self.rows += 1
        return (
            "".join(
                "<table width='100%' cellspacing='0' cellpadding='4' border='0.5' style='border-color:#999"
                + (";page-break-before:always" if i else "")
                + f"'><thead><tr style='background-color:#e8ecf2'>{head}</tr></thead>{''.join(seg)}</table>"
                for i, seg in enumerate(segments)
            )
            + GAP
        )


def lay_out(doc: QTextDocument, build: Callable[[Breaks], tuple[str, Blocks]]) -> Breaks:
    """Set ``doc``'s HTML from ``build`` and add page breaks until no row is split over two pages,
    no total opens a page alone and no heading ends a page; returns the breaks it needed."""
    breaks = Breaks()
    text, blocks = build(breaks)
    doc.setHtml(text)
    for _ in range(MAX_PASSES):
        fix = first_bad_break(doc, blocks.keep_with_previous)
        if fix is None:
            break
        kind, n = fix
        breaks = (
            Breaks(breaks.rows | {n}, breaks.headings) if kind == "row" else Breaks(breaks.rows, breaks.headings | {n})
        )
        text, blocks = build(breaks)
        doc.setHtml(text)
    return breaks


def first_bad_break(doc: QTextDocument, keep_with_previous: set[int] = frozenset()) -> tuple[str, int] | None:
    """The first data row (``("row", n)``) or heading (``("heading", n)``) in document order that
    needs a page break before it: a row that starts on one page and ends on the next (unless it is
    taller than a page), the row above a total that opens a page alone, a heading whose next block
    is on the next page. None when the layout is good."""
    page_h = doc.pageSize().height()
    layout = doc.documentLayout()

    def page(y: float) -> int:
        return int(y // page_h)

    found: list[tuple[float, str, int]] = []
    n = 0
    for frame in doc.rootFrame().childFrames():
        if not isinstance(frame, QTextTable):
            continue
        spans = []
        for r in range(1, frame.rows()):  # row 0: the header, repeated on each page
            cells = [frame.cellAt(r, c) for c in range(frame.columns())]
            top = min(layout.blockBoundingRect(c.firstCursorPosition().block()).top() for c in cells)
            bottom = max(layout.blockBoundingRect(c.lastCursorPosition().block()).bottom() for c in cells)
            spans.append((n, top, bottom))
            n += 1
        for i, (k, top, bottom) in enumerate(spans):
            if page(top) != page(bottom - 1) and bottom - top < page_h * 0.9:
                found.append((top, "row", k))
            if k in keep_with_previous and i > 1 and page(spans[i - 1][1]) != page(top):
                found.append((spans[i - 1][1], "row", spans[i - 1][0]))
    h = 0
    block: QTextBlock = doc.begin()
    while block.isValid():
        if block.blockFormat().headingLevel() == 2:
            nxt = block.next()
            while nxt.isValid() and not nxt.text().strip():
                nxt = nxt.next()
            top = layout.blockBoundingRect(block).top()
            if nxt.isValid() and page(layout.blockBoundingRect(nxt).bottom() - 1) != page(top):
                found.append((top, "heading", h))
            h += 1
        block = block.next()
    if not found:
        return None
    _, kind, k = min(found)
    return kind, k
