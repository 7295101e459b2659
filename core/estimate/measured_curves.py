"""The rates and costs `calibrate` measured on this machine, read at the sizes a network asks for:
along a curve of (size, value) points, or on a grid of convolutions by channels and kernel
(core/estimate/calibration.py stores them; core/estimate/op_work.py prices the ops with them)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence


def grid_rate(grid: Sequence[Sequence[float]], cin: float, cout: float, kernel: float) -> float | None:
    """FLOP/s of a convolution of ``cin`` → ``cout`` channels with a ``kernel`` × ``kernel`` kernel,
    from measured [in, out, kernel side, FLOP/s] points: the measured kernel side nearest to it (in
    log), then bilinear in log in channels, log out channels, log rate over that side's points, held
    at the grid's edges. None when that side's points do not make a full grid (a refused or missing
    point): the caller falls back to the rate by weights."""
    points = [(float(p[0]), float(p[1]), float(p[2]), float(p[3])) for p in grid if len(p) >= 4 and p[3] > 0]
    sides = sorted({p[2] for p in points})
    if not sides:
        return None
    side = min(sides, key=lambda s: abs(math.log(s / max(kernel, 1e-9))))
    table = {(p[0], p[1]): p[3] for p in points if p[2] == side}
    ins = sorted({key[0] for key in table})
    outs = sorted({key[1] for key in table})
    if len(table) != len(ins) * len(outs):
        return None

    def bracket(values: list[float], x: float) -> tuple[float, float, float]:
        """(low, high, weight of high) of ``x`` among ``values`` in log space, held at the ends."""
        if x <= values[0] or len(values) == 1:
            return values[0], values[0], 0.0
        if x >= values[-1]:
            return values[-1], values[-1], 0.0
        for lo, hi in itertools.pairwise(values):
            if lo <= x <= hi:
                return lo, hi, math.log(x / lo) / math.log(hi / lo)
        return values[-1], values[-1], 0.0  # not reached: x lies within the values

    i0, i1, ti = bracket(ins, float(cin))
    o0, o1, to = bracket(outs, float(cout))
    logs = [[math.log(table[(i, o)]) for o in (o0, o1)] for i in (i0, i1)]
    low = logs[0][0] * (1 - to) + logs[0][1] * to
    high = logs[1][0] * (1 - to) + logs[1][1] * to
    return math.exp(low * (1 - ti) + high * ti)


def interpolate_rate(curve: Sequence[Sequence[float]], size: float) -> float:
    """FLOP/s at ``size`` from measured (size, FLOP/s) points — size is a linear layer's FLOPs per
    call or a convolution's weights: piecewise linear in log-log, held at the end points outside
    the measured range."""
    points = sorted((float(f), float(r)) for f, r in curve if float(f) > 0 and float(r) > 0)
    if not points:
        raise ValueError("no measured point above zero to interpolate (core.estimate.calibration drops them)")
    if size <= points[0][0]:
        return points[0][1]
    for (f0, r0), (f1, r1) in itertools.pairwise(points):
        if size <= f1 and f1 > f0:
            t = math.log(size / f0) / math.log(f1 / f0)
            return math.exp(math.log(r0) + t * math.log(r1 / r0))
    return points[-1][1]
