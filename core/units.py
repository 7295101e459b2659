"""Human-readable figures: bytes (binary prefixes), durations, FLOP counts and rates, energy, money.

Three significant digits throughout, never in exponent notation: a figure that rounds up to the
next unit's size is shown in that unit (1,023.9 KiB → "1 MiB"), and one with no larger unit left
gets thousands separators (57,812 kWh → "57,800 kWh", 1,234 days → "1,230 days").
"""

from __future__ import annotations


def fmt_sig(x: float) -> str:
    """``x`` to three significant digits without an exponent: 0.613 → "0.613", 57,812 → "57,800"."""
    if x == 0 or not abs(x) < float("inf"):
        return f"{x:g}"
    rounded = float(f"{x:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 1000 else f"{x:.3g}"


def _scaled(value: float, units: tuple[str, ...], step: float) -> tuple[float, str]:
    """``value`` in the first unit where its three-digit rounding stays below 1,000 (or the last)."""
    for unit in units[:-1]:
        if abs(float(f"{value:.3g}")) < 1000 and abs(value) < step:
            return value, unit
        value /= step
    return value, units[-1]


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "unknown"
    value = float(n)
    if abs(value) < 1024:
        return f"{value:.0f} B"
    value, unit = _scaled(value / 1024, ("KiB", "MiB", "GiB", "TiB", "PiB"), 1024)
    return f"{fmt_sig(value)} {unit}"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown"
    if float(f"{s:.3g}") < 1e-3:
        return f"{fmt_sig(s * 1e6)} µs"
    if float(f"{s:.3g}") < 1:
        return f"{fmt_sig(s * 1e3)} ms"
    if s < 120:
        return f"{fmt_sig(s)} s"
    if s < 7200:
        return f"{fmt_sig(s / 60)} min"
    if s < 172800:
        return f"{fmt_sig(s / 3600)} h"
    return f"{fmt_sig(s / 86400)} days"


def fmt_count(n: float | None, unit: str = "") -> str:
    """1.23e9 → '1.23 G' + unit (SI prefixes)."""
    if n is None:
        return "unknown"
    value, prefix = _scaled(float(n), ("", "k", "M", "G", "T", "P", "E", "Z"), 1000)
    return f"{fmt_sig(value)} {prefix}{unit}".rstrip()


def fmt_energy(kwh: float | None) -> str:
    """Energy in kWh: three significant digits, thousands separators from 1,000 (57,800 kWh)."""
    return "unknown" if kwh is None else f"{fmt_sig(kwh)} kWh"


def fmt_amount(x: float | None) -> str:
    """A money figure without its currency, as a table column shows it: two decimals below 100
    (0.61, 64.18), whole units with thousands separators from 100 (3,127), two significant digits
    below 0.01 (a run rented for a few minutes: 0.0033, not 0.00); "—" when unknown."""
    if x is None:
        return "—"
    if 0 < abs(x) < 0.01:
        return f"{x:.2g}"
    return f"{x:,.2f}" if round(abs(x), 2) < 100 else f"{x:,.0f}"


def fmt_money(x: float | None, currency: str) -> str:
    return "unknown" if x is None else f"{fmt_amount(x)} {currency}"


# Round durations a log-scale time axis marks, with their names (the wizard's chart, the report's)
TIME_TICKS: tuple[tuple[float, str], ...] = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (6 * 3600, "6 h"),
    (86400, "1 day"),
    (7 * 86400, "1 week"),
    (30 * 86400, "1 month"),
    (365 * 86400, "1 year"),
)
