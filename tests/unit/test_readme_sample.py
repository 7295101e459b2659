"""The README's `size` sample is what the code prints now (docs/make_samples.py regenerates it):
a change to the engine that moves a figure fails here until the README is regenerated."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _samples():
    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "docs" / "make_samples.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_readme_shows_what_size_prints_now() -> None:
    m = _samples()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    expected = m.sample_block(m.size_output())
    assert m.readme_block(readme) == expected, "README's size sample is stale: run python3 docs/make_samples.py"


def test_the_sample_keeps_the_header_the_seed_formulas_and_the_first_candidate() -> None:
    m = _samples()
    output = "\n".join(
        [
            "Workload: w",
            "  model: 1 parameters",
            "  data: x",
            "Seed formulas (as published)",
            "  N_na = 1",
            "  K1 = 2",
            "  T1 = 3",
            "Candidates",
            "  A × 1: fits",
            "    step 1 ms",
            "  B × 1: fits",
            "    step 2 ms",
        ]
    )
    assert m.sample_lines(output) == [
        "Workload: w",
        "  model: 1 parameters",
        "  ...",
        "Seed formulas (as published)",
        "  N_na = 1",
        "  K1 = 2",
        "  ...",
        "Candidates",
        "  A × 1: fits",
        "    step 1 ms",
        "  ...",
    ]
