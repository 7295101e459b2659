"""A QTabWidget that repaints only what changed inside it.

Qt's QTabWidget answers every LayoutRequest it gets with ``setUpLayout()``, which ends in
``update()`` of the whole tab widget: one label anywhere on a page that changes its text asks its
layouts for a new geometry, the request climbs to the tab widget holding the page, and every
widget on that page that does not paint its own background is painted again. On the sizing wizard
that was the whole window, about 10 ms of each what-if change on a two-core machine (one status
label's new text: 10.1 ms with QTabWidget, 1.6–2.3 ms here; docs/performance.md).

Here a LayoutRequest lays the tab widget out only when what ``setUpLayout`` places could have
moved: the tab bar or a corner widget changed its size or showed or hid. Otherwise it only passes
the request on to its parent (``updateGeometry``, the other half of ``setUpLayout``), so a page
that grows still grows the window. A resize, a new tab or a new style lay the tab widget out as
before (QTabWidget does that outside this event).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QTabWidget


class TabWidget(QTabWidget):
    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self._laid_out: tuple[object, ...] | None = None

    def _placed(self) -> tuple[object, ...]:
        """What setUpLayout places besides the page: the tab bar and the corner widgets, by size."""
        bar = self.tabBar()
        corners = (self.cornerWidget(c) for c in (Qt.Corner.TopLeftCorner, Qt.Corner.TopRightCorner))
        return (
            bar.sizeHint() if bar.isVisibleTo(self) else None,
            *(w.sizeHint() if w is not None and w.isVisibleTo(self) else None for w in corners),
        )

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.LayoutRequest:
            placed = self._placed()
            if placed == self._laid_out:
                self.updateGeometry()  # the page's size hints may have changed: the parent's layout decides
                return True  # and nothing here moves: the changed widget repaints itself
            self._laid_out = placed
        elif e.type() in (QEvent.Type.Show, QEvent.Type.Resize):
            self._laid_out = self._placed()  # QTabWidget lays itself out on these
        return super().event(e)
