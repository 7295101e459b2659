"""Thread scaling (Wünsche 2016, Fig. 1): the thread counts measured, the paper's rule checked
against a curve, and a real run of the worker at 1 and 2 threads on this CPU."""

from __future__ import annotations

import json

from core.output.thread_scaling import ThreadPoint, thread_counts, verdict
from tests.conftest import TINY_MLP


def test_counts_go_past_the_physical_cores_and_include_them() -> None:
    assert thread_counts(2, 2) == [1, 2, 4]
    assert thread_counts(6, 12) == [1, 2, 4, 6, 8, 12]
    assert thread_counts(16, 32, limit=20) == [1, 2, 4, 8, 16, 20]  # past the cores, up to the limit


def test_the_rule_holds_when_more_threads_than_cores_are_slower() -> None:
    points = [ThreadPoint(1, 0.040), ThreadPoint(2, 0.022), ThreadPoint(4, 0.020), ThreadPoint(8, 0.030)]
    text = verdict(points, physical=4)
    assert text.startswith("fastest at 4 thread(s) (20 ms a step); the rule holds here")
    assert "8 threads took +50% against 4" in text


def test_the_rule_does_not_hold_when_hyperthreads_win() -> None:
    points = [ThreadPoint(1, 0.040), ThreadPoint(4, 0.020), ThreadPoint(8, 0.016)]
    assert "the rule does not hold here: 8 threads were 20% faster than the 4 physical core(s)" in verdict(points, 4)


def test_nothing_past_the_cores_cannot_check_the_rule() -> None:
    assert "nothing measured past the 4 physical core(s)" in verdict([ThreadPoint(4, 0.02)], 4)


def test_a_thread_scaling_run_at_1_and_2_threads_completes(cli, write_json) -> None:
    doc = TINY_MLP
    code, out, err = cli("experiment", str(write_json(doc)), "--threads", "1,2", "--json")
    assert code == 0, out + err
    data = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert [p["threads"] for p in data["points"]] == [1, 2]
    assert all(p["step_s"] > 0 for p in data["points"])
    assert "Wünsche 2016, Fig. 1" in out
