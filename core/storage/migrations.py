"""The database's schema, one migration per version, in order: ``MIGRATIONS[i]`` takes a database
from schema i to i + 1 (core.storage.store runs them after taking a backup)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from core.errors import StoreError
from core.storage import experiments, results_index, samples


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


def _m6_results_index_and_compact_samples(db: sqlite_utils.Database) -> None:
    # the results browser: where a run and a sizing were made, one index row per item with the
    # figures it lists, and the samples as float32 chunks instead of one JSON row per sample
    for table in ("runs", "sizings"):
        if "machine" not in db[table].columns_dict:
            db[table].add_column("machine", str)
    if "inventory_id" not in db["runs"].columns_dict:
        db["runs"].add_column("inventory_id", int)
    samples.create(db)
    samples.migrate_json_rows(db)
    results_index.create(db)
    results_index.rebuild(db)


def _m7_experiments(db: sqlite_utils.Database) -> None:
    # experiments group the runs they made, with their plan and summary (core.storage.experiments)
    experiments.create(db)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _m1_workloads_sizings,
    _m2_user_devices,
    _m3_inventories,
    _m4_calibrations,
    _m5_runs_samples,
    _m6_results_index_and_compact_samples,
    _m7_experiments,
]
SCHEMA_VERSION = len(MIGRATIONS)


def read_version(db: sqlite_utils.Database, p: Path | None) -> int:
    """The schema version of an open database: 0 for an empty file; StoreError for another program's
    database or a damaged version."""
    tables = set(db.table_names())
    if "meta" not in tables:
        if tables:
            raise StoreError(f"{p} is an SQLite database of another program (no TrainRig schema); it was not changed")
        return 0
    row = db.execute("select value from meta where key = 'schema_version'").fetchone()
    try:  # a whole number or its digits; a NULL, a float or other text is damage
        version = 0 if not row else int(row[0]) if isinstance(row[0], int | str) else -1
    except ValueError:
        version = -1
    if version < 0:
        raise StoreError(f"{p} has a damaged schema version {row[0]!r}; it was not opened or changed")
    return version
