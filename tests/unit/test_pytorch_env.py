"""Finding the Python with PyTorch that runs and tracing use (never imported into the app)."""

from __future__ import annotations

import importlib.util
import stat
import sys
from pathlib import Path

import pytest

from telemetry.pytorch_env import candidate_pythons, check_python, find_torch_environment


def script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "python"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="CI installs torch==2.13.0")
def test_this_python_has_pytorch() -> None:
    import re

    env = check_python(sys.executable)
    assert env.ok and env.torch_version is not None and re.match(r"\d+\.\d+", env.torch_version)
    assert env.message.startswith(f"PyTorch {env.torch_version} on Python")


def test_missing_pytorch_says_what_to_install(tmp_path: Path) -> None:
    py = script(tmp_path, "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1")
    env = check_python(py)
    assert not env.ok and "PyTorch is not installed" in env.message and "pip install torch" in env.message


def test_missing_interpreter_and_hang_are_reported(tmp_path: Path) -> None:
    assert "does not exist" in check_python(str(tmp_path / "nope")).message
    slow = script(tmp_path, "sleep 5")
    assert "did not finish" in check_python(slow, timeout_s=0.5).message


def test_the_users_choice_comes_first_and_a_working_one_wins(tmp_path: Path) -> None:
    broken = script(tmp_path, "echo 'boom' >&2; exit 3")
    assert candidate_pythons(broken)[0] == broken
    env = find_torch_environment(broken, timeout_s=60)
    if importlib.util.find_spec("torch") is not None:
        assert env.ok and env.python != broken  # fell back to an environment that works
    else:
        assert not env.ok and "boom" in env.message
