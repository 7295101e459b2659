"""Process scaling (`experiment --processes 1,2`): speed-ups and the training-time cut per doubling,
Wünsche 2016's published cuts as expected times, the verdict against the published range, and a
real 1-vs-2-process run of the seed MLP on this CPU (the second through torchrun, DDP over gloo)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.output.scaling import (
    SOURCE,
    cut_per_doubling,
    published_cuts,
    scaling_rows,
    scaling_text,
    speed_up,
    verdict,
    wuensche_expected,
)
from core.storage.store import Store
from telemetry.process_scaling import NO_CPU_MODEL, usable_cpus

SEED_MLP = Path(__file__).resolve().parents[2] / "examples" / "seed-mlp.json"


def test_the_published_cuts_are_wuensches_three_groups() -> None:
    assert published_cuts() == {"CNTK/MXNet": 0.35, "Caffe": 0.28, "Torch/TensorFlow": 0.10}
    assert "Wünsche 2016" in SOURCE and "35 %" in SOURCE and "10 %" in SOURCE


def test_wuensches_expected_times_compound_per_doubling() -> None:
    # 100 s on one GPU: CNTK 65 s on two, 42.25 s on four; Torch 90 s and 81 s
    two, four = wuensche_expected(100.0, 2), wuensche_expected(100.0, 4)
    assert two["CNTK/MXNet"] == pytest.approx(65.0) and four["CNTK/MXNet"] == pytest.approx(42.25)
    assert two["Caffe"] == pytest.approx(72.0) and four["Caffe"] == pytest.approx(51.84)
    assert two["Torch/TensorFlow"] == pytest.approx(90.0) and four["Torch/TensorFlow"] == pytest.approx(81.0)
    assert wuensche_expected(100.0, 1)["Caffe"] == pytest.approx(100.0)


def test_the_cut_per_doubling_inverts_the_expectation() -> None:
    assert cut_per_doubling(100.0, 65.0, 1, 2) == pytest.approx(0.35)
    assert cut_per_doubling(100.0, 42.25, 1, 4) == pytest.approx(0.35)  # two doublings
    assert cut_per_doubling(7.2, 5.4, 2, 4) == pytest.approx(0.25)
    assert cut_per_doubling(10.0, 12.0, 1, 2) == pytest.approx(-0.20)  # slower with more processes
    assert speed_up(100.0, 65.0) == pytest.approx(1.538, abs=1e-3)
    with pytest.raises(ValueError):
        cut_per_doubling(10.0, 8.0, 2, 2)


def _run(t: float, step: float, shares: tuple[float, ...] = (), status: str = "finished") -> dict:
    ranks = [
        {"rank": i, "median_step_s": step, "allreduce_s": s * step, "allreduce_share": s} for i, s in enumerate(shares)
    ]
    metrics = {"training_time_s": t, "median_step_s": step, "epoch_s": [t / 2, t / 2], "ranks": ranks}
    return {"status": status, "metrics": metrics, "threads": 2}


def test_rows_give_speed_ups_cuts_predictions_and_expectations() -> None:
    runs = [(1, _run(10.0, 0.050)), (2, _run(7.2, 0.036, (0.10, 0.12))), (4, _run(5.4, 0.027, (0.2,) * 4))]
    rows = scaling_rows(runs, {1: 0.05, 2: 0.03, 4: None}, {4: NO_CPU_MODEL})
    one, two, four = rows
    assert (one.ranks, two.ranks, four.ranks) == (1, 2, 4)
    assert one.speed_up == pytest.approx(1.0) and one.cut_from_previous is None
    assert two.speed_up == pytest.approx(10 / 7.2) and two.cut_from_previous == pytest.approx(0.28)
    assert four.cut_from_previous == pytest.approx(0.25)  # 7.2 s → 5.4 s from 2 to 4
    assert two.allreduce_share == pytest.approx(0.12)  # the slowest rank's
    assert two.epoch_s == pytest.approx(3.6)
    assert two.predicted_speed_up == pytest.approx(0.05 / 0.03) and four.predicted_speed_up is None
    assert four.prediction_note == NO_CPU_MODEL
    assert four.wuensche_s["CNTK/MXNet"] == pytest.approx(4.225)
    # 1 → 4: (5.4 / 10)^(1/2) = 0.735 a doubling, a 26.5 % cut: Caffe's 28 % is nearest
    assert verdict(rows) == (
        "measured cut per doubling 1 → 4 processes: +27% (training time 10 s → 5.4 s); published 10%–35%: "
        "within the published range, closest to Caffe (28%)"
    )
    text = scaling_text(rows)
    assert "Wünsche: CNTK/MXNet 35% / Caffe 28% / Torch/TensorFlow 10%" in text
    assert "sizing, 4 process(es): not modelled" in text


def test_verdicts_below_and_above_the_published_range() -> None:
    slower = scaling_rows([(1, _run(10.0, 0.05)), (2, _run(12.0, 0.06, (0.3, 0.3)))], {}, {})
    assert verdict(slower).endswith(
        "-20% (training time 10 s → 12 s); published 10%–35%: below the published range (more processes were slower)"
    )
    faster = scaling_rows([(1, _run(10.0, 0.05)), (2, _run(5.0, 0.025, (0.01, 0.01)))], {}, {})
    assert verdict(faster).endswith("above the published range")


def test_a_failed_count_has_no_figures_and_no_verdict() -> None:
    rows = scaling_rows([(1, _run(10.0, 0.05)), (2, _run(0, 0, status="failed"))], {1: 0.05}, {})
    assert rows[1].status == "failed" and rows[1].training_time_s is None and rows[1].speed_up is None
    assert verdict(rows).startswith("no verdict")


pytestmark_posix = pytest.mark.skipif(os.name != "posix", reason="process groups and signals as on POSIX")


@pytestmark_posix
def test_one_and_two_processes_of_the_seed_mlp_are_tabulated(cli, _isolated_db) -> None:
    code, out, err = cli(
        "experiment", str(SEED_MLP), "--processes", "1,2", "--epochs", "1", "--samples", "400", "--json"
    )
    assert code == 0, out + err
    assert "run 2/2 (2 processes)" in err
    summary = json.loads(out[out.index("{") :])
    one, two = summary["rows"]
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["status"] == two["status"] == "finished"
    assert (one["ranks"], two["ranks"]) == (1, 2)
    assert one["training_time_s"] > 0 and two["training_time_s"] > 0 and two["allreduce_share"] > 0
    assert one["speed_up"] == pytest.approx(1.0) and two["speed_up"] > 0
    assert set(two["wuensche_s"]) == {"CNTK/MXNet", "Caffe", "Torch/TensorFlow"}
    assert one["predicted_step_s"] > 0  # the sizing's one CPU
    assert two["predicted_step_s"] is None and two["prediction_note"] == NO_CPU_MODEL
    assert summary["verdict"].startswith("measured cut per doubling 1 → 2 processes")
    assert "Wünsche 2016" in summary["source"]
    store = Store.open(_isolated_db)
    exp = store.experiment(summary["experiment_id"])
    assert exp["kind"] == "scaling" and exp["status"] == "finished" and exp["run_ids"] == summary["run_ids"]
    second = store.run(summary["run_ids"][1])
    assert second["workload"]["launch"]["nproc_per_node"] == 2 and second["metrics"]["world_size"] == 2
    assert second["workload"]["trainer"]["batch_size"] == 512  # the same global batch, split by the trainer


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ("0,1", "a count is 1 or more"),
        ("1,two", "'two' is not one"),
        ("1,1", "repeats a count"),
        ("2,4", "compares 1 process (the baseline)"),
        (f"1,{usable_cpus() + 1}", f"is more than the {usable_cpus()} CPUs"),
    ],
)
def test_bad_process_counts_are_refused_before_anything_runs(cli, _isolated_db, counts, message) -> None:
    code, out, err = cli("experiment", str(SEED_MLP), "--processes", counts)
    assert code == 2 and message in err, out + err
    assert "Traceback" not in err
    assert Store.open(_isolated_db).runs() == []


def test_on_a_gpu_the_sizing_predicts_each_count_as_that_many_devices(monkeypatch, seed_doc) -> None:
    """This machine sized as its H100: the sizing's step for 1, 2 and 4 of them, all-reduce included;
    on the CPU the same machine has no prediction (the runs would not be on the sized device)."""
    from dataclasses import replace

    import telemetry.process_scaling as ps
    from core.advice.recommendation import recommend
    from core.hardware.catalogue import find_device, load_catalogue
    from core.spec.workload import parse_workload

    h100 = replace(find_device("H100 SXM", load_catalogue()), name="this machine (H100)", origin="this-machine")
    monkeypatch.setattr(ps, "recommend_here", lambda w, _names, _store: (recommend(w, [h100]), [h100], None, {}))
    workload = parse_workload(seed_doc)
    predictions, notes = ps.scaling_predictions(workload, [1, 2, 4], "cuda", None)
    steps = [predictions[n]["step_s"] for n in (1, 2, 4)]
    assert steps[0] > steps[1] > steps[2] > 0  # the global batch split over more GPUs
    assert notes[2] == "2 × this machine (H100), all-reduce over its interconnect"
    predictions, notes = ps.scaling_predictions(workload, [1, 2], "cpu", None)
    assert predictions == {1: None, 2: None} and "sized as its GPU" in notes[1]
