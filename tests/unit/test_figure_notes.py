"""A figure's tooltip says what it is made of, with the figure's own parts (the capex, TCO and training-time
cells of the wizard's table repeated the device's datasheet source)."""

from __future__ import annotations

import re

import pytest

from core.estimate.sizing import size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.output.figure_notes import capex_note, tco_note, time_note
from core.spec.workload import parse_workload
from core.units import fmt_seconds


def amounts(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def test_the_notes_add_up_to_their_figures() -> None:
    w = parse_workload({"name": "s", "model": {"preset": "seed-mlp"}})
    (c,) = size_workload(w, [find_device("RTX 4090", load_catalogue())]).candidates
    capex = capex_note(c)
    assert capex.startswith("Capex 3,399 USD = 1 × NVIDIA GeForce RTX 4090 at 1,900 + 1 × Desktop")
    assert sum(line.total for line in c.cost.capex_lines) == pytest.approx(c.cost.capex)
    tco = tco_note(c)
    assert c.cost.tco is not None and tco.startswith(f"TCO {c.cost.tco:,.0f} USD = capex 3,399 + energy ")
    total, capex_part, energy, maintenance = amounts(tco.split(" over ")[0])
    # each part from the workload's terms, not from the TCO less the others
    k = w.cost
    assert c.cost.power_w is not None and c.cost.maintenance is not None
    hours = 8760 * k.amortisation_years
    assert energy == pytest.approx(c.cost.power_w * k.utilisation * k.pue / 1000 * k.electricity_per_kwh * hours, abs=1)
    assert maintenance == pytest.approx(3399 * k.maintenance_percent / 100 * k.amortisation_years, abs=1)
    assert capex_part + energy + maintenance == pytest.approx(total, abs=2)
    time = time_note(c, 400)
    assert time == (
        f"Training time {fmt_seconds(c.train_time_s)} = {c.steps_per_epoch:,} steps an epoch × 400 epochs × "
        f"{fmt_seconds(c.step.step_s)} a step"
    )


def test_a_scaling_models_time_is_not_read_as_more_epochs() -> None:
    """ResNet-50's 90 epochs on 4 × RTX 4090 under Wünsche's CNTK scaling read "× 146 epochs" (the time divided by
    the step's)."""
    doc = {
        "name": "r",
        "model": {"preset": "resnet-50"},
        "training": {"epochs": 90, "scaling_model": "wuensche-cntk"},
        "hardware": {"gpu_count": 4},
    }
    (c,) = size_workload(parse_workload(doc), [find_device("RTX 4090", load_catalogue())]).candidates
    note = time_note(c, 90)
    assert "scaling model (training.scaling_model, Wünsche 2016) scales one device's time to 4" in note
    assert "× 90 epochs ×" in note and "146" not in note
