"""Runs and samples in the database: the migration from schema 4, writes from another thread."""

from __future__ import annotations

import math
import sqlite3
import threading
from pathlib import Path

import sqlite_utils

import core.storage.store as store_mod
from core.storage.store import SCHEMA_VERSION, Store


def test_migration_from_schema_4_adds_runs_and_samples_after_a_backup(tmp_path: Path) -> None:
    p = tmp_path / "v4.db"
    db = sqlite_utils.Database(p)  # as the release before runs left it
    for m in store_mod.MIGRATIONS[:4]:
        m(db)
    db["meta"].insert({"key": "schema_version", "value": "4"}, pk="key")
    db["calibrations"].insert({"created": "2026-01-01", "fingerprint": "abc", "result": '{"x": 1}'})
    db.close()
    store = Store.open(p)
    assert store.schema_version == SCHEMA_VERSION == 6
    assert store.latest_calibration("abc") == {"x": 1}
    run_id = store.start_run("trained", "seed MLP", sampling={"columns": ["cpu_percent"]})
    store.add_samples(run_id, [(0.0, [12.5]), (0.1, [math.nan])])
    assert store.run_samples(run_id) == (["cpu_percent"], [(0.0, [12.5]), (0.1, [None])])
    backup = sqlite3.connect(tmp_path / "v4.db.v4.bak")
    assert "runs" not in {r[0] for r in backup.execute("select name from sqlite_master")}
    backup.close()
    store.close()


def test_a_run_is_written_from_the_sampler_thread_and_closed_with_its_figures(tmp_path: Path) -> None:
    for path in (tmp_path / "t.db", None):  # a file and the in-memory store the window tests use
        store = Store.open(path)
        run_id = store.start_run(
            "trained", "seed MLP", device="cpu", prediction={"step_s": 0.004}, sampling={"columns": ["a", "b"]}
        )

        def write(start: int, rid: int = run_id, s: Store = store) -> None:
            for k in range(10):
                s.add_samples(rid, [(start + k + i / 10, [1.0, None]) for i in range(10)])

        threads = [threading.Thread(target=write, args=(100 * n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        store.finish_run(run_id, "finished", duration_s=12.5, measured={"median_step_s": 0.005}, exit_code=0)
        run = store.run(run_id)
        assert run is not None
        assert run["status"] == "finished" and run["prediction"] == {"step_s": 0.004}
        assert run["measured"] == {"median_step_s": 0.005} and run["duration_s"] == 12.5
        columns, rows = store.run_samples(run_id)
        assert columns == ["a", "b"] and len(rows) == 300
        assert [t for t, _ in rows] == sorted(t for t, _ in rows)
        assert store.runs()[0]["status"] == "finished"
        store.close()
