"""A run's telemetry samples stored compactly: chunks of samples, each one row holding the times as
little-endian float64 and the values as a little-endian float32 matrix (samples × columns,
row-major, NaN where a value could not be read).

A live run appends one chunk per sampler flush (about a second of samples: one INSERT, as cheap
as before); when the run ends its chunks are merged into chunks of up to ``CHUNK_SAMPLES``
samples, so that a run's curves load with a few reads. float32 keeps 7 significant digits: a
percentage to 0.00001 %, a memory figure of 80 GB to 8 KiB — finer than any plot or table shows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import sqlite_utils

CHUNK_SAMPLES = 16_384  # samples per chunk once a run is finished (a chunk of 50 columns: 3.3 MB)
T_DTYPE = np.dtype("<f8")
V_DTYPE = np.dtype("<f4")

CREATE_SQL = """
create table if not exists sample_chunks (
    run_id integer not null references runs(id),
    seq integer not null,
    n integer not null,
    k integer not null,
    t0 real,
    t1 real,
    t blob not null,
    v blob not null,
    primary key (run_id, seq)
)
"""

Rows = Sequence[tuple[float, Sequence[float | None]]]


def create(db: sqlite_utils.Database) -> None:
    db.execute(CREATE_SQL)


def encode(t: np.ndarray, values: np.ndarray) -> tuple[int, int, float, float, bytes, bytes]:
    """(n, k, first t, last t, times blob, values blob) of a chunk."""
    n, k = values.shape
    return (
        n,
        k,
        float(t[0]),
        float(t[-1]),
        np.ascontiguousarray(t, dtype=T_DTYPE).tobytes(),
        np.ascontiguousarray(values, dtype=V_DTYPE).tobytes(),
    )


def decode(n: int, k: int, t_blob: bytes, v_blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    t = np.frombuffer(t_blob, dtype=T_DTYPE, count=n)
    v = np.frombuffer(v_blob, dtype=V_DTYPE, count=n * k).reshape(n, k)
    return t, v


def rows_to_arrays(rows: Rows) -> tuple[np.ndarray, np.ndarray]:
    """``(t, values)`` rows as arrays; None and NaN become NaN, short rows are padded with NaN."""
    n = len(rows)
    k = max((len(vals) for _, vals in rows), default=0)
    t = np.fromiter((float(r[0]) for r in rows), dtype=np.float64, count=n)
    try:
        v = np.array([list(vals) for _, vals in rows], dtype=np.float64).reshape(n, k)
    except ValueError:  # rows of different lengths
        v = np.full((n, k), np.nan)
        for i, (_, vals) in enumerate(rows):
            v[i, : len(vals)] = np.array(list(vals), dtype=np.float64)
    return t, v


def append(db: sqlite_utils.Database, run_id: int, rows: Rows) -> None:
    """One chunk for ``rows`` (the caller holds the transaction)."""
    if not rows:
        return
    t, v = rows_to_arrays(rows)
    append_arrays(db, run_id, t, v)


def append_arrays(db: sqlite_utils.Database, run_id: int, t: np.ndarray, values: np.ndarray) -> None:
    if len(t) == 0:
        return
    seq = db.execute("select coalesce(max(seq), -1) + 1 from sample_chunks where run_id = ?", [run_id]).fetchone()[0]
    db.execute(
        "insert into sample_chunks (run_id, seq, n, k, t0, t1, t, v) values (?, ?, ?, ?, ?, ?, ?, ?)",
        [run_id, seq, *encode(t, values)],
    )


def read(db: sqlite_utils.Database, run_id: int) -> tuple[np.ndarray, np.ndarray]:
    """All of a run's samples in time order: t (float64, seconds since the run started) and the
    values (float64, n × k, NaN where missing)."""
    chunks = db.execute("select n, k, t, v from sample_chunks where run_id = ? order by seq", [run_id]).fetchall()
    if not chunks:
        return np.empty(0), np.empty((0, 0))
    k = max(c[1] for c in chunks)
    n = sum(c[0] for c in chunks)
    t = np.empty(n)
    v = np.full((n, k), np.nan)
    i = 0
    for cn, ck, tb, vb in chunks:
        ct, cv = decode(cn, ck, tb, vb)
        t[i : i + cn] = ct
        v[i : i + cn, :ck] = cv
        i += cn
    if n > 1 and not bool(np.all(t[1:] >= t[:-1])):  # chunks written by several threads out of order
        order = np.argsort(t, kind="stable")
        t, v = t[order], v[order]
    return t, v


def count(db: sqlite_utils.Database, run_id: int) -> int:
    return int(db.execute("select coalesce(sum(n), 0) from sample_chunks where run_id = ?", [run_id]).fetchone()[0])


def compact(db: sqlite_utils.Database, run_id: int) -> None:
    """Merge a run's chunks into chunks of up to CHUNK_SAMPLES samples, in time order (the caller
    holds the transaction). Nothing is done for a run already compact."""
    sizes = [r[0] for r in db.execute("select n from sample_chunks where run_id = ? order by seq", [run_id])]
    if len(sizes) <= 1 or all(s == CHUNK_SAMPLES for s in sizes[:-1]):
        return
    t, v = read(db, run_id)
    db.execute("delete from sample_chunks where run_id = ?", [run_id])
    for seq, start in enumerate(range(0, len(t), CHUNK_SAMPLES)):
        end = start + CHUNK_SAMPLES
        db.execute(
            "insert into sample_chunks (run_id, seq, n, k, t0, t1, t, v) values (?, ?, ?, ?, ?, ?, ?, ?)",
            [run_id, seq, *encode(t[start:end], v[start:end])],
        )


def migrate_json_rows(db: sqlite_utils.Database) -> None:
    """Schema 5 kept one row per sample (a JSON array of values): move each run's samples into
    chunks, then drop the old table."""
    if "samples" not in db.table_names():
        return
    # samples of a run that is not there (never written by TrainRig) have nothing to belong to
    sql = "select distinct run_id from samples where run_id in (select id from runs) order by run_id"
    run_ids = [r[0] for r in db.execute(sql)]
    for run_id in run_ids:
        rows = db.execute("select t, value_list from samples where run_id = ? order by t", [run_id]).fetchall()
        decoded: list[tuple[float, list[float | None]]] = []
        for t, text in rows:
            try:
                vals = json.loads(text)
            except (TypeError, ValueError):
                vals = []
            if not isinstance(vals, list):
                vals = []
            numbers = [v if isinstance(v, int | float) and not isinstance(v, bool) else None for v in vals]
            decoded.append((float(t), numbers))
        t_arr, v_arr = rows_to_arrays(decoded)
        for seq, start in enumerate(range(0, len(t_arr), CHUNK_SAMPLES)):
            end = start + CHUNK_SAMPLES
            db.execute(
                "insert into sample_chunks (run_id, seq, n, k, t0, t1, t, v) values (?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, seq, *encode(t_arr[start:end], v_arr[start:end])],
            )
    db.execute("drop table samples")
