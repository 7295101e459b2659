"""Calibrate this machine: compute rates and framework overhead measured with PyTorch (in a child
process of the Python environment with PyTorch), storage read rate measured here with the page
cache dropped for the test file (posix_fadvise, no root needed)."""

from __future__ import annotations

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


def efficiency_from_calibration(cal: dict[str, Any], device_kind: str) -> dict[str, Any]:
    """The figures the timing model takes from a calibration of this machine: layer rates by size,
    elementwise and optimizer costs, framework overhead. A calibration from an older version has
    one rate per kind of layer; it is used as a rate for every size."""
    out: dict[str, Any] = {}
    if device_kind != "cpu":
        # GPU rates are measured and stored, but not yet checked against measured GPU training steps
        # with this per-op model, so GPUs keep the datasheet peak and bandwidth with the default
        # efficiencies (docs/accuracy.md).
        return out
    prof = cal.get("cpu_profile") or {}
    lin, conv = cal.get("cpu_linear_train_flops"), cal.get("cpu_conv_train_flops")
    if prof.get("linear_train"):
        out["linear_train"] = [[float(f), float(r)] for f, r in prof["linear_train"]]
    elif lin:
        out["linear_train"] = [[1.0, float(lin)]]
    if prof.get("conv_train"):
        out["conv_train"] = [[float(f), float(r)] for f, r in prof["conv_train"]]
    elif conv:
        out["conv_train"] = [[1.0, float(conv)]]
    if prof.get("conv_first_train"):
        out["conv_first_train"] = [[float(f), float(r)] for f, r in prof["conv_first_train"]]
    if prof.get("conv_call_s") is not None:
        out["conv_call_s"] = float(prof["conv_call_s"])
    for key in ("elementwise_s", "optimizer_tensor_s"):
        if prof.get(key):
            out[key] = {k: float(v) for k, v in prof[key].items()}
    if prof.get("optimizer_s"):  # by tensor size; a calibration from an older version has one figure
        out["optimizer_s"] = {
            k: [[float(n), float(t)] for n, t in v] if isinstance(v, list) else [[1.0, float(v)]]
            for k, v in prof["optimizer_s"].items()
        }
    half, fp32 = cal.get("cpu_bf16_matmul_flops"), cal.get("cpu_fp32_matmul_flops")
    if half and fp32:
        out["half_speedup"] = float(half) / float(fp32)
    overhead = cal.get("step_overhead") or {}
    if "per_op_s" in overhead:
        out["per_op_s"] = float(overhead["per_op_s"])
        out["per_step_s"] = float(overhead["per_step_s"])
    return out


def what_calibration_applies(result: dict[str, Any]) -> str:
    """What later sizings take from a calibration, in words for the CLI and the Inventory tab:
    a CPU's every measured rate (this machine) and efficiency (its catalogue model); a GPU's
    efficiency only (telemetry/candidates.py class_efficiencies) — its per-op rates are kept in the
    database but the GPU timing model does not use them (see efficiency_from_calibration)."""
    parts = []
    if result.get("cpu_profile") or result.get("cpu_linear_train_flops"):
        parts.append(
            "this machine's CPU: every measured rate (layers by size, elementwise layers, optimizer, framework "
            "overhead); its catalogue model: the measured efficiency"
        )
    for g in result.get("gpus") or []:
        parts.append(
            f"{g.get('name', 'GPU')}: only the measured efficiency (fp32 and tensor, largest layer's rate over the "
            "datasheet peak), for this machine's GPU and its catalogue model; its per-op GPU rates are stored, "
            "not applied"
        )
    return "Later sizings use: " + "; ".join(parts) + "." if parts else "Nothing measured is applied."
