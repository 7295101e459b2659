"""A store filled as TrainRig fills it: recorded runs written through the store's own run API
(start_run, add_samples, finish_run), a real sizing of the starter workload, an inventory and a
calibration. Shared by the Results tab's and its model's tests."""

from __future__ import annotations

import math
from typing import Any

from core.storage.store import Store

COLUMNS = ["cpu_percent", "ram_used_bytes", "proc_cpu_percent", "proc_rss_bytes"]
LIMITS = {"cpu_percent": 100.0, "ram_used_bytes": 16 * 2**30}


def record_run(
    store: Store,
    name: str,
    *,
    step_s: float,
    accuracy: float,
    seconds: int = 20,
    rate_hz: float = 10.0,
    prediction: dict[str, Any] | None = None,
    rss_gib: float = 1.0,
) -> int:
    """A finished training run of ``seconds`` at ``rate_hz``: samples, progress every second, metrics."""
    run_id = store.start_run(
        "trained",
        name,
        workload={"document": {"name": name}, "trainer": {"device": "cpu"}},
        device="cpu",
        prediction=prediction,
        sampling={"columns": COLUMNS, "rate_hz": rate_hz, "limits": LIMITS},
    )
    n = int(seconds * rate_hz)
    rows = []
    for i in range(n):
        t = i / rate_hz
        cpu = 40 + 30 * math.sin(t) if i != n // 2 else math.nan  # one marked gap
        rows.append((t, [cpu, 8 * 2**30 + i * 2**20, 180.0, rss_gib * 2**30 * (0.5 + 0.5 * i / n)]))
    store.add_samples(run_id, rows)
    iterations_per_s = round(1 / step_s)
    progress = [
        {
            "event": "progress",
            "t": float(s),
            "iteration": s * iterations_per_s,
            "iterations": seconds * iterations_per_s,
            "loss": 2.3 / (1 + s),
            "accuracy": min(0.95, 0.1 + 0.05 * s),
            "step_s": step_s,
        }
        for s in range(1, seconds + 1)
    ]
    metrics = {
        "training_time_s": float(seconds),
        "accuracy": accuracy,
        "macro_f1": accuracy - 0.05,
        "median_step_s": step_s,
        "steps": seconds * iterations_per_s,
        "peak_memory_bytes": int(rss_gib * 2**30),
        "peak_memory_kind": "peak RSS of the process",
        "rss_before_bytes": int(0.25 * 2**30),
        "epochs": 2,
    }
    measured = {
        "median_step_s": step_s,
        "peak_memory_bytes": metrics["peak_memory_bytes"],
        "training_time_s": float(seconds),
        "accuracy": accuracy,
        "macro_f1": accuracy - 0.05,
        "training_memory_bytes": int((rss_gib - 0.25) * 2**30),
    }
    if prediction and prediction.get("step_s"):
        measured["step_error"] = prediction["step_s"] / step_s - 1
    store.finish_run(
        run_id,
        "finished",
        exit_code=0,
        duration_s=seconds + 3.0,
        measured=measured,
        metrics=metrics,
        progress=progress,
        sampling={"columns": COLUMNS, "rate_hz": rate_hz, "limits": LIMITS, "reasons": {}},
    )
    return run_id


def save_real_sizing(store: Store, name: str = "starter MLP") -> int:
    """The wizard's starter workload sized on this machine and an RTX 4090, saved as the wizard does."""
    from core.output.sizing_report import sizing_to_dict
    from core.spec.workload import parse_workload
    from gui.wizard.wizard import starter_document
    from telemetry.candidates import recommend_here

    doc = {**starter_document(), "name": name}
    rec, *_ = recommend_here(parse_workload(doc), doc["hardware"]["candidates"], store)
    _, sizing_id = store.save_sizing(name, doc, [c.device.name for c in rec.result.candidates], sizing_to_dict(rec))
    return sizing_id


def filled_store(path: Any = None) -> tuple[Store, dict[str, int]]:
    """Three runs (two MLPs, one CNN with a prediction), a sizing, an inventory and a calibration."""
    store = Store.open(path)
    ids = {
        "mlp-a": record_run(store, "mlp-a wide", step_s=0.004, accuracy=0.81, rss_gib=1.5),
        "mlp-b": record_run(
            store, "mlp-b deep", step_s=0.010, accuracy=0.86, prediction={"step_s": 0.008, "peak_memory_bytes": 2**30}
        ),
        "cnn": record_run(store, "small cnn", step_s=0.050, accuracy=0.64, seconds=10),
    }
    ids["sizing"] = save_real_sizing(store)
    ids["inventory"] = store.save_inventory(
        {
            "host": "lab-42",
            "fingerprint": "fp-lab-42",
            "cpu": {"model": "Test CPU 9000"},
            "memory": {"total_bytes": 2**34},
        }
    )
    ids["calibration"] = store.save_calibration(
        "fp-lab-42",
        {
            "cpu_fp32_matmul_flops": 1.2e11,
            "cpu_linear_train_flops": 6.0e10,
            "cpu_conv_train_flops": 4.0e10,
            "cpu_memory_bandwidth_bps": 2.0e10,
            "step_overhead": {"per_step_s": 2e-4, "per_op_s": 8e-6},
            "storage": {"folder": "/tmp", "read_bps": 1.5e9, "note": "page cache dropped for the test file"},
            "threads": 2,
            "seconds": 31.5,
        },
    )
    return store, ids
