"""CPU: model, topology, clocks, caches, TLB and the instruction sets that matter for training."""

from __future__ import annotations

import os
import platform
import re
from typing import TYPE_CHECKING

from telemetry.inventory.record import Record, parse_cpulist, parse_size, read_int, read_text

if TYPE_CHECKING:
    from telemetry.inventory.collect import SystemRoots

ML_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "asimdhp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)
VENDOR_NAMES = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}


def cpuinfo_blocks(text: str) -> list[dict[str, str]]:
    blocks, cur = [], {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                blocks.append(cur)
                cur = {}
            continue
        key, _, value = line.partition(":")
        cur[key.strip()] = value.strip()
    if cur:
        blocks.append(cur)
    return blocks


def read_cpu(roots: SystemRoots, rec: Record) -> None:
    src = "/proc/cpuinfo"
    text = read_text(roots.proc / "cpuinfo")
    if text is None and roots.real:
        read_cpu_portable(roots, rec)
        return
    blocks = [b for b in cpuinfo_blocks(text or "") if "processor" in b]
    first = blocks[0] if blocks else {}
    if text is None:
        rec.miss("cpu.model", "/proc/cpuinfo cannot be read on this system")
    model = first.get("model name") or first.get("Model") or first.get("Hardware")
    rec.value_or_miss("cpu.model", model, src, "/proc/cpuinfo names no model")
    vendor = first.get("vendor_id") or first.get("CPU implementer")
    rec.value_or_miss("cpu.vendor", VENDOR_NAMES.get(vendor or "", vendor), src, "/proc/cpuinfo names no vendor")
    arch = roots.machine or platform.machine()
    rec.set("cpu.architecture", arch, "uname" if not roots.machine else "fixture")
    flags = set((first.get("flags") or first.get("Features") or "").split())
    rec.set("cpu.flags", sorted(f for f in ML_FLAGS if f in flags), src)
    rec.set("cpu.all_flags_count", len(flags), src)

    logical = len(blocks) or None
    rec.value_or_miss("cpu.logical_cores", logical, src, "/proc/cpuinfo lists no processors")
    packages = {b.get("physical id") for b in blocks if "physical id" in b}
    cores = {(b.get("physical id"), b.get("core id")) for b in blocks if "core id" in b}
    if packages:
        rec.set("cpu.sockets", len(packages), f"{src} (physical id)")
    else:
        sockets = _sysfs_topology(roots, "physical_package_id")
        rec.value_or_miss("cpu.sockets", sockets, "sysfs topology/physical_package_id", "no package ids exposed")
    if cores:
        rec.set("cpu.physical_cores", len(cores), f"{src} (physical id, core id)")
    else:
        phys = _sysfs_core_count(roots)
        rec.value_or_miss("cpu.physical_cores", phys, "sysfs topology/core_id", "no core ids exposed")
    _usable_cores(roots, rec, logical)
    _clocks(roots, rec, first, model)
    rec.set("cpu.family", _int(first.get("cpu family")), src)
    rec.set("cpu.model_number", _int(first.get("model")), src)
    tlb = first.get("TLB size")
    if tlb:
        rec.set("cpu.tlb", tlb, f"{src} (TLB size)")
    else:
        rec.miss(
            "cpu.tlb", "the kernel shows TLB sizes only for AMD CPUs (/proc/cpuinfo 'TLB size'); others need cpuid"
        )
    rec.set("cpu.caches", read_caches(roots), "sysfs cpu*/cache/index*")
    if not rec.data["cpu"]["caches"]:
        rec.miss("cpu.caches", "no cache information in sysfs")


def read_cpu_portable(roots: SystemRoots, rec: Record) -> None:
    """Windows, macOS and anything without /proc: what platform, sysctl and psutil tell."""
    import subprocess

    import psutil

    model = None
    source = "platform.processor()"
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=2
            )
            model, source = out.stdout.strip() or None, "sysctl machdep.cpu.brand_string"
        except (OSError, subprocess.SubprocessError):
            model = None
    model = model or platform.processor() or None
    rec.value_or_miss("cpu.model", model, source, "the system does not name its CPU")
    rec.miss("cpu.vendor", "not read on this system (Linux reads /proc/cpuinfo)")
    rec.set("cpu.architecture", platform.machine(), "platform.machine()")
    logical = psutil.cpu_count(logical=True)
    rec.value_or_miss("cpu.logical_cores", logical, "psutil", "psutil cannot count CPUs here")
    rec.value_or_miss("cpu.physical_cores", psutil.cpu_count(logical=False), "psutil", "psutil cannot tell")
    rec.miss("cpu.sockets", "not read on this system (Linux reads /proc/cpuinfo)")
    _usable_cores(roots, rec, logical)
    freq = psutil.cpu_freq() if hasattr(psutil, "cpu_freq") else None
    rec.value_or_miss("cpu.max_clock_mhz", (freq.max or None) if freq else None, "psutil.cpu_freq", "not reported")
    rec.miss("cpu.base_clock_mhz", "not read on this system")
    rec.value_or_miss(
        "cpu.current_clock_mhz", (freq.current or None) if freq else None, "psutil.cpu_freq", "not reported"
    )
    rec.set("cpu.flags", [], "not read on this system")
    rec.miss("cpu.tlb", "not read on this system")
    rec.miss("cpu.caches", "cache sizes are read from Linux sysfs only")


def read_caches(roots: SystemRoots) -> list[dict[str, object]]:
    """One row per cache level and type: size per instance, CPUs sharing one, instances."""
    seen: dict[tuple[int, str], dict[str, object]] = {}
    instances: dict[tuple[int, str], set[str]] = {}
    for cache_dir in sorted((roots.sys / "devices/system/cpu").glob("cpu[0-9]*/cache/index[0-9]*")):
        level = read_int(cache_dir / "level")
        ctype = (read_text(cache_dir / "type") or "").strip()
        size = parse_size(read_text(cache_dir / "size") or "")
        shared = (read_text(cache_dir / "shared_cpu_list") or "").strip()
        if level is None or size is None:
            continue
        key = (level, ctype)
        instances.setdefault(key, set()).add(shared)
        seen.setdefault(
            key,
            {
                "level": level,
                "type": ctype,
                "size_bytes": size,
                "shared_by": len(parse_cpulist(shared)) if shared else 1,
            },
        )
    rows = []
    for key in sorted(seen):
        row = dict(seen[key])
        row["instances"] = len(instances[key])
        row["total_bytes"] = int(row["size_bytes"]) * row["instances"]  # type: ignore[call-overload]
        rows.append(row)
    return rows


def _usable_cores(roots: SystemRoots, rec: Record, logical: int | None) -> None:
    usable = None
    source = ""
    if roots.real:
        try:
            usable = len(os.sched_getaffinity(0))
            source = "sched_getaffinity"
        except (AttributeError, OSError):
            usable = os.cpu_count()
            source = "os.cpu_count (no affinity API)"
    else:
        usable, source = logical, "fixture: all logical cores"
    quota = _cgroup_cpu_limit(roots)
    if quota is not None and usable is not None and quota < usable:
        usable = max(1, int(quota))
        source += f" limited by the cgroup CPU quota ({quota:g} CPUs)"
    rec.value_or_miss("cpu.usable_cores", usable, source, "affinity unknown")


def _cgroup_cpu_limit(roots: SystemRoots) -> float | None:
    text = read_text(roots.sys / "fs/cgroup/cpu.max")
    if text:
        parts = text.split()
        if parts and parts[0] != "max" and len(parts) > 1:
            return int(parts[0]) / int(parts[1])
        return None
    quota = read_int(roots.sys / "fs/cgroup/cpu/cpu.cfs_quota_us")
    period = read_int(roots.sys / "fs/cgroup/cpu/cpu.cfs_period_us")
    if quota and period and quota > 0:
        return quota / period
    return None


def _clocks(roots: SystemRoots, rec: Record, first: dict[str, str], model: str | None) -> None:
    freq = roots.sys / "devices/system/cpu/cpu0/cpufreq"
    max_khz = read_int(freq / "cpuinfo_max_freq")
    base_khz = read_int(freq / "base_frequency")
    if max_khz:
        rec.set("cpu.max_clock_mhz", max_khz / 1000, "sysfs cpufreq/cpuinfo_max_freq")
    else:
        rec.miss("cpu.max_clock_mhz", "no cpufreq in sysfs (common in virtual machines)")
    m = re.search(r"@\s*([\d.]+)\s*GHz", model or "")
    if base_khz:
        rec.set("cpu.base_clock_mhz", base_khz / 1000, "sysfs cpufreq/base_frequency")
    elif m:
        rec.set("cpu.base_clock_mhz", float(m.group(1)) * 1000, "the model name in /proc/cpuinfo")
    else:
        rec.miss("cpu.base_clock_mhz", "neither cpufreq/base_frequency nor a clock in the model name")
    mhz = first.get("cpu MHz")
    if mhz:
        rec.set("cpu.current_clock_mhz", float(mhz), "/proc/cpuinfo (cpu MHz, the clock at reading time)")
    else:
        rec.miss("cpu.current_clock_mhz", "/proc/cpuinfo shows no cpu MHz")


def _sysfs_topology(roots: SystemRoots, name: str) -> int | None:
    ids = {read_int(p) for p in (roots.sys / "devices/system/cpu").glob(f"cpu[0-9]*/topology/{name}")}
    ids.discard(None)
    return len(ids) or None


def _sysfs_core_count(roots: SystemRoots) -> int | None:
    pairs = set()
    for topo in (roots.sys / "devices/system/cpu").glob("cpu[0-9]*/topology"):
        pairs.add((read_int(topo / "physical_package_id"), read_int(topo / "core_id")))
    return len(pairs) or None


def _int(value: str | None) -> int | None:
    try:
        return int(value, 0) if value is not None else None
    except ValueError:
        return None


def numa_nodes(roots: SystemRoots, rec: Record) -> None:
    nodes = []
    for node in sorted((roots.sys / "devices/system/node").glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        cpus = parse_cpulist(read_text(node / "cpulist") or "")
        mem = None
        m = re.search(r"MemTotal:\s+(\d+) kB", read_text(node / "meminfo") or "")
        if m:
            mem = int(m.group(1)) * 1024
        nodes.append({"node": int(node.name[4:]), "cpus": len(cpus), "memory_bytes": mem})
    if nodes:
        rec.set("numa_nodes", nodes, "sysfs devices/system/node")
    else:
        rec.miss("numa_nodes", "no NUMA information in sysfs")
