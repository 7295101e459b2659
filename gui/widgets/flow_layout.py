"""A row of controls that wraps onto a second line when the window is narrow.

The Telemetry and Results toolbars and the wizard's buttons were single rows: together they made the window at
least 1,279 pixels wide, wider than a 1,366-pixel laptop screen at 125 % (1,093 logical pixels); squeezed below
that, their buttons read "e wizard's wo". In a FlowLayout each control keeps its own size and the row breaks
where the width ends; the layout asks for the height its width needs (heightForWidth)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLayout, QLayoutItem, QSizePolicy, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def add(self, *widgets: QWidget) -> FlowLayout:
        """Add ``widgets`` in order (a label and its field stay side by side where a line has room for both)."""
        for w in widgets:
            self.addWidget(w)
        return self

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._lay_out(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._lay_out(rect, move=True)

    def sizeHint(self) -> QSize:
        """One line: every control side by side."""
        visible = [i for i in self._items if not i.isEmpty()]
        width = sum(i.sizeHint().width() for i in visible) + self.spacing() * max(0, len(visible) - 1)
        height = max((i.sizeHint().height() for i in visible), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        """As wide as the widest control: the rest wraps."""
        size = QSize()
        for item in self._items:
            if not item.isEmpty():
                size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _lay_out(self, rect: QRect, move: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line = area.x(), area.y(), 0
        for item in self._items:
            if item.isEmpty():  # a hidden control takes no room
                continue
            hint = item.sizeHint()
            if x > area.x() and x + hint.width() > area.right() + 1:
                x, y, line = area.x(), y + line + self.spacing(), 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self.spacing()
            line = max(line, hint.height())
        return y + line - rect.y() + m.bottom()


def flow_row(*widgets: QWidget) -> QWidget:
    """``widgets`` in a FlowLayout on a widget of their own, which grows in height as the row wraps."""
    holder = QWidget()
    policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
    policy.setHeightForWidth(True)
    holder.setSizePolicy(policy)
    FlowLayout(holder).add(*widgets)
    return holder


def together(*widgets: QWidget) -> QWidget:
    """Controls that belong together (a choice and its button) as one control of a flow row: they wrap as one."""
    group = QWidget()
    row = QHBoxLayout(group)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(4)
    for w in widgets:
        row.addWidget(w)
    return group


def labelled(label: str, field: QWidget) -> QWidget:
    """A label and its field, together."""
    caption = QLabel(label)
    caption.setBuddy(field)
    return together(caption, field)
