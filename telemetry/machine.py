"""A fast probe of this machine for the sizing engine's "this-machine" candidate.

Reads /proc/cpuinfo and psutil directly (py-cpuinfo takes over a second) and NVML when present.
The full inventory (caches, disks, NUMA, software) builds on this in telemetry/inventory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from core.catalogue import DeviceSpec, match_detected_gpu


@dataclass(frozen=True)
class GpuSummary:
    name: str
    memory_bytes: int
    uuid: str


@dataclass(frozen=True)
class MachineSummary:
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
    notes: tuple[str, ...] = field(default=())


def probe_machine(proc_root: Path = Path("/proc"), sys_root: Path = Path("/sys")) -> MachineSummary:
    info = _cpuinfo(proc_root / "cpuinfo")
    logical = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or logical
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = logical
    clock, clock_source = _max_clock(sys_root, info)
    vm = psutil.virtual_memory()
    gpus, note = _nvml_gpus()
    return MachineSummary(
        cpu_model=info.get("model name", "unknown CPU"),
        vendor=info.get("vendor_id", "unknown"),
        physical_cores=physical,
        logical_cores=logical,
        usable_cores=usable,
        clock_mhz=clock,
        clock_source=clock_source,
        flags=frozenset(info.get("flags", "").split()),
        family=_int(info.get("cpu family")),
        model=_int(info.get("model")),
        ram_total_bytes=vm.total,
        ram_available_bytes=vm.available,
        gpus=gpus,
        gpu_note=note,
    )


def fp32_flops_per_cycle(m: MachineSummary) -> int:
    """FP32 FLOP per core per cycle from the vector units the flags and family reveal.

    Two FMA pipes × vector lanes × 2: Intel AVX-512 = 64, Zen 4 AVX-512 (2×256-bit) = 32,
    Zen 5 = 64, AVX2+FMA = 32, Zen/Zen+ (2×128-bit) = 16, otherwise SSE = 8.
    """
    amd = m.vendor == "AuthenticAMD"
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
            )
        note = f"; the GPU {gpu.name} is not in the catalogue (add it as a custom device), so the CPU is sized"
    clock = (m.clock_mhz or 2000.0) * 1e6
    per_cycle = fp32_flops_per_cycle(m)
    cores = min(m.physical_cores, m.usable_cores)
    return DeviceSpec(
        name=f"this machine ({m.cpu_model}, {cores} cores)",
        kind="cpu",
        fp32_flops=cores * clock * per_cycle,
        memory_bytes=None,
        bandwidth=None,
        tdp_w=None,
        clock_hz=clock,
        source=(
            f"/proc/cpuinfo: {cores} usable physical cores × {clock / 1e9:.2f} GHz ({m.clock_source}) × "
            f"{per_cycle} FP32 FLOP/cycle (from the CPU flags){note}"
        ),
    )


def _cpuinfo(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip():
            if out:
                break  # the first processor block is enough here
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def _max_clock(sys_root: Path, info: dict[str, str]) -> tuple[float | None, str]:
    f = sys_root / "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"
    try:
        return int(f.read_text().strip()) / 1000.0, "cpufreq cpuinfo_max_freq"
    except (OSError, ValueError):
        pass
    mhz = info.get("cpu MHz")
    if mhz:
        try:
            return float(mhz), "/proc/cpuinfo current clock (no cpufreq)"
        except ValueError:
            pass
    return None, "unknown (no cpufreq, no cpu MHz)"


def _nvml_gpus() -> tuple[tuple[GpuSummary, ...], str]:
    try:
        import pynvml
    except ImportError:
        return (), "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return (), f"NVML unavailable: {exc}"
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            uuid = pynvml.nvmlDeviceGetUUID(h)
            uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            gpus.append(GpuSummary(name, int(pynvml.nvmlDeviceGetMemoryInfo(h).total), uuid))
        return tuple(gpus), "" if gpus else "NVML found no GPU"
    except pynvml.NVMLError as exc:
        return (), f"NVML error: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
