"""A stand-in for the pynvml module: the NVML calls TrainRig makes, answered from a description.

Errors are pynvml's own classes, so the code under test handles exactly what the real library
raises. ``missing`` drops functions (an old nvidia-ml-py), ``unsupported`` makes them raise
NVMLError_FunctionNotFound (a driver that lacks the call).
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import pynvml


@dataclass
class FakeGpu:
    name: str = "NVIDIA GeForce RTX 4090"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000001"
    memory: int = 25_757_220_864
    arch: int = 8
    cc: tuple[int, int] = (8, 9)
    cores: int = 16384
    sm_clock: int = 2520
    mem_clock: int = 10501
    bus: int = 384
    pcie: tuple[int, int, int, int] = (4, 16, 4, 16)
    nvlinks: int = 0
    power_mw: int = 450_000
    mig: tuple[int, int] | None = None
    # live figures for the sampler
    util: int = 87
    mem_used: int = 6 * 2**30
    power_now_mw: int = 312_500
    temp: int = 64
    sm_clock_now: int = 2310
    mem_clock_now: int = 10251


@dataclass
class FakeNvml:
    gpus: list[FakeGpu] = field(default_factory=lambda: [FakeGpu()])
    driver: str = "580.95.05"
    cuda: int = 13000
    missing: set[str] = field(default_factory=set)
    unsupported: set[str] = field(default_factory=set)
    init_error: type[Exception] | None = None
    lost: set[int] = field(default_factory=set)  # GPUs that answer NVMLError_GpuIsLost (mid-run)
    inits: int = 0

    def module(self) -> types.ModuleType:
        m = types.ModuleType("pynvml")
        m.NVMLError = pynvml.NVMLError  # type: ignore[attr-defined]
        m.NVMLError_NotSupported = pynvml.NVMLError_NotSupported  # type: ignore[attr-defined]
        m.NVMLError_FunctionNotFound = pynvml.NVMLError_FunctionNotFound  # type: ignore[attr-defined]

        def fail_if(name: str) -> None:
            if name in self.unsupported:
                raise pynvml.NVMLError_FunctionNotFound()

        def device(h: Any) -> FakeGpu:
            if h in self.lost:
                raise pynvml.NVMLError_GpuIsLost()
            return self.gpus[h]

        def nvlink_state(h: Any, link: int) -> int:
            fail_if("nvmlDeviceGetNvLinkState")
            g = device(h)
            if link >= 18 or (g.nvlinks == 0 and link >= 0):
                raise pynvml.NVMLError_NotSupported()
            return 1 if link < g.nvlinks else 0

        def mig_mode(h: Any) -> tuple[int, int]:
            fail_if("nvmlDeviceGetMigMode")
            g = device(h)
            if g.mig is None:
                raise pynvml.NVMLError_NotSupported()
            return g.mig

        def init() -> None:
            self.inits += 1
            if self.init_error is not None:
                raise self.init_error()

        funcs: dict[str, Any] = {
            "nvmlInit": init,
            "nvmlShutdown": lambda: None,
            "nvmlSystemGetDriverVersion": lambda: self.driver,
            "nvmlSystemGetCudaDriverVersion_v2": lambda: self.cuda,
            "nvmlDeviceGetCount": lambda: len(self.gpus),
            "nvmlDeviceGetHandleByIndex": lambda i: i,
            "nvmlDeviceGetName": lambda h: device(h).name,
            "nvmlDeviceGetUUID": lambda h: device(h).uuid,
            "nvmlDeviceGetMemoryInfo": lambda h: types.SimpleNamespace(
                total=device(h).memory, used=device(h).mem_used, free=device(h).memory - device(h).mem_used
            ),
            "nvmlDeviceGetUtilizationRates": lambda h: types.SimpleNamespace(gpu=device(h).util, memory=0),
            "nvmlDeviceGetPowerUsage": lambda h: device(h).power_now_mw,
            "nvmlDeviceGetTemperature": lambda h, sensor: device(h).temp,
            "nvmlDeviceGetClockInfo": lambda h, t: device(h).sm_clock_now if t == 1 else device(h).mem_clock_now,
            "nvmlDeviceGetArchitecture": lambda h: device(h).arch,
            "nvmlDeviceGetCudaComputeCapability": lambda h: device(h).cc,
            "nvmlDeviceGetNumGpuCores": lambda h: device(h).cores,
            "nvmlDeviceGetMaxClockInfo": lambda h, t: device(h).sm_clock if t in (0, 1) else device(h).mem_clock,
            "nvmlDeviceGetMemoryBusWidth": lambda h: device(h).bus,
            "nvmlDeviceGetCurrPcieLinkGeneration": lambda h: device(h).pcie[0],
            "nvmlDeviceGetCurrPcieLinkWidth": lambda h: device(h).pcie[1],
            "nvmlDeviceGetMaxPcieLinkGeneration": lambda h: device(h).pcie[2],
            "nvmlDeviceGetMaxPcieLinkWidth": lambda h: device(h).pcie[3],
            "nvmlDeviceGetNvLinkState": nvlink_state,
            "nvmlDeviceGetPowerManagementLimit": lambda h: device(h).power_mw,
            "nvmlDeviceGetMigMode": mig_mode,
        }
        for name, fn in funcs.items():
            if name in self.missing:
                continue
            if name in self.unsupported and name not in ("nvmlDeviceGetNvLinkState", "nvmlDeviceGetMigMode"):
                fn = _raiser()
            setattr(m, name, fn)
        return m


def _raiser() -> Any:
    def fn(*args: Any) -> Any:
        raise pynvml.NVMLError_FunctionNotFound()

    return fn
