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
from core.estimate.calibration import CALIBRATIONS_USED, combine_calibrations, unsteady_note
from core.estimate.host_probe import SPEED_KEY, probe_speed
from core.estimate.rate_limits import cpu_peak_flops, drop_refused, impossible_rates
from core.hardware.catalogue import load_catalogue, match_detected_gpu
from core.paths import resource_path
from core.storage.store import Store
from telemetry.machine import fp32_flops_per_cycle, probe_machine

WORKER = "workers/calibrate.py"
READ_TEST_BYTES = 256 * 2**20


# The worker's limit: about 40 s on two cores; on a lent H100's 16-core host (2026-11-26) a whole
# calibration had not finished after 110 s (its GPU profile, then the host probe): room for slow GPUs.
WORKER_TIMEOUT_S = 360


def run_calibration(
    python: str | None = None, folder: Path | None = None, timeout_s: float = WORKER_TIMEOUT_S
) -> dict[str, Any]:
    """Measure this machine; raises TrainRigError with the reason when the worker fails. A rate above
    the physical peak of the device it ran on (core/estimate/rate_limits.py) is measured again; what
    is still impossible is dropped from the result and named under ``refused``, never stored."""
    py = python or sys.executable
    t0 = time.perf_counter()
    result = _measure(py, timeout_s)
    cpu_peak, gpu_memory = _machine_limits()
    refused = impossible_rates(result, cpu_peak, load_catalogue(), gpu_memory)
    if refused:  # a busy machine or a broken timer: measure once more
        result = _measure(py, timeout_s)
        refused = impossible_rates(result, cpu_peak, load_catalogue(), gpu_memory)
        drop_refused(result, refused)
    if note := unsteady_note(result):
        result["unsteady"] = note
    measure_gpu_host(result, gpu_memory)
    result["storage"] = measure_read(folder or Path(tempfile.gettempdir()))
    result["python"] = py
    result["seconds"] = round(time.perf_counter() - t0, 2)
    result["measured_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return result


def measure_gpu_host(result: dict[str, Any], gpu_memory: list[int | None]) -> None:
    """This machine's GPU host speed from the host probe the worker timed on its first CUDA GPU
    (core/estimate/host_probe.py), kept under the result's "host"; an implausible one is refused,
    named under "refused", and not kept."""
    catalogue = load_catalogue()
    for i, g in enumerate(result.get("gpus") or []):
        probe_s = g.get("host_probe_s")
        memory = gpu_memory[i] if i < len(gpu_memory) else None
        gpu = match_detected_gpu(str(g.get("name", "")), memory, catalogue)
        if probe_s is None or gpu is None:
            continue
        speed, note = probe_speed(probe_s, gpu)
        if speed is None:
            result.setdefault("refused", []).append(note)
        else:
            result.setdefault("host", {}).update({SPEED_KEY: speed, "gpu_host_note": note})
        return


def _machine_limits() -> tuple[float, list[int | None]]:
    """This machine's CPU peak bound and its GPUs' memory (to match them to the catalogue)."""
    m = probe_machine()
    # only a maximum clock bounds the rate: the clock read at one moment (or a base clock) is below
    # what the cores boost to; hyper-threads are counted as cores, to bound rather than estimate
    clock = m.clock_mhz * 1e6 if m.clock_mhz and "max" in m.clock_source else None
    cores = max(m.physical_cores, m.logical_cores)
    return cpu_peak_flops(cores, clock, fp32_flops_per_cycle(m)), [g.memory_bytes for g in m.gpus]


def _measure(py: str, timeout_s: float) -> dict[str, Any]:
    """One run of the calibration worker: its JSON answer."""
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


def stored_calibration(store: Store | None, fingerprint: str) -> dict[str, Any] | None:
    """What this machine's sizings use: the median of its latest calibrations (core/estimate/
    calibration.py combine_calibrations), None when it has none or there is no database."""
    if store is None:
        return None
    return combine_calibrations(store.recent_calibrations(fingerprint, CALIBRATIONS_USED))


def spread_text(combined: dict[str, Any]) -> str:
    """ "median of the last 3 calibrations; they measured linear layers 120–157 GFLOP/s, …"."""
    rounds = int(combined.get("rounds", 1))
    if rounds < 2:
        return "one calibration (calibrate again: sizings use the median of the last three)"
    parts = [
        f"{label.split(' (')[0]} {lo:,.3g}–{hi:,.3g} {label.split('(')[1][:-1]}"
        for label, (lo, hi) in (combined.get("spread") or {}).items()
    ]
    return f"median of the last {rounds} calibrations, which measured " + ", ".join(parts)
