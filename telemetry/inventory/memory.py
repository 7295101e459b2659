"""RAM (total, available, and DIMM speed/type/slots/channels from SMBIOS when readable) and swap."""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING

from telemetry.inventory.record import Record, read_text

if TYPE_CHECKING:
    from telemetry.inventory.collect import SystemRoots

# SMBIOS type 17 "Memory Type" codes (DMTF DSP0134, 7.18.2)
SMBIOS_MEMORY_TYPES = {
    0x12: "DDR",
    0x13: "DDR2",
    0x18: "DDR3",
    0x1A: "DDR4",
    0x1B: "LPDDR",
    0x1C: "LPDDR2",
    0x1D: "LPDDR3",
    0x1E: "LPDDR4",
    0x20: "HBM",
    0x21: "HBM2",
    0x22: "DDR5",
    0x23: "LPDDR5",
    0x24: "HBM3",
}


def read_memory(roots: SystemRoots, rec: Record) -> None:
    text = read_text(roots.proc / "meminfo")
    if text is None and roots.real:  # Windows, macOS: psutil
        import psutil

        vm = psutil.virtual_memory()
        rec.set("memory.total_bytes", vm.total, "psutil.virtual_memory")
        rec.set("memory.available_bytes", vm.available, "psutil.virtual_memory")
    else:
        found = re.finditer(r"^(\w+):\s+(\d+) kB", text or "", re.M)
        fields = {m.group(1): int(m.group(2)) * 1024 for m in found}
        unreadable = "/proc/meminfo unreadable"
        rec.value_or_miss("memory.total_bytes", fields.get("MemTotal"), "/proc/meminfo MemTotal", unreadable)
        rec.value_or_miss(
            "memory.available_bytes", fields.get("MemAvailable"), "/proc/meminfo MemAvailable", unreadable
        )
    dmi = roots.sys / "firmware/dmi/entries"
    dimms = _smbios_dimms(roots)
    if dimms is None:
        if dmi.is_dir():
            reason = "SMBIOS memory devices are readable by root only (as with dmidecode)"
        else:
            reason = "the firmware exposes no SMBIOS tables (usual in virtual machines)"
        for key in ("speed_mts", "type", "slots", "populated_slots", "channels"):
            rec.miss(f"memory.{key}", reason)
        return
    src = "SMBIOS type 17 (/sys/firmware/dmi/entries)"
    populated = [d for d in dimms if d["size_bytes"]]
    speeds = {d["speed_mts"] for d in populated if d["speed_mts"]}
    types = {d["type"] for d in populated if d["type"]}
    rec.value_or_miss("memory.speed_mts", min(speeds) if speeds else None, src, "SMBIOS gives no speed")
    rec.value_or_miss("memory.type", "/".join(sorted(types)) if types else None, src, "SMBIOS gives no type")
    rec.set("memory.slots", len(dimms), src)
    rec.set("memory.populated_slots", len(populated), src)
    channels = {d["channel"] for d in populated if d["channel"]}
    rec.value_or_miss(
        "memory.channels",
        len(channels) if channels else None,
        f"{src}, bank locators",
        "the SMBIOS bank locators do not name channels",
    )
    rec.set("memory.dimms", populated, src)


def _smbios_dimms(roots: SystemRoots) -> list[dict[str, object]] | None:
    entries = sorted((roots.sys / "firmware/dmi/entries").glob("17-*"))
    if not entries:
        return None
    dimms = []
    for entry in entries:
        try:
            raw = (entry / "raw").read_bytes()
        except OSError:
            return None
        dimm = parse_smbios_type17(raw)
        if dimm is not None:
            dimms.append(dimm)
    return dimms


def parse_smbios_type17(raw: bytes) -> dict[str, object] | None:
    """Size, type, speed and locators of one SMBIOS type 17 (Memory Device) structure."""
    if len(raw) < 0x17 or raw[0] != 17:
        return None
    length = raw[1]
    size_word = struct.unpack_from("<H", raw, 0x0C)[0]
    if size_word in (0, 0xFFFF):
        size = 0
    elif size_word == 0x7FFF and length >= 0x20:
        size = struct.unpack_from("<I", raw, 0x1C)[0] * 2**20
    else:
        size = (size_word & 0x7FFF) * (2**10 if size_word & 0x8000 else 2**20)
    strings = raw[length:].split(b"\x00")

    def string(index_offset: int) -> str:
        idx = raw[index_offset]
        return strings[idx - 1].decode("ascii", "replace").strip() if 0 < idx <= len(strings) else ""

    speed = struct.unpack_from("<H", raw, 0x15)[0] if length > 0x16 else 0
    locator, bank = string(0x10), string(0x11)
    m = re.search(r"CHANNEL\s*([A-Z0-9]+)|CHANNEL([A-Z0-9]+)|_([A-H])\d?$", f"{bank} {locator}".upper())
    channel = next((g for g in m.groups() if g), None) if m else None
    return {
        "size_bytes": size,
        "type": SMBIOS_MEMORY_TYPES.get(raw[0x12]),
        "speed_mts": speed or None,
        "locator": locator,
        "bank": bank,
        "channel": channel,
    }


def read_swap(roots: SystemRoots, rec: Record) -> None:
    text = read_text(roots.proc / "swaps")
    if text is None:
        rec.miss("swap", "/proc/swaps unreadable")
        return
    devices = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 3:
            devices.append({"device": parts[0], "type": parts[1], "size_bytes": int(parts[2]) * 1024})
    rec.set("swap", {"total_bytes": sum(d["size_bytes"] for d in devices), "devices": devices}, "/proc/swaps")
