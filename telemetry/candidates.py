"""Candidates and calibrated rates for a sizing on this machine: the glue between what telemetry
reads here (the machine, its devices) and the core's typed candidate resolution and calibration.

Shared by the command line and the window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.advice.recommendation import Recommendation, recommend
from core.estimate import calibration
from core.hardware.candidates import THIS_MACHINE, is_this_machine_name, with_quoted_prices
from core.hardware.candidates import resolve_candidates as resolve_names
from core.hardware.catalogue import DeviceSpec, load_catalogue, merge_user_devices
from core.spec.workload import Workload
from core.storage.store import Store
from telemetry.calibrate import stored_calibration
from telemetry.inventory import collect_inventory
from telemetry.machine import (
    MachineSummary,
    probe_machine,
    summary_from_inventory,
    this_machine_cpu,
    this_machine_device,
)


def resolve_candidates(
    names: Sequence[str],
    workload: Workload,
    machine: MachineSummary | None = None,
    user_devices: Sequence[Mapping[str, Any]] = (),
) -> tuple[list[DeviceSpec], MachineSummary]:
    """Devices for ``names`` (default: the workload's candidates, else this machine), looked up among
    the workload's custom devices, the catalogue and the user's own devices from the database."""
    catalogue = tuple(merge_user_devices(load_catalogue(), user_devices))
    wanted = list(names) or list(workload.hardware.candidates) or [THIS_MACHINE]
    machine = machine or probe_machine()
    here = this_machine_device(machine, catalogue) if any(is_this_machine_name(n) for n in wanted) else None
    devices = resolve_names(wanted, workload.hardware.custom, catalogue, here)
    return with_quoted_prices(devices, workload.hardware.prices, workload.cost.per_usd), machine


def calibrated_rates(
    devices: Sequence[DeviceSpec],
    cal: Mapping[str, Any] | None,
    machine: MachineSummary | None = None,
    catalogue: Sequence[DeviceSpec] | None = None,
    runs: Sequence[Mapping[str, Any]] = (),
    model_key: str = "",
) -> dict[str, dict[str, Any]]:
    """This machine's calibration and what its local ``runs`` of the network ``model_key``
    measured, applied to ``devices`` (core.estimate.calibration)."""
    cat = tuple(catalogue if catalogue is not None else load_catalogue())
    return calibration.calibrated_rates(
        devices,
        cal,
        cat,
        this_machine_cpu(machine, cat) if machine is not None else None,
        [g.memory_bytes for g in machine.gpus] if machine is not None else (),
        calibration.run_feedback(runs, model_key),
    )


def recommend_here(
    workload: Workload, names: Sequence[str], store: Store | None
) -> tuple[Recommendation, list[DeviceSpec], MachineSummary, dict[str, Any]]:
    """The core pipeline for ``names`` on this machine as it is now: its inventory, its devices, the
    user's own devices and its latest calibration from ``store``. Returns the recommendation, the
    devices, the machine and the inventory it was read from."""
    inventory = collect_inventory()
    devices, machine = resolve_candidates(
        names, workload, summary_from_inventory(inventory), store.user_devices() if store else ()
    )
    cal = stored_calibration(store, inventory["fingerprint"])  # the median of its latest calibrations
    rec = recommend(
        workload,
        devices,
        host_ram_bytes=machine.ram_total_bytes,
        calibrated=calibrated_rates(
            devices, cal, machine, runs=store.recent_runs() if store is not None else (), model_key=workload.model_key
        ),
        inventory=inventory,
    )
    return rec, devices, machine, inventory
