"""NVIDIA GPUs through NVML (the ``pynvml`` module of NVIDIA's nvidia-ml-py).

Each query is guarded: a call the library or driver lacks, or one the GPU does not support,
becomes an explicit unknown with the reason; no GPU, no driver or no library gives an empty
list and a note saying which.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from telemetry.inventory.record import Record

ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
}
# FP32 CUDA cores per streaming multiprocessor by compute capability (CUDA C Programming Guide)
CORES_PER_SM = {
    (5, 0): 128,
    (5, 2): 128,
    (5, 3): 128,
    (6, 0): 64,
    (6, 1): 128,
    (6, 2): 128,
    (7, 0): 64,
    (7, 2): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128,
    (12, 0): 128,
}
MAX_NVLINKS = 18
SRC = "NVML"


def load_nvml() -> ModuleType | None:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def read_gpus(rec: Record, nvml: ModuleType | None) -> None:
    if nvml is None:
        rec.set("gpus", [], "nvidia-ml-py is not installed")
        rec.set("gpu_note", "NVML library (nvidia-ml-py) is not installed, so NVIDIA GPUs cannot be listed", "import")
        return
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        rec.set("gpus", [], SRC)
        rec.set("gpu_note", f"no NVIDIA driver or GPU: NVML could not start ({exc})", SRC)
        return
    try:
        _read_devices(rec, nvml)
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass


def _read_devices(rec: Record, nvml: Any) -> None:
    def call(fn_name: str, *args: Any) -> tuple[Any, str | None]:
        fn: Callable[..., Any] | None = getattr(nvml, fn_name, None)
        if fn is None:
            return None, f"this nvidia-ml-py has no {fn_name}"
        try:
            return fn(*args), None
        except nvml.NVMLError as exc:
            return None, f"{fn_name}: {exc}"

    driver, why = call("nvmlSystemGetDriverVersion")
    rec.value_or_miss("gpu_driver.version", _text(driver), SRC, why or "")
    cuda, why = call("nvmlSystemGetCudaDriverVersion_v2")
    if cuda is None:
        cuda, why = call("nvmlSystemGetCudaDriverVersion")
    rec.value_or_miss(
        "gpu_driver.cuda_version", f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None, SRC, why or ""
    )
    count, why = call("nvmlDeviceGetCount")
    gpus: list[dict[str, Any]] = []
    rec.set("gpus", gpus, SRC)
    if not count:
        rec.set("gpu_note", "NVML found no GPU" if why is None else f"NVML cannot count GPUs: {why}", SRC)
        return
    rec.set("gpu_note", "", SRC)
    for i in range(count):
        handle, why = call("nvmlDeviceGetHandleByIndex", i)
        if handle is None:
            gpus.append({"index": i, "error": why})
            continue
        gpus.append(_read_device(i, handle, call, rec))


def _read_device(i: int, h: Any, call: Callable[..., tuple[Any, str | None]], rec: Record) -> dict[str, Any]:
    g: dict[str, Any] = {"index": i}
    unknown: dict[str, str] = {}

    def put(key: str, value: Any, why: str | None) -> Any:
        g[key] = value
        if value is None:
            unknown[key] = why or "not reported"
            rec.unknown[f"gpus[{i}].{key}"] = unknown[key]
        else:
            rec.sources[f"gpus[{i}].{key}"] = SRC
        return value

    name, why = call("nvmlDeviceGetName", h)
    put("name", _text(name), why)
    uuid, why = call("nvmlDeviceGetUUID", h)
    put("uuid", _text(uuid), why)
    mem, why = call("nvmlDeviceGetMemoryInfo", h)
    put("memory_bytes", int(mem.total) if mem is not None else None, why)
    arch, why = call("nvmlDeviceGetArchitecture", h)
    put("architecture", ARCHITECTURES.get(arch, f"code {arch}") if arch is not None else None, why)
    cc, why = call("nvmlDeviceGetCudaComputeCapability", h)
    put("compute_capability", f"{cc[0]}.{cc[1]}" if cc else None, why)
    cores, why = call("nvmlDeviceGetNumGpuCores", h)
    put("cuda_cores", int(cores) if cores else None, why)
    sm_clock, why = call("nvmlDeviceGetMaxClockInfo", h, 1)  # NVML_CLOCK_SM
    put("max_sm_clock_mhz", sm_clock, why)
    mem_clock, why = call("nvmlDeviceGetMaxClockInfo", h, 2)  # NVML_CLOCK_MEM
    put("max_memory_clock_mhz", mem_clock, why)
    bus, why = call("nvmlDeviceGetMemoryBusWidth", h)
    put("memory_bus_bits", bus, why)
    if bus and mem_clock:
        put("memory_bandwidth_gbs", round(bus / 8 * mem_clock * 2 / 1000, 1), None)
        rec.sources[f"gpus[{i}].memory_bandwidth_gbs"] = "NVML bus width × max memory clock × 2 (double data rate)"
    else:
        put("memory_bandwidth_gbs", None, "needs the memory bus width and clock")
    for key, fn in (
        ("pcie_generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
        ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth"),
        ("pcie_max_generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
        ("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
    ):
        value, why = call(fn, h)
        put(key, value, why)
    links = []
    for link in range(MAX_NVLINKS):
        state, why = call("nvmlDeviceGetNvLinkState", h, link)
        if state is None:
            break
        if state:
            links.append(link)
    g["nvlinks_active"] = len(links)
    rec.sources[f"gpus[{i}].nvlinks_active"] = SRC
    power, why = call("nvmlDeviceGetPowerManagementLimit", h)
    put("power_limit_w", power / 1000 if power else None, why)
    mig, why = call("nvmlDeviceGetMigMode", h)
    put("mig_enabled", bool(mig[0]) if mig is not None else None, why)
    if cc:
        g["cuda_cores_per_sm"] = CORES_PER_SM.get((cc[0], cc[1]))
    return g


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)
