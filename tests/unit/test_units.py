"""Figures as a reader sees them: never in exponent notation ("5.78e+04 kWh", "1.01e+03 KiB"), a
size that rounds up to 1,000 of a unit shown in the next unit, thousands separators above that,
and money in a table with its cents below 100 (a rental of 0.61, not "1")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.advice.recommendation import recommend
from core.hardware.catalogue import find_device, load_catalogue
from core.output.report import build_report
from core.output.report_csv import report_rows
from core.output.sizing_report import sizing_to_text
from core.spec.workload import parse_workload
from core.units import fmt_amount, fmt_bytes, fmt_count, fmt_energy, fmt_money, fmt_seconds, fmt_sig

PURCHASES = Path(__file__).resolve().parents[1] / "fixtures" / "purchases"
CATALOGUE = load_catalogue()


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1010 * 1024, "0.986 MiB"),  # was "1.01e+03 KiB"
        (1023.9 * 1024, "1 MiB"),  # was "1.02e+03 KiB"
        (999.6 * 2**20, "0.976 GiB"),  # was "1e+03 MiB"
        (706 * 2**30, "706 GiB"),
        (5.55 * 2**40, "5.55 TiB"),
        (5000 * 2**50, "5,000 PiB"),  # no unit above PiB: thousands separators
    ],
)
def test_sizes_move_to_the_next_unit_instead_of_an_exponent(n: float, text: str) -> None:
    assert fmt_bytes(n) == text


@pytest.mark.parametrize(
    ("kwh", "text"),
    [(57_812, "57,800 kWh"), (999.7, "1,000 kWh"), (1_035.8, "1,040 kWh"), (117.4, "117 kWh"), (0.574, "0.574 kWh")],
)
def test_energy_has_thousands_separators_and_three_significant_digits(kwh: float, text: str) -> None:
    assert fmt_energy(kwh) == text


def test_durations_counts_and_plain_figures_never_use_an_exponent() -> None:
    assert fmt_seconds(0.0009996) == "1 ms"  # was "1e+03 µs"
    assert fmt_seconds(0.9996) == "1 s"  # was "1e+03 ms"
    assert fmt_seconds(1234 * 86400) == "1,230 days"  # was "1.23e+03 days"
    assert fmt_count(999.7, "FLOP") == "1 kFLOP"  # was "1e+03 FLOP"
    assert fmt_count(82.6e12, "FLOP/s") == "82.6 TFLOP/s"
    assert fmt_sig(-57_812) == "-57,800" and fmt_sig(0.613) == "0.613"


@pytest.mark.parametrize(
    ("x", "text"), [(0.613, "0.61"), (64.18, "64.18"), (99.999, "100"), (3_127.4, "3,127"), (0.0033, "0.0033")]
)
def test_money_in_a_table_keeps_its_cents_below_100(x: float, text: str) -> None:
    assert fmt_amount(x) == text
    assert fmt_money(x, "EUR") == f"{text} EUR"
    assert fmt_amount(None) == "—"


def test_size_text_prints_a_large_energy_with_separators() -> None:
    # Llama-8B fine-tuned on 50 M samples on 8 H100s: about 9,400 kWh a run ("1.04e+04 kWh" before,
    # when the sharded optimizer's work was not divided among the GPUs)
    doc = json.loads((PURCHASES / "lab-llama-8b.json").read_text(encoding="utf-8"))
    doc["data"]["samples"] = 50_000_000
    doc["hardware"] = {"gpu_count": 8}
    rec = recommend(parse_workload(doc), [find_device("H100 SXM", CATALOGUE)])
    kwh = rec.result.candidates[0].cost.energy_kwh
    assert kwh is not None and 1_000 < kwh < 100_000
    line = next(x for x in sizing_to_text(rec).splitlines() if "kWh" in x)
    assert f"energy {float(f'{kwh:.3g}'):,.0f} kWh, TCO" in line
    assert "e+" not in sizing_to_text(rec)


def test_the_csv_keeps_money_and_energy_numeric() -> None:
    # BERT in a day: one RTX 4090 rents for 0.44 USD a run — the PDF shows "0.44", the CSV the number
    doc = json.loads((PURCHASES / "bert-one-day.json").read_text(encoding="utf-8"))
    rec = recommend(parse_workload(doc), [find_device(n, CATALOGUE) for n in doc["hardware"]["candidates"]])
    rows = report_rows(build_report(rec))
    header = rows[0]
    row = next(r for r in rows if r[0] == "candidates" and r[1] == "NVIDIA GeForce RTX 4090 × 1")
    cloud = row[header.index(next(h for h in header if str(h).startswith("cloud")))]
    assert isinstance(cloud, float) and 0 < cloud < 1
    assert fmt_amount(cloud) == f"{cloud:.2f}"
