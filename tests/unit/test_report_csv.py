"""The CSV report: RFC 4180, UTF-8 with BOM, numbers as numbers, spreadsheet formulas neutralised."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from core.advice.recommendation import recommend
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
    return build_report(recommend(w, devices))


def test_every_cell_round_trips_and_hostile_text_is_inert(tmp_path) -> None:
    report = report_for(HOSTILE)
    path = tmp_path / "r.csv"
    write_csv(report, path)
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 BOM for spreadsheets
    # one CRLF-terminated record per row: the header, the bill of materials, the candidates, the decision (the
    # hostile "\rCR" cell holds a bare CR inside quotes, which is not a record end)
    assert report.decision is not None
    assert raw.count(b"\r\n") == 1 + len(report.bom) + len(report.candidates) + 1 and raw.endswith(b"\r\n")
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
            assert not (_is_number(cell) and cell.endswith(".0")), cell
            assert not cell.startswith(("=", "+", "@", "\t", "\r")) and not (
                cell.startswith("-") and not _is_number(cell)
            ), cell


def test_numbers_stay_numbers() -> None:
    assert neutralise(-5) == -5 and neutralise(3.25) == 3.25
    # a whole amount reads as 1599 does, whatever computed it: not "3000.0" beside "1599"
    assert str(neutralise(3000.0)) == "3000" and str(neutralise(1599)) == "1599"
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
    assert cand[header.index("capex_USD")] == sum(
        r[header.index("total_price_USD")] or 0 for r in rows[1:] if r[0] == "bill of materials"
    )
    assert cand[header.index("fits")] == "yes"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_every_output_names_a_figure_as_the_glossary_does(cli, write_json, seed_doc, tmp_path) -> None:
    from core.output.glossary import CANDIDATE_TERMS

    code, out, err = cli("size", str(write_json(seed_doc)), "--candidate", "4090", "--json", "--no-save")
    assert code == 0, err
    (cand,) = json.loads(out)["candidates"]
    assert [t.json_key for t in CANDIDATE_TERMS if t.json_key not in cand] == []
    assert cand["training_time_s"] == pytest.approx(cand["step_time_s"] * 159 * 400) and cand["verdict"] == ""
    code, _, err = cli("report", str(write_json(seed_doc)), "--candidate", "4090", "--csv", str(tmp_path / "r.csv"))
    assert code == 0, err
    header = next(csv.reader(io.StringIO((tmp_path / "r.csv").read_text(encoding="utf-8-sig"))))
    wanted = [t.csv("USD") for t in CANDIDATE_TERMS if t.csv_header]
    assert [h for h in wanted if h not in header] == []
    assert "memory_per_device_GiB" in header and "peak_memory_GiB" not in header
    glossary = (Path(__file__).resolve().parents[2] / "docs" / "glossary.md").read_text()
    assert all(t.label in glossary and f"`{t.json_key}`" in glossary for t in CANDIDATE_TERMS)


def test_short_runs_keep_their_figures_in_the_csv_and_the_summary() -> None:
    """Rounded to four decimals of an hour, runs of 1.98 s and 1.94 s read 0.0006 and 0.0005 (ranked the wrong
    way); capex came unrounded (151744.80000000002); the summary said "(0.0 device-hours)" for 2.81 minutes."""
    report = report_for([])
    rows = [r for r in report_rows(report) if r[0] == "candidates"]
    header = report_rows(report)[0]
    hours = header.index("training_time_h")
    capex = header.index("capex_USD")
    for row, c in zip(rows, report.candidates, strict=True):
        assert row[hours] == pytest.approx(c.train_time_s / 3600, rel=1e-5) and row[hours] > 0
        assert row[capex] is None or row[capex] == round(row[capex], 2)
    best = min(report.candidates, key=lambda c: c.train_time_s)
    assert best.train_time_s < 600 and "(0.0 device-hours)" not in report.summary
    assert "device-hours" in report.summary


def test_the_decision_and_every_node_are_in_the_csv() -> None:
    """A spreadsheet reader could not tell whether to buy or rent, nor that "× 4" was per node of two."""
    doc = json.loads((Path(__file__).resolve().parents[2] / "examples" / "llama-8b-finetune.json").read_text())
    doc["training"]["nodes"] = 2
    rec = recommend(parse_workload(doc), [find_device("A100 80GB", load_catalogue())])
    rows = report_rows(build_report(rec))
    header = rows[0]
    assert header[3:5] == ["quantity", "nodes"] and all(len(r) == len(header) for r in rows)
    cands = [r for r in rows if r[0] == "candidates"]
    assert cands and all(r[4] == 2 and r[1].endswith(" per node × 2 nodes") for r in cands)
    (decision,) = [r for r in rows if r[0] == "decision"]
    assert rec.decision is not None and decision[1:3] == [rec.decision.verdict, rec.decision.text]
