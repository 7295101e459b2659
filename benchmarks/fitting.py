"""The benchmarks' one way to fit a constant and hold it out: a seeded split of the measurements into
a fit half and a held-out half, and the value of a grid whose fit half has the least squared log
error (log(predicted / measured), so a factor too fast weighs as much as the same factor too slow)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")


def seeded_halves(rows: Sequence[T], seed: int) -> tuple[list[T], list[T]]:
    """(fit half, held-out half) of ``rows`` by a seeded shuffle, each in the rows' own order."""
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    half = len(rows) // 2
    return [rows[i] for i in sorted(order[:half])], [rows[i] for i in sorted(order[half:])]


def least_log_error(values: Iterable[float], errors_at: Callable[[float], Iterable[float]]) -> float:
    """The first of ``values`` whose relative errors (``errors_at(value)``: predicted / measured − 1)
    have the least sum of squared log(1 + error)."""
    return min(values, key=lambda v: sum(math.log1p(e) ** 2 for e in errors_at(v)))


def fit_constant(
    grid: Iterable[float],
    fitting: Sequence[dict],
    priced: Callable[[dict], float],
    get: Callable[[], float],
    put: Callable[[float], None],
) -> float:
    """The value of ``grid`` with the least squared log error over the rows ``fitting`` (each with its
    ``measured_s``), each priced by ``priced(row)`` while ``put(value)`` holds the constant; the value
    ``get()`` gave is put back after."""
    kept = get()

    def errors(value: float) -> list[float]:
        put(value)
        return [priced(r) / r["measured_s"] - 1 for r in fitting]

    try:
        return least_log_error(grid, errors)
    finally:
        put(kept)


def print_kernel_tables(
    parts: Iterable[str], rows_of: Callable[[str], list[dict]], fitted: Callable[[str], str] | None = None
) -> None:
    """Each part's profiles as a table (role, measured, priced, error), and ``fitted(part)``'s line after it."""
    for part in parts:
        print(f"\n| {part} | role | measured | priced | error |\n|---|---|---|---|---|")
        for r in rows_of(part):
            err = r["predicted_s"] / r["measured_s"] - 1
            ms = f"{r['measured_s'] * 1e3:.3f} ms | {r['predicted_s'] * 1e3:.3f} ms"
            print(f"| {r['label']} | {r['role']} | {ms} | {err:+.0%} |")
        if fitted is not None:
            print(f"\n{fitted(part)}")
