"""A database of schema 5 (samples as one JSON row each, no results index) opened by this version:
migrated after a backup beside it, every item listed, every sample kept."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import sqlite_utils

import core.storage.store as store_mod
from core.storage.store import SCHEMA_VERSION, Store


def _schema_5(path: Path) -> list[tuple[float, list[float | None]]]:
    db = sqlite_utils.Database(path)  # as the release before the results browser left it
    for m in store_mod.MIGRATIONS[:5]:
        m(db)
    db["meta"].insert({"key": "schema_version", "value": "5"}, pk="key")
    db["workloads"].insert({"id": 1, "name": "seed MLP", "created": "2026-11-20T10:00:00+00:00", "document": "{}"})
    db["sizings"].insert(
        {
            "workload_id": 1,
            "created": "2026-11-20T10:00:00+00:00",
            "candidates": '["4090"]',
            "result": json.dumps({"candidates": [{"device": "4090", "fits": True, "step_time_s": 0.002}]}),
        }
    )
    db["inventories"].insert(
        {"created": "2026-11-20T09:00:00+00:00", "fingerprint": "f1", "host": "old-box", "snapshot": "{}"}
    )
    db["calibrations"].insert({"created": "2026-11-20T09:30:00+00:00", "fingerprint": "f1", "result": "{}"})
    db["runs"].insert(
        {
            "created": "2026-11-21T08:00:00+00:00",
            "kind": "trained",
            "name": "old run",
            "device": "cpu",
            "status": "finished",
            "duration_s": 3.0,
            "prediction": json.dumps({"step_s": 0.004}),
            "measured": json.dumps({"median_step_s": 0.005}),
            "metrics": json.dumps({"accuracy": 0.9, "macro_f1": 0.8}),
            "sampling": json.dumps({"columns": ["cpu_percent", "ram_used_bytes"]}),
        }
    )
    written = [(i / 10, [float(i) if i % 4 else None, 1.5e9 + i]) for i in range(30)]
    rows = [{"run_id": 1, "t": t, "value_list": json.dumps(v)} for t, v in reversed(written)]
    rows.append({"run_id": 1, "t": 3.0, "value_list": "not json"})  # a damaged row: its values are missing
    db["samples"].insert_all(rows)
    db.close()
    return [*written, (3.0, [None, None])]


def test_a_schema_5_database_is_migrated_after_a_backup_and_nothing_is_lost(tmp_path: Path) -> None:
    p = tmp_path / "trainrig.db"
    written = _schema_5(p)
    store = Store.open(p)
    assert store.schema_version == SCHEMA_VERSION == 6
    backup = sqlite3.connect(tmp_path / "trainrig.db.v5.bak")  # the file as it was, beside it
    assert backup.execute("select count(*) from samples").fetchone()[0] == 31
    assert backup.execute("select value from meta where key = 'schema_version'").fetchone()[0] == "5"
    backup.close()
    assert "samples" not in store.db.table_names()
    rows = store.results()
    assert [(r["kind"], r["name"]) for r in rows] == [
        ("run", "old run"),
        ("sizing", "seed MLP"),
        ("calibration", "Calibration of old-box"),
        ("inventory", "Inventory of old-box"),
    ]
    run = rows[0]
    assert (run["predicted_step_s"], run["measured_step_s"], run["accuracy"], run["f1"]) == (0.004, 0.005, 0.9, 0.8)
    assert run["machine"] == ""  # where an old run ran was not recorded: not guessed
    assert rows[1]["predicted_step_s"] == 0.002
    columns, t, values = store.run_series(1)
    assert columns == ["cpu_percent", "ram_used_bytes"]
    np.testing.assert_allclose(t, [w[0] for w in written])
    expected = np.array([[math.nan if v is None else v for v in w[1]] for w in written])
    np.testing.assert_allclose(values, expected, rtol=1e-7)  # float32: 7 significant digits
    assert store.run_samples(1)[1][1] == (0.1, [1.0, 1500000000.0])
    store.close()
    # opened again: nothing to migrate, the same items with the same identities
    again = Store.open(p)
    assert again.results() == rows
    again.close()


def test_two_copies_of_one_old_database_give_their_items_the_same_identity(tmp_path: Path) -> None:
    _schema_5(tmp_path / "a.db")
    (tmp_path / "b.db").write_bytes((tmp_path / "a.db").read_bytes())
    a, b = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "b.db")
    archive = tmp_path / "a.zip"
    assert a.export_archive(archive) == 4
    assert b.import_archive(archive) == {"added": 0, "skipped": 4}
    a.close()
    b.close()
