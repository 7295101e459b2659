"""The CSV report: RFC 4180, UTF-8 with BOM, numbers as numbers, spreadsheet formulas neutralised."""

from __future__ import annotations

import csv
import io

from core.advice.bom import recommend_bom
from core.advice.rules import evaluate_rules
from core.estimate.sizing import size_workload
from core.hardware.catalogue import device_from_entry, find_device, load_catalogue
from core.output.report import build_report
from core.output.report_csv import neutralise, report_rows, write_csv
from core.spec.workload import parse_workload

HOSTILE = ["=cmd|' /C calc'!A0", "+SUM(A1:A9)", "-2+3+cmd", '@HYPERLINK("x")', "\tTAB", "\rCR"]


def report_for(names: list[str]):
    w = parse_workload({"name": '=HYPERLINK("http://x")', "model": {"preset": "seed-mlp"}})
    devices = [find_device("4090", load_catalogue())] + [
        device_from_entry({"name": n, "kind": "gpu", "fp32_tflops": 10, "memory_gb": 8, "price_usd": 500, "source": n})
        for n in names
    ]
    result = size_workload(w, devices)
    return build_report(result, evaluate_rules(result), recommend_bom(result))


def test_every_cell_round_trips_and_hostile_text_is_inert(tmp_path) -> None:
    report = report_for(HOSTILE)
    path = tmp_path / "r.csv"
    write_csv(report, path)
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 BOM for spreadsheets
    # one CRLF-terminated record per row: the header, the bill of materials, the candidates (the
    # hostile "\rCR" cell holds a bare CR inside quotes, which is not a record end)
    assert raw.count(b"\r\n") == 1 + len(report.bom) + len(report.candidates) and raw.endswith(b"\r\n")
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    expected = report_rows(report)
    assert [[str(c) for c in r] for r in expected] == rows  # every cell survives the round trip
    header = rows[0]
    assert header[:4] == ["section", "item", "specification", "quantity"] and "capex_USD" in header
    items = [r[1] for r in rows if r[0] == "candidates"]
    for name in HOSTILE:
        assert f"'{name} × 1" in items  # neutralised with a leading apostrophe, content kept
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "@", "\t", "\r")) and not (
                cell.startswith("-") and not _is_number(cell)
            ), cell


def test_numbers_stay_numbers() -> None:
    assert neutralise(-5) == -5 and neutralise(3.25) == 3.25
    assert neutralise("-5") == "-5" and neutralise("+1.5e3") == "+1.5e3"  # plain numbers are not formulas
    assert neutralise("-5+A1") == "'-5+A1"
    assert neutralise(None) == "" and neutralise(True) == "yes"


def test_bill_of_materials_and_candidates_sections() -> None:
    report = report_for([])
    rows = report_rows(report)
    sections = [r[0] for r in rows[1:]]
    assert sections.count("bill of materials") == len(report.bom)
    assert sections.count("candidates") == len(report.candidates) == 1
    cand = next(r for r in rows if r[0] == "candidates")
    header = rows[0]
    assert cand[header.index("capex_USD")] == 1599 + 3000
    assert cand[header.index("fits")] == "yes"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
