"""Candidates are typed: a device's origin and catalogue match decide what applies to it, never its
name or the wording of its source."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.errors import WorkloadError
from core.hardware.candidates import resolve_candidates
from core.hardware.catalogue import find_device, load_catalogue, merge_user_devices
from telemetry.candidates import calibrated_rates
from telemetry.machine import GpuSummary, probe_machine, this_machine_device

CAL = {
    "cpu_profile": {"linear_train": [[1e6, 5e10], [1e9, 1e11]]},
    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "profile": {"linear_train": [[1e9, 2e13], [1e12, 4e13]]}}],
}


def test_a_user_device_named_like_this_machine_is_not_calibrated_as_this_machine() -> None:
    # before devices were typed, any name starting with "this machine" took this machine's rates
    catalogue = tuple(
        merge_user_devices(
            load_catalogue(),
            [{"name": "this machine clone", "kind": "cpu", "fp32_tflops": 3.0, "source": "my notes"}],
        )
    )
    machine = replace(probe_machine(), gpus=())
    mine = find_device("this machine clone", catalogue)
    here = this_machine_device(machine, catalogue)
    assert (mine.origin, here.origin) == ("user", "this-machine")
    rates = calibrated_rates([mine, here], CAL, machine, catalogue)
    assert mine.name not in rates
    assert rates[here.name]["linear_train"] == [[1e6, 5e10], [1e9, 1e11]]


def test_this_machines_gpu_takes_its_class_efficiency_from_the_catalogue_match() -> None:
    catalogue = load_catalogue()
    machine = replace(probe_machine(), gpus=(GpuSummary("NVIDIA H100 80GB HBM3", 85_520_809_984, "GPU-1"),))
    here = replace(this_machine_device(machine, catalogue), source="NVML")  # wording no longer matters
    assert here.catalogue_match == "NVIDIA H100 SXM"
    sxm = find_device("H100 SXM", catalogue)
    rates = calibrated_rates([here], CAL, machine, catalogue)
    assert rates[here.name]["fp32"] == pytest.approx(4e13 / sxm.fp32_flops)  # largest layer's rate / 67 TFLOP/s


def test_names_resolve_to_devices_of_their_origin() -> None:
    catalogue = load_catalogue()
    custom = [{"name": "Lab card", "kind": "gpu", "fp32_tflops": 20, "memory_gb": 16, "source": "vendor sheet"}]
    here = this_machine_device(replace(probe_machine(), gpus=()), catalogue)
    devices = resolve_candidates(["this-machine", "Lab card", "4090"], custom, catalogue, here)
    assert [d.origin for d in devices] == ["this-machine", "workload", "catalogue"]
    assert devices[2].name == "NVIDIA GeForce RTX 4090"
    with pytest.raises(WorkloadError, match="this machine is not known"):
        resolve_candidates(["this machine"], (), catalogue, None)
