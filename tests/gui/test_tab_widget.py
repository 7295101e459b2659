"""The tab widgets of the window repaint what changed, not the whole page (a status label's new text
repainted the whole wizard: a third of a what-if change), and still lay themselves out when their
tab bar or a page's minimum size changes."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

from gui.widgets.tab_widget import TabWidget


class _Paints(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj: QObject, e: QEvent) -> bool:
        if e.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def _window(qtbot) -> tuple[QWidget, TabWidget, QLabel, QPushButton]:
    window = QWidget()
    tabs = TabWidget()
    page = QWidget()
    status, button = QLabel("Step 1.0 ms"), QPushButton("Export report…")
    layout = QVBoxLayout(page)
    layout.addWidget(status)
    layout.addWidget(button)
    layout.addStretch(1)
    tabs.addTab(page, "Sizing")
    tabs.addTab(QWidget(), "Results")
    QVBoxLayout(window).addWidget(tabs)
    qtbot.addWidget(window)
    window.resize(600, 400)
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(50)  # the first paint of every widget
    return window, tabs, status, button


def test_a_labels_new_text_repaints_the_label_not_its_page(qtbot) -> None:
    _win, _tabs, status, button = _window(qtbot)
    paints = _Paints()
    button.installEventFilter(paints)
    for text in ("Step 12.5 ms (a longer text)", "Step 3.1 ms", "Step 40.0 ms"):
        status.setText(text)
        qtbot.waitUntil(lambda t=text: status.text() == t)
        qtbot.wait(20)
    assert paints.count == 0
    button.update()  # the filter sees a paint where there is one
    qtbot.waitUntil(lambda: paints.count > 0)


def test_a_longer_tab_title_still_widens_the_tab_bar(qtbot) -> None:
    _win, tabs, _status, _button = _window(qtbot)
    before = tabs.tabBar().width()
    tabs.setTabText(1, "Results of the last twelve runs on this machine")
    qtbot.waitUntil(lambda: tabs.tabBar().width() > before)


def test_a_page_that_grows_still_makes_the_window_taller(qtbot) -> None:
    window, _tabs, status, _button = _window(qtbot)
    status.setMinimumHeight(900)
    qtbot.waitUntil(lambda: window.minimumSizeHint().height() >= 900 and window.height() >= 900)
