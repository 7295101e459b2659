"""The PDF report rendered offscreen: pages, embedded fonts, figures equal to `size --json`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.units import fmt_bytes, fmt_seconds

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is installed by .ci/run")


def test_cli_report_pdf_and_csv_match_the_sizing(tmp_path: Path, cli) -> None:
    workload = ROOT / "examples/llama-8b-finetune.json"
    pdf, csv_path = tmp_path / "r.pdf", tmp_path / "r.csv"
    code, out, err = cli(
        "report", str(workload), "--pdf", str(pdf), "--csv", str(csv_path), "--author", "A. Buyer", "--page-size", "a4"
    )
    assert code == 0, err
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    pages = int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))
    assert 3 <= pages <= 8 and "(A4)" in info
    assert any(line.split(":", 1)[1].strip() == "A. Buyer" for line in info.splitlines() if line.startswith("Author:"))
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True).stdout.splitlines()[2:]
    assert fonts and all(line.split()[-5] == "yes" for line in fonts)  # every font embedded
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True).stdout
    code, out, _ = cli("size", str(workload), "--json", "--no-save")
    doc = json.loads(out)
    advised = doc["recommended"]
    best = next(c for c in doc["candidates"] if (c["device"], c["count"]) == (advised["device"], advised["count"]))
    mode = "rent " if advised.get("verdict") == "rent" else ""
    assert f"Recommended: {mode}{best['device']} × {best['count']}." in " ".join(text.split())
    assert f"{doc['parameters']:,}" in text
    assert f"{best['capex']:,.0f}" in text
    assert fmt_bytes(best["memory_per_device"]["total"]) in text
    assert fmt_seconds(best["training_time_s"]) in text
    assert "A. Buyer" in text and f"Page {pages} of {pages}" in text
    for finding in doc["rules"][:3]:
        assert finding["source"].split(",")[0] in text
    assert csv_path.read_bytes().startswith(b"\xef\xbb\xbf")


def test_wizard_exports_the_report(qtbot, tmp_path: Path) -> None:
    from core.storage.store import Store
    from gui.main_window import MainWindow

    w = MainWindow(Store.open(None))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.sizing_tab.machine is not None, timeout=5000)
    wiz = w.sizing_tab
    wiz.go(5)
    pdf = tmp_path / "seed.pdf"
    assert wiz.export_report(pdf)
    assert pdf.exists() and pdf.with_suffix(".csv").exists()
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
    assert "569,354" in text and "NVIDIA GeForce RTX 4090" in text
    missing = tmp_path / "missing-dir"
    assert not wiz.export_report(missing / "x.pdf")
    assert (
        wiz.message.text()
        == f"The report was not written: {missing / 'x.csv'} cannot be written: the folder {missing} does not exist"
    )
    assert not missing.exists()


SECTIONS = (
    "Summary",
    "Requirements",
    "Seed formulas (as published)",
    "Candidates",
    "Bill of materials",
    "Findings",
    "Assumptions",
    "Appendix: the machine this report was made on",
)


def test_report_without_a_display_runs_as_a_script(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TRAINRIG_DB": str(tmp_path / "db.db")}

    def main_py(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    pdf = tmp_path / "a.pdf"
    out = main_py("report", "examples/seed-mlp.json", "-c", "4090", "--pdf", str(pdf), "--page-size", "a4")
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    pages = int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))
    assert out.strip() == f"wrote {pdf} ({pages} pages)" and pages >= 3 and "(A4)" in info
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
    flat = " ".join(text.split())  # pdftotext breaks lines where the PDF does
    # what a buyer reads is what `size --json` computes for the same workload and candidate
    doc = json.loads(main_py("size", "examples/seed-mlp.json", "-c", "4090", "--json", "--no-save"))
    (c,) = doc["candidates"]
    assert c["device"] == "NVIDIA GeForce RTX 4090" and c["count"] == 1 and c["fits"]
    accelerator = next(line["spec"] for line in doc["recommendation"] if line["item"] == "Accelerator")
    assert accelerator == "NVIDIA GeForce RTX 4090 × 1"
    # the decision is to rent the card (0.34 USD an hour against 3,399 USD to buy it): the summary leads with that
    assert doc["decision"]["verdict"] == "rent" and doc["recommended"]["verdict"] == "rent"
    assert (
        "Recommended: rent NVIDIA GeForce RTX 4090 × 1. It trains the workload in " + fmt_seconds(c["training_time_s"])
        in flat
    )
    # the card in its machine, had it been bought
    assert f"Bought, the hardware would cost {c['capex']:,.0f} USD as 1 × Desktop (1–2 PCIe GPUs)" in flat
    assert doc["decision"]["text"].split(".")[0] in flat  # buy or rent, as `size` decides it
    assert f"total cost of ownership over 3 years {c['tco']:,.0f} USD" in flat
    assert f"needing {fmt_bytes(c['memory_per_device']['total'])} per device" in flat
    assert f"{doc['parameters']:,}" in flat
    lines = text.splitlines()
    assert [t for t in SECTIONS if t in lines] == list(SECTIONS)  # every section, each as its own heading
    assert f"Page {pages} of {pages}" in flat


def test_unwritable_report_paths_exit_2_with_a_message(tmp_path: Path, cli) -> None:
    workload = str(ROOT / "examples/seed-mlp.json")
    code, _, err = cli("report", workload, "-c", "4090", "--csv", str(tmp_path / "no" / "r.csv"))
    assert code == 2 and "cannot be written" in err
    code, _, err = cli("report", workload, "-c", "4090", "--pdf", str(tmp_path / "no" / "r.pdf"))
    assert code == 2 and "cannot be written" in err


def test_a_pdf_that_cannot_be_written_whole_is_not_written(tmp_path: Path, cli, monkeypatch) -> None:
    workload = str(ROOT / "examples/seed-mlp.json")
    out = tmp_path / "out"
    out.mkdir()
    same = out / "r.pdf"
    code, stdout, err = cli("report", workload, "-c", "4090", "--pdf", str(same), "--csv", str(same))
    assert code == 2 and stdout == "" and "--pdf and --csv name the same file" in err
    code, stdout, err = cli("report", workload, "-c", "4090", "--pdf", str(out))
    assert code == 2 and stdout == "" and err.strip() == f"trainrig report: {out} is a folder; give a file name"
    old = out / "old.pdf"
    old.write_bytes(b"%PDF-1.4 the old report %%EOF")
    import reports.pdf

    def cut_short(report, path, page_size=None):  # what a full disk did: the PDF stopped at 64 KiB
        path.write_bytes(b"%PDF-1.4 " + b"x" * 65_536)
        return 3

    monkeypatch.setattr(reports.pdf, "render_pdf", cut_short)
    code, stdout, err = cli("report", workload, "-c", "4090", "--pdf", str(old))
    assert code == 2 and "wrote" not in stdout
    assert err.strip() == (
        f"trainrig report: {old} cannot be written: it came out incomplete (is the disk full?); it was left as it was"
    )
    assert old.read_bytes() == b"%PDF-1.4 the old report %%EOF" and sorted(p.name for p in out.iterdir()) == ["old.pdf"]


def test_every_candidates_figures_are_whole_in_a_yen_report(tmp_path: Path, cli) -> None:
    """Eight-digit amounts broke after a comma in the candidates table ("43,884,00" above a "0")."""
    doc = {
        "name": "gpt JPY",
        "model": {"preset": "gpt2-small"},
        "hardware": {"candidates": ["H100 SXM", "4090"], "gpu_count": {"min": 1, "max": 8}},
        "cost": {"currency": "JPY", "exchange_rate": {"per_usd": 150, "date": "2026-11-20"}},
    }
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(doc))
    pdf = tmp_path / "r.pdf"
    code, _, err = cli("report", str(workload), "--pdf", str(pdf))
    assert code == 0, err
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True).stdout
    code, out, _ = cli("size", str(workload), "--json", "--no-save")
    sized = json.loads(out)["candidates"]
    assert max(c["capex"] for c in sized) >= 10_000_000  # eight digits and more
    for c in sized:
        assert f"{c['capex']:,.0f}" in text and f"{c['tco']:,.0f}" in text, (c["device"], c["count"])
