"""The local database: one SQLite file through sqlite-utils, WAL, ordered migrations.

A database written by a newer TrainRig, or a file that is not a TrainRig database, raises
StoreError and is left untouched. Before any migration of an existing file a copy is taken
beside it (``trainrig.db.v1.bak``).
"""

from __future__ import annotations

import json
import platform
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from core.errors import StoreError
from core.storage import results_index
from core.storage import samples as sample_chunks
from core.storage.archive import ArchiveMixin
from core.storage.experiments import ExperimentsMixin
from core.storage.migrations import MIGRATIONS, SCHEMA_VERSION, read_version
from core.storage.results import ResultsMixin, json_or
from core.storage.sample_export import SamplesMixin
from core.storage.sqlite_file import check_is_sqlite, exclusive_lock, explain

RUN_STATUSES = ("running", "finished", "failed", "cancelled")
BUSY_POLL_S = 1.0  # SQLite's own wait before it reports a busy database
BUSY_WAIT_S = 60.0  # how long TrainRig waits for another program's write before giving up


class Store(ResultsMixin, SamplesMixin, ArchiveMixin, ExperimentsMixin):
    """TrainRig's database. Open with ``Store.open(path)``; methods take and return plain values.
    The results browser's queries, a run's sample series and results archives are in the mixins
    (core.storage.results, sample_export, archive)."""

    def __init__(
        self,
        db: sqlite_utils.Database,
        path: Path | None,
        *,
        read_only: bool = False,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.db = db
        self.db.conn.isolation_level = None  # transactions are explicit (BEGIN … COMMIT), never implicit
        self.path = path
        self.read_only = read_only
        self.on_wait = on_wait
        self.damaged = False  # set on the first "malformed" error: a damaged database is never written to
        # a run's reader and sampler threads write through this connection too (it is opened
        # with check_same_thread=False); the lock keeps their transactions whole
        self.lock = threading.RLock()
        self.live_runs: set[int] = set()  # runs this store is recording now (started, not finished)
        self.closed = False

    @classmethod
    def open(
        cls, path: Path | str | None, *, read_only: bool = False, on_wait: Callable[[str], None] | None = None
    ) -> Store:
        """Open (creating if missing) and migrate; ``None`` or ":memory:" is an in-memory store.

        ``read_only`` opens an existing database without writing to it (one from an older schema is
        still migrated first, with its backup). ``on_wait`` is told once when another program holds
        the database and TrainRig waits for it (up to BUSY_WAIT_S)."""
        if path is None or str(path) == ":memory:":
            store = cls(sqlite_utils.Database(sqlite3.connect(":memory:", check_same_thread=False)), None)
            store._migrate()
            return store
        p = Path(path)
        check_is_sqlite(p)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            uri = f"file:{p.resolve()}?mode=ro" if read_only else f"file:{p.resolve()}"
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_POLL_S, check_same_thread=False)
            db = sqlite_utils.Database(conn)
            version = read_version(db, p)
        except sqlite3.DatabaseError as exc:
            raise StoreError(explain(exc, p, "it was not changed")) from None
        except OSError as exc:
            raise StoreError(f"{p} cannot be created or opened: {exc}") from exc
        if version > SCHEMA_VERSION:
            conn.close()
            raise StoreError(
                f"{p} was written by a newer TrainRig (schema {version}, this version knows {SCHEMA_VERSION}); "
                "it was not opened or changed — update TrainRig or choose another database with --db"
            )
        if read_only and version < SCHEMA_VERSION:
            conn.close()
            return cls.open(p, on_wait=on_wait)  # an old schema is migrated (with its backup) before use
        store = cls(db, p, read_only=read_only, on_wait=on_wait)
        if not read_only:
            if version < SCHEMA_VERSION:
                # one TrainRig at a time migrates (or creates); the others wait here, then find it done
                with exclusive_lock(p.with_name(p.name + ".lock")):
                    store._retry(store._migrate, "it was not migrated or changed")
            store._retry(lambda: db.execute("PRAGMA journal_mode=WAL"), "it was not changed")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
        return store

    def _migrate(self) -> None:
        """Migrate to SCHEMA_VERSION. Called under the file lock (open), so that of several TrainRigs
        opening the same old database at once one migrates and the others find it done; the backup
        is taken before the migration's transaction, and an existing backup is never overwritten."""
        version = read_version(self.db, self.path)
        if version >= SCHEMA_VERSION:
            return
        if version > 0 and self.path is not None:
            self._backup(self.path.with_name(f"{self.path.name}.v{version}.bak"))
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for i in range(version, SCHEMA_VERSION):
                MIGRATIONS[i](self.db)
            self.db["meta"].upsert({"key": "schema_version", "value": str(SCHEMA_VERSION)}, pk="key")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _backup(self, target: Path) -> None:
        """A consistent copy of the database as it is before the migration (SQLite's backup API, so
        the WAL's pages are in it); the first backup of a version is kept."""
        if target.exists():
            return
        tmp = target.with_name(target.name + ".part")
        dest = sqlite3.connect(str(tmp))
        try:
            self.db.conn.backup(dest)
        finally:
            dest.close()
        tmp.replace(target)

    def _retry(self, action: Callable[[], Any], outcome: str) -> Any:
        """Run a database action, waiting for a busy database (another program writing) up to
        BUSY_WAIT_S with one message, and turning SQLite's errors into one line that says what
        happened to the user's data."""
        waited, told = 0.0, False
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StoreError(explain(exc, self.path, outcome)) from None
                if waited >= BUSY_WAIT_S:
                    raise StoreError(
                        f"{self.path} is still busy after {BUSY_WAIT_S:.0f} s (another program is writing to it); "
                        f"{outcome} — try again when it is done"
                    ) from None
                if not told and self.on_wait is not None:
                    self.on_wait(f"waiting for {self.path}: another program is writing to it")
                    told = True
                waited += BUSY_POLL_S
            except sqlite3.DatabaseError as exc:
                if "malformed" in str(exc) or "not a database" in str(exc):
                    self.damaged = True
                raise StoreError(explain(exc, self.path, outcome)) from None

    @contextmanager
    def _held(self, outcome: str) -> Iterator[None]:
        """The connection, held against the other threads' reads and writes (and ``close``); a
        StoreError naming ``outcome`` once the database was closed."""
        with self.lock:
            if self.closed:
                raise StoreError(f"{self.path or 'the database'} was closed; {outcome}")
            yield

    def _read(self, action: Callable[[], Any]) -> Any:
        with self._held("nothing could be read"):
            return self._retry(action, "nothing could be read")

    def _write(self, action: Callable[[], Any]) -> Any:
        """One write in one transaction; refused on a read-only or damaged database."""
        if self.read_only:
            raise StoreError(f"{self.path} was opened read-only; nothing was saved")
        if self.damaged:
            raise StoreError(
                explain(sqlite3.DatabaseError("database disk image is malformed"), self.path, "nothing was saved")
            )

        with self._held("nothing was saved"):
            return self._retry(lambda: self._in_transaction(action), "nothing was saved")

    @property
    def schema_version(self) -> int:
        return read_version(self.db, self.path)

    def save_workload(self, name: str, document: dict[str, Any]) -> int:
        return int(self._write(lambda: self._insert_workload(name, document)))

    def _insert_workload(self, name: str, document: dict[str, Any]) -> int:
        table = self.db["workloads"]
        table.insert({"name": name, "created": _now(), "document": json.dumps(document, sort_keys=True)})
        return int(table.last_pk)

    def save_sizing(
        self, name: str, document: dict[str, Any], candidates: list[str], result: dict[str, Any]
    ) -> tuple[int, int]:
        """The workload and its sizing in one transaction: both are saved, or neither. A sizing
        identical to the latest of the same name (the same workload, candidates and result, as
        `size` run twice gives) is not saved again: its ids are returned."""

        def both() -> tuple[int, int]:
            same = self.db.execute(
                "select w.id, s.id, w.document, s.candidates, s.result from sizings s "
                "join workloads w on w.id = s.workload_id where w.name = ? order by s.id desc limit 1",
                [name],
            ).fetchone()
            if same is not None and (same[2], same[3], same[4]) == (
                json.dumps(document, sort_keys=True),
                json.dumps(candidates),
                json.dumps(result),
            ):
                return int(same[0]), int(same[1])
            wid = self._insert_workload(name, document)
            table = self.db["sizings"]
            table.insert(
                {
                    "workload_id": wid,
                    "created": _now(),
                    "candidates": json.dumps(candidates),
                    "result": json.dumps(result),
                    "machine": this_host(),
                }
            )
            sid = int(table.last_pk)
            results_index.refresh(self.db, "sizing", sid)
            return wid, sid

        return tuple(self._write(both))  # type: ignore[return-value]

    def workloads(self) -> list[dict[str, Any]]:
        """Saved workloads, newest first: id, name, created."""
        return self._read(
            lambda: [dict(r) for r in self.db.query("select id, name, created from workloads order by id desc")]
        )

    def workload_document(self, workload_id: int) -> dict[str, Any] | None:
        """The saved workload's document; None when there is none; StoreError when its stored text is not a
        document (damaged, or written by something else)."""
        row = self._read(
            lambda: self.db.execute("select document from workloads where id = ?", [workload_id]).fetchone()
        )
        if not row:
            return None
        doc = json_or(row[0], None)
        if not isinstance(doc, dict):
            raise StoreError(f"saved workload #{workload_id} is damaged: its stored document is not a workload")
        return doc

    def sizings(self) -> list[dict[str, Any]]:
        sql = (
            "select s.id, s.created, w.name, s.candidates from sizings s join workloads w on w.id = s.workload_id "
            "order by s.id"
        )
        return self._read(lambda: [dict(r) for r in self.db.query(sql)])

    def save_user_device(self, entry: dict[str, Any]) -> None:
        """Add or replace the user's device ``entry["name"]`` (validated by the caller)."""
        self._write(
            lambda: self.db["user_devices"].upsert(
                {"name": entry["name"], "created": _now(), "entry": json.dumps(entry, sort_keys=True)}, pk="name"
            )
        )

    def user_devices(self) -> list[dict[str, Any]]:
        rows = self._read(lambda: list(self.db.query("select entry from user_devices order by name")))
        return [json.loads(r["entry"]) for r in rows]

    def remove_user_device(self, name: str) -> bool:
        return bool(
            self._write(lambda: self.db.execute("delete from user_devices where name = ?", [name]).rowcount > 0)
        )

    def save_inventory(self, snapshot: dict[str, Any]) -> int:
        def insert() -> int:
            table = self.db["inventories"]
            table.insert(
                {
                    "created": _now(),
                    "fingerprint": snapshot.get("fingerprint", ""),
                    "host": snapshot.get("host", ""),
                    "snapshot": json.dumps(snapshot, sort_keys=True),
                }
            )
            iid = int(table.last_pk)
            results_index.refresh(self.db, "inventory", iid)
            return iid

        return int(self._write(insert))

    def latest_inventory(self, fingerprint: str | None = None) -> dict[str, Any] | None:
        sql = "select snapshot from inventories"
        params: list[str] = []
        if fingerprint is not None:
            sql += " where fingerprint = ?"
            params.append(fingerprint)
        row = self._read(lambda: self.db.execute(sql + " order by id desc limit 1", params).fetchone())
        return json.loads(row[0]) if row else None

    def save_inventory_if_changed(self, snapshot: dict[str, Any]) -> bool:
        """Record a snapshot unless the latest one is of the same hardware (same fingerprint)."""
        latest = self.latest_inventory()
        if latest is not None and latest.get("fingerprint") == snapshot.get("fingerprint"):
            return False
        self.save_inventory(snapshot)
        return True

    def save_calibration(self, fingerprint: str, result: dict[str, Any]) -> int:
        def insert() -> int:
            table = self.db["calibrations"]
            table.insert({"created": _now(), "fingerprint": fingerprint, "result": json.dumps(result)})
            cid = int(table.last_pk)
            results_index.refresh(self.db, "calibration", cid)
            return cid

        return int(self._write(insert))

    def recent_calibrations(self, fingerprint: str, limit: int = 3) -> list[dict[str, Any]]:
        """This machine's latest calibrations, newest first, each with ``measured_at`` (when stored)."""
        sql = "select result, created from calibrations where fingerprint = ? order by id desc limit ?"
        rows = self._read(lambda: self.db.execute(sql, [fingerprint, int(limit)]).fetchall())
        out = []
        for result, created in rows:
            try:
                r = json.loads(result)
            except ValueError:
                continue
            if isinstance(r, dict):
                r.setdefault("measured_at", created)
                out.append(r)
        return out

    def latest_calibration(self, fingerprint: str) -> dict[str, Any] | None:
        sql = "select result from calibrations where fingerprint = ? order by id desc limit 1"
        row = self._read(lambda: self.db.execute(sql, [fingerprint]).fetchone())
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
        """Record a run that is starting (status "running") on this machine (its host name and
        the id of its latest inventory snapshot); returns its id."""

        def insert() -> int:
            host = this_host()
            inv = self.db.execute(
                "select id from inventories where host = ? order by id desc limit 1", [host]
            ).fetchone()
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
                    "machine": host,
                    "inventory_id": inv[0] if inv else None,
                }
            )
            rid = int(table.last_pk)
            results_index.refresh(self.db, "run", rid)
            return rid

        with self._held("nothing was saved"):
            rid = int(self._in_transaction(insert))
            self.live_runs.add(rid)
            return rid

    def add_samples(self, run_id: int, rows: Sequence[tuple[float, Sequence[float | None]]]) -> None:
        """Append samples ``(t, values)`` as one chunk in one transaction (None and NaN: missing).
        Called about once a second during a run: one INSERT."""
        with self._held("nothing was saved"):
            self._in_transaction(lambda: sample_chunks.append(self.db, run_id, rows))

    def _in_transaction(self, action: Callable[[], Any]) -> Any:
        """``action`` in an explicit transaction: all of it or none of it (``_write`` adds the checks
        and the busy wait; a run's sample writes call it directly: their threads record a failure as
        the run's event and carry on)."""
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = action()
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def finish_run(self, run_id: int, status: str, **fields: Any) -> None:
        """Close a run: ``status`` (finished, failed, cancelled) and any of reason, exit_code,
        duration_s, measured, metrics, progress, sampling (dicts and lists are stored as JSON)."""
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        values: dict[str, Any] = {"status": status, "ended": _now()}
        for k, v in fields.items():
            values[k] = json.dumps(v) if isinstance(v, dict | list) else v

        def update() -> None:
            self.db["runs"].update(run_id, values)
            sample_chunks.compact(self.db, run_id)
            results_index.refresh(self.db, "run", run_id)

        with self._held("nothing was saved"):
            self._in_transaction(update)
            self.live_runs.discard(run_id)

    def runs(self) -> list[dict[str, Any]]:
        """Runs, newest first: id, created, kind, name, device, status, reason, exit_code, duration_s."""
        sql = "select id, created, kind, name, device, status, reason, exit_code, duration_s from runs order by id desc"
        with self._held("nothing could be read"):
            return [dict(r) for r in self.db.query(sql)]

    def unfinished_runs_here(self) -> list[tuple[int, dict[str, Any]]]:
        """(id, sampling) of this machine's runs still marked running, for telemetry.orphan_runs."""
        sql = "select id, sampling from runs where status = 'running' and machine = ?"
        rows = self._read(lambda: self.db.execute(sql, [this_host()]).fetchall())
        out = []
        for run_id, text in rows:
            sampling = json_or(text, {})
            out.append((int(run_id), sampling if isinstance(sampling, dict) else {}))
        return out

    def recent_runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest finished trained runs, newest first, with what their predictions and
        measurements were: what the next sizing of this machine learns from
        (core.estimate.calibration.run_feedback). One query, without the large columns."""
        sql = (
            "select id, kind, status, device, prediction, measured from runs "
            "where kind = 'trained' and status = 'finished' order by id desc limit ?"
        )
        return [_decoded(r) for r in self._read(lambda: [dict(r) for r in self.db.query(sql, [limit])])]

    def run(self, run_id: int) -> dict[str, Any] | None:
        """One run with its JSON columns decoded (no samples)."""
        with self._held("nothing could be read"):
            rows = list(self.db.query("select * from runs where id = ?", [run_id]))
        return _decoded(dict(rows[0])) if rows else None

    def run_samples(self, run_id: int) -> tuple[list[str], list[tuple[float, list[float | None]]]]:
        """The run's sampling columns and its samples in time order (None where unreadable); the
        list form of ``run_series`` for callers that want Python values."""
        run = self.run(run_id)
        columns = list((run or {}).get("sampling", {}).get("columns", []))
        _names, t, values = self.run_series(run_id)
        rows = [(ti, [None if x != x else x for x in row]) for ti, row in zip(t.tolist(), values.tolist(), strict=True)]
        return columns, rows

    def close(self) -> None:
        """Close the database once the read or write in flight is done (a window's worker thread may
        be reading: closing the connection under it crashed the process); later reads and writes get
        a StoreError that says it was closed."""
        with self.lock:
            if not self.closed:
                self.closed = True
                self.db.close()


def _decoded(run: dict[str, Any]) -> dict[str, Any]:
    """A runs row with its JSON columns as values."""
    for k in ("workload", "command", "prediction", "measured", "metrics", "progress", "sampling"):
        if run.get(k) is not None:
            run[k] = json.loads(run[k])
    return run


def this_host() -> str:
    """The machine's name as results list it ("" when the system does not say)."""
    return platform.node()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
