"""Candidate names (catalogue, your devices, a workload's custom devices, "this-machine") resolved
to typed devices, each with its origin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
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


def with_quoted_prices(
    devices: Sequence[DeviceSpec], prices: Sequence[tuple[str, float]], per_usd: float
) -> list[DeviceSpec]:
    """``devices`` with the user's own prices (``hardware.prices``: device name, price in the
    workload's currency at ``per_usd`` units per US dollar) in place of the catalogue's estimates.
    A name matches a device's full name, case aside; prices of devices that are not candidates are
    kept in the workload and not used."""
    by_name = {name.lower(): price for name, price in prices}
    return [
        replace(d, quoted_price_usd=by_name[d.name.lower()] / per_usd) if d.name.lower() in by_name else d
        for d in devices
    ]
