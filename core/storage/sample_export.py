"""A run's samples as arrays (what the results browser plots) and several runs' samples as one CSV
file at full resolution. ``SamplesMixin`` is part of ``core.storage.store.Store``."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from core.errors import OutputError
from core.storage import samples as sample_chunks
from core.storage.files import write_atomically

CSV_DIGITS = 7  # float32 holds 7 significant digits: more would print noise


class SamplesMixin:
    db: sqlite_utils.Database
    _read: Callable[[Callable[[], Any]], Any]

    def run_series(self, run_id: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(columns, t, values)`` of a run: the column names, the times (float64 s since the run
        started, ascending) and the values (float64, len(t) × len(columns), NaN where a value was
        not read). A run without samples gives empty arrays; one not in the database too."""

        def load() -> tuple[list[str], np.ndarray, np.ndarray]:
            row = self.db.execute("select sampling from runs where id = ?", [int(run_id)]).fetchone()
            columns = _columns(row[0] if row else None)
            t, v = sample_chunks.read(self.db, int(run_id))
            k = max(v.shape[1], len(columns))
            if v.shape[1] < k:
                v = np.hstack([v, np.full((v.shape[0], k - v.shape[1]), np.nan)])
            columns += [f"column {i + 1}" for i in range(len(columns), k)]
            return columns, t, v

        return self._read(load)  # type: ignore[no-any-return]

    def sample_count(self, run_id: int) -> int:
        return int(self._read(lambda: sample_chunks.count(self.db, int(run_id))))

    def export_samples_csv(self, run_ids: Iterable[int], path: Path | str) -> int:
        """Write the runs' samples to one CSV (RFC 4180): ``run_id``, ``t_s`` and every column any
        of the runs has (empty where a run has no such column or a value was not read). Returns the
        rows written; 0 when the runs have no samples, and then no file is written. The file is
        replaced whole or not at all (OutputError says why)."""
        ids = list(dict.fromkeys(int(i) for i in run_ids))
        series = [(rid, *self.run_series(rid)) for rid in ids]
        series = [s for s in series if len(s[2])]
        if not series:
            return 0
        header: list[str] = []
        for _rid, columns, _t, _v in series:
            header += [c for c in columns if c not in header]
        total = sum(len(t) for _rid, _c, t, _v in series)

        def write(tmp: Path) -> None:
            with tmp.open("w", newline="", encoding="utf-8") as fh:
                out = csv.writer(fh)
                out.writerow(["run_id", "t_s", *header])
                for rid, columns, t, values in series:
                    where = [header.index(c) for c in columns]
                    full = np.full((len(t), len(header)), np.nan)
                    full[:, where] = values
                    cells = np.char.mod(f"%.{CSV_DIGITS}g", full).tolist()
                    nan = np.isnan(full).tolist()
                    times = np.char.mod("%.6f", t).tolist()
                    for ti, row, holes in zip(times, cells, nan, strict=True):
                        out.writerow([rid, ti, *("" if h else c for c, h in zip(row, holes, strict=True))])

        def verify(tmp: Path) -> None:
            with tmp.open("rb") as fh:
                lines = sum(1 for _ in fh)
            if lines != total + 1:
                raise OutputError(f"only {lines - 1} of {total} rows reached the disk")

        write_atomically(Path(path), write, verify)
        return total


def _columns(sampling_text: str | None) -> list[str]:
    if not sampling_text:
        return []
    try:
        sampling = json.loads(sampling_text)
    except ValueError:
        return []
    cols = sampling.get("columns") if isinstance(sampling, dict) else None
    return [str(c) for c in cols] if isinstance(cols, list) else []
