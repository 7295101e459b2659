"""Calibrate this machine: compute rates and framework overhead measured with PyTorch (in a child
process of the Python environment with PyTorch), storage read rate measured here with the page
cache dropped for the test file (posix_fadvise, no root needed)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from core.errors import TrainRigError
from core.paths import resource_path

WORKER = "workers/calibrate.py"
READ_TEST_BYTES = 256 * 2**20


def run_calibration(python: str | None = None, folder: Path | None = None, timeout_s: float = 120) -> dict[str, Any]:
    """Measure this machine; raises TrainRigError with the reason when the worker fails."""
    py = python or sys.executable
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([py, str(resource_path(WORKER))], capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise TrainRigError(f"calibration needs a Python with PyTorch; {py} does not exist") from None
    except subprocess.TimeoutExpired:
        raise TrainRigError(f"calibration did not finish within {timeout_s:g} s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise TrainRigError(f"calibration failed in {py}: {last}")
    try:
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TrainRigError(f"calibration gave an unreadable answer: {proc.stdout[:200]!r}") from None
    result["storage"] = measure_read(folder or Path(tempfile.gettempdir()))
    result["python"] = py
    result["seconds"] = round(time.perf_counter() - t0, 2)
    result["measured_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return result


def measure_read(folder: Path, size: int = READ_TEST_BYTES) -> dict[str, Any]:
    """Sequential read rate of a fresh file in ``folder``, its pages evicted from the cache first."""
    chunk = os.urandom(4 * 2**20)
    try:
        fd, name = tempfile.mkstemp(prefix="trainrig-read-", dir=folder)
    except OSError as exc:
        return {"folder": str(folder), "read_bps": None, "note": f"cannot write a test file: {exc}"}
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            for _ in range(size // len(chunk)):
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        cached = _evict(path)
        t = time.perf_counter()
        with path.open("rb", buffering=0) as fh:
            while fh.read(8 * 2**20):
                pass
        seconds = time.perf_counter() - t
    finally:
        path.unlink(missing_ok=True)
    return {
        "folder": str(folder),
        "read_bps": size / seconds,
        "note": "page cache dropped for the test file" if cached else "read may come from the page cache",
    }


def _evict(path: Path) -> bool:
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
