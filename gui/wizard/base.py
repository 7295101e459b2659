"""What every wizard page does: show a part of the workload document, edit it, say what is wrong."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QLabel, QSpinBox, QWidget


class WizardPage(QWidget):
    """A page edits its part of the workload document; ``changed`` fires on every edit."""

    title = ""
    changed = Signal()

    def load(self, doc: dict[str, Any]) -> None:  # fill the widgets from the document
        raise NotImplementedError

    def store(self, doc: dict[str, Any]) -> None:  # write the widgets into the document
        raise NotImplementedError

    def problem(self) -> str | None:
        """Why the page is not valid yet (shown beside a disabled Next), or None."""
        return None


def set_value(box: QSpinBox | QDoubleSpinBox, value: float) -> None:
    """Show a document's ``value`` in ``box``, brought into the box's range first: Qt raised OverflowError for a
    number past a QSpinBox's 32 bits (a workload of five billion samples left the wizard half-loaded). What a
    box cannot hold as written (its range, its decimals) the wizard reports when it loads the document
    (SizingWizard.load_document)."""
    value = min(max(value, box.minimum()), box.maximum())
    box.setValue(int(value) if isinstance(box, QSpinBox) else float(value))


def error_label() -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    label.setStyleSheet("color: #d9534f;")
    label.setVisible(False)
    return label


def spin(lo: int, hi: int, tip: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setGroupSeparatorShown(True)
    s.setToolTip(tip)
    return s


def dspin(lo: float, hi: float, decimals: int, tip: str, suffix: str = "") -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setDecimals(decimals)
    s.setToolTip(tip)
    if suffix:
        s.setSuffix(suffix)
    return s


def combo(options: list[str] | tuple[str, ...], tip: str, labels: dict[str, str] | None = None) -> QComboBox:
    c = QComboBox()
    for o in options:
        c.addItem((labels or {}).get(o, o), o)
    c.setToolTip(tip)
    return c


def set_combo(c: QComboBox, value: str) -> None:
    i = c.findData(value)
    if i >= 0:
        c.setCurrentIndex(i)
