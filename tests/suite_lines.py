"""Lines in gpu_suite.py's format built from its cases, for the readers' tests (host_ladder, recurrent_grid):
each a step of 1 s until a test writes the model's own seconds on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

H100 = "NVIDIA H100 80GB HBM3"


def suite_lines(cases: list[dict[str, Any]], device: str = H100, samples: int = 1024, **extra: Any) -> list[dict]:
    """One line per case on ``device``, its workload as gpu_suite records it, plus ``extra`` fields."""
    return [
        {
            "name": c["name"],
            "family": c["family"],
            "step_time_s": 1.0,
            "device": device,
            "workload": {
                "model": c["model"],
                "data": {"samples": samples},
                "training": {"batch_size": c["batch"], "epochs": 1, "optimizer": "adamw", "precision": c["precision"]},
            },
            **extra,
        }
        for c in cases
    ]


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in lines), encoding="utf-8")
    return path
