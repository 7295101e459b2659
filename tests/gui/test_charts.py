"""What the charts' axes read: round capex ticks and named durations (they read 60,750 / 121,500 …
and "log10 of seconds: 0 = 1 s, 3.6 = 1 h")."""

from __future__ import annotations

import math

from reports.charts import round_ticks


def test_capex_ticks_are_round() -> None:
    assert round_ticks(243_000 * 1.2) == [50_000, 100_000, 150_000, 200_000, 250_000]
    assert round_ticks(3_399 * 1.2) == [1_000, 2_000, 3_000, 4_000]
    assert round_ticks(0) == []


def test_the_wizards_time_axis_names_its_ticks(qtbot) -> None:
    from gui.wizard.results_page import TimeAxis

    axis = TimeAxis(orientation="bottom")
    ((_, values),) = axis.tickValues(math.log10(1800), math.log10(10 * 86400), 800)
    assert axis.tickStrings(values, 1.0, 1.0) == ["1 h", "6 h", "1 day", "1 week"]
