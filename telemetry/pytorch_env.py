"""Find and check the Python environment with PyTorch that local runs and model tracing use.

The packaged app does not bundle PyTorch (SPEC 6.2); from source the current interpreter is the
first guess. The check runs in a child process with a time limit, so a broken or slow
environment can never stall the app, and says what to install when PyTorch is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

PROBE = (
    "import json, platform, torch\n"
    "cuda = torch.cuda.is_available()\n"
    "print(json.dumps({'python': platform.python_version(), 'torch': torch.__version__,"
    " 'cuda_available': cuda, 'cuda_build': torch.version.cuda,"
    " 'devices': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else []}))\n"
)
INSTALL_HINT = (
    "install PyTorch into that Python: `python -m pip install torch` (CPU-only: "
    "`pip install torch --index-url https://download.pytorch.org/whl/cpu`), or choose another Python"
)


@dataclass(frozen=True)
class TorchEnvironment:
    python: str
    ok: bool
    message: str
    python_version: str | None = None
    torch_version: str | None = None
    cuda_available: bool | None = None
    devices: tuple[str, ...] = ()


def candidate_pythons(preferred: str | None = None) -> list[str]:
    """Where to look, in order: the user's choice, $TRAINRIG_PYTHON, this interpreter when running
    from source, then python3/python on the PATH."""
    found: list[str] = []
    frozen = getattr(sys, "frozen", False)
    for p in (
        preferred,
        os.environ.get("TRAINRIG_PYTHON"),
        None if frozen else sys.executable,
        shutil.which("python3"),
        shutil.which("python"),
    ):
        if p and p not in found:
            found.append(p)
    return found


def check_python(python: str, timeout_s: float = 30.0) -> TorchEnvironment:
    """Run PyTorch's import in ``python`` and report its version and CUDA, or why it failed."""
    try:
        proc = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        return TorchEnvironment(python, False, f"{python} does not exist or is not executable")
    except PermissionError:
        return TorchEnvironment(python, False, f"{python} is not executable")
    except subprocess.TimeoutExpired:
        return TorchEnvironment(python, False, f"{python} did not finish importing PyTorch within {timeout_s:g} s")
    if proc.returncode != 0:
        if "No module named 'torch'" in proc.stderr:
            return TorchEnvironment(python, False, f"PyTorch is not installed in {python}: {INSTALL_HINT}")
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return TorchEnvironment(python, False, f"{python} cannot import PyTorch: {last}")
    try:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return TorchEnvironment(python, False, f"{python} gave an unreadable answer: {proc.stdout[:200]!r}")
    cuda = bool(info.get("cuda_available"))
    msg = f"PyTorch {info['torch']} on Python {info['python']}, " + (
        f"CUDA available ({', '.join(info['devices'])})"
        if cuda
        else ("CUDA build but no usable GPU" if info.get("cuda_build") else "CPU-only build")
    )
    return TorchEnvironment(python, True, msg, info.get("python"), info.get("torch"), cuda, tuple(info["devices"]))


def find_torch_environment(
    preferred: str | None = None, timeout_s: float = 30.0, strict: bool = False
) -> TorchEnvironment:
    """The first candidate Python with a working PyTorch, else the reason for the first one. ``strict``: a
    ``preferred`` Python is the only one tried (the command line's --python: a path that does not exist
    was passed over for another Python without a word)."""
    pythons = [preferred] if strict and preferred else candidate_pythons(preferred)
    results = [check_python(p, timeout_s) for p in pythons]
    for r in results:
        if r.ok:
            return r
    if results:
        return results[0]
    return TorchEnvironment("", False, f"no Python found on this machine: {INSTALL_HINT}")
