"""The database: creation, migration with a backup first, refusal of newer or foreign files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core.errors import StoreError
from core.storage.store import SCHEMA_VERSION, Store


def test_new_database_is_created_in_wal_mode_at_the_current_schema(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "t.db"
    store = Store.open(p)
    assert store.schema_version == SCHEMA_VERSION
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.save_sizing("seed", {"model": {"preset": "seed-mlp"}}, ["NVIDIA GeForce RTX 4090"], {"parameters": 569354})
    store.close()
    again = Store.open(p)
    rows = again.sizings()
    assert [(r["name"], r["candidates"]) for r in rows] == [("seed", '["NVIDIA GeForce RTX 4090"]')]
    again.close()


def test_database_from_a_newer_version_is_refused_and_untouched(tmp_path: Path) -> None:
    p = tmp_path / "newer.db"
    conn = sqlite3.connect(p)
    conn.execute("create table meta (key text primary key, value text)")
    conn.execute("insert into meta values ('schema_version', '99')")
    conn.commit()
    conn.close()
    before = p.read_bytes()
    with pytest.raises(StoreError) as err:
        Store.open(p)
    assert "newer TrainRig (schema 99" in str(err.value)
    assert p.read_bytes() == before


@pytest.mark.parametrize("content", [b"this is not a database at all" * 10, b"SQLite format 3\x00" + b"\x13" * 200])
def test_corrupt_file_is_refused_and_never_overwritten(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "broken.db"
    p.write_bytes(content)
    with pytest.raises(StoreError):
        Store.open(p)
    assert p.read_bytes() == content


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "other.db"
    conn = sqlite3.connect(p)
    conn.execute("create table photos (id integer)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as err:
        Store.open(p)
    assert "another program" in str(err.value)


def test_migration_from_version_1_copies_the_file_first_and_keeps_the_data(tmp_path: Path) -> None:
    import sqlite_utils

    import core.storage.store as store_mod

    p = tmp_path / "old.db"
    db = sqlite_utils.Database(p)  # a database as the first TrainRig release left it
    store_mod.MIGRATIONS[0](db)
    db["meta"].insert({"key": "schema_version", "value": "1"}, pk="key")
    db["workloads"].insert({"name": "kept", "created": "2026-01-01", "document": "{}"})
    db.close()
    store = Store.open(p)
    assert store.schema_version == SCHEMA_VERSION
    assert [r["name"] for r in store.db.query("select name from workloads")] == ["kept"]
    store.save_user_device({"name": "lab gpu", "kind": "gpu", "fp32_tflops": 10.0, "memory_gb": 8.0})
    assert store.user_devices()[0]["name"] == "lab gpu"
    backup = tmp_path / "old.db.v1.bak"
    assert backup.exists()
    old = sqlite3.connect(backup)
    assert old.execute("select value from meta where key='schema_version'").fetchone()[0] == "1"
    assert "user_devices" not in {r[0] for r in old.execute("select name from sqlite_master")}
    old.close()
    store.close()


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path, monkeypatch) -> None:
    import core.storage.store as store_mod

    p = tmp_path / "t.db"
    Store.open(p).close()

    def broken(db) -> None:
        db["workloads"].add_column("tags", str)
        raise RuntimeError("disk full")

    monkeypatch.setattr(store_mod, "MIGRATIONS", [*store_mod.MIGRATIONS, broken])
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", len(store_mod.MIGRATIONS))
    with pytest.raises(RuntimeError):
        Store.open(p)
    monkeypatch.undo()
    again = Store.open(p)
    assert again.schema_version == SCHEMA_VERSION
    assert "tags" not in again.db["workloads"].columns_dict
    again.close()


def test_cli_reports_a_bad_database_with_exit_code_2(cli, tmp_path: Path, write_json, seed_doc) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"garbage" * 100)
    code, _, err = cli("--db", str(bad), "size", str(write_json(seed_doc)))
    assert code == 2
    assert "not a TrainRig database" in err
    assert bad.read_bytes() == b"garbage" * 100


def test_closing_waits_for_a_read_in_flight_and_later_reads_say_it_is_closed(tmp_path: Path) -> None:
    # the results tab reads on a worker thread; closing the connection under a running query crashed
    # the process (a segmentation fault in SQLite), so close waits for the read to finish
    import threading
    import time

    store = Store.open(tmp_path / "t.db")
    store.save_workload("w", {"model": {"preset": "seed-mlp"}})
    started, release, closed = threading.Event(), threading.Event(), threading.Event()

    def slow_read() -> list:
        started.set()
        release.wait(5)
        return store.db.execute("select name from workloads").fetchall()

    reader = threading.Thread(target=lambda: store._read(slow_read))
    reader.start()
    started.wait(5)
    closer = threading.Thread(target=lambda: (store.close(), closed.set()))
    closer.start()
    time.sleep(0.2)
    assert not closed.is_set()  # the read holds the connection: close waits
    release.set()
    reader.join(5)
    closer.join(5)
    assert closed.is_set() and store.closed
    with pytest.raises(StoreError, match="was closed; nothing could be read"):
        store.workloads()
    with pytest.raises(StoreError, match="was closed; nothing was saved"):
        store.save_workload("x", {})
    with pytest.raises(StoreError, match="was closed"):  # a run's reader thread: a message, not a crash
        store.runs()
    store.close()  # twice: nothing happens
