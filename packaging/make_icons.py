"""Draw the TrainRig icon in the sizes each platform wants (run once; the PNGs and .ico are kept in
resources/icons). macOS: build trainrig.icns from the PNGs with `iconutil` (see packaging/README.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
OUT = Path(__file__).resolve().parent.parent / "resources" / "icons"


def draw(size: int) -> QImage:
    img = QImage(size, size, QImage.Format.Format_ARGB32)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = size / 64
    p.setBrush(QColor("#1f3b63"))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawRoundedRect(QRectF(2 * s, 2 * s, 60 * s, 60 * s), 12 * s, 12 * s)
    # a chip: the die with pins, and a rising bar chart on it
    p.setPen(QPen(QColor("#9fb7d9"), max(1.0, 2 * s)))
    for i in range(4):
        x = (18 + i * 9.3) * s
        p.drawLine(int(x), int(8 * s), int(x), int(14 * s))
        p.drawLine(int(x), int(50 * s), int(x), int(56 * s))
    p.setBrush(QColor("#e8ecf2"))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawRoundedRect(QRectF(13 * s, 14 * s, 38 * s, 36 * s), 4 * s, 4 * s)
    for i, (h, color) in enumerate(((10, "#4e79a7"), (17, "#59a14f"), (25, "#f28e2b"))):
        p.setBrush(QColor(color))
        p.drawRect(QRectF((18 + i * 10) * s, (45 - h) * s, 7 * s, h * s))
    if size >= 48:
        f = QFont("DejaVu Sans")
        f.setBold(True)
        f.setPixelSize(int(7 * s))
        p.setFont(f)
        p.setPen(QColor("#1f3b63"))
        p.drawText(QRectF(13 * s, 15 * s, 38 * s, 9 * s), Qt.AlignmentFlag.AlignCenter, "TR")
    p.end()
    return img


def main() -> int:
    QGuiApplication(sys.argv[:1])
    OUT.mkdir(parents=True, exist_ok=True)
    for size in SIZES:
        draw(size).save(str(OUT / f"trainrig-{size}.png"))
    ok = draw(256).save(str(OUT / "trainrig.ico"))
    print(f"icons in {OUT}" + ("" if ok else " (no ICO writer in this Qt: build the .ico on Windows)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
