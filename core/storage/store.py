"""The local database: one SQLite file through sqlite-utils, WAL, ordered migrations.

A database written by a newer TrainRig, or a file that is not a TrainRig database, raises
StoreError and is left untouched. Before any migration of an existing file a copy is taken
beside it (``trainrig.db.v1.bak``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from core.errors import StoreError

SQLITE_MAGIC = b"SQLite format 3\x00"


def _m1_workloads_sizings(db: sqlite_utils.Database) -> None:
    db["workloads"].create({"id": int, "name": str, "created": str, "document": str}, pk="id", if_not_exists=True)
    db["sizings"].create(
        {"id": int, "workload_id": int, "created": str, "candidates": str, "result": str},
        pk="id",
        foreign_keys=[("workload_id", "workloads", "id")],
        if_not_exists=True,
    )
    db["sizings"].create_index(["workload_id"], if_not_exists=True)


def _m2_user_devices(db: sqlite_utils.Database) -> None:
    db["user_devices"].create({"name": str, "created": str, "entry": str}, pk="name", if_not_exists=True)


def _m3_inventories(db: sqlite_utils.Database) -> None:
    db["inventories"].create(
        {"id": int, "created": str, "fingerprint": str, "host": str, "snapshot": str}, pk="id", if_not_exists=True
    )
    db["inventories"].create_index(["fingerprint"], if_not_exists=True)


def _m4_calibrations(db: sqlite_utils.Database) -> None:
    db["calibrations"].create(
        {"id": int, "created": str, "fingerprint": str, "result": str}, pk="id", if_not_exists=True
    )
    db["calibrations"].create_index(["fingerprint"], if_not_exists=True)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _m1_workloads_sizings,
    _m2_user_devices,
    _m3_inventories,
    _m4_calibrations,
]
SCHEMA_VERSION = len(MIGRATIONS)


class Store:
    """TrainRig's database. Open with ``Store.open(path)``; methods take and return plain values."""

    def __init__(self, db: sqlite_utils.Database, path: Path | None) -> None:
        self.db = db
        self.path = path

    @classmethod
    def open(cls, path: Path | str | None) -> Store:
        """Open (creating if missing) and migrate; ``None`` or ":memory:" is an in-memory store."""
        if path is None or str(path) == ":memory:":
            store = cls(sqlite_utils.Database(memory=True), None)
            store._migrate(0)
            return store
        p = Path(path)
        _check_is_sqlite(p)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(p))
            db = sqlite_utils.Database(conn)
            version = _read_version(db, p)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{p} cannot be opened as a database ({exc}); it was not changed") from exc
        except OSError as exc:
            raise StoreError(f"{p} cannot be created or opened: {exc}") from exc
        if version > SCHEMA_VERSION:
            conn.close()
            raise StoreError(
                f"{p} was written by a newer TrainRig (schema {version}, this version knows {SCHEMA_VERSION}); "
                "it was not opened or changed — update TrainRig or choose another database with --db"
            )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        store = cls(db, p)
        if version < SCHEMA_VERSION:
            if version > 0:
                backup = p.with_name(f"{p.name}.v{version}.bak")
                conn.execute("PRAGMA wal_checkpoint(FULL)")
                shutil.copy2(p, backup)
            store._migrate(version)
        return store

    def _migrate(self, from_version: int) -> None:
        conn = self.db.conn
        conn.isolation_level = None  # explicit transaction: DDL and version change are atomic
        conn.execute("BEGIN IMMEDIATE")
        try:
            for i in range(from_version, SCHEMA_VERSION):
                MIGRATIONS[i](self.db)
            self.db["meta"].upsert({"key": "schema_version", "value": str(SCHEMA_VERSION)}, pk="key")
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        return _read_version(self.db, self.path)

    def save_workload(self, name: str, document: dict[str, Any]) -> int:
        table = self.db["workloads"]
        table.insert({"name": name, "created": _now(), "document": json.dumps(document, sort_keys=True)})
        return int(table.last_pk)

    def save_sizing(self, workload_id: int, candidates: list[str], result: dict[str, Any]) -> int:
        table = self.db["sizings"]
        table.insert(
            {
                "workload_id": workload_id,
                "created": _now(),
                "candidates": json.dumps(candidates),
                "result": json.dumps(result),
            }
        )
        return int(table.last_pk)

    def workloads(self) -> list[dict[str, Any]]:
        """Saved workloads, newest first: id, name, created."""
        return [dict(r) for r in self.db.query("select id, name, created from workloads order by id desc")]

    def workload_document(self, workload_id: int) -> dict[str, Any] | None:
        row = self.db.execute("select document from workloads where id = ?", [workload_id]).fetchone()
        return json.loads(row[0]) if row else None

    def sizings(self) -> list[dict[str, Any]]:
        sql = (
            "select s.id, s.created, w.name, s.candidates from sizings s join workloads w on w.id = s.workload_id "
            "order by s.id"
        )
        return [dict(r) for r in self.db.query(sql)]

    def save_user_device(self, entry: dict[str, Any]) -> None:
        """Add or replace the user's device ``entry["name"]`` (validated by the caller)."""
        self.db["user_devices"].upsert(
            {"name": entry["name"], "created": _now(), "entry": json.dumps(entry, sort_keys=True)}, pk="name"
        )

    def user_devices(self) -> list[dict[str, Any]]:
        return [json.loads(r["entry"]) for r in self.db.query("select entry from user_devices order by name")]

    def remove_user_device(self, name: str) -> bool:
        found = self.db.execute("select 1 from user_devices where name = ?", [name]).fetchone() is not None
        if found:
            self.db.execute("delete from user_devices where name = ?", [name])
        return found

    def save_inventory(self, snapshot: dict[str, Any]) -> int:
        table = self.db["inventories"]
        table.insert(
            {
                "created": _now(),
                "fingerprint": snapshot.get("fingerprint", ""),
                "host": snapshot.get("host", ""),
                "snapshot": json.dumps(snapshot, sort_keys=True),
            }
        )
        return int(table.last_pk)

    def latest_inventory(self, fingerprint: str | None = None) -> dict[str, Any] | None:
        sql = "select snapshot from inventories"
        params: list[str] = []
        if fingerprint is not None:
            sql += " where fingerprint = ?"
            params.append(fingerprint)
        row = self.db.execute(sql + " order by id desc limit 1", params).fetchone()
        return json.loads(row[0]) if row else None

    def save_inventory_if_changed(self, snapshot: dict[str, Any]) -> bool:
        """Record a snapshot unless the latest one is of the same hardware (same fingerprint)."""
        latest = self.latest_inventory()
        if latest is not None and latest.get("fingerprint") == snapshot.get("fingerprint"):
            return False
        self.save_inventory(snapshot)
        return True

    def save_calibration(self, fingerprint: str, result: dict[str, Any]) -> int:
        table = self.db["calibrations"]
        table.insert({"created": _now(), "fingerprint": fingerprint, "result": json.dumps(result)})
        return int(table.last_pk)

    def latest_calibration(self, fingerprint: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "select result from calibrations where fingerprint = ? order by id desc limit 1", [fingerprint]
        ).fetchone()
        return json.loads(row[0]) if row else None

    def close(self) -> None:
        self.db.close()


def _check_is_sqlite(p: Path) -> None:
    if not p.exists() or p.stat().st_size == 0:
        return
    try:
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise StoreError(f"{p} cannot be read: {exc}") from exc
    if head != SQLITE_MAGIC:
        raise StoreError(f"{p} is not a TrainRig database (not an SQLite file); it was not changed")


def _read_version(db: sqlite_utils.Database, p: Path | None) -> int:
    tables = set(db.table_names())
    if "meta" not in tables:
        if tables:
            raise StoreError(f"{p} is an SQLite database of another program (no TrainRig schema); it was not changed")
        return 0
    row = db.execute("select value from meta where key = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row else 0
    except ValueError:
        raise StoreError(f"{p} has a damaged schema version {row[0]!r}; it was not changed") from None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
