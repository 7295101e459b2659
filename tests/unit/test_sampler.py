"""The sampler and its sources, with fake NVML, fake psutil and a fake clock."""

from __future__ import annotations

import math
import os
import threading
import time
import types

import numpy as np
import psutil
import pynvml
import pytest

from telemetry.ring import RingBuffer
from telemetry.sampler import Sampler
from telemetry.sources import HostSource, NvmlSource, ProcessTreeSource
from tests.fake_nvml import FakeGpu, FakeNvml


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ring_buffer_keeps_the_newest_rows_in_time_order() -> None:
    ring = RingBuffer(["a", "b"], capacity=4)
    for i in range(6):
        ring.append(float(i), [i, 10 * i])
    t, v = ring.snapshot()
    assert t.tolist() == [2.0, 3.0, 4.0, 5.0]
    assert v[:, 1].tolist() == [20.0, 30.0, 40.0, 50.0]
    assert ring.total == 6 and len(ring) == 4
    t, _v, total = ring.since(4)
    assert t.tolist() == [4.0, 5.0] and total == 6


def test_gpu_columns_read_through_one_nvml_init_with_slow_fields_once_a_second() -> None:
    fake = FakeNvml(gpus=[FakeGpu(), FakeGpu(util=12, mem_used=2**30, temp=71)])
    clock = Clock()
    sampler = Sampler([NvmlSource(fake.module())], rate_hz=10, clock=clock)
    for _ in range(5):
        sampler.sample_once()
        clock.now += 0.1
    fake.gpus[1].temp = 80  # read again only at the next slow tick (1 s after the first)
    for _ in range(8):
        sampler.sample_once()
        clock.now += 0.1
    t, v = sampler.buffer.snapshot()
    col = sampler.buffer.column
    assert fake.inits == 1
    assert len(t) == 13 and t[-1] == pytest.approx(1.2)
    assert v[-1, col("gpu1_temp_c")] == 80 and v[10, col("gpu1_temp_c")] == 80  # the slow tick at 1.0 s
    assert v[0, col("gpu0_util_percent")] == 87
    assert v[0, col("gpu1_mem_used_bytes")] == 2**30
    assert v[0, col("gpu0_power_w")] == pytest.approx(312.5)
    assert v[9, col("gpu1_temp_c")] == 71  # repeated between slow reads, not NaN
    assert v[-1, col("gpu1_temp_c")] == 80
    assert sampler.limits["gpu0_mem_used_bytes"] == FakeGpu().memory
    assert sampler.limits["gpu0_power_w"] == 450


def test_a_lost_gpu_leaves_a_marked_gap_backs_off_and_comes_back() -> None:
    fake = FakeNvml(gpus=[FakeGpu(), FakeGpu(util=40)])
    clock = Clock()
    source = NvmlSource(fake.module())
    sampler = Sampler([source], rate_hz=10, clock=clock)
    sampler.sample_once()
    fake.lost.add(1)
    calls_before = fake.inits
    for _ in range(30):  # 3 s with the GPU gone
        clock.now += 0.1
        sampler.sample_once()
    fake.lost.clear()
    for _ in range(50):
        clock.now += 0.1
        sampler.sample_once()
    _t, v = sampler.buffer.snapshot()
    util1 = v[:, sampler.buffer.column("gpu1_util_percent")]
    util0 = v[:, sampler.buffer.column("gpu0_util_percent")]
    assert util1[0] == 40
    assert np.isnan(util1[1:31]).all()  # the gap: NaN, never 0
    assert util1[-1] == 40  # readable again after the backoff
    assert (util0 == 87).all()  # the other GPU never stopped
    messages = [m for _, m in sampler.all_events()]
    retries = [m for m in messages if "GPU 1: NVML error" in m]
    assert 2 <= len(retries) <= 4, messages  # 0.5, 1, 2 s backoff: a few tries, not 30
    assert "GPU 1: readable again" in messages
    assert "GPU 1 stopped answering NVML" in sampler.reasons["gpu1"]
    assert fake.inits == calls_before == 1


def test_nvml_absent_is_said_plainly_and_no_gpu_column_exists() -> None:
    fake = FakeNvml(init_error=pynvml.NVMLError_LibraryNotFound)
    source = NvmlSource(fake.module())
    assert source.read(0.0, True) == {}
    sampler = Sampler([source], rate_hz=10, clock=Clock())
    sampler.sample_once()
    assert not sampler.all_events()
    assert sampler.columns == ()
    assert sampler.reasons["gpu"].startswith("NVML unavailable: NVML Shared Library Not Found")


def test_a_field_the_gpu_does_not_support_is_nan_with_its_reason_and_asked_once() -> None:
    fake = FakeNvml(unsupported={"nvmlDeviceGetPowerUsage"})
    sampler = Sampler([NvmlSource(fake.module())], rate_hz=10, clock=Clock())
    for _ in range(3):
        sampler.sample_once()
    _t, v = sampler.buffer.snapshot()
    assert np.isnan(v[:, sampler.buffer.column("gpu0_power_w")]).all()
    assert "does not report this" in sampler.reasons["gpu0_power_w"]
    assert not sampler.all_events()  # unsupported is not an error and not a gap


class FakeProcess:
    def __init__(self, pid: int, rss: int, deny: set[str], children: list[FakeProcess] | None = None) -> None:
        self.pid, self.rss, self.deny, self._children = pid, rss, deny, children or []

    def oneshot(self):
        return _Null()

    def children(self, recursive: bool = False) -> list[FakeProcess]:
        return self._children

    def cpu_percent(self, interval=None) -> float:
        if "cpu" in self.deny:
            raise psutil.AccessDenied(self.pid)
        return 50.0

    def memory_info(self):
        if "rss" in self.deny:
            raise psutil.AccessDenied(self.pid)
        return types.SimpleNamespace(rss=self.rss)

    def num_threads(self) -> int:
        return 3


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def fake_psutil(root: FakeProcess) -> types.ModuleType:
    m = types.ModuleType("psutil")
    m.NoSuchProcess = psutil.NoSuchProcess
    m.AccessDenied = psutil.AccessDenied
    m.Process = lambda pid: root
    return m


def test_process_tree_sums_children_and_access_denied_is_unknown_not_zero() -> None:
    child = FakeProcess(2, 100 * 2**20, deny={"rss"})
    root = FakeProcess(1, 300 * 2**20, deny=set(), children=[child])
    sampler = Sampler([ProcessTreeSource(1, fake_psutil(root))], rate_hz=10, clock=Clock())
    sampler.sample_once()
    _t, v = sampler.buffer.snapshot()
    col = sampler.buffer.column
    assert v[0, col("proc_cpu_percent")] == 100.0  # two processes at 50 % of a core each
    assert v[0, col("proc_threads")] == 6
    assert v[0, col("proc_count")] == 2
    assert np.isnan(v[0, col("proc_rss_bytes")])  # 300 MiB would be a wrong sum
    assert "access denied to process 2" in sampler.reasons["proc_rss_bytes"]


def test_a_source_that_raises_does_not_stop_the_others() -> None:
    class Broken:
        columns = ("x",)

        def __init__(self) -> None:
            self.reasons: dict[str, str] = {}
            self.limits: dict[str, float] = {}

        def read(self, now, slow):
            raise RuntimeError("sensor on fire")

        def close(self):
            pass

    sampler = Sampler([Broken(), NvmlSource(FakeNvml().module())], rate_hz=10, clock=Clock())
    sampler.sample_once()
    _t, v = sampler.buffer.snapshot()
    assert np.isnan(v[0, 0]) and v[0, sampler.buffer.column("gpu0_util_percent")] == 87
    assert "sensor on fire" in sampler.all_events()[0][1]


def test_the_thread_samples_this_machine_at_the_rate_and_stores_once_a_second_at_most() -> None:
    batches: list[int] = []
    lock = threading.Lock()

    def sink(rows):
        with lock:
            batches.append(len(rows))

    sampler = Sampler([HostSource(per_core=True), ProcessTreeSource(os.getpid())], rate_hz=20, sink=sink, capacity_s=60)
    t0 = time.monotonic()
    sampler.start()
    time.sleep(1.6)
    sampler.stop()
    elapsed = time.monotonic() - t0
    t, v = sampler.buffer.snapshot()
    assert 16 <= len(t) <= elapsed * 20 + 2  # 20 Hz, a few ticks lost to a busy machine at most
    assert sum(batches) == len(t)  # every row reached the store
    assert len(batches) <= math.ceil(elapsed) + 1
    ram = v[:, sampler.buffer.column("ram_used_bytes")]
    assert (ram > 0).all() and (ram <= psutil.virtual_memory().total).all()
    assert (v[:, sampler.buffer.column("proc_rss_bytes")] > 10 * 2**20).all()  # this test's own process
    assert "cpu0_percent" in sampler.columns
    assert 0 < sampler.cpu_time_s < elapsed
    assert not sampler.running


def test_rate_outside_1_to_20_hz_is_refused() -> None:
    with pytest.raises(ValueError, match="1–20 Hz"):
        Sampler([], rate_hz=50)


def test_moving_average_smooths_over_the_window_and_keeps_gaps() -> None:
    from telemetry.series import iterations_at, moving_average

    y = np.array([0.0, 10.0, 20.0, np.nan, 40.0, 50.0])
    out = moving_average(y, 3)
    assert out[:3].tolist() == [0.0, 5.0, 10.0]
    assert np.isnan(out[3])  # the gap stays a gap
    assert out[4] == pytest.approx(30.0) and out[5] == pytest.approx(45.0)  # (20+40)/2, (40+50)/2
    assert moving_average(y, 1) is y
    # a run's CPU at full scale after varying load: the running sums' rounding read 100 + 4e-14, above
    # full scale on the normalised [0, 1] plot; a mean stays within its values
    rng = np.random.default_rng(0)
    busy = np.concatenate((rng.uniform(0, 100, 3), np.full(200, 100.0)))
    assert np.nanmax(moving_average(busy, 50)) == 100.0
    assert iterations_at(np.array([0.5, 1.5, 3.0]), np.array([1.0, 2.0]), np.array([10.0, 30.0])).tolist() == [
        5.0,
        20.0,
        30.0,
    ]


def test_a_process_that_exited_but_is_not_reaped_is_gone_not_zero() -> None:
    import subprocess
    import time

    child = subprocess.Popen(["sleep", "0.05"])  # not waited for: a zombie once it exits
    source = ProcessTreeSource(child.pid)
    assert source.read(0.0, slow=False)["proc_rss_bytes"] > 0
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.02)
    assert source.read(1.0, slow=False) == {}  # not an RSS of 0 bytes
    assert source.reasons["proc_cpu_percent"] == f"process {child.pid} has exited"
    child.wait()
