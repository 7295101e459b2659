"""Experiments in the database: saved with their runs, listed by the results browser as kind
"experiment", deleted and restored, and carried by an archive with their runs to another machine."""

from __future__ import annotations

from pathlib import Path

from core.storage.store import Store


def _store_with_runs(path: Path | None = None) -> tuple[Store, list[int]]:
    store = Store.open(path)
    ids = []
    for batch, acc in ((64, 0.7), (128, 0.8)):
        rid = store.start_run("trained", f"seed MLP: batch_size={batch}", device="cpu")
        store.add_samples(rid, [(0.0, [50.0]), (0.1, [60.0])])
        store.finish_run(rid, "finished", metrics={"training_time_s": 3.0, "accuracy": acc, "macro_f1": acc - 0.1})
        ids.append(rid)
    return store, ids


SUMMARY = {
    "factor": "training.batch_size",
    "rows": [
        {
            "value": 64,
            "training_time_s": {"mean": 3.0, "sd": 0, "n": 1},
            "accuracy": {"mean": 0.7, "sd": 0, "n": 1},
            "macro_f1": {"mean": 0.6, "sd": 0, "n": 1},
        },
        {
            "value": 128,
            "training_time_s": {"mean": 2.0, "sd": 0, "n": 1},
            "accuracy": {"mean": 0.8, "sd": 0, "n": 1},
            "macro_f1": {"mean": 0.7, "sd": 0, "n": 1},
        },
    ],
}


def test_an_experiment_groups_its_runs_and_is_listed(tmp_path: Path) -> None:
    store, ids = _store_with_runs()
    eid = store.save_experiment(
        "seed MLP: batch", "one-factor", "training.batch_size", {"values": [64, 128], "device": "cpu"}, ids, SUMMARY
    )
    (row,) = store.results(kind="experiment")
    assert row["name"] == "seed MLP: batch" and row["status"] == "finished" and row["devices"] == "cpu"
    assert row["training_time_s"] == 5.0 and row["accuracy"] == 0.8 and row["f1"] == 0.7
    detail = store.result_detail("experiment", eid)
    assert detail["experiment"]["run_ids"] == ids and detail["experiment"]["summary"]["rows"][1]["value"] == 128
    assert store.delete_results([("experiment", eid)]) == 1
    assert store.results(kind="experiment") == [] and len(store.results(kind="run")) == 2  # its runs stay
    assert store.undo_delete() == 1 and store.experiment(eid)["run_ids"] == ids


def test_an_archive_carries_an_experiment_and_its_runs(tmp_path: Path) -> None:
    store, ids = _store_with_runs()
    store.start_run("trained", "another machine's earlier run", device="cpu")  # ids differ on the other side
    eid = store.save_experiment("exp", "one-factor", "training.batch_size", {"values": [64, 128]}, ids, SUMMARY)
    archive = tmp_path / "results.trainrig"
    store.export_archive(archive, [("experiment", eid), ("run", ids[0]), ("run", ids[1])])
    other = Store.open(None)
    other.start_run("trained", "a run of its own first", device="cpu")
    assert other.import_archive(archive)["added"] == 3
    (row,) = other.results(kind="experiment")
    moved = other.experiment(row["id"])
    names = [other.run(i)["name"] for i in moved["run_ids"]]
    assert names == ["seed MLP: batch_size=64", "seed MLP: batch_size=128"]
    assert other.import_archive(archive)["added"] == 0  # twice: nothing duplicated
