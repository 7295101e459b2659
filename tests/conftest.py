"""Shared fixtures: a temporary database per test, workload documents, the CLI runner."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest_plugins = ["tests.skip_guard"]  # CI: a skipped test fails the run (TRAINRIG_REQUIRE_ALL=1)

PROFILES = ROOT / "tests" / "fixtures" / "profiles"


def pytest_sessionstart(session: pytest.Session) -> None:
    """The hand-built H100 trace fixtures are generated, not kept in git: build them when missing
    (tests/fixtures/profiles/build_fixtures.py, a quarter of a second)."""
    import contextlib
    import io
    import runpy

    if not all(
        (PROFILES / f).exists() for f in ("h100-sxm-resnet50-fp16.trace.json", "h100-sxm-bert-base-bf16.trace.json")
    ):
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(PROFILES / "build_fixtures.py"), run_name="__main__")


# a classifier small enough to train in a second: 8 features, 3 classes (experiments and thread scaling)
TINY_MLP = {
    "name": "tiny MLP",
    "model": {
        "input_shape": [8],
        "layers": [{"type": "linear", "out_features": 16}, {"type": "relu"}, {"type": "linear", "out_features": 3}],
    },
    "data": {"samples": 300, "outputs": 3},
    "training": {"batch_size": 32, "epochs": 1, "optimizer": "sgd", "precision": "fp32"},
}

TINY_CNN = {
    "name": "tiny CNN",
    "model": {
        "input_shape": [3, 8, 8],
        "layers": [
            {"type": "conv2d", "out_channels": 4, "kernel_size": 3, "padding": 1},
            {"type": "relu"},
            {"type": "flatten"},
            {"type": "linear", "out_features": 3},
        ],
    },
    "data": {"samples": 300, "outputs": 3},
    "training": {"batch_size": 16, "epochs": 1, "optimizer": "sgd", "precision": "fp32"},
}

SEED_MLP_LAYERS = [
    {"type": "linear", "out_features": 512},
    {"type": "leaky_relu"},
    {"type": "linear", "out_features": 512},
    {"type": "leaky_relu"},
    {"type": "linear", "out_features": 512},
    {"type": "leaky_relu"},
    {"type": "linear", "out_features": 10},
]


@pytest.fixture(autouse=True)
def _isolated_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "trainrig.db"
    monkeypatch.setenv("TRAINRIG_DB", str(db))
    monkeypatch.setenv("TRAINRIG_LOG", str(tmp_path / "log" / "trainrig.log"))
    return db


@pytest.fixture
def seed_doc() -> dict[str, Any]:
    return copy.deepcopy(
        {
            "name": "seed MLP",
            "model": {"input_shape": [75], "layers": SEED_MLP_LAYERS},
            "data": {"samples": 80909, "outputs": 10},
            "training": {"batch_size": 512, "epochs": 400, "optimizer": "adam", "precision": "fp32"},
        }
    )


@pytest.fixture
def write_json(tmp_path: Path):
    def write(doc: Any, name: str = "workload.json") -> Path:
        p = tmp_path / name
        p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
        return p

    return write


@pytest.fixture
def machine(tmp_path: Path):
    """Write a recorded machine (tests/fixtures/machines/NAME.json) and return its SystemRoots."""
    import base64

    from telemetry.inventory import SystemRoots

    def make(name: str) -> SystemRoots:
        doc = json.loads((ROOT / "tests/fixtures/machines" / f"{name}.json").read_text())
        root = tmp_path / name
        for rel, content in doc["files"].items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, dict):
                p.write_bytes(base64.b64decode(content["base64"]))
            else:
                p.write_text(content)
        return SystemRoots(proc=root / "proc", sys=root / "sys", real=False, machine="x86_64")

    return make


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run ``main.main(argv)``; returns (exit code, stdout, stderr)."""
    import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run
