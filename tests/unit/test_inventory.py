"""Inventory detectors against recorded machines, a fake NVML, and this real machine."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pynvml
import pytest

from telemetry.inventory import collect_inventory, inventory_to_text
from tests.fake_nvml import FakeGpu, FakeNvml

NO_NVML = None


def test_dual_socket_xeon_with_numa_and_smbios(machine) -> None:
    inv = collect_inventory(machine("xeon-2s-numa"), NO_NVML)
    cpu = inv["cpu"]
    assert cpu["model"] == "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz" and cpu["vendor"] == "Intel"
    assert (cpu["sockets"], cpu["physical_cores"], cpu["logical_cores"]) == (2, 40, 80)
    assert cpu["base_clock_mhz"] == 2500 and cpu["max_clock_mhz"] == 3900
    assert {"avx512f", "avx512_vnni", "fma"} <= set(cpu["flags"])
    l3 = next(c for c in cpu["caches"] if c["level"] == 3)
    assert (l3["size_bytes"], l3["shared_by"], l3["instances"]) == (28160 * 1024, 40, 2)
    l1d = next(c for c in cpu["caches"] if c["level"] == 1 and c["type"] == "Data")
    assert (l1d["size_bytes"], l1d["shared_by"], l1d["instances"]) == (32768, 2, 40)
    assert [(n["node"], n["cpus"]) for n in inv["numa_nodes"]] == [(0, 40), (1, 40)]
    assert cpu["tlb"] is None and "AMD" in inv["unknown"]["cpu.tlb"]
    mem = inv["memory"]
    assert (mem["type"], mem["speed_mts"], mem["slots"], mem["populated_slots"], mem["channels"]) == (
        "DDR4",
        2933,
        24,
        12,
        6,
    )
    assert inv["sources"]["memory.speed_mts"].startswith("SMBIOS type 17")
    disks = {d["device"]: d for d in inv["disks"]}
    assert disks["nvme0n1"]["type"] == "NVMe" and disks["nvme0n1"]["mount_points"] == ["/scratch"]
    assert disks["sda"]["type"] == "SSD" and disks["sda"]["mount_points"] == ["/"]
    assert inv["swap"]["total_bytes"] == 8388604 * 1024


def test_amd_desktop_reports_its_tlb_and_an_hdd(machine) -> None:
    inv = collect_inventory(machine("amd-desktop"), NO_NVML)
    cpu = inv["cpu"]
    assert cpu["tlb"] == "2560 4K pages" and inv["sources"]["cpu.tlb"] == "/proc/cpuinfo (TLB size)"
    assert (cpu["sockets"], cpu["physical_cores"], cpu["logical_cores"]) == (1, 16, 32)
    assert cpu["max_clock_mhz"] == 4900 and cpu["base_clock_mhz"] is None
    l3 = next(c for c in cpu["caches"] if c["level"] == 3)
    assert (l3["instances"], l3["shared_by"]) == (2, 16)  # two CCDs of 32 MiB
    disks = {d["device"]: d for d in inv["disks"]}
    assert disks["sda"]["type"] == "HDD" and disks["sda"]["mount_points"] == ["/data"]
    assert disks["sda"]["size_bytes"] == 8001563222016
    assert "misreport" in disks["sda"]["rotational_caveat"]
    assert inv["memory"]["speed_mts"] is None and "SMBIOS" in inv["unknown"]["memory.speed_mts"]


def test_laptop_with_nvme_and_zram_swap(machine) -> None:
    inv = collect_inventory(machine("laptop-zram"), NO_NVML)
    assert inv["cpu"]["base_clock_mhz"] == 2800 and inv["cpu"]["physical_cores"] == 4
    (zram,) = [r for r in inv["ramdisks"] if r["kind"] == "zram"]
    assert zram == {
        "kind": "zram",
        "device": "zram0",
        "size_bytes": 8589934592,
        "compression": "zstd",
        "used_as_swap": True,
        "system": False,
    }
    tmp = next(r for r in inv["ramdisks"] if r.get("mount_point") == "/tmp")
    assert tmp["size_bytes"] == 8035508 * 1024 and tmp["system"] is False
    assert next(r for r in inv["ramdisks"] if r.get("mount_point") == "/run/user/1000")["system"] is True
    assert [d["type"] for d in inv["disks"]] == ["NVMe"]


def test_raid1_server_lists_arrays_and_a_degraded_one(machine) -> None:
    inv = collect_inventory(machine("raid1-server"), NO_NVML)
    arrays = {r["device"]: r for r in inv["raid"]}
    assert arrays["md2"]["level"] == "raid1" and arrays["md2"]["members"] == ["sdd1", "sdc1"]
    assert arrays["md2"]["healthy"] is True and arrays["md2"]["size_bytes"] == 7813894144 * 1024
    assert arrays["md0"]["healthy"] is False
    assert [d["device"] for d in inv["disks"]] == ["sda", "sdb", "sdc", "sdd"]  # md* are arrays, not disks
    assert all(d["type"] == "HDD" for d in inv["disks"])
    text = inventory_to_text(inv)
    assert "md0: raid1 of sda1, DEGRADED" in text


def test_recorded_dev_vm_virtual_disk_is_not_called_an_hdd(machine) -> None:
    inv = collect_inventory(machine("dev-vm"), NO_NVML)
    (vda,) = inv["disks"]
    assert vda["type"] == "virtual" and vda["rotational"] is True  # the flag says 1; the type does not believe it
    assert inv["cpu"]["tlb"] == "3584 4K pages"


def test_one_gpu_through_nvml() -> None:
    inv = collect_inventory(nvml=FakeNvml().module())
    (g,) = inv["gpus"]
    assert g["name"] == "NVIDIA GeForce RTX 4090" and g["memory_bytes"] == 25_757_220_864
    assert g["architecture"] == "Ada Lovelace" and g["compute_capability"] == "8.9"
    assert g["cuda_cores"] == 16384 and g["memory_bandwidth_gbs"] == 1008.1
    assert (g["pcie_generation"], g["pcie_width"]) == (4, 16) and g["power_limit_w"] == 450
    assert g["nvlinks_active"] == 0 and g["catalogue_match"] == "NVIDIA GeForce RTX 4090"
    assert g["mig_enabled"] is None and "Not Supported" in inv["unknown"]["gpus[0].mig_enabled"]
    assert inv["gpu_driver"] == {"version": "580.95.05", "cuda_version": "13.0"}


def test_two_gpus_with_nvlink_and_mig() -> None:
    a100 = dict(
        name="NVIDIA A100-SXM4-80GB",
        memory=85_899_345_920,
        arch=7,
        cc=(8, 0),
        cores=6912,
        sm_clock=1410,
        mem_clock=1593,
        bus=5120,
        nvlinks=12,
        power_mw=400_000,
    )
    fake = FakeNvml(gpus=[FakeGpu(uuid="GPU-a", mig=(1, 1), **a100), FakeGpu(uuid="GPU-b", mig=(0, 0), **a100)])
    inv = collect_inventory(nvml=fake.module())
    g0, g1 = inv["gpus"]
    assert g0["nvlinks_active"] == 12 and g1["nvlinks_active"] == 12
    assert g0["mig_enabled"] is True and g1["mig_enabled"] is False
    assert g0["catalogue_match"] == "NVIDIA A100 80GB SXM" and g0["memory_bandwidth_gbs"] == 2039.0


def test_old_driver_lacking_newer_calls_gives_reasons_not_a_crash() -> None:
    fake = FakeNvml(
        missing={"nvmlDeviceGetNumGpuCores", "nvmlSystemGetCudaDriverVersion_v2"},
        unsupported={"nvmlDeviceGetMemoryBusWidth", "nvmlDeviceGetMigMode"},
    )
    inv = collect_inventory(nvml=fake.module())
    (g,) = inv["gpus"]
    assert g["memory_bus_bits"] is None and "Function Not Found" in inv["unknown"]["gpus[0].memory_bus_bits"]
    assert g["memory_bandwidth_gbs"] is None
    # NVML has no core count here: the catalogue's datasheet figure stands in, and says so
    assert g["cuda_cores"] == 16384 and "catalogue datasheet" in inv["sources"]["gpus[0].cuda_cores"]
    assert inv["gpu_driver"]["cuda_version"] is None
    assert "no nvmlSystemGetCudaDriverVersion" in inv["unknown"]["gpu_driver.cuda_version"]


@pytest.mark.parametrize(
    ("nvml", "words"),
    [(None, "not installed"), (FakeNvml(init_error=pynvml.NVMLError_LibraryNotFound).module(), "no NVIDIA driver")],
)
def test_no_nvml_means_no_gpus_and_says_why(nvml, words: str) -> None:
    inv = collect_inventory(nvml=nvml)
    assert inv["gpus"] == [] and words in inv["gpu_note"]
    assert "GPUs:\n  none (" in inventory_to_text(inv)


def test_this_machine_matches_what_the_kernel_reports() -> None:
    inv = collect_inventory()
    cpu = inv["cpu"]
    assert cpu["logical_cores"] == os.cpu_count()
    assert cpu["usable_cores"] <= len(os.sched_getaffinity(0))
    assert cpu["physical_cores"] == psutil.cpu_count(logical=False)
    assert inv["memory"]["total_bytes"] == psutil.virtual_memory().total
    for c in cpu["caches"]:
        index = next(
            d
            for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")
            if int((d / "level").read_text()) == c["level"] and (d / "type").read_text().strip() == c["type"]
        )
        assert c["size_bytes"] == int((index / "size").read_text().strip().rstrip("K")) * 1024
    for path in inv["sources"]:
        assert path not in inv["unknown"]
    assert inv["fingerprint"] == collect_inventory()["fingerprint"]


def test_a_system_without_proc_and_sys_falls_back_to_psutil(tmp_path) -> None:
    # as on Windows or macOS: no /proc, no /sys — what psutil knows, the rest unknown with reasons
    from telemetry.inventory import SystemRoots

    roots = SystemRoots(proc=tmp_path / "no-proc", sys=tmp_path / "no-sys", real=True)
    inv = collect_inventory(roots, NO_NVML)
    assert inv["cpu"]["logical_cores"] == psutil.cpu_count(logical=True)
    assert inv["sources"]["cpu.logical_cores"] == "psutil"
    assert inv["memory"]["total_bytes"] == psutil.virtual_memory().total
    assert inv["cpu"]["caches"] is None and "sysfs" in inv["unknown"]["cpu.caches"]
    assert inv["disks"] is None and inv["raid"] == [] and inv["gpus"] == []
    assert inventory_to_text(inv).startswith("CPU: ")
