"""The host side of a training step, measured on this machine's CPU (run by calibrate.py and by
benchmarks/host_costs.py): the framework's cost per call, a DataLoader over in-memory tensors
(per batch and per sample, with 0 and 2 worker processes), a synchronisation (``.item()``) and a
printed log line. Takes a few seconds; imports torch only when called.

What each figure is (core/estimate/host.py uses them under the same names):
- ``per_call_s``: one framework call from Python (a small ``torch.relu`` and a small ``nn.Linear``
  forward, averaged) — the cost every forward op pays before its kernel runs.
- ``loader_batch_s``, ``loader_sample_s``: ``DataLoader(TensorDataset(x, y), batch_size=b,
  shuffle=True)`` with ``num_workers=0``, timed per batch at two batch sizes: the intercept is the
  cost per batch (sampler, fetcher, collation's fixed part), the slope the cost per sample
  (``dataset[i]`` and stacking it) — the main process pays both.
- ``handoff_batch_s``: the same with 2 worker processes (``persistent_workers=True``), per batch
  at the small batch size: what the main process pays to receive a batch from a worker when the
  workers keep up (2 workers on a 2-core machine do not always keep up; the figure is then an
  upper bound, and says so).
- ``sync_s``: ``loss.item()`` on a CPU tensor (a GPU adds its own wait, which the step model counts
  as the device's time, not as this cost).
- ``log_line_s``: formatting and writing one log line of a few figures to a file.
"""

from __future__ import annotations

import io
import statistics
import time
from typing import Any

SAMPLES = 4096
FEATURES = 75  # the seed MLP's input
BATCHES = (32, 256)


def _per_call(fn, n: int) -> float:
    for _ in range(min(200, n)):
        fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def _loader_per_batch(torch, dataset, batch: int, workers: int, rounds: int = 2) -> float:
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers, persistent_workers=workers > 0)
    for _ in loader:  # warm-up: workers started, pages touched
        pass
    times = []
    for _ in range(rounds):
        t, n = time.perf_counter(), 0
        for _ in loader:
            n += 1
        times.append((time.perf_counter() - t) / max(1, n))
    return statistics.median(times)


def measure_host(torch) -> dict[str, Any]:
    """This machine's host costs (seconds), as described in the module docstring."""
    from torch.utils.data import TensorDataset

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the main process dispatches from one thread
    try:
        small = torch.randn(4, 8)
        layer = torch.nn.Linear(8, 8)
        relu_s = _per_call(lambda: torch.relu(small), 2000)
        linear_s = _per_call(lambda: layer(small), 1000)
        dataset = TensorDataset(torch.randn(SAMPLES, FEATURES), torch.randint(0, 10, (SAMPLES,)))
        (b0, t0), (b1, t1) = ((b, _loader_per_batch(torch, dataset, b, 0)) for b in BATCHES)
        per_sample = max((t1 - t0) / (b1 - b0), 0.0)
        per_batch = max(t0 - per_sample * b0, 0.0)
        handoff = _loader_per_batch(torch, dataset, BATCHES[0], 2)
        loss = torch.tensor(1.0)
        sync_s = _per_call(lambda: loss.item(), 2000)
        sink = io.StringIO()
        log_s = _per_call(lambda: sink.write(f"step {1234:6d} loss {0.12345:.4f} acc {0.5:.3f}\n"), 2000)
    finally:
        torch.set_num_threads(threads)
    return {
        "per_call_s": (relu_s + linear_s) / 2,
        "loader_batch_s": per_batch,
        "loader_sample_s": per_sample,
        "handoff_batch_s": handoff,
        "handoff_note": f"2 worker processes at batch {BATCHES[0]}; an upper bound where 2 workers cannot keep up",
        "sync_s": sync_s,
        "log_line_s": log_s,
        "sample_bytes": FEATURES * 4 + 8,
    }


if __name__ == "__main__":
    import json

    import torch

    print(json.dumps(measure_host(torch)))
