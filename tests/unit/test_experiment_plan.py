"""One-factor experiments: the field and its values, one workload per value, every value checked
before anything is trained; the summary table's statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import WorkloadError
from core.output.experiment_summary import spread, summarise, summary_text
from core.spec.experiment import expand, parse_vary
from core.spec.workload import parse_workload

SEED = json.loads((Path(__file__).resolve().parents[2] / "examples" / "seed-mlp.json").read_text(encoding="utf-8"))


def test_a_batch_size_sweep_gives_one_valid_workload_per_value() -> None:
    factor = parse_vary("training.batch_size=64,128,256,512")
    variants = expand(SEED, factor)
    assert [v.label for v in variants] == [f"training.batch_size={b}" for b in (64, 128, 256, 512)]
    assert [parse_workload(v.document).training.batch_size for v in variants] == [64, 128, 256, 512]
    assert variants[0].document["name"] == "seed MLP (training.batch_size=64)"
    assert SEED["training"]["batch_size"] == 512  # the base is not changed


def test_the_papers_factors_by_name() -> None:
    depth = expand(SEED, parse_vary("depth=2,5"))
    assert [parse_workload(v.document).analysis.parameters for v in depth] == [
        75 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10,
        75 * 512 + 512 + 4 * (512 * 512 + 512) + 512 * 10 + 10,
    ]
    width = expand({"model": {"preset": "seed-mlp"}}, parse_vary("width=256,1024"))
    assert [[la.get("out_features") for la in v.document["model"]["layers"]][::2] for v in width] == [
        [256, 256, 256, 10],
        [1024, 1024, 1024, 10],
    ]
    act = expand(SEED, parse_vary("activation=relu,tanh"))
    assert {la["type"] for la in act[1].document["model"]["layers"][1::2]} == {"tanh"}
    opt = expand(SEED, parse_vary("optimizer=sgd,adam"))
    assert [v.document["training"]["optimizer"] for v in opt] == ["sgd", "adam"]


@pytest.mark.parametrize(
    ("vary", "message"),
    [
        ("training.batch_size=64,-1", "training.batch_size=-1"),
        ("training.optimizer=adam,lion", "training.optimizer=lion"),
        ("depth=2,0", "depth counts hidden blocks, 1–64; got 0"),
        ("activation=relu,swish", "activation is one of relu"),
        ("training.batch_size=64", "an experiment compares two values or more"),
        ("training.batch_size=64,64", "repeats a value"),
        ("batch_size", "give FIELD=V1,V2"),
        ("training.nonsense=1,2", "unknown key"),
    ],
)
def test_bad_values_are_refused_before_anything_runs(vary: str, message: str) -> None:
    with pytest.raises(WorkloadError) as err:
        expand(SEED, parse_vary(vary))
    assert message in str(err.value)


def test_depth_needs_an_mlp() -> None:
    with pytest.raises(WorkloadError) as err:
        expand({"model": {"preset": "lenet-5"}}, parse_vary("depth=2,3"))
    assert "depth, width and activation vary an MLP" in str(err.value)


def test_summary_rows_per_value_with_mean_and_spread_of_repeats() -> None:
    def run(status: str, t: float, acc: float, step: float) -> dict:
        return {
            "status": status,
            "metrics": {"training_time_s": t, "accuracy": acc, "macro_f1": acc - 0.1},
            "measured": {"median_step_s": step, "training_memory_bytes": 2**20},
            "prediction": {"step_s": 0.002, "peak_memory_bytes": 2**21},
        }

    runs = [
        (64, run("finished", 10.0, 0.80, 0.004), {"cpu_percent": [50.0, 70.0], "proc_rss_bytes": [2**30]}),
        (64, run("finished", 12.0, 0.82, 0.006), {"cpu_percent": [60.0], "proc_rss_bytes": [2**30]}),
        (128, run("finished", 6.0, 0.78, 0.003), {"cpu_percent": [90.0]}),
        (128, run("failed", 1.0, 0.1, 1.0), {"cpu_percent": [100.0]}),
    ]
    rows = summarise([64, 128], runs)
    a, b = rows
    assert (a.runs, a.failed, b.runs, b.failed) == (2, 0, 1, 1)
    assert a.training_time_s.mean == 11.0 and a.training_time_s.sd == pytest.approx(2**0.5)
    assert a.accuracy.text() == "0.81 ± 0.0141"
    assert a.step_s.mean == pytest.approx(0.005) and a.predicted_step_s == 0.002
    assert a.resources["CPU (% of the machine)"] == (60.0, 70.0)
    assert b.resources["CPU (% of the machine)"] == (90.0, 90.0)  # the failed run's 100 % is left out
    assert b.training_time_s.text("{:.2f}") == "6.00"  # one repeat: no spread shown
    text = summary_text("batch", rows)
    assert "11.00 ± 1.41" in text and "1 (1 failed)" in text and "60 / 70" in text


def test_spread_of_nothing_is_none() -> None:
    assert spread([None, float("nan")]) is None


@pytest.mark.parametrize(("vary", "key"), [("epochs=1,3", "epochs"), ("data.samples=200,400", "samples")])
def test_the_varied_field_is_never_overridden_by_the_plans_own(monkeypatch, vary: str, key: str) -> None:
    """The Telemetry tab always gives its epochs and samples: an experiment over epochs trained every value
    for the tab's one epoch, and its table showed 1 and 3 with the same figures."""
    from types import SimpleNamespace

    import telemetry.experiments as ex
    from core.spec.experiment import expand, parse_vary

    specs: list[dict] = []

    def fake_run(python, spec, **kw):
        specs.append(spec)
        return SimpleNamespace(
            start=lambda: None,
            status="finished",
            metrics={},
            measured=lambda: {},
            prediction=None,
            started={},
            sampler=None,
            run_id=len(specs),
        )

    monkeypatch.setattr(ex, "training_run", fake_run)
    factor = parse_vary(vary)
    doc = {"name": "t", "model": {"preset": "seed-mlp"}, "data": {"samples": 100}, "training": {"epochs": 2}}
    plan = ex.ExperimentPlan("t", factor, tuple(expand(doc, factor)), epochs=1, samples=100)
    ex.run_experiment("python3", plan, None, rate_hz=10, wait=lambda r: None)
    assert [s[key] for s in specs] == list(factor.values)
    other = "samples" if key == "epochs" else "epochs"
    assert [s[other] for s in specs] == [plan.samples if other == "samples" else plan.epochs] * 2
