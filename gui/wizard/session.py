"""The wizard's workload across sessions: whether it has changes nobody saved, the question before
closing, and the workload remembered at close and offered back at the next start."""

from __future__ import annotations

import html
import json
from typing import Any

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

LAST_DOCUMENT = "wizard/last_document"


def document_key(doc: dict[str, Any]) -> str:
    """A workload's content, for comparing two versions of it."""
    return json.dumps(doc, sort_keys=True, default=str)


def remember(doc: dict[str, Any]) -> None:
    QSettings().setValue(LAST_DOCUMENT, json.dumps(doc, default=str))


def remembered() -> dict[str, Any] | None:
    """The workload the wizard held when TrainRig last closed; None when there is none or it cannot
    be read (an edited or damaged settings file is ignored, not shown as an error at start)."""
    raw = QSettings().value(LAST_DOCUMENT)
    if not isinstance(raw, str) or not raw:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("model"), dict) else None


def forget() -> None:
    QSettings().remove(LAST_DOCUMENT)


def ask_save_changes(parent: QWidget, name: str) -> str:
    """Ask before closing with unsaved changes: "save", "discard" or "cancel"."""
    buttons = QMessageBox.StandardButton
    answer = QMessageBox.question(
        parent,
        "Unsaved workload",
        f"The workload \u201c{name}\u201d has changes that are not saved in a file or as a sizing.\n\n"
        "Save them before closing? (TrainRig also offers this workload back at its next start.)",
        buttons.Save | buttons.Discard | buttons.Cancel,
        buttons.Save,
    )
    return {buttons.Save: "save", buttons.Discard: "discard"}.get(answer, "cancel")


class RestoreBanner(QFrame):
    """A line above the wizard: "Restore the workload you were working on …? [Restore] [Dismiss]"."""

    restore = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.restore_button = QPushButton("Restore")
        self.restore_button.setToolTip("Open the workload the wizard held when TrainRig last closed")
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.setToolTip("Keep the new workload; the remembered one is forgotten")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.restore_button)
        layout.addWidget(self.dismiss_button)
        self.restore_button.clicked.connect(self.restore)
        self.dismiss_button.clicked.connect(self._dismiss)
        self.setVisible(False)

    def offer(self, name: str) -> None:
        self.text.setText(
            f"Restore the workload you were working on when TrainRig last closed: <b>{html.escape(name)}</b>?"
        )
        self.setVisible(True)

    def _dismiss(self) -> None:
        forget()
        self.setVisible(False)
