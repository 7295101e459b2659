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


def test_the_wizards_scatter_labels_overlap_nothing(qtbot, main_window) -> None:
    """The Llama example's eight H100 and A100 candidates crowd the time-vs-capex chart: their labels
    overlapped ("H100 SXM×A100 80GB SXM × 8")."""
    from pathlib import Path

    w = main_window()
    w.resize(1366, 768)
    wiz = w.sizing_tab
    w.tabs.setCurrentWidget(wiz)
    assert wiz.open_file(Path(__file__).resolve().parents[2] / "examples" / "llama-8b-finetune.json")
    wiz.go(5)
    page = wiz.results
    page.tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: page.scatter.getViewBox().width() > 100)
    page._place_labels()
    shown = [t.sceneBoundingRect() for t, _, _ in page._labels if t.isVisible()]
    assert len(page._labels) == 8 and len(shown) >= 6
    for i, a in enumerate(shown):
        assert not any(a.intersects(b) for b in shown[i + 1 :])


def test_the_scatter_shows_the_latest_what_if_when_its_tab_is_opened(qtbot, main_window) -> None:
    """The chart is drawn when its tab is shown: a what-if change made on another tab is what it then shows."""
    w = main_window()
    wiz = w.sizing_tab
    wiz.go(5)
    page = wiz.results
    page.tabs.setCurrentIndex(0)  # the memory bar
    page.batch.setValue(page.batch.value() * 4)
    page.tabs.setCurrentIndex(1)
    spots = sorted(tuple(p.pos()) for p in page._points.points())
    expected = sorted(
        (math.log10(max(c.train_time_s, 1e-3)), c.cost.capex) for c in wiz.result.candidates if c.cost.capex is not None
    )
    assert len(spots) == len(expected) >= 1 and _close(spots, expected)
    # and while it is shown, each change redraws it at once
    page.batch.setValue(page.batch.value() * 2)
    spots = sorted(tuple(p.pos()) for p in page._points.points())
    expected = sorted(
        (math.log10(max(c.train_time_s, 1e-3)), c.cost.capex) for c in wiz.result.candidates if c.cost.capex is not None
    )
    assert _close(spots, expected)


def _close(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    """Points at the same places (pytest.approx takes no pairs in every pytest version)."""
    if len(a) != len(b):
        return False
    pairs = (pair for p, q in zip(a, b, strict=True) for pair in zip(p, q, strict=True))
    return all(math.isclose(u, v, rel_tol=1e-9) for u, v in pairs)
