"""The database under faults: each gets its own one-line message, nothing the user saw is lost, a
damaged database is never written to (docs/limits.md)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils

import core.storage.store as store_mod
from core.errors import StoreError
from core.storage.store import SCHEMA_VERSION, Store

ROOT = Path(__file__).resolve().parents[2]


def damaged_database(tmp_path: Path) -> Path:
    """A database whose schema reads but whose data pages are overwritten with garbage."""
    p = tmp_path / "damaged.db"
    store = Store.open(p)
    for i in range(400):
        store.save_workload(f"w{i}", {"model": {"preset": "seed-mlp"}, "pad": "x" * 500})
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray(p.read_bytes())
    page = 4096
    for start in range(6 * page, len(data) - page, page):  # every page after the schema's
        data[start : start + page] = b"\xa5" * page
    p.write_bytes(bytes(data))
    return p


def test_a_damaged_database_says_so_and_is_never_written_to(cli, tmp_path: Path) -> None:
    p = damaged_database(tmp_path)
    before = p.read_bytes()
    devices = tmp_path / "d.json"
    devices.write_text(json.dumps({"name": "Lab card", "fp32_tflops": 10, "memory_gb": 8}))
    code, out, err = cli("--db", str(p), "catalogue", "--add", str(devices))
    assert code == 2 and "saved" not in out
    assert "is damaged (SQLite: database disk image is malformed)" in err and "it was not changed" in err
    assert "Open another database with --db" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(StoreError, match=r"is damaged .*; TrainRig does not write to it and it was not changed"):
        Store.open(p)
    assert p.read_bytes() == before


@pytest.mark.parametrize("version", ["-5", "two", "7.0", None])  # NULL raised TypeError: "unexpected error"
def test_a_damaged_schema_version_is_refused_like_a_future_one(tmp_path: Path, version) -> None:
    p = tmp_path / "t.db"
    Store.open(p).close()
    conn = sqlite3.connect(p)
    conn.execute("update meta set value = ? where key = 'schema_version'", [version])
    conn.commit()
    conn.close()
    before = p.read_bytes()
    with pytest.raises(StoreError, match=f"damaged schema version {version!r}; it was not opened or changed"):
        Store.open(p)
    assert p.read_bytes() == before


def test_dev_null_is_not_a_database(cli, tmp_path: Path, write_json, seed_doc) -> None:
    code, _, err = cli("--db", "/dev/null", "size", str(write_json(seed_doc)), "-c", "4090")
    assert (
        code == 2
        and err.strip() == "trainrig: database: /dev/null is not a regular file; give a database file with --db"
    )


def _hold_lock(p: Path, seconds: float, held: threading.Event) -> None:
    conn = sqlite3.connect(p, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    held.set()
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()


def test_a_busy_database_is_waited_for_with_one_message(tmp_path: Path) -> None:
    p = tmp_path / "t.db"
    Store.open(p).close()
    told: list[str] = []
    store = Store.open(p, on_wait=told.append)
    held = threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(p, 2.5, held))
    holder.start()
    held.wait()
    start = time.perf_counter()
    wid = store.save_workload("waited", {"model": {"preset": "seed-mlp"}})  # used to fail after 5 s
    holder.join()
    assert time.perf_counter() - start >= 2.0 and wid == 1
    assert told == [f"waiting for {p}: another program is writing to it"]
    store.close()


def test_a_database_busy_for_too_long_gives_up_saying_so(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "t.db"
    Store.open(p).close()
    monkeypatch.setattr(store_mod, "BUSY_WAIT_S", 1.0)
    store = Store.open(p)
    held = threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(p, 4, held))
    holder.start()
    held.wait()
    with pytest.raises(StoreError, match=r"is still busy after 1 s \(another program is writing to it\); nothing was"):
        store.save_workload("late", {})
    holder.join()
    assert store.workloads() == []
    store.close()


def test_twenty_trainrigs_opening_an_old_database_keep_the_first_backup(tmp_path: Path) -> None:
    p = tmp_path / "old.db"
    db = sqlite_utils.Database(p)
    store_mod.MIGRATIONS[0](db)
    db["meta"].insert({"key": "schema_version", "value": "1"}, pk="key")
    db["workloads"].insert({"name": "kept", "created": "2026-01-01", "document": "{}"})
    db.close()
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from core.storage.store import Store; "
    code += f"Store.open({str(p)!r}).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE) for _ in range(20)]
    errors = [proc.communicate()[1].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 20, errors
    backup = sqlite3.connect(tmp_path / "old.db.v1.bak")
    assert backup.execute("select value from meta where key = 'schema_version'").fetchone() == ("1",)
    assert backup.execute("select name from workloads").fetchall() == [("kept",)]
    backup.close()
    store = Store.open(p)
    assert store.schema_version == SCHEMA_VERSION and [w["name"] for w in store.workloads()] == ["kept"]
    store.close()


def test_a_workload_and_its_sizing_are_saved_together_or_not_at_all(tmp_path: Path, monkeypatch) -> None:
    store = Store.open(tmp_path / "t.db")
    real = sqlite_utils.db.Table.insert

    def killed_between(self, record, *args, **kwargs):
        if self.name == "sizings":
            raise sqlite3.OperationalError("disk I/O error")  # what a kill between the two inserts leaves
        return real(self, record, *args, **kwargs)

    monkeypatch.setattr(sqlite_utils.db.Table, "insert", killed_between)
    with pytest.raises(StoreError, match="nothing was saved"):
        store.save_sizing("seed", {"model": {"preset": "seed-mlp"}}, ["x"], {"parameters": 1})
    monkeypatch.undo()
    assert store.workloads() == [] and store.sizings() == []
    store.close()


def test_commands_that_only_read_never_create_a_database(cli, tmp_path: Path, write_json, seed_doc) -> None:
    db = tmp_path / "never.db"
    for argv in (["catalogue", "--json"], ["size", str(write_json(seed_doc)), "-c", "4090", "--no-save"]):
        code, _, err = cli("--db", str(db), *argv)
        assert code == 0, err
    assert not db.exists()


def test_the_sizing_is_printed_before_a_save_that_fails(cli, tmp_path: Path, write_json, seed_doc, monkeypatch) -> None:
    def full(self, *args, **kwargs):
        raise StoreError(f"the disk holding {self.path} is full (SQLite: database or disk is full); nothing was saved")

    monkeypatch.setattr(Store, "save_sizing", full)
    db = tmp_path / "t.db"
    code, out, err = cli("--db", str(db), "size", str(write_json(seed_doc)), "-c", "4090", "--json")
    assert code == 2 and json.loads(out)["parameters"] == 569_354
    assert err.strip() == (
        f"trainrig size: the sizing above was not saved: the disk holding {db} is full "
        "(SQLite: database or disk is full); nothing was saved"
    )


def test_a_read_only_store_refuses_writes(tmp_path: Path) -> None:
    p = tmp_path / "t.db"
    Store.open(p).close()
    store = Store.open(p, read_only=True)
    with pytest.raises(StoreError, match="was opened read-only; nothing was saved"):
        store.save_workload("x", {})
    assert store.workloads() == []
    store.close()


def test_a_damaged_saved_workload_is_named_not_a_traceback(tmp_path: Path) -> None:
    """A workload document that is not JSON (a database edited by hand, or damaged): the wizard's Open
    raised JSONDecodeError; the store says which workload and why."""
    store = Store.open(tmp_path / "t.db")
    wid, _sid = store.save_sizing(
        "w", {"model": {"preset": "seed-mlp"}}, ["NVIDIA GeForce RTX 4090"], {"candidates": []}
    )
    assert store.workload_document(wid) == {"model": {"preset": "seed-mlp"}}
    for text in ("{not json", "[1, 2]", '"a text"'):
        store.db.execute("update workloads set document = ? where id = ?", [text, wid])
        store.db.conn.commit()
        with pytest.raises(StoreError, match=f"saved workload #{wid} is damaged"):
            store.workload_document(wid)
    assert store.workload_document(wid + 100) is None
    store.close()


def test_a_db_in_a_folder_that_does_not_exist_is_refused_not_created(cli, tmp_path: Path) -> None:
    """A typo in --db made the folders and an empty database: the history seemed gone."""
    code, out, err = cli("--db", str(tmp_path / "typo" / "trainrig.db"), "runs")
    assert code == 2 and out == ""
    assert err.strip() == f"trainrig: --db {tmp_path}/typo/trainrig.db: the folder {tmp_path}/typo does not exist"
    assert not (tmp_path / "typo").exists()


def test_text_that_no_longer_decodes_is_named_as_damage(tmp_path: Path) -> None:
    """Pages overwritten with other bytes that SQLite does not call malformed: `size` said "SQLite error (Could
    not decode to UTF-8 column 'snapshot' …)" without saying the file is damaged or what to do."""
    from core.storage.sqlite_file import explain

    exc = sqlite3.OperationalError("Could not decode to UTF-8 column 'snapshot' with text '{\"collect_seconds\"'")
    line = explain(exc, tmp_path / "t.db", "nothing was saved")
    assert line.startswith(f"{tmp_path / 't.db'} is damaged (SQLite: Could not decode to UTF-8")
    assert "TrainRig does not write to it and nothing was saved" in line and ".recover can rescue" in line
