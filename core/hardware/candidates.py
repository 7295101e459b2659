"""Candidate names (catalogue, your devices, a workload's custom devices, "this-machine") resolved
to typed devices, each with its origin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import WorkloadError
from core.hardware.catalogue import DeviceSpec, device_from_entry, find_device

THIS_MACHINE = "this-machine"


def is_this_machine_name(name: str) -> bool:
    return name.strip().lower() in (THIS_MACHINE, "this machine")


def resolve_candidates(
    names: Sequence[str],
    custom_entries: Sequence[Mapping[str, Any]],
    catalogue: Sequence[DeviceSpec],
    this_machine: DeviceSpec | None,
) -> list[DeviceSpec]:
    """Devices for ``names``: "this-machine" is ``this_machine``; other names are looked up among the
    workload's custom devices first, then the catalogue (shipped and the user's own)."""
    custom = tuple(
        device_from_entry({**c, "source": f"custom device in the workload: {c.get('source', '')}"}, origin="workload")
        for c in custom_entries
    )
    devices = []
    for name in names:
        if is_this_machine_name(name):
            if this_machine is None:
                raise WorkloadError("hardware.candidates", "this machine is not known yet (its inventory is not read)")
            devices.append(this_machine)
        else:
            devices.append(find_device(name, custom + tuple(catalogue)))
    return devices
