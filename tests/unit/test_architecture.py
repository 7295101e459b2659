"""core/ and telemetry/ stay GUI-free and never import torch at module level (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("PySide6", "pyqtgraph", "torch")


def module_level_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:  # top level only: imports inside functions are allowed for torch
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_core_and_telemetry_import_no_qt_or_torch_at_module_level() -> None:
    offenders = []
    for package in ("core", "telemetry"):
        for path in (ROOT / package).rglob("*.py"):
            for name in module_level_imports(path):
                if name.split(".")[0] in FORBIDDEN:
                    offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_no_app_package_imports_torch_anywhere() -> None:
    users = sorted(
        str(p.relative_to(ROOT))
        for package in ("core", "telemetry", "reports", "gui", "cli")
        for p in (ROOT / package).rglob("*.py")
        if any(line.strip().startswith(("import torch", "from torch")) for line in p.read_text().splitlines())
    )
    assert users == []
