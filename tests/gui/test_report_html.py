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
from core.units import fmt_sig

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
    # one run of BERT on a rented RTX 4090 costs cents: the cell shows them (it read "0")
    cand = next(c for c in rec.result.candidates if "4090" in c.device.name and c.count == 1)
    assert cand.cost.cloud_cost is not None and 0.1 < cand.cost.cloud_cost < 1.0
    assert cloud == f"{cand.cost.cloud_cost:.2f}"
    # energy as every figure (fmt_sig: three significant digits, trailing zeros dropped; it read "0.7");
    # this day of BERT on one RTX 4090 takes about 0.72 kWh (0.64 before autocast's fp32 residual stream
    # was priced)
    assert capex == "3,399" and energy == fmt_sig(cand.cost.energy_kwh) and 0.65 < float(energy) < 0.8
    assert energy != f"{cand.cost.energy_kwh:.1f}"


def test_sizings_side_by_side_read_each_workload_as_sized_and_compare_costs_in_one_currency() -> None:
    """A sizing saved by `size` stores the file as written (a preset, no training): the comparison showed
    "adam" for ResNet-50's SGD and no batch or epochs, in bold as if it differed; and a 139,464 USD candidate
    was marked the lowest TCO beside one of 1,036,662 JPY (about 6,900 USD)."""
    from gui.widgets.result_html import sizings_side_by_side_html

    def detail(i: int, doc: dict, tco: float) -> dict:
        cand = {"device": f"GPU {i}", "count": 1, "fits": True, "training_time_s": 100.0 * i, "tco": tco}
        return {"id": i, "name": f"w{i}", "workload": doc, "result": {"workload": f"w{i}", "candidates": [cand]}}

    rate = {"per_usd": 150, "date": "2026-11-20"}
    cli_saved = {"model": {"preset": "resnet-50"}, "cost": {"currency": "JPY", "exchange_rate": rate}}
    gui_saved = {
        "model": {"preset": "resnet-50"},
        "training": {"batch_size": 256, "epochs": 90, "optimizer": "sgd_momentum"},
        "cost": {"currency": "USD"},
    }
    text = sizings_side_by_side_html([detail(1, cli_saved, 1_036_662.0), detail(2, gui_saved, 139_464.0)])
    assert "<b>Optimizer</b>" not in text and "sgd_momentum" in text and "adam" not in text
    assert "<b>Batch size</b>" not in text and ">256<" in text and ">90<" in text
    assert "lowest TCO in JPY" in text and "lowest TCO in USD" in text
