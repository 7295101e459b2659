"""Named model presets: data files in resources/presets/, one JSON document each."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from core.errors import WorkloadError
from core.paths import resource_path


@lru_cache(maxsize=1)
def load_presets() -> dict[str, dict[str, Any]]:
    """All presets by name, each with ``model`` and optional ``data``/``training`` defaults."""
    presets: dict[str, dict[str, Any]] = {}
    for path in sorted(resource_path("presets").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        presets[doc["name"]] = doc
    return presets


def accuracy_models() -> dict[str, dict[str, Any]]:
    """The networks checked against PyTorch (benchmarks/accuracy*.py, tests): the presets given as
    layer lists and the reference models of resources/reference_models.json, by name."""
    models = dict(json.loads(resource_path("reference_models.json").read_text(encoding="utf-8"))["models"])
    models.update({n: p["model"] for n, p in load_presets().items() if "layers" in p["model"]})
    return models


def get_preset(name: Any, path: str) -> dict[str, Any]:
    presets = load_presets()
    if isinstance(name, str):
        for key in presets:
            if key.lower() == name.strip().lower():
                return presets[key]
    raise WorkloadError(path, f"unknown preset {name!r} (known: {', '.join(presets)})")
