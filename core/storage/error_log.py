"""The error log: the full traceback of an unexpected error, kept for a bug report while the user
sees one line that says where it is."""

from __future__ import annotations

import traceback
from datetime import UTC, datetime
from pathlib import Path

from core.paths import default_log_path

MAX_LOG_BYTES = 1_000_000  # past this the log starts again, keeping the previous one as .1


def log_unexpected(exc: BaseException, context: str, path: Path | None = None) -> Path | None:
    """Append ``exc``'s traceback to the error log; the log's path, or None if it cannot be written
    (the caller's message then says so rather than pointing at a file that does not exist)."""
    path = path or default_log_path()
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_suffix(path.suffix + ".1"))
        with path.open("a", encoding="utf-8") as f:
            f.write(f"--- {stamp} {context}\n{text}\n")
    except OSError:
        return None
    return path


def unexpected_message(exc: BaseException, context: str, path: Path | None = None) -> str:
    """One line for the user: what failed, and where the details are."""
    where = log_unexpected(exc, context, path)
    detail = f"details in {where}" if where else "the error log cannot be written"
    return f"unexpected error ({type(exc).__name__}: {exc}); {detail} — please report it"
