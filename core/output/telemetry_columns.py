"""The sampled telemetry columns as a user reads them: the plot each belongs to, its label, the
scale to the plot's unit and the column whose limit is its full scale (the Telemetry tab, Compare,
the run report)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True)
class Series:
    plot: str  # load, memory, gpu
    label: str
    column: str
    scale: float  # to the plot's unit
    limit: str | None  # the column whose limit is full scale when normalised


def series_for(columns: Sequence[str], cores: int) -> list[Series]:
    """The curves for the columns a sampler has (GPU ones only where there are GPUs)."""
    out = [
        Series("load", "CPU (machine)", "cpu_percent", 1.0, "cpu_percent"),
        Series("load", f"trainer CPU (% of a core, {cores} cores)", "proc_cpu_percent", 1.0, None),
        Series("memory", "RAM used", "ram_used_bytes", 1 / GIB, "ram_used_bytes"),
        Series("memory", "trainer RSS", "proc_rss_bytes", 1 / GIB, "ram_used_bytes"),
    ]
    gpus = sorted({c.split("_")[0] for c in columns if c.startswith("gpu")})
    for g in gpus:
        n = g[3:]
        out += [
            Series("load", f"GPU {n} load", f"{g}_util_percent", 1.0, f"{g}_util_percent"),
            Series("memory", f"GPU {n} memory", f"{g}_mem_used_bytes", 1 / GIB, f"{g}_mem_used_bytes"),
            Series("gpu", f"GPU {n} temperature (°C)", f"{g}_temp_c", 1.0, None),
            Series("gpu", f"GPU {n} power (W)", f"{g}_power_w", 1.0, f"{g}_power_w"),
        ]
    return [s for s in out if s.column in columns]


def unit_of(column: str, plot: str) -> str:
    """The unit a column is shown in once scaled (``Series.scale``)."""
    if column.endswith("_temp_c"):
        return "°C"
    if column.endswith("_power_w"):
        return "W"
    return "GiB" if plot == "memory" else "%"
