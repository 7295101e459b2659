"""The frozen app finds its resources, and the version is the same everywhere."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

import core
from core import paths
from core.advice import rules
from core.hardware import catalogue
from core.network import presets

ROOT = Path(__file__).resolve().parents[2]
NEEDED = [
    "catalogue.json",
    "rules.json",
    "reference_models.json",
    "presets/seed-mlp.json",
    "presets/llama-8b.json",
    "icons/trainrig-256.png",
    "icons/trainrig.ico",
]


def test_version_matches_pyproject() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == core.__version__


def test_spec_bundles_the_whole_resources_folder() -> None:
    spec = (ROOT / "packaging/trainrig.spec").read_text()
    assert 'datas=[(str(ROOT / "resources"), "resources")]' in spec
    assert '"torch"' in spec  # PyTorch is never bundled


def test_frozen_resource_lookup_finds_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "_internal"  # where PyInstaller's one-folder build puts data (sys._MEIPASS)
    shutil.copytree(ROOT / "resources", bundle / "resources")
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)
    for cache in (catalogue._load, presets.load_presets, rules.load_rules):
        cache.cache_clear()
    try:
        for rel in NEEDED:
            p = paths.resource_path(*rel.split("/"))
            assert p.is_file() and str(p).startswith(str(bundle)), rel
        assert len(catalogue.load_catalogue()) >= 30
        assert "seed-mlp" in presets.load_presets()
        assert len(rules.load_rules()) >= 30
    finally:
        for cache in (catalogue._load, presets.load_presets, rules.load_rules):
            cache.cache_clear()


def test_self_test_visits_every_tab_and_page(tmp_path: Path, cli) -> None:
    code, out, err = cli("--self-test", "--screenshots", str(tmp_path))
    assert code == 0, err
    assert "self-test passed" in out
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names[0] == "1-inventory.png" and len(names) == 8 and names[-1] == "3-telemetry.png"
