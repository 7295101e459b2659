"""Disks (HDD / SSD / NVMe / virtual), software RAID, RAM disks (tmpfs, ramfs, zram)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from telemetry.inventory.record import Record, read_int, read_text

if TYPE_CHECKING:
    from telemetry.inventory.collect import SystemRoots

ROTATIONAL_CAVEAT = (
    "the rotational flag comes from the driver: virtual disks, USB bridges and RAID controllers may misreport it"
)
SYSTEM_TMPFS = ("/dev", "/run", "/sys", "/proc")
SKIP_BLOCK = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd")


def mounts(roots: SystemRoots) -> list[tuple[str, str, str, str]]:
    out = []
    for line in (read_text(roots.proc / "mounts") or "").splitlines():
        parts = line.split()
        if len(parts) >= 4:
            out.append((parts[0], parts[1].replace("\\040", " "), parts[2], parts[3]))
    return out


def _statvfs(path: str) -> os.statvfs_result | None:
    try:
        return os.statvfs(path)
    except OSError:
        return None


def read_disks(roots: SystemRoots, rec: Record) -> None:
    mount_list = mounts(roots)
    disks = []
    for dev in sorted((roots.sys / "block").glob("*")):
        name = dev.name
        if name.startswith(SKIP_BLOCK):
            continue
        rotational = read_int(dev / "queue/rotational")
        if name.startswith("nvme"):
            kind = "NVMe"
        elif name.startswith(("vd", "xvd")):
            kind = "virtual"
        elif rotational == 1:
            kind = "HDD"
        elif rotational == 0:
            kind = "SSD"
        else:
            kind = "unknown"
        parts = {name} | {p.name for p in dev.iterdir() if p.name.startswith(name)} if dev.is_dir() else {name}
        mps = [mp for src, mp, _, _ in mount_list if src.startswith("/dev/") and src[5:] in parts]
        st = _statvfs(mps[0]) if roots.real and mps else None
        free = st.f_bavail * st.f_frsize if st else None
        disks.append(
            {
                "device": name,
                "type": kind,
                "model": (read_text(dev / "device/model") or "").strip() or None,
                "size_bytes": (read_int(dev / "size") or 0) * 512,
                "rotational": None if rotational is None else bool(rotational),
                "mount_points": mps,
                "free_bytes": free,
                "rotational_caveat": ROTATIONAL_CAVEAT,
            }
        )
    if disks:
        rec.set("disks", disks, "sysfs block/* (queue/rotational, size, device/model), /proc/mounts, statvfs")
    else:
        rec.miss("disks", "no block devices in sysfs")


def read_raid(roots: SystemRoots, rec: Record) -> None:
    text = read_text(roots.proc / "mdstat")
    if text is None:
        rec.set("raid", [], "/proc/mdstat absent: no Linux software RAID (hardware RAID is not visible here)")
        return
    arrays = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(md\w+)\s*:\s*(\w+)\s+(?:\(\w+\)\s+)?(raid\d+|linear|multipath)?\s*(.*)$", line)
        if not m:
            continue
        members = [re.sub(r"\[\d+\].*", "", t) for t in m.group(4).split()]
        detail = lines[i + 1] if i + 1 < len(lines) else ""
        blocks = re.search(r"(\d+) blocks", detail)
        health = re.search(r"\[([U_]+)\]", detail)
        arrays.append(
            {
                "device": m.group(1),
                "state": m.group(2),
                "level": m.group(3),
                "members": members,
                "size_bytes": int(blocks.group(1)) * 1024 if blocks else None,
                "healthy": None if not health else "_" not in health.group(1),
            }
        )
    rec.set("raid", arrays, "/proc/mdstat")


def read_ramdisks(roots: SystemRoots, rec: Record) -> None:
    found = []
    for _device, mp, fstype, opts in mounts(roots):
        if fstype not in ("tmpfs", "ramfs") or "ro" in opts.split(","):
            continue
        m = re.search(r"size=(\d+)k", opts)
        size = int(m.group(1)) * 1024 if m else None
        if size is None and roots.real:
            st = _statvfs(mp)
            size = st.f_blocks * st.f_frsize if st else None
        found.append(
            {
                "kind": fstype,
                "mount_point": mp,
                "size_bytes": size,
                "system": mp.startswith(SYSTEM_TMPFS),
            }
        )
    swaps = read_text(roots.proc / "swaps") or ""
    for z in sorted((roots.sys / "block").glob("zram*")):
        size = read_int(z / "disksize")
        algo = (read_text(z / "comp_algorithm") or "").strip()
        chosen = re.search(r"\[(\w+)\]", algo)
        found.append(
            {
                "kind": "zram",
                "device": z.name,
                "size_bytes": size,
                "compression": chosen.group(1) if chosen else algo or None,
                "used_as_swap": f"/dev/{z.name}" in swaps,
                "system": False,
            }
        )
    rec.set("ramdisks", found, "/proc/mounts (tmpfs, ramfs), sysfs block/zram*")
