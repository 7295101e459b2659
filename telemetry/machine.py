"""This machine as a sizing candidate, from its inventory (telemetry/inventory)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from core.hardware.catalogue import DeviceSpec, match_detected_cpu, match_detected_gpu
from telemetry.inventory import SystemRoots, collect_inventory
from telemetry.inventory.collect import _DEFAULT_NVML


@dataclass(frozen=True)
class GpuSummary:
    name: str
    memory_bytes: int
    uuid: str


@dataclass(frozen=True)
class MachineSummary:
    """The figures the sizing engine needs from an inventory."""

    cpu_model: str
    vendor: str
    physical_cores: int
    logical_cores: int
    usable_cores: int
    clock_mhz: float | None
    clock_source: str
    flags: frozenset[str]
    family: int | None
    model: int | None
    ram_total_bytes: int
    ram_available_bytes: int
    gpus: tuple[GpuSummary, ...] = ()
    gpu_note: str = ""
    fingerprint: str = ""


def probe_machine(roots: SystemRoots | None = None, nvml: ModuleType | object | None = _DEFAULT_NVML) -> MachineSummary:
    return summary_from_inventory(collect_inventory(roots, nvml))


def summary_from_inventory(inv: dict[str, Any]) -> MachineSummary:
    cpu, mem, src = inv.get("cpu", {}), inv.get("memory", {}), inv.get("sources", {})
    clock, clock_source = None, "unknown (no max, base or current clock readable)"
    for key in ("max_clock_mhz", "base_clock_mhz", "current_clock_mhz"):
        if cpu.get(key):
            clock, clock_source = cpu[key], src.get(f"cpu.{key}", key)
            break
    logical = cpu.get("logical_cores") or 1
    return MachineSummary(
        cpu_model=cpu.get("model") or "unknown CPU",
        vendor=cpu.get("vendor") or "unknown",
        physical_cores=cpu.get("physical_cores") or logical,
        logical_cores=logical,
        usable_cores=cpu.get("usable_cores") or logical,
        clock_mhz=clock,
        clock_source=clock_source,
        flags=frozenset(cpu.get("flags") or ()),
        family=cpu.get("family"),
        model=cpu.get("model_number"),
        ram_total_bytes=mem.get("total_bytes") or 0,
        ram_available_bytes=mem.get("available_bytes") or 0,
        gpus=tuple(
            GpuSummary(g.get("name") or "unknown GPU", g.get("memory_bytes") or 0, g.get("uuid") or "")
            for g in inv.get("gpus", [])
            if "error" not in g
        ),
        gpu_note=inv.get("gpu_note", ""),
        fingerprint=inv.get("fingerprint", ""),
    )


def fp32_flops_per_cycle(m: MachineSummary) -> int:
    """FP32 FLOP per core per cycle from the vector units the flags and family reveal.

    Two FMA pipes × vector lanes × 2: Intel AVX-512 = 64, Zen 4 AVX-512 (2×256-bit) = 32,
    Zen 5 = 64, AVX2+FMA = 32, Zen/Zen+ (2×128-bit) = 16, otherwise SSE = 8.
    """
    amd = m.vendor == "AMD"
    if "avx512f" in m.flags:
        if amd and (m.family or 0) < 26:
            return 32
        return 64
    if "fma" in m.flags and "avx2" in m.flags:
        if amd and m.family == 23 and (m.model or 0) < 0x30:
            return 16
        return 32
    return 8


def this_machine_device(m: MachineSummary, catalogue: tuple[DeviceSpec, ...]) -> DeviceSpec:
    """This machine as a sizing candidate: its first NVIDIA GPU if NVML sees one, else its CPU."""
    note = ""
    if m.gpus:
        gpu = m.gpus[0]
        match = match_detected_gpu(gpu.name, gpu.memory_bytes, catalogue)
        if match is not None:
            return replace(
                match,
                name=f"this machine ({gpu.name})",
                memory_bytes=gpu.memory_bytes,
                source=f"NVML on this machine, matched to {match.name}; datasheet: {match.source}",
                origin="this-machine",
                catalogue_match=match.name,
                extra={**match.extra, "units_here": sum(g.name == gpu.name for g in m.gpus)},
            )
        note = f"; the GPU {gpu.name} is not in the catalogue (add it as a custom device), so the CPU is sized"
    clock = (m.clock_mhz or 2000.0) * 1e6
    per_cycle = fp32_flops_per_cycle(m)
    cores = min(m.physical_cores, m.usable_cores)
    cpu_match = match_detected_cpu(m.cpu_model, catalogue)
    return DeviceSpec(
        name=f"this machine ({m.cpu_model}, {cores} cores)",
        kind="cpu",
        fp32_flops=cores * clock * per_cycle,
        memory_bytes=None,
        bandwidth=None,
        tdp_w=None,
        clock_hz=clock,
        source=(
            f"{cores} usable physical cores × {clock / 1e9:.2f} GHz ({m.clock_source}) × "
            f"{per_cycle} FP32 FLOP/cycle (from the CPU flags){note}"
        ),
        origin="this-machine",
        catalogue_match=cpu_match.name if cpu_match is not None else None,
    )


def this_machine_cpu(m: MachineSummary, catalogue: tuple[DeviceSpec, ...]) -> DeviceSpec:
    """This machine's CPU as a device, whether or not it has a GPU."""
    return this_machine_device(replace(m, gpus=()), catalogue)
