"""A fixed-size, lock-protected ring buffer of timestamped samples (preallocated numpy arrays).

The sampler thread appends; the window's timer and the store's batcher read copies. A value that
could not be read is NaN (never 0), so plots leave a gap there.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np


class RingBuffer:
    """``capacity`` rows of a timestamp plus one float64 per column; the oldest rows are overwritten."""

    def __init__(self, columns: Sequence[str], capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a ring buffer needs a capacity of at least one row")
        self.columns: tuple[str, ...] = tuple(columns)
        self.capacity = capacity
        self._t = np.full(capacity, np.nan)
        self._v = np.full((capacity, len(self.columns)), np.nan)
        self._count = 0  # rows ever appended; the newest is at (count - 1) % capacity
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return min(self._count, self.capacity)

    @property
    def total(self) -> int:
        """Rows appended since the start, including the ones overwritten."""
        return self._count

    def append(self, t: float, values: Sequence[float] | np.ndarray) -> None:
        with self._lock:
            i = self._count % self.capacity
            self._t[i] = t
            self._v[i] = values
            self._count += 1

    def column(self, name: str) -> int:
        return self.columns.index(name)

    def snapshot(self, last: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the timestamps and values in time order (the newest ``last`` rows if given)."""
        with self._lock:
            return self._newest(self.capacity if last is None else last)

    def since(self, total: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Rows appended after the first ``total`` (those still held) and the new total."""
        with self._lock:
            t, v = self._newest(self._count - total)
            return t, v, self._count

    def _newest(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        n = max(0, min(n, self._count, self.capacity))
        end = self._count % self.capacity
        start = end - n
        if start >= 0:
            return self._t[start:end].copy(), self._v[start:end].copy()
        return (
            np.concatenate((self._t[start:], self._t[:end])),
            np.concatenate((self._v[start:], self._v[:end])),
        )
