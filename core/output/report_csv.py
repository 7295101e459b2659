"""The report's bill of materials and candidate table as one CSV file with a ``section`` column.

RFC 4180 (CRLF, quotes doubled), UTF-8 with a byte-order mark so spreadsheets detect the encoding,
numbers as plain numbers with the unit in the header. A text cell that a spreadsheet would
evaluate — starting with = + - @, a tab or a carriage return, and not a plain number — is
prefixed with an apostrophe (OWASP's advice against CSV injection).
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from pathlib import Path
from typing import Any

from core.output import glossary
from core.output.report import Report
from core.storage.files import write_atomically

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """Numbers pass (whole numbers without a decimal point, whatever type computed them); text
    that a spreadsheet would run as a formula is made inert."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)  # 3000, as 1599 is written, not 3000.0
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    # a spreadsheet may read full-width ＝ ＋ － ＠ (and other compatibility forms) as their ASCII selves
    first = unicodedata.normalize("NFKC", text.lstrip(" \u3000")[:1])
    if (text.startswith(_DANGEROUS) or first.startswith(_DANGEROUS)) and not _NUMBER.match(text):
        return "'" + text
    return text


def report_rows(report: Report) -> list[list[Any]]:
    cur = report.currency
    g = glossary
    header = [
        "section",
        "item",
        "specification",
        g.COUNT.csv(cur),
        "nodes",
        f"unit_price_{cur}",
        f"total_price_{cur}",
        g.FITS.csv(cur),
        g.MEMORY_PER_DEVICE.csv(cur),
        g.CAPACITY.csv(cur),
        g.TRAINING_TIME.csv(cur),
        g.CAPEX.csv(cur),
        g.ENERGY.csv(cur),
        g.TCO.csv(cur),
        g.CLOUD_COST.csv(cur),
        g.BREAK_EVEN.csv(cur),
        g.BREAK_EVEN_RUNS.csv(cur),
        g.BUY_OR_RENT.csv(cur),
        g.VERDICT.csv(cur),
        "reason",
        "source",
    ]
    rows: list[list[Any]] = [header]
    for b in report.bom:
        rows.append(
            [
                "bill of materials",
                b.item,
                b.specification,
                b.quantity,
                None,
                b.unit_price,
                b.total_price,
                *[None] * 12,
                b.reason,
                b.source,
            ]
        )
    for c in report.candidates:
        rows.append(
            [
                "candidates",
                f"{c.device} × {c.count}" + (f" per node × {c.nodes} nodes" if c.nodes > 1 else ""),
                c.device,
                c.count,
                c.nodes,
                None,
                None,
                c.fits,
                round(c.memory_bytes / 2**30, 3),
                None if c.capacity_bytes is None else round(c.capacity_bytes / 2**30, 3),
                # six significant digits: rounded to four decimals, runs of 1.98 s and 1.94 s read 0.0006 and 0.0005
                float(f"{c.train_time_s / 3600:.6g}"),
                None if c.capex is None else round(c.capex, 2),  # as the TCO (it read 151744.80000000002)
                None if c.energy_kwh is None else round(c.energy_kwh, 3),
                None if c.tco is None else round(c.tco, 2),
                None if c.cloud is None else round(c.cloud, 2),
                None if c.break_even_h is None else round(c.break_even_h, 1),
                c.break_even_runs,
                c.buy_or_rent,
                c.verdict,
                None,
                None,
            ]
        )
    if report.decision is not None:  # buy, rent or use: a spreadsheet reader could not tell which
        verdict, text = report.decision
        rows.append(["decision", verdict, text, *[None] * 16, None, "core/advice/purchase.py (docs/advice.md §4)"])
    return [[neutralise(v) for v in row] for row in rows]


def report_to_csv(report: Report) -> str:
    return rows_to_csv(report_rows(report))


def rows_to_csv(rows: list[list[Any]]) -> str:
    """RFC 4180 text of ``rows``, each cell neutralised."""
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\r\n").writerows([[neutralise(v) for v in row] for row in rows])
    return buf.getvalue()


def write_csv(report: Report, path: Path) -> None:
    """Write the CSV whole or not at all (core.storage.files.write_atomically)."""
    write_rows_csv(report_rows(report), path)


def write_rows_csv(rows: list[list[Any]], path: Path) -> None:
    """Write ``rows`` as CSV whole or not at all, UTF-8 with a byte-order mark."""
    text = rows_to_csv(rows)
    write_atomically(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8-sig", newline=""))
