"""Resolve candidate names (catalogue, your devices, custom ones, "this-machine") to DeviceSpecs.

Shared by the command line and the window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.catalogue import DeviceSpec, device_from_entry, find_device, load_catalogue, merge_user_devices
from core.workload import Workload
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
    devices: Sequence[DeviceSpec], calibration: Mapping[str, Any] | None
) -> dict[str, dict[str, float]]:
    """Measured rates for the "this machine" candidate, from this machine's latest calibration."""
    from telemetry.calibrate import efficiency_from_calibration

    if not calibration:
        return {}
    return {
        d.name: efficiency_from_calibration(dict(calibration), "cpu" if d.kind == "cpu" else "gpu")
        for d in devices
        if d.name.startswith("this machine")
    }
