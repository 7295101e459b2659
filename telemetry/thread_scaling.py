"""Running the thread-scaling worker (resources/workers/threads.py) on a workload's model: one
training step at each thread count, in the Python with PyTorch; cancellable between counts."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import psutil

from core.errors import TrainRigError
from core.output.thread_scaling import ThreadPoint, thread_counts
from core.paths import resource_path
from core.spec.workload import Workload
from telemetry.training import trainer_spec

WORKER = "workers/threads.py"


def physical_and_logical() -> tuple[int, int]:
    logical = psutil.cpu_count(logical=True) or 1
    return psutil.cpu_count(logical=False) or logical, logical


def scaling_spec(workload: Workload, threads: list[int], batch: int = 64, steps: int = 20) -> dict[str, Any]:
    """The worker's input: the workload's model and optimizer at the paper's mini-batch of 64."""
    spec = trainer_spec(workload, samples=max(2, batch), device="cpu")
    return {
        "model": spec["model"],
        "classes": spec["classes"],
        "batch_size": batch,
        "optimizer": spec["optimizer"],
        "learning_rate": spec["learning_rate"],
        "threads": threads,
        "steps": steps,
        "seed": 0,
    }


def run_thread_scaling(
    python: str,
    workload: Workload,
    *,
    threads: list[int] | None = None,
    steps: int = 20,
    on_point: Callable[[ThreadPoint], None] = lambda _p: None,
    timeout_s: float = 1800,
) -> list[ThreadPoint]:
    if "torch" in (workload.model.get("trace") or {}):
        raise TrainRigError("thread scaling trains layer lists and presets")
    if "layers" not in workload.model:
        raise TrainRigError(f"{workload.name}: thread scaling needs a layer list or a preset")
    physical, logical = physical_and_logical()
    spec = scaling_spec(workload, threads or thread_counts(physical, logical), steps=steps)
    proc = subprocess.Popen(
        [python, str(resource_path(WORKER))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(spec))
    proc.stdin.close()
    points: list[ThreadPoint] = []
    error = ""
    try:
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("event") == "point":
                p = ThreadPoint(int(msg["threads"]), float(msg["step_s"]))
                points.append(p)
                on_point(p)
            elif msg.get("event") == "error":
                error = str(msg.get("reason"))
        proc.wait(timeout=timeout_s)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.returncode != 0:
        last = error or ((proc.stderr.read() if proc.stderr else "").strip().splitlines() or ["no output"])[-1]
        raise TrainRigError(f"thread scaling failed in {python}: {last}")
    return points
