"""Resolve candidate names (catalogue, custom devices, "this-machine") to DeviceSpecs."""

from __future__ import annotations

from collections.abc import Sequence

from core.catalogue import DeviceSpec, device_from_entry, find_device, load_catalogue
from core.workload import Workload
from telemetry.machine import MachineSummary, probe_machine, this_machine_device

THIS_MACHINE = "this-machine"


def resolve_candidates(
    names: Sequence[str], workload: Workload, machine: MachineSummary | None = None
) -> tuple[list[DeviceSpec], MachineSummary]:
    """Devices for ``names`` (default: the workload's candidates, else this machine)."""
    catalogue = load_catalogue()
    custom = tuple(
        device_from_entry({"kind": "gpu", "tf32_tflops": None, "fp16_tflops": None, "source": "custom device", **c})
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
