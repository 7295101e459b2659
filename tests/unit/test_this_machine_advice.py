"""This machine is already here: it is neither bought nor rented, and where it does the job the advice is
to use it. It read "Rent. Renting this machine (…, 2 cores) costs 0.53 USD a run" with a workload's cloud
price, and beside it a bill of a 7,350 USD server bought "for" this machine; alone, "Nothing that fits can
be bought or rented at a known price"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.advice.purchase import USE_HERE_HOURS
from core.advice.recommendation import Recommendation, recommend
from core.hardware.catalogue import DeviceSpec, find_device, load_catalogue
from core.output.sizing_report import sizing_to_text
from core.spec.workload import parse_workload
from telemetry.machine import GpuSummary, this_machine_device
from tests.machines import NO_GPU

CATALOGUE = load_catalogue()
MACHINE = NO_GPU
CPU_HERE = this_machine_device(MACHINE, CATALOGUE)
GPU_HERE = this_machine_device(
    replace(MACHINE, gpus=(GpuSummary("NVIDIA GeForce RTX 4090", 24 * 2**30, "GPU-1"),)), CATALOGUE
)
RTX_4090 = find_device("RTX 4090", CATALOGUE)


def advise(cost: dict[str, Any], devices: list[DeviceSpec], **doc: Any) -> Recommendation:
    w = parse_workload({"name": "seed", "model": {"preset": "seed-mlp"}, "cost": cost, **doc})
    return recommend(w, devices, host_ram_bytes=MACHINE.ram_total_bytes, catalogue=CATALOGUE)


def test_this_machine_is_neither_bought_nor_rented() -> None:
    rec = advise({"cloud_per_gpu_hour": 2.0}, [CPU_HERE, RTX_4090])
    here = next(c for c in rec.result.candidates if c.device.is_this_machine)
    assert here.cost.owned and here.cost.capex is None and not here.cost.capex_lines and here.cost.platform is None
    assert here.cost.cloud_cost is None and here.cost.rent_for_use is None and here.buy_or_rent == "use"
    gpu = next(c for c in rec.result.candidates if not c.device.is_this_machine)
    assert gpu.cost.cloud_cost is not None and gpu.cost.capex is not None  # the workload's price still rents a 4090


def test_where_this_machine_does_the_job_the_advice_is_to_use_it() -> None:
    rec = advise({}, [CPU_HERE, RTX_4090])
    d = rec.decision
    assert d is not None and d.verdict == "use" and d.use is not None and d.use.device is CPU_HERE
    assert rec.best is d.use
    assert d.text.startswith("Use this machine. This machine (AMD EPYC, 2 cores) × 1 trains it in")
    assert "nothing needs to be bought or rented" in d.text and "No deadline is set" in d.text
    # what a faster run would cost stays in view
    assert "For a shorter run: buying NVIDIA GeForce RTX 4090 × 1" in d.text
    # the bill: this machine, nothing priced, no server, CPU or RAM to buy for it
    (line,) = rec.bom
    assert line.spec.endswith("already here: nothing to buy") and line.total is None
    text = sizing_to_text(rec)
    assert "Recommended bill of materials (nothing to buy: this machine trains it)" in text
    assert "already here: nothing to buy or rent" in text and "Server CPU machine" not in text


def test_alone_it_is_advised_instead_of_nothing() -> None:
    d = advise({}, [CPU_HERE]).decision
    assert d is not None and d.verdict == "use" and "Nothing that fits" not in d.text


def test_a_deadline_it_misses_leaves_the_decision_to_buy_or_rent() -> None:
    rec = advise({}, [CPU_HERE, RTX_4090])
    assert rec.decision is not None and rec.decision.use is not None
    here = rec.decision.use.train_time_s
    met = advise({"deadline_hours": here * 2 / 3600}, [CPU_HERE, RTX_4090]).decision
    assert met is not None and met.verdict == "use" and f"within the deadline of {here * 2 / 3600:g} h" in met.text
    missed = advise({"deadline_hours": here / 2 / 3600}, [CPU_HERE, RTX_4090])
    assert missed.decision is not None and missed.decision.verdict in ("buy", "rent") and missed.decision.use is None
    assert missed.best is not None and missed.best.device is RTX_4090


def test_without_a_deadline_a_run_longer_than_a_day_is_not_advised_here() -> None:
    rec = advise({}, [CPU_HERE, RTX_4090], training={"epochs": 40_000})
    here = next(c for c in rec.result.candidates if c.device.is_this_machine)
    assert here.train_time_s > USE_HERE_HOURS * 3600
    assert rec.decision is not None and rec.decision.verdict in ("buy", "rent")


def test_more_of_it_than_it_has_is_neither_bought_nor_rented_as_this_machine() -> None:
    """Its GPU × 2 (it has one) was bought as a new 2-GPU system named "this machine"; two nodes of its CPU were
    rented at the workload's price per device-hour."""
    assert GPU_HERE.owned(1) and not GPU_HERE.owned(2)
    rec = advise({}, [GPU_HERE], hardware={"gpu_count": {"min": 1, "max": 2}})
    one, two = sorted(rec.result.candidates, key=lambda c: c.count)
    assert one.cost.owned and one.cost.capex is None
    assert not two.cost.owned and two.cost.capex is None and two.cost.cloud_cost is None and not two.cost.capex_lines
    assert (
        two.cost.purchase_note
        == "more than this machine has: list the catalogue's NVIDIA GeForce RTX 4090 to price more"
    )
    nodes = advise({"cloud_per_gpu_hour": 2.0}, [CPU_HERE], training={"nodes": 2}).result.candidates[0]
    assert nodes.cost.cloud_cost is None and nodes.cost.capex is None


def test_a_use_longer_than_its_life_is_not_advised_here() -> None:
    """100,000 runs of 47 min (8.8 years of training, non-stop) read "Use this machine"."""
    rec = advise({"runs": 100_000}, [GPU_HERE, RTX_4090], training={"epochs": 4000})
    here = next(c for c in rec.result.candidates if c.device.is_this_machine)
    assert here.fits and here.cost.systems_for_use > 1
    assert rec.decision is not None and rec.decision.verdict != "use" and rec.decision.use is None


def test_the_json_names_the_machine_used() -> None:
    from core.output.sizing_report import sizing_to_dict

    d = sizing_to_dict(advise({}, [CPU_HERE, RTX_4090]))["decision"]
    assert d["verdict"] == "use" and d["use"] == {"device": CPU_HERE.name, "count": 1, "nodes": 1}
