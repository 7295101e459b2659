"""The results browser's store: every kind listed with its figures, filters, sort, count, tags,
names and notes, delete with its samples and undo, a run's series."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from core.errors import TrainRigError
from core.storage.store import Store


def _run(store: Store, name: str, *, step: float, measured: float, acc: float, columns: int = 3, n: int = 40) -> int:
    rid = store.start_run(
        "trained",
        name,
        device="cpu",
        prediction={"step_s": step, "device": "this machine (AMD EPYC, 2 cores)"},
        sampling={"columns": [f"c{j}" for j in range(columns)]},
    )
    for start in range(0, n, 10):  # as the sampler flushes: about a second of samples at a time
        rows = [
            (i / 10, [float(i * (j + 1)) if i % 7 else None for j in range(columns)]) for i in range(start, start + 10)
        ]
        store.add_samples(rid, rows)
    store.finish_run(
        rid,
        "finished",
        duration_s=n / 10,
        measured={"median_step_s": measured, "training_memory_bytes": 5_000_000},
        metrics={"accuracy": acc, "macro_f1": acc - 0.1, "training_time_s": n / 10 - 0.5},
    )
    return rid


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "r.db")
    _run(s, "seed MLP baseline", step=0.004, measured=0.005, acc=0.91)
    _run(s, "seed MLP wide", step=0.008, measured=0.010, acc=0.95)
    _run(s, "conv net", step=0.020, measured=0.016, acc=0.62)
    doc = {"name": "llama fine-tune", "model": {"preset": "llama-8b"}}
    result = {
        "workload": "llama fine-tune",
        "candidates": [
            {"device": "RTX 4090", "count": 8, "fits": False, "step_time_s": 9.0, "training_time_s": 9e5},
            {
                "device": "H100 SXM",
                "count": 8,
                "fits": True,
                "step_time_s": 1.5,
                "training_time_s": 1.5e5,
                "memory_per_device": {"total": 60e9},
            },
        ],
        "decision": {"buy": {"device": "H100 SXM", "count": 8}},
    }
    s.save_sizing("llama fine-tune", doc, ["RTX 4090", "H100 SXM"], result)
    s.save_inventory({"fingerprint": "abcdef0123", "host": "lab-box", "cpu": {"model": "AMD EPYC"}, "gpus": []})
    s.save_calibration("abcdef0123", {"cpu": {"fp32_flops": 1e11}})
    yield s
    s.close()


def test_every_kind_is_listed_newest_first_with_its_figures(store: Store) -> None:
    rows = store.results()
    assert sorted(r["kind"] for r in rows) == ["calibration", "inventory", "run", "run", "run", "sizing"]
    assert [r["created"] for r in rows] == sorted((r["created"] for r in rows), reverse=True)
    assert store.results_count() == 6
    sizing = store.results(kind="sizing")[0]
    # the sizing's row shows the candidate its decision buys, not the first one
    assert (sizing["predicted_step_s"], sizing["training_time_s"], sizing["peak_memory_bytes"]) == (1.5, 1.5e5, 60e9)
    assert sizing["devices"] == "RTX 4090, H100 SXM" and sizing["name"] == "llama fine-tune"
    wide = store.results(text="wide")[0]
    assert wide["key"] == f"run:{wide['id']}" and wide["status"] == "finished"
    assert (wide["predicted_step_s"], wide["measured_step_s"], wide["accuracy"]) == (0.008, 0.010, 0.95)
    assert wide["f1"] == pytest.approx(0.85) and wide["training_time_s"] == 3.5
    assert wide["peak_memory_bytes"] == 5_000_000 and wide["devices"] == "cpu: this machine (AMD EPYC, 2 cores)"
    inv, cal = store.results(kind="inventory")[0], store.results(kind="calibration")[0]
    assert inv["machine"] == cal["machine"] == "lab-box" and inv["devices"] == "AMD EPYC"
    assert inv["predicted_step_s"] is None and inv["tags"] == [] and inv["notes"] == ""


def test_filters_sort_and_count_agree(store: Store) -> None:
    assert [r["name"] for r in store.results(kind="run", order_by="accuracy")] == [
        "seed MLP wide",
        "seed MLP baseline",
        "conv net",
    ]
    assert [r["name"] for r in store.results(kind="run", order_by="measured_step_s", descending=False)] == [
        "seed MLP baseline",
        "seed MLP wide",
        "conv net",
    ]
    # rows without the figure (sizing, inventory, calibration) sort last either way
    for desc in (True, False):
        order = [r["kind"] for r in store.results(order_by="measured_step_s", descending=desc)]
        assert order[:3] == ["run"] * 3
    assert store.results_count(text="SEED mlp") == 2 == len(store.results(text="SEED mlp"))
    assert store.results_count(kind=["run", "sizing"]) == 4
    assert store.results_count(machine="lab-box") == 2
    assert store.results_count(text="50%") == 0  # a % in the text is a character, not a wildcard
    page = store.results(order_by="name", descending=False, limit=2, offset=1)
    assert [r["name"] for r in page] == ["conv net", "Inventory of lab-box"]
    today = store.results()[0]["created"][:10]
    assert store.results_count(since=today, until=today) == 6
    assert store.results_count(until="2000-01-01") == 0
    with pytest.raises(TrainRigError, match="cannot sort by 'colour'"):
        store.results(order_by="colour")
    with pytest.raises(TrainRigError, match="unknown kind 'runs'"):
        store.results(kind="runs")


def test_tags_names_and_notes_are_kept_and_searched(store: Store) -> None:
    rid = store.results(text="conv")[0]["id"]
    assert store.set_tags("run", rid, [" baseline ", "GPU", "gpu", ""]) == ["baseline", "GPU"]
    store.rename("run", rid, "ResNet-ish conv")
    store.annotate("run", rid, "Ran with the lid closed — thermal throttling")
    assert store.results_count(tag="gpu") == 1 and store.results_count(text="throttling") == 1
    assert store.result_tags() == ["baseline", "GPU"]
    assert store.run(rid)["name"] == "ResNet-ish conv"  # the telemetry tab's list shows the new name
    store.finish_run(rid, "finished", metrics={"accuracy": 0.7})  # a refresh keeps what the user added
    row = store.results(text="resnet")[0]
    assert row["tags"] == ["baseline", "GPU"] and row["notes"].startswith("Ran with") and row["accuracy"] == 0.7
    with pytest.raises(TrainRigError, match="cannot be empty"):
        store.rename("run", rid, "  ")
    with pytest.raises(TrainRigError, match="a name of 100,000 characters is too long"):
        store.rename("run", rid, "x" * 100_000)
    with pytest.raises(TrainRigError, match="notes of 2,000,000 characters are too long"):
        store.annotate("run", rid, "n" * 2_000_000)
    assert store.results(text="resnet")[0]["notes"].startswith("Ran with")  # unchanged
    with pytest.raises(TrainRigError, match="not in the database"):
        store.set_tags("run", 999, ["x"])


def test_delete_takes_the_runs_samples_and_undo_brings_back_exactly_that(store: Store) -> None:
    before = store.results()
    run = store.results(text="baseline")[0]
    sizing = store.results(kind="sizing")[0]
    series = store.run_series(run["id"])
    assert store.delete_results([("run", run["id"]), ("sizing", sizing["id"]), ("run", 999)]) == 2
    assert store.results_count() == 4 and store.run(run["id"]) is None
    assert store.sample_count(run["id"]) == 0 and len(store.run_series(run["id"])[1]) == 0
    assert store.db.execute("select count(*) from workloads").fetchone()[0] == 0  # the sizing's workload too
    assert store.undo_delete() == 2
    assert sorted(store.results(), key=lambda r: r["key"]) == sorted(before, key=lambda r: r["key"])
    restored = store.run_series(run["id"])
    assert restored[0] == series[0]
    np.testing.assert_array_equal(restored[1], series[1])
    np.testing.assert_array_equal(restored[2], series[2])
    assert store.result_detail("sizing", sizing["id"])["workload"]["model"] == {"preset": "llama-8b"}
    assert store.undo_delete() == 0  # nothing left to undo


def test_undo_after_a_new_run_took_the_deleted_id_restores_under_a_new_id(store: Store) -> None:
    last = store.results(kind="run")[0]
    assert store.delete_results([("run", last["id"])]) == 1
    newer = _run(store, "a newer run", step=0.1, measured=0.1, acc=0.5)
    assert newer == last["id"]  # SQLite hands the freed id out again
    assert store.undo_delete() == 1
    names = {r["name"]: r["id"] for r in store.results(kind="run")}
    assert names["a newer run"] == newer and names[last["name"]] not in (newer,)
    assert store.sample_count(names[last["name"]]) == 40 and store.sample_count(newer) == 40


def test_run_series_matches_what_was_written(store: Store) -> None:
    rid = store.results(text="wide")[0]["id"]
    columns, t, values = store.run_series(rid)
    assert columns == ["c0", "c1", "c2"] and values.shape == (40, 3)
    np.testing.assert_allclose(t, np.arange(40) / 10)
    assert math.isnan(values[7, 0]) and values[8, 2] == 24.0  # i=8, column 3: 8 × 3
    # finished runs are compact: one chunk instead of the four the sampler wrote
    assert store.db.execute("select count(*) from sample_chunks where run_id = ?", [rid]).fetchone()[0] == 1
    assert store.run_samples(rid)[1][7] == (0.7, [None, None, None])
    detail = store.result_detail("run", rid)
    assert detail["sample_count"] == 40 and detail["run"]["prediction"]["step_s"] == 0.008


def test_samples_export_as_csv_and_nothing_is_written_without_samples(store: Store, tmp_path: Path) -> None:
    ids = [r["id"] for r in store.results(kind="run")]
    out = tmp_path / "samples.csv"
    assert store.export_samples_csv(ids[:2], out) == 80
    lines = out.read_text().splitlines()
    assert lines[0] == "run_id,t_s,c0,c1,c2" and len(lines) == 81
    assert lines[9].split(",")[2:] == ["8", "16", "24"] and lines[8].endswith(",,,")  # missing: empty cells
    empty = store.start_run("monitored", "no samples")
    assert store.export_samples_csv([empty], tmp_path / "none.csv") == 0
    assert not (tmp_path / "none.csv").exists()


def test_undo_survives_closing_the_database_and_a_second_delete_replaces_it(tmp_path: Path) -> None:
    p = tmp_path / "u.db"
    store = Store.open(p)
    first = _run(store, "first", step=0.1, measured=0.1, acc=0.5)
    second = _run(store, "second", step=0.1, measured=0.1, acc=0.5)
    store.delete_results([("run", first)])
    store.close()
    store = Store.open(p)  # the window was closed and opened again: the delete can still be undone
    assert store.can_undo_delete()
    store.delete_results([("run", second)])  # ... until the next delete, which is what undo brings back now
    assert store.undo_delete() == 1
    assert [r["name"] for r in store.results()] == ["second"] and store.sample_count(second) == 40
    assert not store.can_undo_delete() and store.undo_delete() == 0
    store.close()


def test_a_run_still_being_recorded_is_not_deleted(store: Store) -> None:
    rid = store.start_run("trained", "live", sampling={"columns": ["a"]})
    done = store.results(kind="run")[-1]["id"]
    with pytest.raises(TrainRigError, match=f"run #{rid} is still running: cancel it first; nothing was deleted"):
        store.delete_results([("run", done), ("run", rid)])
    assert store.results_count(kind="run") == 4
    store.finish_run(rid, "cancelled")
    assert store.delete_results([("run", rid)]) == 1


def test_kinds_without_items_yet_and_bad_dates(store: Store) -> None:
    assert store.results(kind="experiment") == [] and store.results_count(kind="experiment") == 0
    with pytest.raises(TrainRigError, match="'yesterday' is not a date"):
        store.results(since="yesterday")


def test_a_samples_csv_into_a_missing_folder_is_refused_by_name(store: Store, tmp_path: Path) -> None:
    from core.errors import OutputError

    target = tmp_path / "missing" / "s.csv"
    with pytest.raises(OutputError, match="does not exist"):
        store.export_samples_csv([store.results(kind="run")[0]["id"]], target)
    assert not target.parent.exists()
