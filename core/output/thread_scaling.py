"""Thread scaling as Wünsche 2016 (Fig. 1) measured it: the same training step at 1, 2, 4, … CPU
threads, up to and past the physical cores, and the paper's rule — use no more threads than
physical cores — checked against this machine's curve."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SOURCE = "Wünsche 2016, Fig. 1 (threads beyond the physical cores slow training down)"


@dataclass(frozen=True)
class ThreadPoint:
    threads: int
    step_s: float


def thread_counts(physical: int, logical: int, limit: int = 64) -> list[int]:
    """1, 2, 4, … up to twice the physical cores, with the physical and the logical count
    themselves (the points the rule is about), at most ``limit``."""
    physical, logical = max(1, physical), max(1, logical)
    top = min(limit, max(2 * physical, logical, 2))
    counts = {1, physical, logical, top}
    n = 2
    while n <= top:
        counts.add(n)
        n *= 2
    return sorted(c for c in counts if c <= top)


def verdict(points: Sequence[ThreadPoint], physical: int) -> str:
    """Whether this machine's curve follows the rule: the fastest thread count, and what the counts
    past the physical cores gained or lost against it at the physical count."""
    if not points:
        return "no thread count was measured"
    best = min(points, key=lambda p: p.step_s)
    at_physical = next((p for p in points if p.threads == physical), None)
    beyond = [p for p in points if p.threads > physical]
    text = f"fastest at {best.threads} thread(s) ({best.step_s * 1e3:.3g} ms a step)"
    if at_physical is None or not beyond:
        return text + f"; nothing measured past the {physical} physical core(s) to check the rule"
    worst = max(beyond, key=lambda p: p.step_s)
    change = worst.step_s / at_physical.step_s - 1
    fastest_beyond = min(beyond, key=lambda p: p.step_s)
    gain = 1 - fastest_beyond.step_s / at_physical.step_s
    if gain > 0.05:
        return (
            text + f"; the rule does not hold here: {fastest_beyond.threads} threads were {gain:.0%} faster than "
            f"the {physical} physical core(s) (on a busy machine, measure again before relying on it)"
        )
    return (
        text + f"; the rule holds here: past the {physical} physical core(s) no count was more than 5 % faster, "
        f"and {worst.threads} threads took {change:+.0%} against {physical}"
    )
