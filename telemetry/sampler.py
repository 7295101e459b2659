"""The telemetry sampler: one background thread (not the GUI's) that reads its sources at 10 Hz
by default (1–20 Hz) into a ring buffer, and hands the rows in batches — at most one per
second — to a sink (the store).

One thread for every source on purpose: NVML calls serialise on the driver anyway, and one
thread keeps the sampler's own cost measurable (``cpu_time_s``). Nothing a source does can stop
the thread: an unexpected error becomes an event and that tick's values stay NaN.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from telemetry.ring import RingBuffer

MIN_RATE_HZ = 1.0
MAX_RATE_HZ = 20.0
DEFAULT_RATE_HZ = 10.0

Row = tuple[float, list[float | None]]


class Source(Protocol):
    columns: tuple[str, ...]
    reasons: dict[str, str]
    limits: dict[str, float]

    def read(self, now: float, slow: bool) -> dict[str, float]: ...

    def close(self) -> None: ...


class Sampler:
    """Samples ``sources`` every 1/``rate_hz`` s. Timestamps are seconds since ``start()``
    (``started_wall`` is the wall clock then). ``sink(rows)`` receives ``(t, values)`` rows with
    ``None`` where a value could not be read, from the sampler's thread, once a second at most."""

    def __init__(
        self,
        sources: Sequence[Source],
        rate_hz: float = DEFAULT_RATE_HZ,
        *,
        capacity_s: float = 2 * 3600,
        slow_period_s: float = 1.0,
        flush_period_s: float = 1.0,
        sink: Callable[[list[Row]], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not MIN_RATE_HZ <= rate_hz <= MAX_RATE_HZ:
            raise ValueError(f"the sampling rate must be {MIN_RATE_HZ:g}–{MAX_RATE_HZ:g} Hz, not {rate_hz:g}")
        self.sources = list(sources)
        self.rate_hz = rate_hz
        self.slow_period_s = max(slow_period_s, 1.0 / rate_hz)
        self.flush_period_s = flush_period_s
        self.sink = sink
        self.clock = clock
        self.columns: tuple[str, ...] = tuple(c for s in self.sources for c in s.columns)
        self._slices = []
        i = 0
        for s in self.sources:
            self._slices.append([i + k for k in range(len(s.columns))])
            i += len(s.columns)
        self.buffer = RingBuffer(self.columns, max(1, int(capacity_s * rate_hz)))
        self.events: list[tuple[float, str]] = []
        self.cpu_time_s = 0.0
        self.started_wall: float | None = None
        self._t0: float | None = None
        self._next_slow = -math.inf
        self._last_flush = -math.inf
        self._pending: list[Row] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._flush_lock = threading.Lock()

    # --- what the sampler knows -------------------------------------------------------------
    @property
    def reasons(self) -> dict[str, str]:
        """Why a column (or a whole source) cannot be read, one reason each."""
        out: dict[str, str] = {}
        for s in self.sources:
            out.update(s.reasons)
            why = getattr(s, "unavailable", None)
            if why:
                out.setdefault("gpu", why)
        return out

    @property
    def limits(self) -> dict[str, float]:
        """The full scale of the columns that have one (100 %, RAM total, VRAM total, power limit)."""
        out: dict[str, float] = {}
        for s in self.sources:
            out.update(s.limits)
        return out

    def all_events(self) -> list[tuple[float, str]]:
        evs = list(self.events)
        for s in self.sources:
            evs += [(self._rel(t), m) for t, m in getattr(s, "events", [])]
        return sorted(evs)

    def _rel(self, now: float) -> float:
        return now - self._t0 if self._t0 is not None else now

    # --- sampling ---------------------------------------------------------------------------
    def sample_once(self) -> None:
        """Read every source once and append the row (the thread calls this; tests may too)."""
        now = self.clock()
        if self._t0 is None:
            self._t0 = now
            self.started_wall = time.time()
        slow = now >= self._next_slow
        if slow:
            self._next_slow = now + self.slow_period_s
        row = np.full(len(self.columns), np.nan)
        for source, idx in zip(self.sources, self._slices, strict=True):
            if not idx:
                continue
            try:
                values = source.read(now, slow)
            except Exception as exc:  # a source's bug must not end the recording
                self.events.append((self._rel(now), f"{type(source).__name__} failed: {exc}"))
                continue
            for col, j in zip(source.columns, idx, strict=True):
                v = values.get(col)
                if v is not None:
                    row[j] = v
        t = now - self._t0
        self.buffer.append(t, row)
        if self.sink is not None:
            with self._flush_lock:
                self._pending.append((t, [None if math.isnan(x) else float(x) for x in row]))
            if now - self._last_flush >= self.flush_period_s:
                self._last_flush = now
                self.flush()

    def flush(self) -> None:
        """Hand the pending rows to the sink now (one store transaction)."""
        if self.sink is None:
            return
        with self._flush_lock:
            rows, self._pending = self._pending, []
        if not rows:
            return
        try:
            self.sink(rows)
        except Exception as exc:  # the database is full or locked: say so, keep sampling
            self.events.append((rows[-1][0], f"{len(rows)} samples could not be stored: {exc}"))

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("this sampler has already been started")
        self._thread = threading.Thread(target=self._loop, name="trainrig-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, store what is pending and release the sources."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        else:
            self.flush()
        for s in self.sources:
            try:
                s.close()
            except Exception as exc:
                self.events.append((self._rel(self.clock()), f"{type(s).__name__} did not close: {exc}"))

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self._t0 if self._t0 is not None else 0.0

    def _loop(self) -> None:
        period = 1.0 / self.rate_hz
        cpu0 = time.thread_time()
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                self.sample_once()
            except Exception as exc:
                self.events.append((self.elapsed_s, f"sampling failed: {exc}"))
            self.cpu_time_s = time.thread_time() - cpu0
            next_t += period
            delay = next_t - time.monotonic()
            if delay < 0:  # late (a busy machine): skip the missed ticks rather than burst
                next_t = time.monotonic()
                delay = 0.0
            self._stop.wait(delay)
        self.flush()
        self.cpu_time_s = time.thread_time() - cpu0


def default_sources(pid: int | None = None, per_core: bool = False, nvml: Any = None) -> list[Source]:
    """This machine's host figures, ``pid``'s process tree when given, and its NVIDIA GPUs."""
    from telemetry.sources import HostSource, NvmlSource, ProcessTreeSource

    sources: list[Source] = [HostSource(per_core=per_core)]
    if pid is not None:
        sources.append(ProcessTreeSource(pid))
    sources.append(NvmlSource(nvml))
    return sources
