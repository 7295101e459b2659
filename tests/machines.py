"""A machine as the inventory summarises it, for tests that must not depend on the computer running them."""

from __future__ import annotations

from telemetry.machine import MachineSummary

# a 2-core AMD EPYC without a GPU (the development VM's kind)
NO_GPU = MachineSummary(
    cpu_model="AMD EPYC",
    vendor="AMD",
    physical_cores=2,
    logical_cores=2,
    usable_cores=2,
    clock_mhz=2000.0,
    clock_source="test",
    flags=frozenset({"avx2", "fma"}),
    family=25,
    model=1,
    ram_total_bytes=24 * 2**30,
    ram_available_bytes=20 * 2**30,
    gpus=(),
    gpu_note="no NVIDIA driver or GPU: NVML could not start (NVML Shared Library Not Found)",
)
