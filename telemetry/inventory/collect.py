"""Collect the whole inventory; where each part is read from is in its module."""

from __future__ import annotations

import hashlib
import json
import platform
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from core.hardware.catalogue import DeviceSpec, load_catalogue, match_detected_gpu
from telemetry.inventory.cpu import numa_nodes, read_cpu
from telemetry.inventory.gpu import load_nvml, read_gpus
from telemetry.inventory.memory import read_memory, read_swap
from telemetry.inventory.record import Record
from telemetry.inventory.software import read_software
from telemetry.inventory.storage import read_disks, read_raid, read_ramdisks

_DEFAULT_NVML = object()


@dataclass(frozen=True)
class SystemRoots:
    """Where /proc and /sys are: the real ones, or a recorded machine's (tests)."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    real: bool = True
    machine: str | None = None  # uname -m of a recorded machine
    extra: dict[str, Any] = field(default_factory=dict)


def collect_inventory(
    roots: SystemRoots | None = None, nvml: ModuleType | object | None = _DEFAULT_NVML
) -> dict[str, Any]:
    """Everything about this machine that matters for training, with sources and unknowns."""
    roots = roots or SystemRoots()
    t0 = time.perf_counter()
    rec = Record()
    # NVML start-up takes a few hundred milliseconds on GPU machines: let it run beside the rest
    gpu_rec = Record()
    nvml_module = load_nvml() if nvml is _DEFAULT_NVML else nvml
    gpu_thread = threading.Thread(target=read_gpus, args=(gpu_rec, nvml_module), name="nvml-inventory")
    gpu_thread.start()
    read_cpu(roots, rec)
    numa_nodes(roots, rec)
    read_memory(roots, rec)
    read_swap(roots, rec)
    read_disks(roots, rec)
    read_raid(roots, rec)
    read_ramdisks(roots, rec)
    read_software(rec, roots.real)
    gpu_thread.join()
    rec.merge(gpu_rec)
    _match_catalogue(rec)
    inv = rec.data
    inv["host"] = platform.node() if roots.real else "recorded machine"
    inv["fingerprint"] = fingerprint(inv)
    inv["collected_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    inv["collect_seconds"] = round(time.perf_counter() - t0, 4)
    inv["sources"] = rec.sources
    inv["unknown"] = rec.unknown
    return inv


def _match_catalogue(rec: Record) -> None:
    catalogue = load_catalogue()
    for i, g in enumerate(rec.data.get("gpus", [])):
        match: DeviceSpec | None = match_detected_gpu(g.get("name") or "", g.get("memory_bytes"), catalogue)
        g["catalogue_match"] = match.name if match else None
        if match and g.get("cuda_cores") is None and match.cuda_cores:
            g["cuda_cores"] = match.cuda_cores
            rec.sources[f"gpus[{i}].cuda_cores"] = f"catalogue datasheet of {match.name} (NVML does not report it)"
            rec.unknown.pop(f"gpus[{i}].cuda_cores", None)


def fingerprint(inv: dict[str, Any]) -> str:
    """A stable id of the hardware: CPU model and cores, RAM to the GiB, GPU UUIDs, host name."""
    cpu = inv.get("cpu", {})
    key = {
        "cpu": cpu.get("model"),
        "logical": cpu.get("logical_cores"),
        "ram_gib": round((inv.get("memory", {}).get("total_bytes") or 0) / 2**30),
        "gpus": sorted(g.get("uuid") or g.get("name") or "" for g in inv.get("gpus", [])),
        "host": inv.get("host"),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
