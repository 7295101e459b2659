"""What the sampler reads: the host (psutil), a process tree (psutil) and NVIDIA GPUs (NVML).

Each source has fixed ``columns``, a ``read(now, slow)`` that returns the values it could read
(a column it leaves out is NaN in the buffer) and ``reasons``: why a column cannot be read, kept
once per column. Slow fields (temperatures, clocks, the list of child processes) are read only
when ``slow`` is true — at 1 Hz or less — and their last reading is repeated in between.
An NVML error or a lost GPU puts that GPU into a gap (its columns NaN) and retries after a
backoff that doubles up to 30 s; nothing here raises into the sampler.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

NAN = math.nan
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0


class HostSource:
    """Total CPU load, optionally per core, and RAM in use (total − available)."""

    def __init__(self, psutil: ModuleType | None = None, per_core: bool = False) -> None:
        if psutil is None:
            import psutil as psutil_module

            psutil = psutil_module
        self.psutil = psutil
        self.per_core = per_core
        self.cores = int(psutil.cpu_count() or 1) if per_core else 0
        self.columns: tuple[str, ...] = (
            "cpu_percent",
            "ram_used_bytes",
            *(f"cpu{i}_percent" for i in range(self.cores)),
        )
        self.reasons: dict[str, str] = {}
        self.limits: dict[str, float] = {"cpu_percent": 100.0}
        try:
            self.limits["ram_used_bytes"] = float(psutil.virtual_memory().total)
        except Exception as exc:  # a platform psutil cannot read: say so, carry on
            self.reasons["ram_used_bytes"] = f"RAM cannot be read: {exc}"
        psutil.cpu_percent(interval=None)  # the first call only starts the measurement
        if per_core:
            psutil.cpu_percent(interval=None, percpu=True)

    def read(self, now: float, slow: bool) -> dict[str, float]:
        out: dict[str, float] = {}
        try:
            out["cpu_percent"] = float(self.psutil.cpu_percent(interval=None))
            if self.per_core:
                for i, v in enumerate(self.psutil.cpu_percent(interval=None, percpu=True)[: self.cores]):
                    out[f"cpu{i}_percent"] = float(v)
        except Exception as exc:
            self.reasons.setdefault("cpu_percent", f"CPU load cannot be read: {exc}")
        if "ram_used_bytes" in self.limits:
            try:
                vm = self.psutil.virtual_memory()
                out["ram_used_bytes"] = float(vm.total - vm.available)
            except Exception as exc:
                self.reasons.setdefault("ram_used_bytes", f"RAM cannot be read: {exc}")
        return out

    def close(self) -> None:
        pass


class ProcessTreeSource:
    """CPU % (100 = one core), resident memory and threads of a process and all its descendants
    (DataLoader workers included); the list of descendants is refreshed on slow ticks."""

    columns: tuple[str, ...] = ("proc_cpu_percent", "proc_rss_bytes", "proc_threads", "proc_count")

    def __init__(self, pid: int, psutil: ModuleType | None = None) -> None:
        if psutil is None:
            import psutil as psutil_module

            psutil = psutil_module
        self.psutil = psutil
        self.pid = pid
        self.reasons: dict[str, str] = {}
        self.limits: dict[str, float] = {}
        self._procs: dict[int, Any] = {}
        self._gone = False
        self._refresh()

    def _refresh(self) -> None:
        ps = self.psutil
        try:
            root = self._procs.get(self.pid) or ps.Process(self.pid)
            found = [root, *root.children(recursive=True)]
        except ps.NoSuchProcess:
            self._gone = True
            self.reasons.setdefault("proc_cpu_percent", f"process {self.pid} has exited")
            self._procs = {}
            return
        except ps.AccessDenied:
            why = f"the children of process {self.pid} cannot be listed (access denied)"
            self.reasons.setdefault("proc_count", why)
            found = [self._procs.get(self.pid) or ps.Process(self.pid)]
        fresh: dict[int, Any] = {}
        for p in found:
            if p.pid in self._procs:
                fresh[p.pid] = self._procs[p.pid]
                continue
            try:
                p.cpu_percent(interval=None)  # starts this process's measurement
            except (ps.NoSuchProcess, ps.AccessDenied):
                pass
            fresh[p.pid] = p
        self._procs = fresh

    def read(self, now: float, slow: bool) -> dict[str, float]:
        if slow and not self._gone:
            self._refresh()
        if self._gone or not self._procs:
            return {}
        ps = self.psutil
        cpu = rss = threads = 0.0
        denied: set[str] = set()
        alive = 0
        zombie = getattr(ps, "STATUS_ZOMBIE", None)
        for pid, p in list(self._procs.items()):
            try:
                with p.oneshot():
                    if zombie is not None and p.status() == zombie:  # exited, not yet reaped: its RSS reads 0
                        raise ps.NoSuchProcess(pid)
                    alive += 1
                    for col, fn in (
                        ("proc_cpu_percent", p.cpu_percent),
                        ("proc_rss_bytes", p.memory_info),
                        ("proc_threads", p.num_threads),
                    ):
                        try:
                            answer = fn()
                        except ps.AccessDenied:
                            denied.add(col)
                            self.reasons.setdefault(col, f"access denied to process {pid} (psutil AccessDenied)")
                            continue
                        if col == "proc_cpu_percent":
                            cpu += float(answer)
                        elif col == "proc_rss_bytes":
                            rss += float(answer.rss)
                        else:
                            threads += float(answer)
            except ps.NoSuchProcess:
                self._procs.pop(pid, None)
                if pid == self.pid:
                    self._gone = True
                    self.reasons.setdefault("proc_cpu_percent", f"process {self.pid} has exited")
                    return {}
        out = {"proc_cpu_percent": cpu, "proc_rss_bytes": rss, "proc_threads": threads, "proc_count": float(alive)}
        for col in denied:  # a partial sum would be a wrong number: say it is unknown instead
            out.pop(col, None)
        return out

    def close(self) -> None:
        self._procs = {}


# (column suffix, NVML function, its extra arguments, how to turn the answer into the value, slow?)
_GPU_FIELDS: tuple[tuple[str, str, tuple[Any, ...], Callable[[Any], float], bool], ...] = (
    ("util_percent", "nvmlDeviceGetUtilizationRates", (), lambda r: float(r.gpu), False),
    ("mem_used_bytes", "nvmlDeviceGetMemoryInfo", (), lambda r: float(r.used), False),
    ("power_w", "nvmlDeviceGetPowerUsage", (), lambda r: r / 1000.0, False),
    ("temp_c", "nvmlDeviceGetTemperature", (0,), float, True),  # NVML_TEMPERATURE_GPU
    ("sm_clock_mhz", "nvmlDeviceGetClockInfo", (1,), float, True),  # NVML_CLOCK_SM
    ("mem_clock_mhz", "nvmlDeviceGetClockInfo", (2,), float, True),  # NVML_CLOCK_MEM
)


class NvmlSource:
    """Per GPU: utilisation, memory used, power (every tick); temperature and clocks (slow ticks).
    NVML is initialised once and the handles kept; which fields a GPU supports is learnt on the
    first reading."""

    def __init__(self, nvml: ModuleType | None = None, indices: list[int] | None = None) -> None:
        self.reasons: dict[str, str] = {}
        self.limits: dict[str, float] = {}
        self.events: list[tuple[float, str]] = []
        self.columns: tuple[str, ...] = ()
        self.unavailable: str | None = None
        self.indices: list[int] = []
        self._handles: list[Any] = []
        self._unsupported: set[str] = set()
        self._slow_cache: dict[str, float] = {}
        self._retry_at: dict[int, float] = {}
        self._backoff: dict[int, float] = {}
        if nvml is None:
            try:
                import pynvml as nvml_module
            except ImportError:
                self.unavailable = "NVML unavailable: the nvidia-ml-py package is not installed"
                return
            nvml = nvml_module
        self.nvml = nvml
        self._not_supported: tuple[type[Exception], ...] = tuple(
            getattr(nvml, n) for n in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound") if hasattr(nvml, n)
        )
        try:
            nvml.nvmlInit()
            count = int(nvml.nvmlDeviceGetCount())
            wanted = [i for i in (indices if indices is not None else range(count)) if 0 <= i < count]
            self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in wanted]
        except nvml.NVMLError as exc:
            self.unavailable = f"NVML unavailable: {exc} — no GPU figures are recorded"
            return
        self.indices = wanted
        if not self._handles:
            self.unavailable = "NVML found no NVIDIA GPU — no GPU figures are recorded"
        cols = []
        for i, h in zip(wanted, self._handles, strict=True):
            cols += [f"gpu{i}_{f[0]}" for f in _GPU_FIELDS]
            try:
                self.limits[f"gpu{i}_mem_used_bytes"] = float(nvml.nvmlDeviceGetMemoryInfo(h).total)
            except nvml.NVMLError:
                pass
            try:
                self.limits[f"gpu{i}_power_w"] = nvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0
            except (nvml.NVMLError, AttributeError):
                pass
            self.limits[f"gpu{i}_util_percent"] = 100.0
        self.columns = tuple(cols)

    def read(self, now: float, slow: bool) -> dict[str, float]:
        nvml = getattr(self, "nvml", None)
        out: dict[str, float] = {}
        if nvml is None:
            return out
        for i, h in zip(self.indices, self._handles, strict=True):
            if now < self._retry_at.get(i, -math.inf):
                continue  # in a gap: the columns stay NaN until the retry
            values: dict[str, float] = {}
            failed: Exception | None = None
            for suffix, fn_name, extra, convert, is_slow in _GPU_FIELDS:
                col = f"gpu{i}_{suffix}"
                if col in self._unsupported:
                    continue
                if is_slow and not slow and i not in self._backoff:
                    if col in self._slow_cache:
                        values[col] = self._slow_cache[col]
                    continue
                fn = getattr(nvml, fn_name, None)
                if fn is None:
                    self._unsupported.add(col)
                    self.reasons.setdefault(col, f"this nvidia-ml-py has no {fn_name}")
                    continue
                try:
                    values[col] = convert(fn(h, *extra))
                except self._not_supported as exc:
                    self._unsupported.add(col)
                    self.reasons.setdefault(col, f"GPU {i} does not report this ({fn_name}: {exc})")
                except Exception as exc:  # NVMLError, or a driver answer the bindings cannot parse
                    failed = exc
                    break
                if is_slow and col in values:
                    self._slow_cache[col] = values[col]
            if failed is not None:
                wait = min(self._backoff.get(i, BACKOFF_START_S / 2) * 2, BACKOFF_MAX_S)
                self._backoff[i] = wait
                self._retry_at[i] = now + wait
                self._slow_cache = {k: v for k, v in self._slow_cache.items() if not k.startswith(f"gpu{i}_")}
                self.events.append((now, f"GPU {i}: NVML error ({failed}); gap, retrying in {wait:g} s"))
                self.reasons.setdefault(f"gpu{i}", f"GPU {i} stopped answering NVML: {failed}")
                continue
            if i in self._backoff:
                del self._backoff[i]
                self._retry_at.pop(i, None)
                self.events.append((now, f"GPU {i}: readable again"))
            out.update(values)
        return out

    def close(self) -> None:
        nvml = getattr(self, "nvml", None)
        if nvml is not None and self._handles:
            try:
                nvml.nvmlShutdown()
            except nvml.NVMLError:
                pass
        self._handles = []
