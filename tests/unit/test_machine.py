"""The quick machine probe behind the "this-machine" candidate."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from core.hardware.catalogue import load_catalogue
from telemetry.inventory import SystemRoots
from telemetry.machine import fp32_flops_per_cycle, probe_machine, this_machine_device

CPUINFO_RYZEN_2700 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 23
model\t\t: 8
model name\t: AMD Ryzen 7 2700 Eight-Core Processor
cpu MHz\t\t: 1550.000
flags\t\t: fpu sse sse2 avx fma avx2
TLB size\t: 2560 4K pages

processor\t: 1
vendor_id\t: AuthenticAMD
"""


def fake_roots(tmp_path: Path, cpuinfo: str, max_khz: int | None) -> SystemRoots:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text(cpuinfo)
    sys_root = tmp_path / "sys"
    if max_khz:
        freq = sys_root / "devices/system/cpu/cpu0/cpufreq"
        freq.mkdir(parents=True)
        (freq / "cpuinfo_max_freq").write_text(f"{max_khz}\n")
    return SystemRoots(proc=proc, sys=sys_root, real=False, machine="x86_64")


def test_ryzen_2700_fixture_gives_zen_plus_peak(tmp_path: Path) -> None:
    m = probe_machine(fake_roots(tmp_path, CPUINFO_RYZEN_2700, 4_100_000), None)
    assert m.cpu_model == "AMD Ryzen 7 2700 Eight-Core Processor"
    assert m.clock_mhz == 4100.0 and m.clock_source == "sysfs cpufreq/cpuinfo_max_freq"
    assert fp32_flops_per_cycle(m) == 16  # Zen+: two 128-bit FMA pipes


def test_without_cpufreq_the_clock_source_says_so(tmp_path: Path) -> None:
    m = probe_machine(fake_roots(tmp_path, CPUINFO_RYZEN_2700, None), None)
    assert m.clock_mhz == 1550.0
    assert "clock at reading time" in m.clock_source


def test_missing_cpuinfo_is_unknown_not_a_crash(tmp_path: Path) -> None:
    m = probe_machine(SystemRoots(proc=tmp_path / "none", sys=tmp_path / "none", real=False), None)
    assert m.cpu_model == "unknown CPU" and (m.physical_cores, m.clock_mhz, m.flags) == (1, None, frozenset())
    device = this_machine_device(m, load_catalogue())
    # nothing known: one core at an assumed 2 GHz with SSE only (4 fp32 lanes, one add and one
    # multiply per cycle = 8 FLOP/cycle): 16 GFLOP/s, and the source says it was assumed
    assert device.fp32_flops == 1 * 2.0e9 * 8
    assert device.source.startswith("1 usable physical cores × 2.00 GHz (unknown (no max, base or current clock")


def test_real_machine_matches_the_kernel() -> None:
    m = probe_machine()
    assert m.logical_cores == os.cpu_count()
    assert m.usable_cores == len(os.sched_getaffinity(0))
    assert m.ram_total_bytes == psutil.virtual_memory().total
    with open("/proc/cpuinfo") as fh:
        names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
    assert m.cpu_model == names[0]
    if not m.gpus:  # the reason there is no GPU is stated: no NVML package, or NVML found no driver
        import importlib.util

        if importlib.util.find_spec("pynvml") is None:
            assert m.gpu_note == "NVML library (nvidia-ml-py) is not installed, so NVIDIA GPUs cannot be listed"
        else:
            import pynvml

            try:
                pynvml.nvmlInit()
            except pynvml.NVMLError as exc:  # no driver: the library's own error is quoted
                assert m.gpu_note == f"no NVIDIA driver or GPU: NVML could not start ({exc})"
            else:
                pynvml.nvmlShutdown()
                assert m.gpu_note == "NVML found no GPU"
        device = this_machine_device(m, load_catalogue())
        assert device.kind == "cpu"
        cores = min(m.physical_cores, m.usable_cores)
        assert device.fp32_flops == cores * m.clock_mhz * 1e6 * fp32_flops_per_cycle(m)


def test_a_detected_gpu_becomes_the_this_machine_candidate(tmp_path: Path) -> None:
    from dataclasses import replace

    from telemetry.machine import GpuSummary

    m = probe_machine(fake_roots(tmp_path, CPUINFO_RYZEN_2700, 4_100_000), None)
    gpu = GpuSummary("NVIDIA GeForce RTX 4090", 25_757_220_864, "GPU-1")
    device = this_machine_device(replace(m, gpus=(gpu,)), load_catalogue())
    assert device.kind == "gpu" and device.name == "this machine (NVIDIA GeForce RTX 4090)"
    assert device.memory_bytes == 25_757_220_864  # what NVML reports, not the datasheet
    assert device.fp32_flops == 82.6e12
    unknown = this_machine_device(
        replace(m, gpus=(GpuSummary("NVIDIA GeForce GTX 1080", 8 * 2**30, "GPU-2"),)), load_catalogue()
    )
    assert unknown.kind == "cpu" and "GTX 1080 is not in the catalogue" in unknown.source


def test_this_machine_and_the_catalogue_agree_on_the_same_card(tmp_path: Path) -> None:
    """An RTX 4090 in this machine (NVML: 25,757,220,864 B) and the catalogue's RTX 4090 fit the
    same largest batch of BERT-base."""
    from dataclasses import replace

    from core.estimate.sizing import size_workload
    from core.hardware.catalogue import find_device
    from core.spec.workload import parse_workload
    from telemetry.machine import GpuSummary

    m = probe_machine(fake_roots(tmp_path, CPUINFO_RYZEN_2700, 4_100_000), None)
    mine = this_machine_device(
        replace(m, gpus=(GpuSummary("NVIDIA GeForce RTX 4090", 25_757_220_864, "G"),)), load_catalogue()
    )
    catalogue = find_device("4090", load_catalogue())
    w = parse_workload({"model": {"preset": "bert-base"}, "training": {"batch_size": 64}})
    here, listed = size_workload(w, [mine, catalogue]).candidates
    assert here.capacity_bytes == listed.capacity_bytes
    assert here.largest_batch == listed.largest_batch
