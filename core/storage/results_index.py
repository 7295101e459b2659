"""The results index: one row per sizing, run, experiment, inventory and calibration with the
figures the results browser shows, so that listing, filtering and sorting 10,000 runs reads one
small table (never the runs' JSON columns or their samples).

The derived columns (name, created, machine, devices, status and the figures) are recomputed from
the item's own rows whenever it is saved (``refresh``). What the user adds (tags, notes, a new
name) and the item's ``uid`` (its identity across machines, what a results archive carries) live
only here and survive a refresh.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import sqlite_utils

KINDS = ("sizing", "run", "experiment", "inventory", "calibration")
FIGURES = ("predicted_step_s", "measured_step_s", "training_time_s", "peak_memory_bytes", "accuracy", "f1")
# the columns of a results row (what Store.results returns), in the browser's order
COLUMNS = (
    "kind",
    "id",
    "key",
    "name",
    "created",
    "machine",
    "devices",
    "status",
    *FIGURES,
    "tags",
    "notes",
)
SOURCE_TABLE = {
    "sizing": "sizings",
    "run": "runs",
    "experiment": "experiments",
    "inventory": "inventories",
    "calibration": "calibrations",
}

CREATE_SQL = """
create table if not exists results_index (
    kind text not null,
    id integer not null,
    uid text not null,
    name text not null default '',
    renamed integer not null default 0,
    created text not null default '',
    machine text not null default '',
    devices text not null default '',
    status text not null default '',
    predicted_step_s real,
    measured_step_s real,
    training_time_s real,
    peak_memory_bytes real,
    accuracy real,
    f1 real,
    tags text not null default '[]',
    notes text not null default '',
    search text not null default '',
    primary key (kind, id)
)
"""
INDEX_SQL = (
    "create unique index if not exists results_index_uid on results_index (uid)",
    "create index if not exists results_index_created on results_index (created)",
    "create index if not exists results_index_kind_created on results_index (kind, created)",
    "create index if not exists results_index_machine on results_index (machine)",
)


def create(db: sqlite_utils.Database) -> None:
    db.execute(CREATE_SQL)
    for sql in INDEX_SQL:
        db.execute(sql)


def search_text(name: str, devices: str, machine: str, tags: list[str], notes: str) -> str:
    """What the text filter matches: the user-visible words, case-folded (Unicode, not only ASCII)."""
    return "\n".join([name, devices, machine, " ".join(tags), notes]).casefold()


def clean_tags(tags: list[str] | tuple[str, ...]) -> list[str]:
    """Tags as the user means them: trimmed, no empty ones, each once (the first spelling kept)."""
    out: list[str] = []
    seen: set[str] = set()
    for t in tags:
        s = str(t).strip()
        if s and s.casefold() not in seen:
            seen.add(s.casefold())
            out.append(s)
    return out


def _loads(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if v == v else None  # NaN is "not known"


def _inventory_devices(snapshot: dict[str, Any]) -> str:
    cpu = snapshot.get("cpu") if isinstance(snapshot.get("cpu"), dict) else {}
    parts = [str(cpu.get("model"))] if cpu.get("model") else []
    gpus = [g.get("name") for g in snapshot.get("gpus") or [] if isinstance(g, dict) and g.get("name")]
    if gpus:
        counts: dict[str, int] = {}
        for g in gpus:
            counts[g] = counts.get(g, 0) + 1
        parts += [f"{n} × {g}" if n > 1 else g for g, n in counts.items()]
    return ", ".join(parts)


def _chosen_candidate(result: dict[str, Any]) -> dict[str, Any] | None:
    """The candidate whose figures a sizing's row shows: the one recommended (a sizing saved since it is
    stored: with no price known the decision buys nothing, and the first candidate that fits, this
    machine's, was shown beside a recommendation of another), else the one the decision buys, else the
    first that fits; None when none fits (the row showed a candidate's 29 days and 158 GiB that does not fit)."""
    cands = [c for c in result.get("candidates") or [] if isinstance(c, dict)]
    if not cands:
        return None
    decision = result.get("decision") if isinstance(result.get("decision"), dict) else {}
    buy = result.get("recommended") if isinstance(result.get("recommended"), dict) else None
    buy = buy or (decision.get("buy") if isinstance(decision.get("buy"), dict) else None)
    if buy:
        for c in cands:
            if c.get("device") == buy.get("device") and c.get("count") == buy.get("count"):
                return c
    fitting = [c for c in cands if c.get("fits")]
    return fitting[0] if fitting else None


def derive(db: sqlite_utils.Database, kind: str, item_id: int) -> dict[str, Any] | None:
    """The derived columns of one item from its own rows; None when it is not in the database."""
    if kind == "sizing":
        row = db.execute(
            "select s.created, s.candidates, s.result, s.machine, w.name from sizings s "
            "left join workloads w on w.id = s.workload_id where s.id = ?",
            [item_id],
        ).fetchone()
        if row is None:
            return None
        created, candidates, result_text, machine, name = row
        result = _loads(result_text) or {}
        chosen = _chosen_candidate(result) or {}
        unfit = not chosen and any(isinstance(c, dict) for c in result.get("candidates") or [])
        memory = chosen.get("memory_per_device") if isinstance(chosen.get("memory_per_device"), dict) else {}
        names = _loads(candidates) or []
        return {
            "name": name or str(result.get("workload") or f"sizing #{item_id}"),
            "created": created or "",
            "machine": machine or "",
            "devices": ", ".join(str(n) for n in names),
            "status": "no candidate fits" if unfit else "",
            "predicted_step_s": _num(chosen.get("step_time_s")),
            "measured_step_s": None,
            "training_time_s": _num(chosen.get("training_time_s")),
            "peak_memory_bytes": _num(memory.get("total")),
            "accuracy": None,
            "f1": None,
        }
    if kind == "run":
        row = db.execute(
            "select created, name, device, status, duration_s, prediction, measured, metrics, machine "
            "from runs where id = ?",
            [item_id],
        ).fetchone()
        if row is None:
            return None
        created, name, device, status, duration_s, prediction, measured, metrics, machine = row
        p = _loads(prediction) or {}
        m = _loads(measured) or {}
        x = _loads(metrics) or {}
        devices = device or ""
        if p.get("device") and p.get("device") != device:
            devices = f"{devices}: {p['device']}" if devices else str(p["device"])
        peak = m.get("training_memory_bytes", m.get("peak_memory_bytes", x.get("peak_memory_bytes")))
        return {
            "name": name or f"run #{item_id}",
            "created": created or "",
            "machine": machine or "",
            "devices": devices,
            "status": status or "",
            "predicted_step_s": _num(p.get("step_s")),
            "measured_step_s": _num(m.get("median_step_s", x.get("median_step_s"))),
            "training_time_s": _num(x.get("training_time_s", m.get("training_time_s", duration_s))),
            "peak_memory_bytes": _num(peak),
            "accuracy": _num(x.get("accuracy", m.get("accuracy"))),
            "f1": _num(x.get("macro_f1", m.get("macro_f1"))),
        }
    if kind == "experiment":
        sql = "select created, name, machine, status, plan, summary from experiments where id = ?"
        row = db.execute(sql, [item_id]).fetchone()
        if row is None:
            return None
        created, name, machine, status, plan_text, summary_text = row
        plan = _loads(plan_text) or {}
        rows = (_loads(summary_text) or {}).get("rows") or []
        times = [r["training_time_s"]["mean"] for r in rows if isinstance(r.get("training_time_s"), dict)]
        accs = [r["accuracy"]["mean"] for r in rows if isinstance(r.get("accuracy"), dict)]
        f1s = [r["macro_f1"]["mean"] for r in rows if isinstance(r.get("macro_f1"), dict)]
        return {
            **_empty(),
            "name": name or f"experiment #{item_id}",
            "created": created or "",
            "machine": machine or "",
            "devices": str(plan.get("device") or ""),
            "status": status or "",
            "training_time_s": _num(sum(times)) if times else None,  # all its runs
            "accuracy": _num(max(accs)) if accs else None,  # the best value's
            "f1": _num(max(f1s)) if f1s else None,
        }
    if kind == "inventory":
        sql = "select created, host, fingerprint, snapshot from inventories where id = ?"
        row = db.execute(sql, [item_id]).fetchone()
        if row is None:
            return None
        created, host, fingerprint, snapshot = row
        snap = _loads(snapshot) or {}
        machine = host or (f"machine {fingerprint[:8]}" if fingerprint else "")
        return {
            **_empty(),
            "name": f"Inventory of {machine}" if machine else f"inventory #{item_id}",
            "created": created or "",
            "machine": machine,
            "devices": _inventory_devices(snap),
        }
    if kind == "calibration":
        row = db.execute("select created, fingerprint, result from calibrations where id = ?", [item_id]).fetchone()
        if row is None:
            return None
        created, fingerprint, _result = row
        inv = db.execute(
            "select host, snapshot from inventories where fingerprint = ? order by id desc limit 1", [fingerprint]
        ).fetchone()
        host = inv[0] if inv and inv[0] else ""
        machine = host or (f"machine {fingerprint[:8]}" if fingerprint else "")
        return {
            **_empty(),
            "name": f"Calibration of {machine}" if machine else f"calibration #{item_id}",
            "created": created or "",
            "machine": machine,
            "devices": _inventory_devices(_loads(inv[1]) or {}) if inv else "",
        }
    return None


def _empty() -> dict[str, Any]:
    return {"status": "", **dict.fromkeys(FIGURES)}


def refresh(db: sqlite_utils.Database, kind: str, item_id: int, *, uid: str | None = None) -> None:
    """Recompute one item's row from its own rows (inside the caller's transaction); the user's
    tags, notes, new name and the uid are kept. An item that is gone loses its row."""
    derived = derive(db, kind, item_id)
    if derived is None:
        db.execute("delete from results_index where kind = ? and id = ?", [kind, item_id])
        return
    old = db.execute(
        "select uid, name, renamed, tags, notes from results_index where kind = ? and id = ?", [kind, item_id]
    ).fetchone()
    tags: list[str] = []
    notes = ""
    renamed = 0
    if old is not None:
        uid = old[0]
        renamed = int(old[2] or 0)
        if renamed:
            derived["name"] = old[1]
        tags = _loads(old[3]) or []
        notes = old[4] or ""
    values = {
        "kind": kind,
        "id": item_id,
        "uid": uid or uuid.uuid4().hex,
        "renamed": renamed,
        **derived,
        "tags": json.dumps(tags),
        "notes": notes,
        "search": search_text(derived["name"], derived["devices"], derived["machine"], tags, notes),
    }
    names = list(values)
    db.execute(
        f"insert or replace into results_index ({', '.join(names)}) values ({', '.join('?' for _ in names)})",
        [values[n] for n in names],
    )
    if kind == "inventory":
        # a calibration names its machine after the inventory of the same fingerprint
        fingerprint = db.execute("select fingerprint from inventories where id = ?", [item_id]).fetchone()[0]
        sql = (
            "select id from calibrations where fingerprint = ? "
            "and id in (select id from results_index where kind = 'calibration')"
        )
        for (cid,) in db.execute(sql, [fingerprint]).fetchall():
            refresh(db, "calibration", int(cid))


def stable_uid(db: sqlite_utils.Database, kind: str, item_id: int) -> str:
    """The uid an item that was saved before the index existed gets: a hash of its own row, so that
    two copies of one old database give their items the same identity."""
    table = SOURCE_TABLE[kind]
    cur = db.execute(f"select * from {table} where id = ?", [item_id])
    names = [d[0] for d in cur.description]
    row = cur.fetchone()
    content = json.dumps([kind, dict(zip(names, row, strict=True))], sort_keys=True, default=str)
    return hashlib.sha256(content.encode()).hexdigest()[:32]


def rebuild(db: sqlite_utils.Database) -> None:
    """Index every item of the database (the migration's job; items already indexed keep their
    tags, notes and uid)."""
    for kind, table in SOURCE_TABLE.items():
        if table not in db.table_names():
            continue
        for (item_id,) in db.execute(f"select id from {table} order by id").fetchall():
            refresh(db, kind, int(item_id), uid=stable_uid(db, kind, int(item_id)))
