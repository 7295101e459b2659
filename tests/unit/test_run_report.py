"""A run's and an experiment's report as data and CSV (no Qt): what ran, the prediction against
the measurement with its error, the telemetry's figures computed from the stored samples, the
experiment's table one row per value; repeats recognised; the mean ± band of repeats."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest

from core.errors import TrainRigError
from core.output.experiment_report import load_report
from core.output.report_csv import rows_to_csv
from core.output.run_report import repeat_key, result_report_rows
from core.storage.store import Store
from telemetry.series import mean_band
from tests.gui.results_data import COLUMNS, record_run


@pytest.fixture
def store():
    s = Store.open(None)
    yield s
    s.close()


def _table(report, title_start):
    return next(t for t in report.tables if t.title.startswith(title_start))


def test_a_runs_report_names_what_ran_the_error_and_the_telemetry_figures(store) -> None:
    rid = record_run(store, "mlp-b deep", step_s=0.010, accuracy=0.86, prediction={"step_s": 0.008})
    report = load_report(store, "run", rid, "2026-11-24 10:00", "Purchasing")
    assert report.subject == f"Run #{rid}: mlp-b deep"
    assert "Step time: predicted 8 ms, measured 10 ms (-20%)" in report.summary
    assert "held-out accuracy 0.860" in report.summary
    pvm = _table(report, "Predicted")
    assert pvm.rows[0] == ("Step time", "8 ms", "10 ms", "-20%")
    # the CPU's mean, minimum and maximum are those of the stored samples (the marked gap left out)
    _names, t, values = store.run_series(rid)
    cpu = values[:, COLUMNS.index("cpu_percent")]
    cpu = cpu[np.isfinite(cpu)]
    row = next(r for r in _table(report, "Telemetry").rows if r[0] == "CPU (machine)")
    assert row[1:5] == ("%", f"{cpu.mean():,.2f}", f"{cpu.min():,.2f}", f"{cpu.max():,.2f}")
    assert row[5] == f"{len(cpu):,} of {len(t):,}"  # 199 of 200: one value could not be read
    assert len(cpu) == len(t) - 1
    # one chart per sampled figure and per training curve, the predicted step drawn on the step chart
    titles = [c.title for c in report.charts]
    assert titles[:2] == ["CPU", "trainer CPU"] and "Step time" in titles
    step = next(c for c in report.charts if c.title == "Step time")
    assert step.reference == ("predicted step", pytest.approx(8.0))


def test_the_csv_holds_every_table_under_its_title_and_neutralises_formulas(store) -> None:
    rid = record_run(store, "=HYPERLINK(1)", step_s=0.010, accuracy=0.86, prediction={"step_s": 0.008})
    rows = list(csv.reader(io.StringIO(rows_to_csv(result_report_rows(load_report(store, "run", rid, "now"))))))
    assert rows[0] == ["Run report", f"Run #{rid}: =HYPERLINK(1)"]  # not at a cell's start: inert
    titles = [r[0] for r, before in zip(rows[1:], rows, strict=False) if before == [] and r]
    assert titles[:5] == [
        "What ran",
        "Hardware",
        "Predicted (sized on this machine) against measured",
        "Measured",
        "Telemetry",
    ]
    what = rows.index(["What ran"])
    assert rows[what + 2] == ["Workload", "'=HYPERLINK(1)"]  # a formula made inert
    assert ["Step time", "8 ms", "10 ms", "'-20%"] in rows


def test_an_experiments_report_has_one_row_per_value_and_its_runs(store) -> None:
    ids = [
        record_run(store, f"seed MLP: training.batch_size={b} #{r + 1}", step_s=s, accuracy=0.8, seconds=5)
        for b, s in ((64, 0.004), (128, 0.006))
        for r in range(2)
    ]
    rows = [
        {
            "value": 64,
            "runs": 2,
            "failed": 0,
            "training_time_s": {"mean": 5.0, "sd": 0.1, "n": 2},
            "accuracy": {"mean": 0.8, "sd": 0.0, "n": 2},
            "macro_f1": {"mean": 0.75, "sd": 0.02, "n": 2},
            "step_s": {"mean": 0.004, "sd": 0.0002, "n": 2},
            "predicted_step_s": 0.005,
            "training_memory_bytes": None,
            "predicted_memory_bytes": None,
            "resources_mean_max": {"CPU (% of the machine)": [55.0, 100.0], "RAM used (bytes)": [2**30, 2**31]},
        },
        {
            "value": 128,
            "runs": 1,
            "failed": 1,
            "training_time_s": {"mean": 6.0, "sd": 0.0, "n": 1},
            "accuracy": None,
            "macro_f1": None,
            "step_s": {"mean": 0.006, "sd": 0.0, "n": 1},
            "predicted_step_s": 0.003,
        },
    ]
    eid = store.save_experiment(
        "seed MLP: training.batch_size",
        "one-factor",
        "training.batch_size",
        {"values": [64, 128], "repeats": 2},
        ids,
        {"rows": rows},
    )
    report = load_report(store, "experiment", eid, "now")
    assert report.subject == f"Experiment #{eid}: seed MLP: training.batch_size"
    assert report.summary.startswith("One-factor experiment on training.batch_size at 64, 128, 2 repeats of each")
    table = _table(report, "Per value of training.batch_size")
    assert table.headers[0] == "batch_size"
    assert [r[0] for r in table.rows] == ["64", "128"]
    assert table.rows[0][1:7] == ("5.00 ± 0.10", "0.800 ± 0.000", "0.750 ± 0.020", "4 ms ± 0.2 ms", "5 ms", "+25%")
    assert table.rows[1][2] == "—" and table.rows[1][6] == "-50%" and table.rows[1][9] == "1 (1 failed)"
    resources = _table(report, "Resources")
    assert resources.rows[0] == ("64", "55.0 / 100.0", "1,024 / 2,048")
    assert [r[0] for r in _table(report, "Runs").rows] == [f"#{i}" for i in ids]
    # every run's curve on each chart, named by its value and repeat
    cpu = next(c for c in report.charts if c.title == "CPU")
    assert [c.label for c in cpu.curves] == [f"#{ids[0]} training.batch_size=64 #1", *[c.label for c in cpu.curves[1:]]]
    assert len(cpu.curves) == 4


def test_only_runs_and_experiments_have_a_run_report(store) -> None:
    with pytest.raises(TrainRigError, match="a sizing has no run report"):
        load_report(store, "sizing", 1, "now")
    with pytest.raises(TrainRigError, match="run #7 is not in this database"):
        load_report(store, "run", 7, "now")


def test_repeats_differ_only_in_the_seed() -> None:
    def run(seed: int, batch: int = 64, device: str = "cpu", id_: int = 1) -> dict:
        trainer = {"batch_size": batch, "epochs": 2, "samples": 3000, "seed": seed}
        return {"id": id_, "device": device, "workload": {"document": {"name": "mlp"}, "trainer": trainer}}

    assert repeat_key(run(0)) == repeat_key(run(1, id_=2))
    assert repeat_key(run(0)) != repeat_key(run(0, batch=128))
    assert repeat_key(run(0)) != repeat_key(run(0, device="cuda:0"))
    assert repeat_key({"id": 3}) != repeat_key({"id": 4})  # stored without settings: nobody's repeat


def test_the_band_of_repeats_is_their_mean_and_sd_over_the_stretch_all_cover() -> None:
    x1, x2 = np.linspace(0, 10, 101), np.linspace(1, 12, 111)
    y2 = x2 + 2
    y2[50] = np.nan  # a gap is bridged
    grid, mean, sd = mean_band([(x1, x1), (x2, y2)], points=10)
    assert grid[0] == 1 and grid[-1] == 10
    np.testing.assert_allclose(mean, grid + 1)
    np.testing.assert_allclose(sd, math.sqrt(2))
    alone = mean_band([(x1, x1), (np.array([20.0, 30.0]), np.array([1.0, 2.0]))])
    assert len(alone[0]) == 101 and not alone[2].any()  # nothing shared: the longest alone, no band


def test_a_gpu_figure_is_one_chart_with_a_curve_per_gpu(store) -> None:
    columns = ["cpu_percent", "gpu0_util_percent", "gpu1_util_percent", "gpu0_mem_used_bytes", "gpu1_mem_used_bytes"]
    rid = store.start_run("trained", "two GPUs", device="cuda:0", sampling={"columns": columns, "rate_hz": 10.0})
    store.add_samples(rid, [(k / 10, [50.0, 90.0, 80.0 + k, 2.0 * 2**30, 3.0 * 2**30]) for k in range(10)])
    store.finish_run(rid, "finished", exit_code=0, sampling={"columns": columns, "rate_hz": 10.0})
    report = load_report(store, "run", rid, "now")
    charts = {c.title: c for c in report.charts}
    assert list(charts) == ["CPU", "GPU load", "GPU memory"]
    assert [c.label for c in charts["GPU load"].curves] == ["GPU 0", "GPU 1"]
    assert charts["GPU load"].curves[1].y[-1] == 89.0 and charts["GPU memory"].unit == "GiB"
    assert charts["GPU memory"].curves[1].y[0] == 3.0
    rows = {r[0]: r for r in _table(report, "Telemetry").rows}
    assert rows["GPU 1 load"][1:5] == ("%", "84.50", "80.00", "89.00")


def test_scaling_experiments_carry_the_papers_figure(store) -> None:
    from core.output.experiment_report import summary_charts
    from core.output.scaling import scaling_rows, summary_json

    points = [{"threads": 1, "step_s": 0.004}, {"threads": 2, "step_s": 0.0025}, {"threads": 4, "step_s": 0.005}]
    (chart,) = summary_charts({"kind": "threads", "summary": {"physical": 2, "logical": 4, "points": points}})
    assert chart.x_label == "threads" and chart.marker == ("2 physical cores", 2.0)
    assert chart.curves[0].y == (16_000.0, 25_600.0, 12_800.0)

    def run(t: float) -> dict:
        return {"status": "finished", "metrics": {"training_time_s": t, "median_step_s": t / 40, "ranks": []}}

    rows = scaling_rows([(1, run(10.0)), (2, run(9.0))], {}, {})
    (chart,) = summary_charts({"kind": "scaling", "summary": summary_json(rows, [])})
    measured, *published = chart.curves
    assert measured.y == (10.0, 9.0) and len(published) == 3
    cntk = next(c for c in published if "CNTK" in c.label)
    assert cntk.y == pytest.approx((10.0, 6.5))  # 35 % less per doubling
    # the experiment's report puts the figure before its runs' telemetry
    eid = store.save_experiment(
        "seed MLP: thread scaling", "threads", "threads", {}, [], {"physical": 2, "points": points}
    )
    report = load_report(store, "experiment", eid, "now")
    assert report.charts[0].title.startswith("Training rate by thread count")


def test_a_storage_experiment_reads_as_its_table_per_location() -> None:
    from core.output.experiment_report import experiment_tables

    rows = [
        {
            "location": "your folder",
            "tier": "nvme",
            "format": "png",
            "files": 2500,
            "bytes_per_file": 11192.0,
            "epoch_s": 0.5,
            "consumed_bps": 2**20 * 52.0,
            "data_wait_share": 0.31,
            "predicted_read_s": 0.0126,
            "page_cache": "page cache evicted for all 2,501 files (posix_fadvise DONTNEED)",
        },
        {
            "location": "RAM disk",
            "tier": "ramdisk",
            "format": "png",
            "files": 2500,
            "bytes_per_file": 11192.0,
            "epoch_s": 0.25,
            "consumed_bps": None,
            "data_wait_share": None,
            "predicted_read_s": None,
            "page_cache": "page cache evicted for all 2,501 files (posix_fadvise DONTNEED)",
        },
    ]
    (table,) = experiment_tables({"kind": "storage", "summary": {"rows": rows}})
    assert table.rows[0] == ("your folder", "nvme", "2,500 png", "11,192 B", "500 ms", "52.0 MiB/s", "31%", "12.6 ms")
    assert table.rows[1][5:] == ("—", "—", "tier unknown")
    assert table.note == "Page cache evicted for all 2,501 files (posix_fadvise DONTNEED)."
