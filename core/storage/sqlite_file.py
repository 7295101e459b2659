"""The database file under faults: checking that a file is a TrainRig database before SQLite opens
it, a lock beside it across processes, and one line for each SQLite error that says what happened
to the user's data."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.errors import StoreError

SQLITE_MAGIC = b"SQLite format 3\x00"


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on a small file beside the database, held across processes."""
    with path.open("a+b") as fh:
        if os.name == "nt":  # pragma: no cover - Windows
            import msvcrt

            while True:
                try:
                    msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    continue
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


def check_is_sqlite(p: Path) -> None:
    if p.exists() and not p.is_file():
        raise StoreError(f"{p} is not a regular file; give a database file with --db")
    if not p.exists() or p.stat().st_size == 0:
        return
    try:
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise StoreError(f"{p} cannot be read: {exc}") from exc
    if head != SQLITE_MAGIC:
        raise StoreError(f"{p} is not a TrainRig database (not an SQLite file); it was not changed")


def explain(exc: sqlite3.Error, p: Path | None, outcome: str) -> str:
    """One line for an SQLite error: what is wrong with the file and ``outcome``, what happened to
    the user's data ("nothing was saved")."""
    text = str(exc)
    # a page overwritten with other bytes: SQLite may not call it malformed, but its text no longer decodes
    if "malformed" in text or "not a database" in text or "Could not decode to UTF-8" in text:
        backups = sorted(p.parent.glob(f"{p.name}.v*.bak")) if p is not None else []
        recover = (
            f"the backup {backups[-1]} holds it as it was before the last migration"
            if backups
            else "sqlite3's .recover can rescue what is readable"
        )
        return (
            f"{p} is damaged (SQLite: {text}); TrainRig does not write to it and {outcome}. "
            f"Open another database with --db; {recover}"
        )
    if "readonly" in text or "read-only" in text:
        return f"{p} is read-only (SQLite: {text}); {outcome}"
    if "full" in text:
        return f"the disk holding {p} is full (SQLite: {text}); {outcome}"
    if "unable to open" in text:
        return f"{p} cannot be opened (SQLite: {text}); is its folder writable?"
    return f"{p}: SQLite error ({text}); {outcome}"
