"""Software: OS, Python, PyTorch and its CUDA (read from its files, never imported), BLAS threads."""

from __future__ import annotations

import importlib.util
import platform
import re
import sys
from pathlib import Path

from telemetry.inventory.record import Record, read_text


def read_software(rec: Record, real: bool) -> None:
    rec.set("software.os", platform.platform(), "platform")
    rec.set("software.python", sys.version.split()[0], "sys.version")
    _pytorch(rec)
    if real:
        _blas(rec)
    else:
        rec.miss("software.blas", "not read for a recorded machine")


def _pytorch(rec: Record) -> None:
    """PyTorch's version and CUDA build from torch/version.py, without importing torch (seconds)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        rec.miss("software.pytorch", "PyTorch is not installed in this Python (needed for local runs)")
        rec.miss("software.pytorch_cuda", "PyTorch is not installed")
        return
    text = read_text(Path(spec.origin).parent / "version.py") or ""
    version = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text)
    cuda = re.search(r"^cuda\s*(?::\s*[^=]+)?=\s*['\"]?([\w.]+)", text, re.M)
    src = "torch/version.py (read, not imported)"
    rec.value_or_miss("software.pytorch", version.group(1) if version else None, src, "torch/version.py unreadable")
    if cuda and cuda.group(1) != "None":
        rec.set("software.pytorch_cuda", cuda.group(1), src)
    else:
        rec.set("software.pytorch_cuda", "none (CPU build)", src)
    rec.miss("software.cudnn", "cuDNN's version is known only once PyTorch is imported; TrainRig's window never does")


def _blas(rec: Record) -> None:
    try:
        import numpy  # noqa: F401  (loads the BLAS that threadpoolctl then inspects)
        from threadpoolctl import threadpool_info
    except ImportError as exc:
        rec.miss("software.blas", f"threadpoolctl or numpy missing ({exc})")
        return
    libs = [
        {
            "api": i.get("internal_api"),
            "version": i.get("version"),
            "threads": i.get("num_threads"),
            "library": Path(str(i.get("filepath", ""))).name,
        }
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    if libs:
        rec.set("software.blas", libs, "threadpoolctl (numpy's BLAS)")
    else:
        rec.miss("software.blas", "threadpoolctl found no BLAS library loaded")
