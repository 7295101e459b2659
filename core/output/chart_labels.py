"""Where a scatter chart's point labels go: beside their point, where they overlap no point and no
label placed before them (the report's time-vs-capex chart and the wizard's, one rule for both).
Pixel geometry only, y growing downwards as on a screen or a page."""

from __future__ import annotations

from collections.abc import Sequence

Rect = tuple[float, float, float, float]  # left, top, width, height


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def place_labels(
    points: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    bounds: Rect,
    radius: float,
    gap: float = 4.0,
) -> list[tuple[float, float] | None]:
    """The top-left corner of each point's label (``sizes``: its width and height), tried in turn
    right-above, right-below, left-above, left-below, then further above and below the point; None
    when every place overlaps a point, a label placed before, or leaves ``bounds``. Points are
    labelled in the order given: put the ones that matter most first."""
    placed: list[Rect] = [(x - radius, y - radius, 2 * radius, 2 * radius) for x, y in points]
    left, top, width, height = bounds
    out: list[tuple[float, float] | None] = []
    for (x, y), (w, h) in zip(points, sizes, strict=True):
        d = radius + gap
        spot = None
        tries = ((d, -h - gap), (d, gap), (-d - w, -h - gap), (-d - w, gap), (d, -2 * h - 2 * gap), (d, h + 2 * gap))
        for dx, dy in tries:
            rect = (x + dx, y + dy, w, h)
            inside = rect[0] >= left and rect[1] >= top and rect[0] + w <= left + width and rect[1] + h <= top + height
            if inside and not any(_overlaps(rect, o) for o in placed):
                spot = (rect[0], rect[1])
                placed.append(rect)
                break
        out.append(spot)
    return out
