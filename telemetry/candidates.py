"""Resolve candidate names (catalogue, your devices, custom ones, "this-machine") to DeviceSpecs.

Shared by the command line and the window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.hardware.catalogue import (
    DeviceSpec,
    device_from_entry,
    find_device,
    load_catalogue,
    match_detected_cpu,
    match_detected_gpu,
    merge_user_devices,
)
from core.spec.workload import Workload
from telemetry.machine import MachineSummary, probe_machine, this_machine_device

THIS_MACHINE = "this-machine"


def resolve_candidates(
    names: Sequence[str],
    workload: Workload,
    machine: MachineSummary | None = None,
    user_devices: Sequence[Mapping[str, Any]] = (),
) -> tuple[list[DeviceSpec], MachineSummary]:
    """Devices for ``names`` (default: the workload's candidates, else this machine).

    Names are looked up among the workload's custom devices, the catalogue and the user's own
    devices from the database.
    """
    catalogue = tuple(merge_user_devices(load_catalogue(), user_devices))
    custom = tuple(
        device_from_entry({**c, "source": f"custom device in the workload: {c['source']}"})
        for c in workload.hardware.custom
    )
    wanted = list(names) or list(workload.hardware.candidates) or [THIS_MACHINE]
    machine = machine or probe_machine()
    devices = []
    for name in wanted:
        if name.strip().lower() in (THIS_MACHINE, "this machine"):
            devices.append(this_machine_device(machine, catalogue))
        else:
            devices.append(find_device(name, custom + catalogue))
    return devices, machine


def calibrated_rates(
    devices: Sequence[DeviceSpec],
    calibration: Mapping[str, Any] | None,
    machine: MachineSummary | None = None,
    catalogue: Sequence[DeviceSpec] | None = None,
) -> dict[str, dict[str, Any]]:
    """Measured figures per candidate, from this machine's latest calibration.

    The "this machine" CPU candidate takes every measured rate. A catalogue device of the same model
    as this machine's CPU or GPU (and this machine's GPU itself) takes the measured efficiency: the
    fraction of the datasheet peak a large layer's training step reached here.
    """
    if not calibration:
        return {}
    cal = dict(calibration)
    classes = class_efficiencies(cal, machine, tuple(catalogue if catalogue is not None else load_catalogue()))
    out: dict[str, dict[str, Any]] = {}
    for d in devices:
        if d.name.startswith("this machine") and d.kind == "cpu":
            from telemetry.calibrate import efficiency_from_calibration

            out[d.name] = efficiency_from_calibration(cal, "cpu")
        elif d.name in classes:
            out[d.name] = classes[d.name]
        elif d.name.startswith("this machine") and "matched to " in d.source:
            match = d.source.split("matched to ", 1)[1].split(";", 1)[0]
            if match in classes:
                out[d.name] = classes[match]
    return out


def class_efficiencies(
    cal: Mapping[str, Any], machine: MachineSummary | None, catalogue: Sequence[DeviceSpec]
) -> dict[str, dict[str, Any]]:
    """Efficiency of each catalogue device class this machine has, from its calibration: the rate
    of the largest measured linear layer's training step over the class's datasheet peak (and, for
    a GPU, the bf16 matmul rate over the tensor peak at the same train/matmul ratio)."""
    out: dict[str, dict[str, Any]] = {}
    prof = cal.get("cpu_profile") or {}
    if machine is not None and prof.get("linear_train"):
        cpu = match_detected_cpu(machine.cpu_model, catalogue)
        here = this_machine_device(replace(machine, gpus=()), tuple(catalogue))
        if cpu is not None and here.fp32_flops:
            rate = max(r for _, r in prof["linear_train"])
            out[cpu.name] = {"fp32": min(rate / here.fp32_flops, 1.0), "note": f"measured on this machine's {cpu.name}"}
    for i, g in enumerate(cal.get("gpus") or []):
        curve = (g.get("profile") or {}).get("linear_train")
        memory = machine.gpus[i].memory_bytes if machine is not None and i < len(machine.gpus) else None
        gpu = match_detected_gpu(str(g.get("name", "")), memory, catalogue)
        if gpu is None or not curve:
            continue
        rate = max(r for _, r in curve)
        note = f"measured on this machine's {gpu.name}"
        eff: dict[str, Any] = {"fp32": min(rate / gpu.fp32_flops, 1.0), "note": note}
        fp32_mm, half_mm = g.get("fp32_matmul_flops"), g.get("bf16_matmul_flops")
        if fp32_mm and half_mm and gpu.half_flops:
            eff["tensor"] = min(half_mm / gpu.half_flops * rate / fp32_mm, 1.0)
        out[gpu.name] = eff
    return out
