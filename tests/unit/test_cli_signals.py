"""A command stopped with SIGTERM stops its worker too, as Ctrl-C does (main.stop_children_on_sigterm):
on a lent GPU's host a `timeout`-killed `calibrate` left its worker measuring while the next benchmark
ran, which slowed every step that benchmark recorded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGTERM to a process is POSIX's")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_terminated_calibration_kills_its_worker(tmp_path: Path) -> None:
    pid_file = tmp_path / "worker.pid"
    fake_python = tmp_path / "python"  # stands in for the Python with PyTorch: a worker that takes its time
    fake_python.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    fake_python.chmod(0o755)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import main; main.stop_children_on_sigterm();"
        "from telemetry.calibrate import _measure\n"
        "try:\n    _measure(sys.argv[2], 120)\nexcept KeyboardInterrupt:\n    print('interrupted'); sys.exit(130)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT), str(fake_python)], stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the fake worker never started"
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    assert _alive(worker)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in out
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


def test_main_leaves_the_callers_sigterm_handler_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    import main

    before = signal.getsignal(signal.SIGTERM)
    assert main.main(["catalogue", "--kind", "tpu"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    assert "TPU" in capsys.readouterr().out
