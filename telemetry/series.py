"""Series arithmetic for the live plots, kept out of the GUI so it is tested without Qt."""

from __future__ import annotations

import numpy as np


def moving_average(y: np.ndarray, window: int) -> np.ndarray:
    """The mean of the last ``window`` values at each point (a uniform kernel, as Finocchiaro
    smooths with windows of 50 and 100), ignoring NaN; NaN where the window holds no value, so a
    gap stays a gap. ``window`` ≤ 1 returns ``y`` unchanged."""
    if window <= 1 or len(y) == 0:
        return y
    finite = np.isfinite(y)
    values = np.concatenate(([0.0], np.cumsum(np.where(finite, y, 0.0))))
    counts = np.concatenate(([0], np.cumsum(finite)))
    idx = np.arange(1, len(y) + 1)
    lo = np.maximum(idx - window, 0)
    n = counts[idx] - counts[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (values[idx] - values[lo]) / n
    out[~finite] = np.nan  # keep the marked gaps
    # a mean never leaves the range of its values; the running sums' rounding can (a CPU held at 100 %
    # of its cores read 1.0000000000000002 of full scale on the normalised plot)
    if finite.any():
        np.clip(out, y[finite].min(), y[finite].max(), out=out)
    return out


def iterations_at(t: np.ndarray, progress_t: np.ndarray, progress_iter: np.ndarray) -> np.ndarray:
    """The training iteration at each sample time, interpolated between progress messages
    (0 before the first one)."""
    if len(progress_t) == 0:
        return np.zeros_like(t)
    return np.interp(t, np.concatenate(([0.0], progress_t)), np.concatenate(([0.0], progress_iter)))


def mean_band(
    curves: list[tuple[np.ndarray, np.ndarray]], points: int = 400
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Repeats of one run as their mean and sample standard deviation at each x: every curve (x
    ascending; NaN points are dropped, so a gap is bridged) interpolated onto ``points`` x values
    over the stretch all of them cover, so the band never mixes a repeat's end with another's
    middle. Repeats that share no stretch: the longest alone, with a zero band."""
    finite = [(x[m], y[m]) for x, y in curves for m in [np.isfinite(x) & np.isfinite(y)] if m.sum() >= 2]
    if not finite:
        return np.array([]), np.array([]), np.array([])
    lo = max(float(x[0]) for x, _ in finite)
    hi = min(float(x[-1]) for x, _ in finite)
    if hi <= lo:  # the repeats share no stretch of x: the longest alone
        x, y = max(finite, key=lambda c: len(c[0]))
        return x, y, np.zeros_like(y)
    grid = np.linspace(lo, hi, points)
    ys = np.vstack([np.interp(grid, x, y) for x, y in finite])
    sd = ys.std(axis=0, ddof=1) if len(finite) > 1 else np.zeros(points)
    return grid, ys.mean(axis=0), sd
