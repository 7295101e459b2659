"""Human-readable figures: bytes (binary prefixes), durations, FLOP counts and rates, money."""

from __future__ import annotations


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "unknown"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.3g} min"
    if s < 172800:
        return f"{s / 3600:.3g} h"
    return f"{s / 86400:.3g} days"


def fmt_count(n: float | None, unit: str = "") -> str:
    """1.23e9 → '1.23 G' + unit (SI prefixes)."""
    if n is None:
        return "unknown"
    value = float(n)
    for prefix in ("", "k", "M", "G", "T", "P", "E", "Z"):
        if abs(value) < 1000 or prefix == "Z":
            return f"{value:.3g} {prefix}{unit}".rstrip()
        value /= 1000
    raise AssertionError("unreachable")


def fmt_money(x: float | None, currency: str) -> str:
    if x is None:
        return "unknown"
    if 0 < abs(x) < 0.01:
        return f"{x:.2g} {currency}"  # a run rented for a few minutes: 0.0033 USD, not 0.00
    return f"{x:,.2f} {currency}" if abs(x) < 100 else f"{x:,.0f} {currency}"
