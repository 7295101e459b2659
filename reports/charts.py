"""Charts drawn with QPainter for printed reports: sharp at any resolution, no screen needed."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen

from core.estimate.memory import MemoryBreakdown
from core.output.chart_labels import place_labels
from core.output.report import CandidateRow
from core.output.run_report import Chart
from core.units import TIME_TICKS, fmt_bytes, fmt_seconds

PARTS = [
    ("weights", "#4e79a7"),
    ("gradients", "#f28e2b"),
    ("optimizer_states", "#59a14f"),
    ("activations", "#e15759"),
    ("data", "#76b7b2"),
    ("temporaries", "#edc948"),
    ("weight_copies", "#b07aa1"),
    ("workspace", "#ff9da7"),
    ("overhead", "#9c755f"),
    ("reserve", "#bab0ac"),
]


def _image(width: int, height: int, fmt: QImage.Format = QImage.Format.Format_ARGB32) -> tuple[QImage, QPainter]:
    img = QImage(width, height, fmt)
    img.fill(QColor("white"))
    img.setDotsPerMeterX(11811)  # 300 dpi
    img.setDotsPerMeterY(11811)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    return img, p


def memory_chart(mem: MemoryBreakdown, capacity: int | None, title: str, width: int = 2000) -> QImage:
    height = 520
    img, p = _image(width, height)
    font = QFont("DejaVu Sans")
    font.setPixelSize(30)
    p.setFont(font)
    values = [(n.replace("_", " "), c, getattr(mem, n)) for n, c in PARTS if getattr(mem, n) > 0]
    total = sum(v for *_, v in values)
    span = max(total, mem.total, capacity or 0) * 1.05 or 1
    left, right, top, bar_h = 40, width - 40, 90, 120
    scale = (right - left) / span
    p.drawText(
        QRectF(left, 10, right - left, 60),
        Qt.AlignmentFlag.AlignLeft,
        f"{title}: memory per device {fmt_bytes(mem.total)}"
        + (f" of {fmt_bytes(capacity)}" if capacity else "")
        + f" (highest in {mem.peak_phase})",
    )
    x = float(left)
    for _, color, v in values:
        w = v * scale
        p.fillRect(QRectF(x, top, w, bar_h), QColor(color))
        x += w
    p.setPen(QPen(QColor("black"), 5))
    px = left + mem.total * scale
    p.drawLine(QPointF(px, top - 20), QPointF(px, top + bar_h + 20))
    if capacity:
        p.setPen(QPen(QColor("#d9534f"), 5, Qt.PenStyle.DashLine))
        cx = left + capacity * scale
        p.drawLine(QPointF(cx, top - 20), QPointF(cx, top + bar_h + 20))
    p.setPen(QColor("black"))
    y = top + bar_h + 60
    col_w = (right - left) / 3
    for i, (name, color, v) in enumerate(values):
        cx, cy = left + (i % 3) * col_w, y + (i // 3) * 50
        p.fillRect(QRectF(cx, cy, 30, 30), QColor(color))
        p.drawText(QPointF(cx + 45, cy + 27), f"{name} {fmt_bytes(v)}")
    legend_y = y + ((len(values) + 2) // 3) * 50 + 10
    p.drawText(
        QPointF(left, legend_y + 20),
        "black line: memory per device (the step's highest point)    red dashed: device capacity",
    )
    p.end()
    return img


def time_cost_chart(rows: tuple[CandidateRow, ...], currency: str, width: int = 2000) -> QImage:
    height = 900
    img, p = _image(width, height)
    font = QFont("DejaVu Sans")
    font.setPixelSize(28)
    p.setFont(font)
    pts = [(r, math.log10(max(r.train_time_s, 1e-3)), r.capex) for r in rows if r.capex is not None]
    left, right, top, bottom = 220, width - 60, 40, height - 130
    p.drawText(
        QRectF(0, height - 70, width, 60),
        Qt.AlignmentFlag.AlignCenter,
        "training time (log scale) → ; hollow: does not fit",
    )
    p.save()
    p.translate(40, (top + bottom) / 2)
    p.rotate(-90)
    p.drawText(QRectF(-250, -30, 500, 60), Qt.AlignmentFlag.AlignCenter, f"capex ({currency})")
    p.restore()
    p.drawLine(QPointF(left, bottom), QPointF(right, bottom))
    p.drawLine(QPointF(left, top), QPointF(left, bottom))
    if not pts:
        p.drawText(
            QRectF(left, top, right - left, bottom - top), Qt.AlignmentFlag.AlignCenter, "no candidate has a price"
        )
        p.end()
        return img
    xs = [x for _, x, _ in pts]
    ys = [y for *_, y in pts]
    x0, x1 = math.floor(min(xs)) - 0.2, math.ceil(max(xs)) + 0.6
    y1 = max(ys) * 1.2 or 1
    sx = (right - left) / (x1 - x0)
    sy = (bottom - top) / y1
    named = [(math.log10(t), label) for t, label in TIME_TICKS if x0 < math.log10(t) < x1]
    ticks = named or [(float(k), fmt_seconds(10.0**k)) for k in range(math.floor(x0) + 1, math.ceil(x1))]
    for k, label in ticks:
        gx = left + (k - x0) * sx
        p.setPen(QColor("#cccccc"))
        p.drawLine(QPointF(gx, top), QPointF(gx, bottom))
        p.setPen(QColor("black"))
        p.drawText(QRectF(gx - 110, bottom + 8, 220, 40), Qt.AlignmentFlag.AlignCenter, label)
    for value in round_ticks(y1):
        gy = bottom - value * sy
        p.setPen(QColor("#cccccc"))
        p.drawLine(QPointF(left, gy), QPointF(right, gy))
        p.setPen(QColor("black"))
        p.drawText(
            QRectF(0, gy - 20, left - 15, 40),
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            f"{value:,.0f}",
        )
    metrics = p.fontMetrics()
    order = sorted(pts, key=lambda t: (t[2], t[1]))  # cheapest first: their labels are placed first
    centres = [(left + (x - x0) * sx, bottom - y * sy) for _, x, y in order]
    labels = [f"{r.device.replace('NVIDIA ', '')} × {r.count}" for r, _, _ in order]
    for (r, _, _), (cx, cy) in zip(order, centres, strict=True):
        p.setPen(QPen(QColor("#1f3b63"), 4))
        p.setBrush(QColor("#4e79a7") if r.fits else Qt.BrushStyle.NoBrush)
        p.drawEllipse(QPointF(cx, cy), 14, 14)
    sizes = [(float(metrics.horizontalAdvance(t)), float(metrics.height())) for t in labels]
    # beside each point where it overlaps no point or label; none free: left out
    spots = place_labels(centres, sizes, (left, 0, width - left, bottom), 14, 8)
    p.setPen(QColor("black"))
    for label, (w, h), spot in zip(labels, sizes, spots, strict=True):
        if spot is not None:
            align = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
            p.drawText(QRectF(spot[0], spot[1], w, h), align, label)
    p.end()
    return img


def round_ticks(top: float) -> list[float]:
    """Ticks at 1, 2 or 5 × a power of ten, three to six of them up to ``top``: 50,000 / 100,000 …
    rather than 60,750 / 121,500 …"""
    if top <= 0:
        return []
    raw = top / 6
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [step * k for k in range(1, int(top // step) + 1)]


PRINT_SCALE = 0.6
LINE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def line_chart(chart: Chart, width: int = 2000, height: int = 640) -> QImage:
    """A figure against time: one curve per run in its colour, named in a legend under the plot,
    the y axis from 0 with round ticks, a dashed reference line (a prediction) where given."""
    # drawn on a 2000-unit canvas into an image of 60 % the pixels (180 dpi printed, sharp enough
    # for lines): a report with a dozen charts stays a few hundred kB
    img, p = _image(round(width * PRINT_SCALE), round(height * PRINT_SCALE), QImage.Format.Format_RGB32)
    p.scale(PRINT_SCALE, PRINT_SCALE)
    font = QFont("DejaVu Sans")
    font.setPixelSize(28)
    p.setFont(font)
    longest = max((len(c.label) for c in chart.curves), default=0)
    per_row = 3 if longest <= 24 else 2 if longest <= 40 else 1
    legend_rows = -(-len(chart.curves) // per_row) if len(chart.curves) > 1 else 0  # one curve: the title names it
    left, right, top = 170, width - 150, 70  # the x axis's name right of its last tick
    bottom = height - 90 - legend_rows * 40
    unit = f" ({chart.unit})" if chart.unit else ""
    p.drawText(QRectF(left, 5, right - left, 50), Qt.AlignmentFlag.AlignLeft, chart.title + unit)
    xs = [x for c in chart.curves for x in c.x] + ([chart.marker[1]] if chart.marker else [])
    ys = [y for c in chart.curves for y in c.y] + ([chart.reference[1]] if chart.reference else [])
    x1 = max(xs, default=1.0) or 1.0
    y1 = (max(ys, default=1.0) or 1.0) * 1.08
    sx, sy = (right - left) / x1, (bottom - top) / y1
    p.setPen(QColor("black"))
    p.drawLine(QPointF(left, bottom), QPointF(right, bottom))
    p.drawLine(QPointF(left, top), QPointF(left, bottom))
    for value in [0.0, *round_ticks(y1)]:
        gy = bottom - value * sy
        p.setPen(QColor("#dddddd"))
        p.drawLine(QPointF(left, gy), QPointF(right, gy))
        p.setPen(QColor("black"))
        align = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        p.drawText(QRectF(0, gy - 20, left - 15, 40), align, f"{value:,.{_decimals(y1)}f}")
    for value in [0.0, *round_ticks(x1)]:
        gx = left + value * sx
        p.drawLine(QPointF(gx, bottom), QPointF(gx, bottom + 10))
        p.drawText(QRectF(gx - 100, bottom + 12, 200, 36), Qt.AlignmentFlag.AlignCenter, f"{value:,.{_decimals(x1)}f}")
    p.drawText(QRectF(right + 30, bottom + 12, width - right - 30, 36), Qt.AlignmentFlag.AlignLeft, chart.x_label)
    for i, curve in enumerate(chart.curves):
        colour = QColor(LINE_COLOURS[i % len(LINE_COLOURS)])
        p.setPen(QPen(colour, 4))
        points = [QPointF(left + x * sx, bottom - y * sy) for x, y in zip(curve.x, curve.y, strict=True)]
        if len(points) == 1:
            p.drawEllipse(points[0], 5, 5)
        else:
            p.drawPolyline(points)
        if not legend_rows:
            continue
        lx, ly = left + (i % per_row) * (right - left) / per_row, bottom + 60 + (i // per_row) * 40
        p.fillRect(QRectF(lx, ly + 8, 40, 10), colour)
        p.setPen(QColor("black"))
        p.drawText(QRectF(lx + 50, ly - 6, (right - left) / per_row - 60, 40), Qt.AlignmentFlag.AlignLeft, curve.label)
    if chart.marker:
        name, value = chart.marker
        gx = left + value * sx
        p.setPen(QPen(QColor("#444444"), 3, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(gx, top), QPointF(gx, bottom))
        p.drawText(QRectF(gx + 10, top, 600, 36), Qt.AlignmentFlag.AlignLeft, name)
    if chart.reference:
        name, value = chart.reference
        gy = bottom - value * sy
        p.setPen(QPen(QColor("#444444"), 3, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(left, gy), QPointF(right, gy))
        p.drawText(
            QRectF(left + 10, gy - 40, right - left - 20, 36), Qt.AlignmentFlag.AlignRight, f"{name} {value:,.3g}"
        )
    p.end()
    return img


def _decimals(top: float) -> int:
    """Decimals that tell round ticks apart: none for ticks of 1 and up, one for 0.5 or 0.2 …"""
    ticks = round_ticks(top)
    step = ticks[0] if ticks else top
    return 0 if step >= 1 or step <= 0 else min(9, -math.floor(math.log10(step) + 1e-9))
