"""A finished local run feeds this machine's next sizing: its measured step over the prediction
scales the CPU's work (SPEC 6.4: efficiencies corrected by past runs on the device)."""

from __future__ import annotations

import json

import pytest

from core.estimate.calibration import run_feedback
from core.spec.workload import parse_workload
from core.storage.store import Store


def run(measured: float, predicted: float, scale: float = 1.0, model: str = "mlp", **extra) -> dict:
    return {
        "kind": "trained",
        "status": "finished",
        "device": "cpu",
        "prediction": {"step_s": predicted, "run_scale": scale, "model_key": model},
        "measured": {"median_step_s": measured},
        **extra,
    }


def test_the_median_ratio_of_the_latest_runs_undoing_earlier_corrections() -> None:
    runs = [
        run(0.030, 0.010),  # 3.0
        run(0.040, 0.020, scale=2.0),  # its prediction was already × 2: uncorrected 0.010, so 4.0
        run(0.020, 0.010),  # 2.0
        run(0.500, 0.010),  # 50: clipped to 5
        run(0.010, 0.010, status="failed"),  # ignored: did not finish
        run(0.010, 0.010, device="cuda:0"),  # ignored: not this machine's CPU
        run(0.010, 0.010, model="lenet"),  # ignored: another network
    ]
    assert run_feedback(runs, "mlp") == {"run_scale": pytest.approx(3.5), "runs": 4}  # median of 2, 3, 4, 5
    assert run_feedback(runs[:3], "mlp") == {"run_scale": pytest.approx(3.0), "runs": 3}
    assert run_feedback([run(0.010, 0.010, status="cancelled")], "mlp") is None
    assert run_feedback(runs, "lenet") == {"run_scale": pytest.approx(1.0), "runs": 1}
    assert run_feedback(runs, "resnet") is None


def test_size_of_this_machine_uses_what_its_runs_measured(cli, write_json, seed_doc, tmp_path) -> None:
    db = tmp_path / "t.db"
    path = str(write_json(seed_doc))
    code, out, err = cli("--db", str(db), "size", path, "-c", "this-machine", "--json", "--no-save")
    assert code == 0, err
    before = json.loads(out)["candidates"][0]
    key = parse_workload(seed_doc).model_key
    store = Store.open(db)
    for name, model_key in (("seed MLP", key), ("another network", "0" * 16)):
        prediction = {"step_s": before["step_time_s"], "model_key": model_key}
        rid = store.start_run("trained", name, device="cpu", prediction=prediction)
        ratio = 1.6 if model_key == key else 0.3  # the other network's run must not count
        store.finish_run(rid, "finished", measured={"median_step_s": ratio * before["step_time_s"]})
    store.close()
    code, out, err = cli("--db", str(db), "size", path, "-c", "this-machine", "--json", "--no-save")
    after = json.loads(out)["candidates"][0]
    # the CPU's work is scaled; the input pipeline (from the page cache here) is not
    assert after["step_time_s"] == pytest.approx(1.6 * before["step_time_s"], rel=0.02)
    assert any(
        "corrected by 1 local training run(s) on this machine: they measured 1.60 ×" in a for a in after["assumptions"]
    )
