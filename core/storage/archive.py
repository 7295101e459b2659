"""Results archives: one file that moves sizings, runs (with their samples), inventories and
calibrations between machines.

The file is a zip holding ``manifest.json`` (format, version, item count, SHA-256 of the items)
and ``items.jsonl``, one JSON object per item: its ``uid`` (the item's identity, kept across
machines), its kind, its rows (without local ids), a run's sample chunks (base64) and what the user
added (tags, notes, a new name). Importing reads and checks the whole file first, then adds the
items whose uid the database does not have, in one transaction: importing an archive twice adds
nothing the second time, and a damaged file changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from core.errors import ArchiveError, OutputError
from core.storage import results_index
from core.storage.files import write_atomically
from core.storage.results import json_or
from core.storage.results_index import SOURCE_TABLE

FORMAT = "trainrig-results-archive"
VERSION = 1
MANIFEST = "manifest.json"
ITEMS = "items.jsonl"
USER_FIELDS = ("name", "renamed", "tags", "notes")


class ArchiveMixin:
    db: sqlite_utils.Database
    _read: Callable[[Callable[[], Any]], Any]
    _write: Callable[[Callable[[], Any]], Any]

    def export_archive(self, path: Path | str, keys: Iterable[tuple[str, int]] | None = None) -> int:
        """Write the items ``keys`` ((kind, id) pairs; None: every item) to a results archive;
        returns how many items it holds. 0: there was nothing to export and no file was written."""
        if keys is None:
            sql = "select kind, id from results_index order by created, kind, id"
            wanted = self._read(lambda: [(k, int(i)) for k, i in self.db.execute(sql)])
        else:
            wanted = list(dict.fromkeys((str(k), int(i)) for k, i in keys))
        wanted = [(k, i) for k, i in wanted if k in SOURCE_TABLE]
        if not wanted:
            return 0
        written = 0

        def write(tmp: Path) -> None:
            nonlocal written
            digest = hashlib.sha256()
            count = 0
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
                with zf.open(ITEMS, "w") as fh:
                    for kind, item_id in wanted:
                        item = self._read(lambda kind=kind, item_id=item_id: _item(self.db, kind, item_id))
                        if item is None:  # deleted meanwhile
                            continue
                        line = (json.dumps(item, sort_keys=True) + "\n").encode()
                        digest.update(line)
                        fh.write(line)
                        count += 1
                manifest = {
                    "format": FORMAT,
                    "version": VERSION,
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                    "items": count,
                    "items_sha256": digest.hexdigest(),
                }
                zf.writestr(MANIFEST, json.dumps(manifest, indent=2))
            written = count

        def verify(tmp: Path) -> None:
            try:
                _check(tmp)
            except ArchiveError as exc:
                raise OutputError(f"the archive written does not read back: {exc}") from None

        write_atomically(Path(path), write, verify)
        return written

    def import_archive(self, path: Path | str) -> dict[str, int]:
        """Add the archive's items that this database does not have (by uid); returns
        ``{"added": n, "skipped": m}``. A file that is not a whole TrainRig results archive raises
        ArchiveError naming the problem, and the database is not changed."""
        p = Path(path)
        _check(p)  # the whole file is read and checked before anything is written

        def add() -> dict[str, int]:
            added = skipped = 0
            for item in _items(p):
                if self.db.execute("select 1 from results_index where uid = ?", [item["uid"]]).fetchone():
                    skipped += 1
                    continue
                _insert(self.db, item)
                added += 1
            return {"added": added, "skipped": skipped}

        return dict(self._write(add))


def _item(db: sqlite_utils.Database, kind: str, item_id: int) -> dict[str, Any] | None:
    idx = db.execute(
        "select uid, name, renamed, tags, notes from results_index where kind = ? and id = ?", [kind, item_id]
    ).fetchone()
    row = _row(db, SOURCE_TABLE[kind], item_id)
    if idx is None or row is None:
        return None
    item: dict[str, Any] = {
        "uid": idx[0],
        "kind": kind,
        "user": {"name": idx[1], "renamed": int(idx[2] or 0), "tags": json.loads(idx[3] or "[]"), "notes": idx[4]},
        "row": row,
    }
    if kind == "sizing":
        item["workload"] = _row(db, "workloads", row.pop("workload_id"))
    if kind == "run":
        row.pop("inventory_id", None)  # an id of the other database's snapshot
        item["chunks"] = [
            {"n": n, "k": k, "t0": t0, "t1": t1, "t": _b64(t), "v": _b64(v)}
            for n, k, t0, t1, t, v in db.execute(
                "select n, k, t0, t1, t, v from sample_chunks where run_id = ? order by seq", [item_id]
            )
        ]
    return item


def _row(db: sqlite_utils.Database, table: str, item_id: int | None) -> dict[str, Any] | None:
    if item_id is None:
        return None
    cur = db.execute(f"select * from {table} where id = ?", [item_id])
    names = [d[0] for d in cur.description]
    r = cur.fetchone()
    if r is None:
        return None
    row = dict(zip(names, r, strict=True))
    row.pop("id")
    return row


def _b64(blob: bytes) -> str:
    return base64.b64encode(blob).decode("ascii")


def _refuse(path: Path, problem: str) -> ArchiveError:
    return ArchiveError(f"{path} {problem}; nothing was imported")


def _open(path: Path) -> zipfile.ZipFile:
    if not path.is_file():
        raise ArchiveError(f"{path} does not exist or is not a file; nothing was imported")
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise _refuse(path, "is not a TrainRig results archive (not a zip file, or cut short)") from None
    except OSError as exc:
        raise ArchiveError(f"{path} cannot be read: {exc.strerror or exc}; nothing was imported") from None


def _manifest(path: Path, zf: zipfile.ZipFile) -> dict[str, Any]:
    names = set(zf.namelist())
    if MANIFEST not in names or ITEMS not in names:
        raise _refuse(path, f"is a zip file but not a TrainRig results archive (no {MANIFEST} and {ITEMS})")
    try:
        manifest = json.loads(zf.read(MANIFEST))
    except (ValueError, zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        raise _refuse(path, f"has a damaged {MANIFEST} ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _refuse(path, "is a zip file but not a TrainRig results archive (unknown format)")
    version = manifest.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise _refuse(path, f"was written by a newer TrainRig (archive version {version}, this one reads {VERSION})")
    return manifest


def _check(path: Path) -> None:
    """Read the whole archive and check it: the manifest, every item's CRC, count and checksum,
    and that every item is whole. Raises ArchiveError naming the first problem."""
    with _open(path) as zf:
        manifest = _manifest(path, zf)
        digest = hashlib.sha256()
        count = 0
        for line_no, line in _lines(path, zf):
            digest.update(line)
            count += 1
            _validate(path, line_no, _parse(path, line_no, line))
        if count != manifest.get("items"):
            raise _refuse(path, f"is incomplete: {count} items of the {manifest.get('items')} its manifest lists")
        if digest.hexdigest() != manifest.get("items_sha256"):
            raise _refuse(path, "is damaged: its items do not match the checksum in its manifest")


def _lines(path: Path, zf: zipfile.ZipFile) -> Iterator[tuple[int, bytes]]:
    try:
        with zf.open(ITEMS) as raw:
            yield from enumerate(raw, start=1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error) as exc:  # CRC, cut-off or bad deflate
        raise _refuse(path, f"is damaged ({exc})") from None


def _parse(path: Path, line_no: int, line: bytes) -> dict[str, Any]:
    try:
        item = json.loads(line)
    except ValueError:
        raise _refuse(path, f"is damaged: item {line_no} is not readable JSON") from None
    if not isinstance(item, dict):
        raise _refuse(path, f"is damaged: item {line_no} is not an object")
    return item


def _validate(path: Path, line_no: int, item: dict[str, Any]) -> None:
    def bad(problem: str) -> ArchiveError:
        return _refuse(path, f"is damaged: item {line_no} {problem}")

    kind = item.get("kind")
    if kind not in SOURCE_TABLE:
        raise bad(f"has an unknown kind {kind!r}")
    if not isinstance(item.get("uid"), str) or not item["uid"]:
        raise bad("has no uid")
    if not isinstance(item.get("row"), dict) or not isinstance(item.get("user"), dict):
        raise bad("has no row")
    if not isinstance(item["user"].get("tags"), list):
        raise bad("has no tags list")
    if kind == "sizing" and not isinstance(item.get("workload"), dict):
        raise bad("(a sizing) has no workload")
    if kind == "sizing" and not isinstance(_decoded_text(item["workload"].get("document")), dict):
        raise bad("(a sizing) has a damaged workload: its document is not a readable workload")
    for column in JSON_COLUMNS.get(kind, ()):
        text = item["row"].get(column)
        if text is not None and _decoded_text(text) is _UNREADABLE:
            raise bad(f"has a damaged {column}: it is not readable JSON")
    if kind == "run":
        chunks = item.get("chunks")
        if not isinstance(chunks, list):
            raise bad("(a run) has no samples list")
        for c in chunks:
            try:
                n, k = int(c["n"]), int(c["k"])
                t, v = base64.b64decode(c["t"], validate=True), base64.b64decode(c["v"], validate=True)
            except (KeyError, TypeError, ValueError):
                raise bad("has a damaged chunk of samples") from None
            if len(t) != 8 * n or len(v) != 4 * n * k:
                raise bad(f"has a chunk of samples of the wrong size ({len(v)} bytes for {n} × {k} values)")


# the rows' columns that hold JSON text, which the results browser and the wizard read back
JSON_COLUMNS = {
    "sizing": ("candidates", "result"),
    "run": ("workload", "command", "prediction", "measured", "metrics", "progress", "sampling"),
}
_UNREADABLE = object()


def _decoded_text(text: Any) -> Any:
    """``text`` decoded from JSON; _UNREADABLE when it is not a JSON text."""
    return json_or(text, _UNREADABLE) if isinstance(text, str) else _UNREADABLE


def _items(path: Path) -> Iterator[dict[str, Any]]:
    with _open(path) as zf:
        for line_no, line in _lines(path, zf):
            yield _parse(path, line_no, line)


def _insert_row(db: sqlite_utils.Database, table: str, row: dict[str, Any]) -> int:
    columns = set(db[table].columns_dict) - {"id"}
    values = {k: v for k, v in row.items() if k in columns}
    names = list(values)
    cur = db.execute(
        f"insert into {table} ({', '.join(names)}) values ({', '.join('?' for _ in names)})", [values[n] for n in names]
    )
    return int(cur.lastrowid or 0)


def _insert(db: sqlite_utils.Database, item: dict[str, Any]) -> None:
    kind = item["kind"]
    row = dict(item["row"])
    if kind == "sizing":
        row["workload_id"] = _insert_row(db, "workloads", item["workload"])
    item_id = _insert_row(db, SOURCE_TABLE[kind], row)
    if kind == "run":
        for seq, c in enumerate(item["chunks"]):
            db.execute(
                "insert into sample_chunks (run_id, seq, n, k, t0, t1, t, v) values (?, ?, ?, ?, ?, ?, ?, ?)",
                [item_id, seq, c["n"], c["k"], c.get("t0"), c.get("t1"), *(base64.b64decode(c[b]) for b in "tv")],
            )
    results_index.refresh(db, kind, item_id, uid=item["uid"])
    user = item["user"]
    tags = results_index.clean_tags([str(t) for t in user.get("tags") or []])
    name = str(user.get("name") or "")
    renamed = bool(user.get("renamed")) and bool(name)
    sql = "select name, devices, machine from results_index where kind = ? and id = ?"
    r = db.execute(sql, [kind, item_id]).fetchone()
    final_name = name if renamed else r[0]
    notes = str(user.get("notes") or "")
    db.execute(
        "update results_index set name = ?, renamed = ?, tags = ?, notes = ?, search = ? where kind = ? and id = ?",
        [
            final_name,
            int(renamed),
            json.dumps(tags),
            notes,
            results_index.search_text(final_name, r[1], r[2], tags, notes),
            kind,
            item_id,
        ],
    )
