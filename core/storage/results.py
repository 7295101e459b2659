"""The results browser's queries on the store: list, count and filter every sizing, run,
experiment, inventory and calibration from the results index; one item's full document; tags,
names and notes; delete with undo of the last delete.

``ResultsMixin`` is part of ``core.storage.store.Store``; it uses the store's connection, lock
and transactions (``_read``, ``_write``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, timedelta
from typing import Any

import sqlite_utils

from core.errors import TrainRigError
from core.storage import results_index
from core.storage import samples as sample_chunks
from core.storage.results_index import COLUMNS, KINDS

# the tables a delete takes rows from, in the order they are restored (parents before children)
TRASH_TABLES = (
    "workloads",
    "sizings",
    "runs",
    "sample_chunks",
    "inventories",
    "calibrations",
    "experiments",
    "results_index",
)
SORTABLE = frozenset(COLUMNS) - {"tags"}
MAX_NAME_CHARS = 200  # as a workload's name (core.spec.workload)
MAX_NOTES_CHARS = 20_000
ID_ORDERED_BY = {"key": "kind {dir}, id {dir}", "id": "id {dir}, kind {dir}"}
SELECT = (
    "select kind, id, name, created, machine, devices, status, predicted_step_s, measured_step_s, "
    "training_time_s, peak_memory_bytes, accuracy, f1, tags, notes from results_index"
)


def _bound(value: str | date | datetime | None, *, end: bool) -> str | None:
    """A date bound as the ISO text ``created`` is compared with: a date alone means the whole day."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return (value + timedelta(days=1)).isoformat() if end else value.isoformat()
    text = str(value).strip()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise TrainRigError(f"{text!r} is not a date (YYYY-MM-DD) or a time (YYYY-MM-DDTHH:MM)") from None
    if len(text) == 10:  # "2026-11-23": from the start or until the end of that day
        return (when.date() + timedelta(days=1)).isoformat() if end else text
    return text


def _like(text: str) -> str:
    """``text`` as a LIKE pattern that matches it literally (escape character: backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def where_clause(
    kind: str | Sequence[str] | None = None,
    text: str = "",
    tag: str | None = None,
    machine: str | None = None,
    since: str | date | datetime | None = None,
    until: str | date | datetime | None = None,
) -> tuple[str, list[Any]]:
    """The SQL condition and its parameters of the browser's filters (all of them must hold)."""
    conds: list[str] = []
    params: list[Any] = []
    if kind:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise TrainRigError(f"unknown kind {unknown[0]!r}: one of {', '.join(KINDS)}")
        conds.append(f"kind in ({', '.join('?' for _ in kinds)})")
        params += kinds
    for word in str(text or "").casefold().split():
        conds.append("search like ? escape '\\'")
        params.append("%" + _like(word) + "%")
    if tag:
        tag = tag.strip()
        if tag.isascii():  # a plain text test first spares most rows the JSON parse (10,000 runs: 41 → 9 ms)
            conds.append("tags like ? escape '\\'")
            params.append("%" + _like(json.dumps(tag)) + "%")
        conds.append("exists (select 1 from json_each(results_index.tags) where lower(value) = lower(?))")
        params.append(tag)
    if machine:
        conds.append("machine = ?")
        params.append(machine)
    lo, hi = _bound(since, end=False), _bound(until, end=True)
    if lo:
        conds.append("created >= ?")
        params.append(lo)
    if hi:
        conds.append("created < ?" if len(hi) == 10 else "created <= ?")
        params.append(hi)
    return (" where " + " and ".join(conds)) if conds else "", params


def order_clause(order_by: str | None, descending: bool) -> str:
    """ORDER BY of a column key; None values sort last either way, ties newest item first."""
    key = order_by or "created"
    if key not in SORTABLE:
        raise TrainRigError(f"cannot sort by {key!r}: one of {', '.join(sorted(SORTABLE))}")
    d = "desc" if descending else "asc"
    if key in ID_ORDERED_BY:
        return " order by " + ID_ORDERED_BY[key].format(dir=d)
    if key in ("created", "kind"):  # never null: the index on created serves the default order
        return f" order by {key} {d}, id {d}, kind {d}"
    collate = " collate nocase" if key in ("name", "machine", "devices", "status", "notes") else ""
    return f" order by ({key} is null), {key}{collate} {d}, created desc, id desc, kind desc"


def row_dict(r: Sequence[Any]) -> dict[str, Any]:
    kind, item_id = r[0], int(r[1])
    tags = json.loads(r[13]) if r[13] else []
    return {
        "kind": kind,
        "id": item_id,
        "key": f"{kind}:{item_id}",
        "name": r[2],
        "created": r[3],
        "machine": r[4],
        "devices": r[5],
        "status": r[6],
        "predicted_step_s": r[7],
        "measured_step_s": r[8],
        "training_time_s": r[9],
        "peak_memory_bytes": r[10],
        "accuracy": r[11],
        "f1": r[12],
        "tags": tags,
        "notes": r[14],
    }


def _ids_json(ids: Iterable[int]) -> str:
    return json.dumps(sorted({int(i) for i in ids}))


class ResultsMixin:
    db: sqlite_utils.Database
    live_runs: set[int]
    _read: Callable[[Callable[[], Any]], Any]
    _write: Callable[[Callable[[], Any]], Any]

    # --- listing -----------------------------------------------------------------------------
    def results(
        self,
        *,
        kind: str | Sequence[str] | None = None,
        text: str = "",
        tag: str | None = None,
        machine: str | None = None,
        since: str | date | datetime | None = None,
        until: str | date | datetime | None = None,
        order_by: str | None = "created",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Rows of the results index (keys: results_index.COLUMNS) that pass every filter, sorted.

        ``text``: each word must occur (case-insensitively) in the name, devices, machine, tags or
        notes. ``since``/``until``: ISO dates or times (a date alone is the whole day)."""
        where, params = where_clause(kind, text, tag, machine, since, until)
        sql = SELECT + where + order_clause(order_by, descending)
        if limit is not None or offset:
            sql += " limit ? offset ?"
            params += [-1 if limit is None else int(limit), int(offset)]
        return self._read(lambda: [row_dict(r) for r in self.db.execute(sql, params).fetchall()])

    def results_count(
        self,
        *,
        kind: str | Sequence[str] | None = None,
        text: str = "",
        tag: str | None = None,
        machine: str | None = None,
        since: str | date | datetime | None = None,
        until: str | date | datetime | None = None,
        **_ignored: Any,
    ) -> int:
        """How many rows ``results`` gives with the same filters (order and paging are ignored)."""
        where, params = where_clause(kind, text, tag, machine, since, until)
        sql = "select count(*) from results_index" + where
        return int(self._read(lambda: self.db.execute(sql, params).fetchone()[0]))

    def result_machines(self) -> list[str]:
        """The machines results were made on, for a filter's choices."""
        sql = "select distinct machine from results_index where machine != '' order by machine collate nocase"
        return self._read(lambda: [r[0] for r in self.db.execute(sql).fetchall()])

    def result_tags(self) -> list[str]:
        """Every tag in use, for a filter's choices."""
        sql = (
            "select distinct j.value from results_index, json_each(results_index.tags) j "
            "order by j.value collate nocase"
        )
        return self._read(lambda: [r[0] for r in self.db.execute(sql).fetchall()])

    def result_row(self, kind: str, item_id: int) -> dict[str, Any] | None:
        rows = self._read(
            lambda: self.db.execute(SELECT + " where kind = ? and id = ?", [kind, int(item_id)]).fetchall()
        )
        return row_dict(rows[0]) if rows else None

    def result_detail(self, kind: str, item_id: int) -> dict[str, Any] | None:
        """The item's row plus its whole stored document, by kind:
        sizing: ``workload`` (the document), ``workload_id``, ``candidates`` (names), ``result``
        (the sizing as `size --json` gives it); run: ``run`` (the runs row with prediction,
        measured, metrics, progress, sampling decoded) and ``sample_count``; inventory:
        ``snapshot``; calibration: ``fingerprint`` and ``result``. None when it is not there."""
        row = self.result_row(kind, item_id)
        if row is None:
            return None

        def load() -> dict[str, Any]:
            db, i = self.db, int(item_id)
            if kind == "sizing":
                r = db.execute(
                    "select s.workload_id, s.candidates, s.result, w.document from sizings s "
                    "left join workloads w on w.id = s.workload_id where s.id = ?",
                    [i],
                ).fetchone()
                if r is None:
                    return {}
                result, workload = json_or(r[2], {}), json_or(r[3], None)
                return {  # a damaged text reads as nothing stored, never as a value of another type
                    "workload_id": r[0],
                    "candidates": json_or(r[1], []),
                    "result": result if isinstance(result, dict) else {},
                    "workload": workload if isinstance(workload, dict) else None,
                }
            if kind == "run":
                cur = db.execute("select * from runs where id = ?", [i])
                names = [d[0] for d in cur.description]
                r = cur.fetchone()
                if r is None:
                    return {}
                run = dict(zip(names, r, strict=True))
                for k in ("workload", "command", "prediction", "measured", "metrics", "progress", "sampling"):
                    if run.get(k) is not None:
                        run[k] = json_or(run[k], None)
                return {"run": run, "sample_count": sample_chunks.count(db, i)}
            if kind == "experiment":
                found = self.experiment(i)  # type: ignore[attr-defined]
                return {"experiment": found} if found else {}
            if kind == "inventory":
                r = db.execute("select snapshot from inventories where id = ?", [i]).fetchone()
                return {"snapshot": json_or(r[0], {})} if r else {}
            if kind == "calibration":
                r = db.execute("select fingerprint, result from calibrations where id = ?", [i]).fetchone()
                return {"fingerprint": r[0], "result": json_or(r[1], {})} if r else {}
            return {}

        return {**row, **self._read(load)}

    # --- what the user adds --------------------------------------------------------------------
    # a 100,000-character name widened the window to 709,408 pixels; two million characters of notes took
    # a second to show on every selection
    def set_tags(self, kind: str, item_id: int, tags: Sequence[str]) -> list[str]:
        """Replace the item's tags (trimmed, each once); returns them."""
        clean = results_index.clean_tags(list(tags))
        self._update_user_fields(kind, item_id, tags=clean)
        return clean

    def rename(self, kind: str, item_id: int, name: str) -> None:
        """Give the item a new name (a run's and a sizing's own rows take it too)."""
        new = str(name).strip()
        if not new:
            raise TrainRigError("a name cannot be empty; the name was not changed")
        if len(new) > MAX_NAME_CHARS:
            raise TrainRigError(
                f"a name of {len(new):,} characters is too long (at most {MAX_NAME_CHARS}); not changed"
            )
        self._update_user_fields(kind, item_id, name=new)

    def annotate(self, kind: str, item_id: int, notes: str) -> None:
        """Replace the item's notes."""
        if len(str(notes)) > MAX_NOTES_CHARS:
            raise TrainRigError(
                f"notes of {len(str(notes)):,} characters are too long (at most {MAX_NOTES_CHARS:,}); not changed"
            )
        self._update_user_fields(kind, item_id, notes=str(notes))

    def _update_user_fields(
        self,
        kind: str,
        item_id: int,
        *,
        tags: list[str] | None = None,
        name: str | None = None,
        notes: str | None = None,
    ) -> None:
        def update() -> None:
            db, i = self.db, int(item_id)
            old = db.execute(
                "select name, devices, machine, tags, notes from results_index where kind = ? and id = ?", [kind, i]
            ).fetchone()
            if old is None:
                raise TrainRigError(f"{kind} #{i} is not in the database (was it deleted?); nothing was changed")
            new_name = old[0] if name is None else name
            new_tags = json.loads(old[3] or "[]") if tags is None else tags
            new_notes = old[4] if notes is None else notes
            if name is not None:
                if kind == "run":
                    db.execute("update runs set name = ? where id = ?", [name, i])
                elif kind == "sizing":
                    db.execute(
                        "update workloads set name = ? where id = (select workload_id from sizings where id = ?)",
                        [name, i],
                    )
            db.execute(
                "update results_index set name = ?, renamed = renamed or ?, tags = ?, notes = ?, search = ? "
                "where kind = ? and id = ?",
                [
                    new_name,
                    1 if name is not None else 0,
                    json.dumps(new_tags),
                    new_notes,
                    results_index.search_text(new_name, old[1], old[2], new_tags, new_notes),
                    kind,
                    i,
                ],
            )

        self._write(update)

    # --- delete and undo -----------------------------------------------------------------------
    def delete_results(self, keys: Iterable[tuple[str, int]]) -> int:
        """Delete the items (kind, id) in one transaction: a run with its samples, a sizing with its
        workload. Returns how many items were deleted; ``undo_delete`` brings back the last delete."""
        wanted: dict[str, set[int]] = {k: set() for k in KINDS}
        for kind, item_id in keys:
            if kind not in KINDS:
                raise TrainRigError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}; nothing was deleted")
            wanted[kind].add(int(item_id))
        live = sorted(wanted["run"] & self.live_runs)
        if live:
            raise TrainRigError(f"run #{live[0]} is still running: cancel it first; nothing was deleted")

        def delete() -> int:
            db = self.db
            _drop_trash(db)
            ids = {k: _existing(db, k, v) for k, v in wanted.items()}
            runs, sizings = ids["run"], ids["sizing"]
            workloads = set()
            if sizings:
                sj = _ids_json(sizings)
                workloads = {
                    r[0]
                    for r in db.execute(
                        "select workload_id from sizings where id in (select value from json_each(?)) "
                        "and workload_id not in (select workload_id from sizings where id not in "
                        "(select value from json_each(?)))",
                        [sj, sj],
                    )
                }
            in_ids = "in (select value from json_each(?))"
            plan = [
                *((("results_index", f"kind = '{k}' and id {in_ids}", v)) for k, v in ids.items()),
                ("sample_chunks", f"run_id {in_ids}", runs),
                ("runs", f"id {in_ids}", runs),
                ("sizings", f"id {in_ids}", sizings),
                ("workloads", f"id {in_ids}", workloads),
                ("inventories", f"id {in_ids}", ids["inventory"]),
                ("calibrations", f"id {in_ids}", ids["calibration"]),
                ("experiments", f"id {in_ids}", ids["experiment"]),
            ]
            for table, cond, id_set in plan:
                if not id_set:
                    continue
                trash = f"trash_{table}"
                exists = db.execute("select 1 from sqlite_master where name = ?", [trash]).fetchone()
                if exists:
                    db.execute(f"insert into {trash} select * from {table} where {cond}", [_ids_json(id_set)])
                else:
                    db.execute(f"create table {trash} as select * from {table} where {cond}", [_ids_json(id_set)])
                db.execute(f"delete from {table} where {cond}", [_ids_json(id_set)])
            return sum(len(v) for v in ids.values())

        return int(self._write(delete))

    def can_undo_delete(self) -> bool:
        return bool(self._read(lambda: _trash_tables(self.db)))

    def undo_delete(self) -> int:
        """Bring back what the last ``delete_results`` deleted; returns how many items (0 when there
        is nothing to undo). An item whose id was taken since gets a new id."""

        def undo() -> int:
            db = self.db
            present = _trash_tables(db)
            if not present:
                return 0
            if "results_index" in present:
                # an item imported again (from an archive) since the delete is there already
                db.execute("delete from trash_results_index where uid in (select uid from results_index)")
            _renumber_taken_ids(db, present)
            for table in TRASH_TABLES:
                if table in present:
                    db.execute(f"insert into {table} select * from trash_{table}")
            restored = (
                int(db.execute("select count(*) from trash_results_index").fetchone()[0])
                if "results_index" in present
                else 0
            )
            _drop_trash(db)
            return restored

        return int(self._write(undo))

    def discard_undo(self) -> None:
        """Forget the last delete (its rows are kept for undo until the next delete)."""
        self._write(lambda: _drop_trash(self.db))


def json_or(text: str | None, default: Any) -> Any:
    """``text`` decoded from JSON, or ``default`` where there is none or it is not JSON (damaged)."""
    if text is None:
        return default
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return default


def _existing(db: sqlite_utils.Database, kind: str, ids: set[int]) -> set[int]:
    if not ids:
        return set()
    table = results_index.SOURCE_TABLE[kind]
    sql = f"select id from {table} where id in (select value from json_each(?))"
    return {r[0] for r in db.execute(sql, [_ids_json(ids)])}


def _trash_tables(db: sqlite_utils.Database) -> list[str]:
    sql = "select name from sqlite_master where type = 'table' and name like 'trash\\_%' escape '\\'"
    names = {r[0] for r in db.execute(sql)}
    return [t for t in TRASH_TABLES if f"trash_{t}" in names]


def _drop_trash(db: sqlite_utils.Database) -> None:
    for table in _trash_tables(db):
        db.execute(f"drop table trash_{table}")


def _renumber_taken_ids(db: sqlite_utils.Database, present: list[str]) -> None:
    """SQLite gives a deleted highest id to the next new row: a deleted item whose id was taken
    since comes back under a new id, and its own rows (samples, index row, workload) follow it."""

    def move(table: str, kind: str | None, children: list[tuple[str, str]]) -> None:
        if table not in present:
            return
        taken = [
            r[0] for r in db.execute(f"select id from trash_{table} where id in (select id from {table})").fetchall()
        ]
        for old in taken:
            top = max(
                db.execute(f"select coalesce(max(id), 0) from {table}").fetchone()[0],
                db.execute(f"select coalesce(max(id), 0) from trash_{table}").fetchone()[0],
            )
            new = int(top) + 1
            db.execute(f"update trash_{table} set id = ? where id = ?", [new, old])
            for child, column in children:
                if child in present:
                    db.execute(f"update trash_{child} set {column} = ? where {column} = ?", [new, old])
            if kind is not None and "results_index" in present:
                db.execute("update trash_results_index set id = ? where kind = ? and id = ?", [new, kind, old])

    move("workloads", None, [("sizings", "workload_id")])
    move("sizings", "sizing", [])
    move("runs", "run", [("sample_chunks", "run_id")])
    move("inventories", "inventory", [])
    move("calibrations", "calibration", [])
    move("experiments", "experiment", [])
