"""The inventory as readable text (CLI output and "Copy as text")."""

from __future__ import annotations

from typing import Any

from core.units import fmt_bytes


def _v(inv: dict[str, Any], path: str, fmt: Any = str) -> str:
    node: Any = inv
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    if node is None:
        reason = inv.get("unknown", {}).get(path, "not reported")
        return f"unknown ({reason})"
    return fmt(node)


def inventory_to_text(inv: dict[str, Any]) -> str:
    cpu = inv.get("cpu", {})
    lines = [
        f"CPU: {_v(inv, 'cpu.model')} ({_v(inv, 'cpu.vendor')}, {_v(inv, 'cpu.architecture')})",
        f"  sockets {_v(inv, 'cpu.sockets')}, physical cores {_v(inv, 'cpu.physical_cores')}, "
        f"logical {_v(inv, 'cpu.logical_cores')}, usable {_v(inv, 'cpu.usable_cores')}",
        f"  clock: base {_v(inv, 'cpu.base_clock_mhz', lambda x: f'{x:.0f} MHz')}, "
        f"max {_v(inv, 'cpu.max_clock_mhz', lambda x: f'{x:.0f} MHz')}",
        f"  ML instruction sets: {', '.join(cpu.get('flags') or []) or 'none'}",
        f"  TLB: {_v(inv, 'cpu.tlb')}",
    ]
    for c in cpu.get("caches") or []:
        lines.append(
            f"  L{c['level']} {c['type']}: {fmt_bytes(c['size_bytes'])} × {c['instances']}, "
            f"each shared by {c['shared_by']} CPU(s)"
        )
    for n in inv.get("numa_nodes") or []:
        lines.append(f"  NUMA node {n['node']}: {n['cpus']} CPUs, {fmt_bytes(n['memory_bytes'])}")
    lines += [
        f"Memory: {_v(inv, 'memory.total_bytes', fmt_bytes)} total, {_v(inv, 'memory.available_bytes', fmt_bytes)} "
        "available",
        _dimm_line(inv),
        f"  swap {fmt_bytes((inv.get('swap') or {}).get('total_bytes'))}",
        "Storage:",
    ]
    for d in inv.get("disks") or []:
        mps = ", ".join(d["mount_points"]) or "not mounted"
        free = f", {fmt_bytes(d['free_bytes'])} free" if d.get("free_bytes") is not None else ""
        lines.append(f"  {d['device']}: {d['type']} {d.get('model') or ''} {fmt_bytes(d['size_bytes'])} ({mps}{free})")
    for r in inv.get("raid") or []:
        health = {True: "healthy", False: "DEGRADED", None: "state unknown"}[r["healthy"]]
        lines.append(f"  {r['device']}: {r['level']} of {', '.join(r['members'])}, {health}")
    for r in inv.get("ramdisks") or []:
        if not r.get("system"):
            where = r.get("mount_point") or r.get("device")
            lines.append(f"  RAM disk {where} ({r['kind']}): {fmt_bytes(r['size_bytes'])}")
    lines.append("GPUs:")
    if not inv.get("gpus"):
        lines.append(f"  none ({inv.get('gpu_note') or 'no NVIDIA GPU'})")
    for g in inv.get("gpus") or []:
        lines.append(
            f"  [{g['index']}] {g.get('name')}: {fmt_bytes(g.get('memory_bytes'))}, {g.get('architecture')}, "
            f"CC {g.get('compute_capability')}, {g.get('cuda_cores')} CUDA cores, "
            f"PCIe {g.get('pcie_generation')}×{g.get('pcie_width')}, NVLink {g.get('nvlinks_active')}, "
            f"MIG {g.get('mig_enabled')}; catalogue: {g.get('catalogue_match') or 'no match'}"
        )
    lines += [
        f"Software: {_v(inv, 'software.os')}, Python {_v(inv, 'software.python')}, "
        f"PyTorch {_v(inv, 'software.pytorch')} (CUDA {_v(inv, 'software.pytorch_cuda')})",
    ]
    for b in (inv.get("software") or {}).get("blas") or []:
        lines.append(f"  BLAS {b['api']} {b['version']} ({b['library']}), {b['threads']} threads")
    return "\n".join(lines)


def _dimm_line(inv: dict[str, Any]) -> str:
    mem = inv.get("memory", {})
    if mem.get("slots") is None:
        return f"  DIMMs: unknown ({inv.get('unknown', {}).get('memory.slots', 'not reported')})"
    return (
        f"  type {_v(inv, 'memory.type')}, speed {_v(inv, 'memory.speed_mts', lambda x: f'{x} MT/s')}, "
        f"{mem.get('populated_slots')} of {mem.get('slots')} slots populated, channels {_v(inv, 'memory.channels')}"
    )
