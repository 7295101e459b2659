"""Cyclic garbage (a closed window's widgets) is collected on the GUI thread, never in a worker
thread, where deleting Qt objects deadlocks against the GUI thread."""

from __future__ import annotations

import gc
import threading
import weakref

from PySide6.QtWidgets import QLabel, QWidget


def test_qt_garbage_is_collected_on_the_gui_thread_only(qtbot) -> None:
    assert not gc.isenabled()  # configure_app turned automatic (any-thread) collection off
    deleted_on: list[str] = []

    class Panel(QWidget):
        def __init__(self) -> None:
            super().__init__()
            self.me = self  # a reference cycle: only the cyclic collector can free it
            self.label = QLabel("x", self)

        def __del__(self) -> None:
            deleted_on.append(threading.current_thread().name)

    panel = Panel()
    alive = weakref.ref(panel)
    del panel
    worker = threading.Thread(target=lambda: [[[]] for _ in range(100_000)], name="worker")
    worker.start()
    worker.join()  # allocating in a worker used to be able to trigger the collection there
    assert alive() is not None and deleted_on == []
    for _ in range(2_000):  # cyclic garbage enough to cross the collector's threshold (700 by default)
        cycle: list[object] = []
        cycle.append(cycle)
    qtbot.waitUntil(lambda: alive() is None, timeout=3000)  # the GUI thread's timer collected it
    assert deleted_on == [threading.main_thread().name]
