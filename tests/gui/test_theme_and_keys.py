"""A dark theme and a keyboard: what an exploratory pass of the window found (2026-11-27). The Telemetry plots
painted a white background under a dark palette's white titles; their axes had no units before the first
sample; Tab went into a table and never left it; Next and Back had no key."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeySequence


def test_the_telemetry_plots_take_the_palettes_colours(qtbot, main_window) -> None:
    base, ink = pg.getConfigOption("background"), pg.getConfigOption("foreground")
    pg.setConfigOptions(background=QColor("#202124"), foreground=QColor("#e8eaed"))  # a dark palette (gui/app.py)
    try:
        plots = main_window().telemetry_tab.plots
    finally:
        pg.setConfigOptions(background=base, foreground=ink)
    assert plots.view.backgroundBrush().color() == QColor("#202124")
    assert plots.memory_line.label.color == QColor("#e8eaed")  # the "predicted" label reads on it
    # units before the first sample: four empty plots read 0–1 with none
    left = {name: p.getAxis("left").labelText for name, p in plots.plots.items()}
    assert left == {"load": "%", "memory": "GiB", "gpu": "°C / W", "loss": "loss, accuracy", "step": "ms"}
    assert {p.getAxis("bottom").labelText for p in plots.plots.values()} == {"s"}


def test_tab_leaves_the_tables_and_alt_keys_step_the_wizard(qtbot, main_window) -> None:
    w = main_window()
    wiz = w.sizing_tab
    assert not wiz.results.table.tabKeyNavigation() and not w.results_tab.table.tabKeyNavigation()
    wiz.go(5)
    w.activateWindow()
    table = wiz.results.table
    table.setFocus()
    qtbot.waitUntil(table.hasFocus)
    qtbot.keyClick(table, Qt.Key.Key_Tab)  # to the next control, not the next cell
    assert not table.hasFocus()
    wiz.go(0)
    assert wiz.next_button.shortcut() == QKeySequence("Alt+N") and wiz.back_button.shortcut() == QKeySequence("Alt+B")
    assert wiz.next_button.text().replace("&", "") == "Next >"


def test_the_window_fits_a_laptop_screen_at_125_percent(qtbot, main_window) -> None:
    """A 1,366-pixel screen at 125 % is 1,093 logical pixels wide; the window could not be narrower than 1,279 (one
    row of Telemetry buttons, one of the model page's choices, an unwrapped hint): squeezed, buttons read "e
    wizard's wo"."""
    from PySide6.QtWidgets import QPushButton

    w = main_window()
    widths = {}
    for tab in range(w.tabs.count()):
        w.tabs.setCurrentIndex(tab)
        pages = range(w.sizing_tab.stack.count()) if w.tabs.currentWidget() is w.sizing_tab else [None]
        for page in pages:
            if page is not None:
                w.sizing_tab.go(page)
            qtbot.wait(10)
            widths[(tab, page)] = w.minimumSizeHint().width()
    assert max(widths.values()) <= 1000, widths
    w.resize(1093, 614)
    qtbot.wait(50)
    for tab in range(w.tabs.count()):  # at that width every button shows its whole text
        w.tabs.setCurrentIndex(tab)
        qtbot.wait(20)
        for b in w.tabs.currentWidget().findChildren(QPushButton):
            if b.isVisibleTo(w):
                assert b.width() >= b.sizeHint().width(), (tab, b.text(), b.width(), b.sizeHint().width())


def test_the_panes_come_back_as_they_were_left(qtbot, main_window) -> None:
    """Only the window's geometry and tab were remembered: the results list, the details beside their plots and
    the wizard's table above its tabs opened at their first sizes again."""
    w = main_window()
    w.tabs.setCurrentIndex(3)
    split = w.results_tab.split
    qtbot.wait(10)
    first = split.sizes()
    split.setSizes([first[0] - 60, first[1] + 60])
    qtbot.wait(10)
    left = split.sizes()
    assert left[1] == first[1] + 60
    w.close()
    again = main_window()
    again.tabs.setCurrentIndex(3)
    qtbot.wait(10)

    # the details pane's share of the height as left: the splitter shares a new height 2 : 3, so not to the pixel
    def share(sizes: list[int]) -> float:
        return sizes[1] / sum(sizes)

    back = share(again.results_tab.split.sizes())
    assert abs(back - share(left)) < abs(share(first) - share(left)) / 2, (first, left, again.results_tab.split.sizes())
    assert {s.objectName() for s in again._splitters()} == {"wizard_results", "results_list", "result_details"}
