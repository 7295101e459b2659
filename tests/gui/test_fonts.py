"""Headless Qt draws no text without a font, and says nothing (STYLE: one test checks a font exists)."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFontDatabase, QFontInfo, QFontMetrics, QImage, QPainter
from PySide6.QtWidgets import QPushButton


def test_a_font_is_installed_and_draws_the_wizards_labels(qtbot) -> None:
    families = QFontDatabase.families()
    assert families, "install fonts-dejavu-core: Qt draws no text without a font"
    button = QPushButton("Next >")
    qtbot.addWidget(button)
    assert QFontInfo(button.font()).family() in families
    metrics = QFontMetrics(button.font())
    assert all(metrics.inFontUcs4(ord(ch)) for ch in "Next >0123456789×µ–·")  # the UI's characters
    image = QImage(200, 40, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(button.font())
    painter.setPen(QColor("black"))
    painter.drawText(5, 30, "Next")
    painter.end()
    inked = sum(image.pixelColor(x, y).lightness() < 128 for x in range(200) for y in range(40))
    assert inked > 20  # glyphs, not an empty box outline or nothing
