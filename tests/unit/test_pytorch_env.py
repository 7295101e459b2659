"""Finding the Python with PyTorch that runs and tracing use (never imported into the app)."""

from __future__ import annotations

import importlib.util
import stat
import sys
from pathlib import Path

import pytest

from telemetry.pytorch_env import TorchEnvironment, candidate_pythons, check_python, find_torch_environment


def script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "python"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="CI installs torch==2.13.0")
def test_this_python_has_pytorch() -> None:
    import platform
    from importlib.metadata import version

    env = check_python(sys.executable)
    # the versions the installed distribution and this interpreter declare, read without PyTorch
    assert env.ok and env.torch_version == version("torch") and env.python_version == platform.python_version()
    assert env.message.startswith(f"PyTorch {version('torch')} on Python {platform.python_version()}, ")


def test_missing_pytorch_says_what_to_install(tmp_path: Path) -> None:
    py = script(tmp_path, "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1")
    env = check_python(py)
    assert not env.ok and "PyTorch is not installed" in env.message and "pip install torch" in env.message


def test_missing_interpreter_and_hang_are_reported(tmp_path: Path) -> None:
    assert "does not exist" in check_python(str(tmp_path / "nope")).message
    slow = script(tmp_path, "sleep 5")
    assert "did not finish" in check_python(slow, timeout_s=0.5).message


CPU_ONLY = '{"python": "3.11.9", "torch": "2.13.0", "cuda_available": false, "cuda_build": null, "devices": []}'
ONE_H100 = (
    '{"python": "3.12.3", "torch": "2.11.0+cu130", "cuda_available": true, "cuda_build": "13.0",'
    ' "devices": ["NVIDIA H100 80GB HBM3"]}'
)


def fake_python(folder: Path, name: str, body: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


@pytest.fixture
def known_pythons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every place find_torch_environment looks holds a fake Python whose answer is known: the
    interpreter running the app and python3/python on a PATH that holds nothing else."""

    def setup(this: str, on_path: str) -> tuple[str, str, str]:
        interpreter = fake_python(tmp_path / "app", "python", this)
        python3 = fake_python(tmp_path / "bin", "python3", on_path)
        python = fake_python(tmp_path / "bin", "python", on_path)
        monkeypatch.setattr(sys, "executable", interpreter)
        monkeypatch.setenv("PATH", str(tmp_path / "bin"))
        monkeypatch.delenv("TRAINRIG_PYTHON", raising=False)
        return interpreter, python3, python

    return setup


def test_the_users_choice_comes_first(tmp_path: Path, known_pythons, monkeypatch: pytest.MonkeyPatch) -> None:
    interpreter, python3, python = known_pythons(f"echo '{CPU_ONLY}'", "exit 1")
    monkeypatch.setenv("TRAINRIG_PYTHON", "/opt/env/bin/python")
    broken = fake_python(tmp_path / "mine", "python", "echo 'boom' >&2; exit 3")
    assert candidate_pythons(broken) == [broken, "/opt/env/bin/python", interpreter, python3, python]


def test_a_broken_choice_falls_back_to_the_first_python_that_works(tmp_path: Path, known_pythons) -> None:
    interpreter, _, _ = known_pythons(f"echo '{CPU_ONLY}'", f"echo '{ONE_H100}'")
    broken = fake_python(tmp_path / "mine", "python", "echo 'boom' >&2; exit 3")
    env = find_torch_environment(broken, timeout_s=10)
    assert env == TorchEnvironment(
        python=interpreter,
        ok=True,
        message="PyTorch 2.13.0 on Python 3.11.9, CPU-only build",
        python_version="3.11.9",
        torch_version="2.13.0",
        cuda_available=False,
        devices=(),
    )


def test_a_cuda_build_with_a_gpu_names_it(known_pythons) -> None:
    _, python3, _ = known_pythons(
        "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1", f"echo '{ONE_H100}'"
    )
    env = find_torch_environment(None, timeout_s=10)
    assert env.python == python3 and env.cuda_available is True and env.devices == ("NVIDIA H100 80GB HBM3",)
    assert env.message == "PyTorch 2.11.0+cu130 on Python 3.12.3, CUDA available (NVIDIA H100 80GB HBM3)"


def test_when_no_python_works_the_users_choice_says_why(tmp_path: Path, known_pythons) -> None:
    known_pythons("echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1", "exit 1")
    broken = fake_python(tmp_path / "mine", "python", "echo 'boom' >&2; exit 3")
    env = find_torch_environment(broken, timeout_s=10)
    assert env == TorchEnvironment(python=broken, ok=False, message=f"{broken} cannot import PyTorch: boom")
