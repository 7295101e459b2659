"""This machine's sizings use the median of its latest three calibrations, figure by figure, and
say how far apart they were (a busy machine measured alone moved one step 81 → 119 → 71 ms)."""

from __future__ import annotations

import pytest

from core.estimate.calibration import combine_calibrations
from core.storage.store import Store
from telemetry.calibrate import spread_text, stored_calibration


def cal(linear: float, per_op: float, curve: list[list[float]], when: str) -> dict:
    return {
        "cpu_linear_train_flops": linear,
        "cpu_conv_train_flops": linear / 2,
        "step_overhead": {"per_op_s": per_op, "per_step_s": 2e-4},
        "cpu_profile": {"linear_train": curve},
        "python": "/usr/bin/python3",
        "measured_at": when,
    }


def test_the_median_of_three_rounds_figure_by_figure() -> None:
    rounds = [  # newest first
        cal(122e9, 5.0e-6, [[1e6, 10e9], [1e9, 120e9]], "2026-11-23T10:00:00+00:00"),
        cal(157e9, 5.1e-6, [[1e6, 14e9], [1e9, 150e9]], "2026-11-23T09:00:00+00:00"),
        cal(140e9, 9.0e-6, [[1e6, 12e9], [1e9, 130e9]], "2026-11-23T08:00:00+00:00"),
        cal(999e9, 1.0e-6, [[1e6, 99e9], [1e9, 999e9]], "2026-11-22T08:00:00+00:00"),  # a fourth: not used
    ]
    c = combine_calibrations(rounds)
    assert c["rounds"] == 3
    assert c["cpu_linear_train_flops"] == 140e9 and c["cpu_conv_train_flops"] == 70e9
    assert c["step_overhead"] == {"per_op_s": 5.1e-6, "per_step_s": 2e-4}
    assert c["cpu_profile"]["linear_train"] == [[1e6, 12e9], [1e9, 130e9]]  # the median point by point
    assert c["measured_at"] == "2026-11-23T10:00:00+00:00"  # text: the newest round's
    assert c["spread"]["linear layers (GFLOP/s)"] == pytest.approx([122, 157])
    assert spread_text(c).startswith("median of the last 3 calibrations, which measured linear layers 122–157 GFLOP/s")


def test_curves_of_other_sizes_and_one_round() -> None:
    a = cal(1e11, 5e-6, [[1e6, 10e9]], "b")
    b = cal(2e11, 6e-6, [[2e6, 20e9]], "a")
    assert combine_calibrations([a, b])["cpu_profile"]["linear_train"] == [[1e6, 10e9]]  # the newest's
    one = combine_calibrations([a])
    assert one["rounds"] == 1 and one["cpu_linear_train_flops"] == 1e11
    assert spread_text(one).startswith("one calibration")
    assert combine_calibrations([]) is None


def test_the_store_gives_the_latest_rounds_newest_first() -> None:
    store = Store.open(None)
    for i, linear in enumerate((100e9, 300e9, 200e9)):
        store.save_calibration("fp", cal(linear, 5e-6, [[1e6, 1e9]], f"2026-11-2{i}"))
    store.save_calibration("other machine", cal(1e9, 5e-6, [[1e6, 1e9]], "x"))
    assert [r["cpu_linear_train_flops"] for r in store.recent_calibrations("fp")] == [200e9, 300e9, 100e9]
    assert stored_calibration(store, "fp")["cpu_linear_train_flops"] == 200e9
    assert stored_calibration(None, "fp") is None
