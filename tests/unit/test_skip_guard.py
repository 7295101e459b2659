"""CI fails on a skipped test: the guard of tests/skip_guard.py, run on a small test file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = """
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="poppler-utils is not installed")
def test_needs_poppler():
    pass

def test_needs_torch():
    pytest.skip("CI installs torch==2.13.0")

@pytest.mark.xfail(strict=True, reason="a known miss, not a skip")
def test_known_miss():
    assert False
"""


def run_pytest(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_small.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRAINRIG_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.skip_guard", *args],
        cwd=tmp_path,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_the_guard_skips_pass(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "UNEXPECTED SKIP" not in proc.stdout


def test_ci_fails_on_a_skip_and_names_the_test_and_its_reason(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, TRAINRIG_REQUIRE_ALL="1")
    assert proc.returncode == 1, proc.stdout
    assert "2 skipped where every test must run" in proc.stdout
    assert "UNEXPECTED SKIP test_small.py::test_needs_poppler: poppler-utils is not installed" in proc.stdout
    assert "UNEXPECTED SKIP test_small.py::test_needs_torch: CI installs torch==2.13.0" in proc.stdout
    assert "test_known_miss" not in proc.stdout.split("skipped where every test must run")[1]


def test_the_option_does_what_the_variable_does(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, "--no-skips")
    assert proc.returncode == 1 and "UNEXPECTED SKIP test_small.py::test_needs_poppler" in proc.stdout


def test_an_allowed_reason_is_listed_and_only_it_is_allowed(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, TRAINRIG_REQUIRE_ALL="1", TRAINRIG_ALLOWED_SKIPS="torch")
    assert proc.returncode == 1, proc.stdout
    assert "ALLOWED SKIP test_small.py::test_needs_torch: CI installs torch==2.13.0" in proc.stdout
    assert "UNEXPECTED SKIP test_small.py::test_needs_poppler" in proc.stdout
    proc = run_pytest(tmp_path, TRAINRIG_REQUIRE_ALL="1", TRAINRIG_ALLOWED_SKIPS="torch, poppler")
    assert proc.returncode == 0, proc.stdout


def test_a_module_skipped_at_collection_is_caught(tmp_path: Path) -> None:
    (tmp_path / "test_gone.py").write_text('import pytest\npytest.importorskip("no_such_module_here")\n')
    proc = run_pytest(tmp_path, TRAINRIG_REQUIRE_ALL="1", TRAINRIG_ALLOWED_SKIPS="torch, poppler")
    assert proc.returncode == 1, proc.stdout
    assert "UNEXPECTED SKIP test_gone.py: could not import 'no_such_module_here'" in proc.stdout


def test_a_failing_run_keeps_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "test_fails.py").write_text("def test_no():\n    assert 1 == 2\n")
    proc = run_pytest(tmp_path, TRAINRIG_REQUIRE_ALL="1")
    assert proc.returncode == 1 and "1 failed" in proc.stdout
