"""The local database: one SQLite file through sqlite-utils, WAL, ordered migrations.

A database written by a newer TrainRig, or a file that is not a TrainRig database, raises
StoreError and is left untouched. Before any migration of an existing file a copy is taken
beside it (``trainrig.db.v1.bak``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import Callable, Sequence
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


def _m5_runs_samples(db: sqlite_utils.Database) -> None:
    # a run: a training run of TrainRig's trainer ("trained") or any command under `monitor`
    # ("monitored"); JSON columns hold the workload, the sizing's prediction, the measured figures,
    # the trainer's final metrics, the progress history and the sampler's columns and reasons
    db["runs"].create(
        {
            "id": int,
            "created": str,
            "kind": str,
            "name": str,
            "workload": str,
            "command": str,
            "device": str,
            "status": str,  # running, finished, failed, cancelled
            "reason": str,
            "exit_code": int,
            "ended": str,
            "duration_s": float,
            "prediction": str,
            "measured": str,
            "metrics": str,
            "progress": str,
            "sampling": str,
        },
        pk="id",
        if_not_exists=True,
    )
    # one row per sample: seconds since the run started and the values in the order of the run's
    # sampling columns, a JSON array with null where a value could not be read
    db["samples"].create(
        {"run_id": int, "t": float, "value_list": str},
        foreign_keys=[("run_id", "runs", "id")],
        if_not_exists=True,
    )
    db["samples"].create_index(["run_id", "t"], if_not_exists=True)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _m1_workloads_sizings,
    _m2_user_devices,
    _m3_inventories,
    _m4_calibrations,
    _m5_runs_samples,
]
RUN_STATUSES = ("running", "finished", "failed", "cancelled")
SCHEMA_VERSION = len(MIGRATIONS)


class Store:
    """TrainRig's database. Open with ``Store.open(path)``; methods take and return plain values."""

    def __init__(self, db: sqlite_utils.Database, path: Path | None) -> None:
        self.db = db
        self.path = path
        # a run's reader and sampler threads write through this connection too (it is opened
        # with check_same_thread=False); the lock keeps their transactions whole
        self.lock = threading.RLock()

    @classmethod
    def open(cls, path: Path | str | None) -> Store:
        """Open (creating if missing) and migrate; ``None`` or ":memory:" is an in-memory store."""
        if path is None or str(path) == ":memory:":
            store = cls(sqlite_utils.Database(sqlite3.connect(":memory:", check_same_thread=False)), None)
            store._migrate(0)
            return store
        p = Path(path)
        _check_is_sqlite(p)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(p), check_same_thread=False)
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

    # --- runs and their samples -----------------------------------------------------------
    def start_run(
        self,
        kind: str,
        name: str,
        *,
        workload: dict[str, Any] | None = None,
        command: Sequence[str] = (),
        device: str = "",
        prediction: dict[str, Any] | None = None,
        sampling: dict[str, Any] | None = None,
    ) -> int:
        """Record a run that is starting (status "running"); returns its id."""
        with self.lock:
            table = self.db["runs"]
            table.insert(
                {
                    "created": _now(),
                    "kind": kind,
                    "name": name,
                    "workload": json.dumps(workload) if workload is not None else None,
                    "command": json.dumps(list(command)),
                    "device": device,
                    "status": "running",
                    "prediction": json.dumps(prediction) if prediction is not None else None,
                    "sampling": json.dumps(sampling or {}),
                }
            )
            return int(table.last_pk)

    def add_samples(self, run_id: int, rows: Sequence[tuple[float, Sequence[float | None]]]) -> None:
        """Append samples ``(t, values)`` in one transaction; NaN is stored as null."""
        data = [(run_id, t, json.dumps([None if v is None or v != v else v for v in vals])) for t, vals in rows]
        with self.lock:
            conn = self.db.conn
            if conn.isolation_level is None and not conn.in_transaction:
                conn.execute("BEGIN")
            conn.executemany("insert into samples (run_id, t, value_list) values (?, ?, ?)", data)
            conn.commit()

    def finish_run(self, run_id: int, status: str, **fields: Any) -> None:
        """Close a run: ``status`` (finished, failed, cancelled) and any of reason, exit_code,
        duration_s, measured, metrics, progress, sampling (dicts and lists are stored as JSON)."""
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        values: dict[str, Any] = {"status": status, "ended": _now()}
        for k, v in fields.items():
            values[k] = json.dumps(v) if isinstance(v, dict | list) else v
        with self.lock:
            self.db["runs"].update(run_id, values)

    def runs(self) -> list[dict[str, Any]]:
        """Runs, newest first: id, created, kind, name, device, status, reason, exit_code, duration_s."""
        sql = "select id, created, kind, name, device, status, reason, exit_code, duration_s from runs order by id desc"
        with self.lock:
            return [dict(r) for r in self.db.query(sql)]

    def run(self, run_id: int) -> dict[str, Any] | None:
        """One run with its JSON columns decoded (no samples)."""
        with self.lock:
            rows = list(self.db.query("select * from runs where id = ?", [run_id]))
        if not rows:
            return None
        run = dict(rows[0])
        for k in ("workload", "command", "prediction", "measured", "metrics", "progress", "sampling"):
            if run.get(k) is not None:
                run[k] = json.loads(run[k])
        return run

    def run_samples(self, run_id: int) -> tuple[list[str], list[tuple[float, list[float | None]]]]:
        """The run's sampling columns and its samples in time order (None where unreadable)."""
        run = self.run(run_id)
        columns = list((run or {}).get("sampling", {}).get("columns", []))
        with self.lock:
            rows = self.db.execute("select t, value_list from samples where run_id = ? order by t", [run_id]).fetchall()
        return columns, [(t, json.loads(v)) for t, v in rows]

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
