"""`trainrig --self-test`: the check CI runs on the frozen app, here from source (needs PySide6)."""

from __future__ import annotations

from pathlib import Path


def test_self_test_visits_every_tab_and_page(tmp_path: Path, cli) -> None:
    code, out, err = cli("--self-test", "--screenshots", str(tmp_path))
    assert code == 0, err
    assert "self-test passed" in out
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names[0] == "1-inventory.png" and len(names) == 8 and names[-1] == "3-telemetry.png"
