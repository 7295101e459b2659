"""The PDF's candidate table as laid out (reports.pdf.report_html): money with its cents below 100,
energy without an exponent — the CSV keeps the numbers (tests/unit/test_units.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from core.advice.recommendation import recommend
from core.hardware.catalogue import find_device, load_catalogue
from core.output.report import build_report
from core.spec.workload import parse_workload

PURCHASES = Path(__file__).resolve().parents[1] / "fixtures" / "purchases"


def test_the_cloud_column_shows_cents_below_100() -> None:
    from reports.pdf import report_html

    doc = json.loads((PURCHASES / "bert-one-day.json").read_text(encoding="utf-8"))
    catalogue = load_catalogue()
    rec = recommend(parse_workload(doc), [find_device(n, catalogue) for n in doc["hardware"]["candidates"]])
    html = report_html(build_report(rec), 2000)
    table = html.split("<h2>Candidates</h2>")[1].split("</table>")[0]
    row = next(r for r in table.split("<tr") if "GeForce RTX 4090&nbsp;×&nbsp;1" in r)  # never wrapped before its count
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    # device, fits, memory, time, capex, energy, TCO, cloud, buy or rent, verdict
    capex, energy, cloud = cells[4], cells[5], cells[7]
    assert cloud == "0.41"  # one run of BERT on a rented RTX 4090 (GPU kernel model; 0.44 before): it read "0"
    # energy read "0.7" (0.741 before the GPU kernel model and the host side)
    assert capex == "3,399" and energy == "0.697"
