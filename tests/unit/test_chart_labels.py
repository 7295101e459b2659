"""Point labels of the time-vs-capex charts (core.output.chart_labels): beside their point, never
over another point or label, inside the chart; left out when no place is free."""

from __future__ import annotations

from core.output.chart_labels import _overlaps, place_labels


def test_crowded_points_get_labels_that_overlap_nothing() -> None:
    # eight candidates within a few pixels of each other, as H100 and A100 counts fall on a chart
    points = [(200 + 6 * i, 150 + 3 * (i % 3)) for i in range(8)]
    sizes = [(110.0, 14.0)] * 8
    spots = place_labels(points, sizes, (0, 0, 600, 300), radius=5)
    rects = [(s[0], s[1], w, h) for s, (w, h) in zip(spots, sizes, strict=True) if s is not None]
    assert len(rects) >= 4  # most are labelled
    for i, a in enumerate(rects):
        assert 0 <= a[0] and a[0] + a[2] <= 600 and 0 <= a[1] and a[1] + a[3] <= 300
        assert not any(_overlaps(a, b) for b in rects[i + 1 :])
        assert not any(_overlaps(a, (x - 5, y - 5, 10, 10)) for x, y in points)


def test_a_lone_point_is_labelled_right_above_and_a_point_at_the_edge_on_its_left() -> None:
    assert place_labels([(100, 100)], [(50, 10)], (0, 0, 400, 200), radius=5, gap=4) == [(109, 86)]
    assert place_labels([(390, 100)], [(50, 10)], (0, 0, 400, 200), radius=5, gap=4) == [(331, 86)]


def test_no_free_place_leaves_the_label_out() -> None:
    assert place_labels([(10, 10)], [(500, 50)], (0, 0, 100, 100), radius=5) == [None]
