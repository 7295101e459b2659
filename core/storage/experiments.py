"""Experiments in the database: a one-factor experiment, a thread-scaling, a storage comparison or a
process scaling groups the runs it made (by their uids, so that an archive carries the group to another
machine) with its plan and its summary table; the results browser lists it with kind "experiment"."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlite_utils

from core.storage import results_index

EXPERIMENT_KINDS = ("one-factor", "threads", "storage", "scaling")


def create(db: sqlite_utils.Database) -> None:
    db["experiments"].create(
        {
            "id": int,
            "created": str,
            "name": str,
            "kind": str,  # one-factor, threads, storage, scaling
            "machine": str,
            "status": str,  # finished, cancelled, failed
            "factor": str,  # the field varied ("training.batch_size", "threads", "storage", "processes")
            "plan": str,  # JSON: values, repeats, device, epochs, samples, the base workload
            "run_uids": str,  # JSON: the results index uids of its runs, in order
            "summary": str,  # JSON: the summary table as the command prints it with --json
        },
        pk="id",
        if_not_exists=True,
    )


class ExperimentsMixin:
    db: sqlite_utils.Database
    _read: Callable[[Callable[[], Any]], Any]  # Store's
    _write: Callable[[Callable[[], Any]], Any]

    def save_experiment(
        self,
        name: str,
        kind: str,
        factor: str,
        plan: dict[str, Any],
        run_ids: Sequence[int | None],
        summary: dict[str, Any],
        status: str = "finished",
        machine: str = "",
    ) -> int:
        """Record an experiment and the runs it made (ids of this database); returns its id."""
        if kind not in EXPERIMENT_KINDS:
            raise ValueError(f"experiment kind {kind!r}: one of {', '.join(EXPERIMENT_KINDS)}")

        def insert() -> int:
            ids = [int(i) for i in run_ids if i is not None]
            uids = []
            for i in ids:
                row = self.db.execute("select uid from results_index where kind = 'run' and id = ?", [i]).fetchone()
                if row is not None:
                    uids.append(row[0])
            table = self.db["experiments"]
            table.insert(
                {
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                    "name": name,
                    "kind": kind,
                    "machine": machine,
                    "status": status,
                    "factor": factor,
                    "plan": json.dumps(plan, default=str),
                    "run_uids": json.dumps(uids),
                    "summary": json.dumps(summary, default=str),
                }
            )
            eid = int(table.last_pk)
            results_index.refresh(self.db, "experiment", eid)
            return eid

        return int(self._write(insert))

    def experiment(self, experiment_id: int) -> dict[str, Any] | None:
        """The experiment with its plan and summary decoded and ``run_ids``: the ids its runs have in
        this database (a run deleted since, or not imported with it, is left out)."""

        def load() -> dict[str, Any] | None:
            cur = self.db.execute("select * from experiments where id = ?", [int(experiment_id)])
            names = [d[0] for d in cur.description]
            row = cur.fetchone()
            if row is None:
                return None
            out = dict(zip(names, row, strict=True))
            for k in ("plan", "run_uids", "summary"):
                out[k] = json.loads(out[k]) if out.get(k) else None
            ids = []
            for uid in out["run_uids"] or []:
                r = self.db.execute("select id from results_index where kind = 'run' and uid = ?", [uid]).fetchone()
                if r is not None:
                    ids.append(int(r[0]))
            out["run_ids"] = ids
            return out

        return self._read(load)
