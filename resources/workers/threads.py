"""Thread-scaling worker (Wünsche 2016, Fig. 1): the same mini-batch training step timed at several
CPU thread counts, in the Python with PyTorch, never inside the app. It reads one JSON object on
stdin:

    {"model": {"input_shape": [75], "layers": [...]}, "classes": 10, "batch_size": 64,
     "optimizer": "adam", "learning_rate": null, "threads": [1, 2, 4], "steps": 20, "seed": 0}

and writes one JSON line per thread count, {"event": "point", "threads": n, "step_s": median,
"step_min_s": fastest, "samples_per_s": …}, then {"event": "finished", "torch": version}, or
{"event": "error", "reason": …}. SIGINT stops it between thread counts."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train import build_model, make_optimizer
from worker_common import WorkerError, emit

WARMUP_STEPS = 3


def scale(spec: dict[str, Any]) -> None:
    import torch

    torch.manual_seed(int(spec.get("seed", 0)))
    shape = list(spec["model"]["input_shape"])
    model, out_shape = build_model(torch, shape, spec["model"]["layers"])
    if list(out_shape) != [int(spec["classes"])]:
        raise WorkerError(f"the model's output {list(out_shape)} is not one score per class ({spec['classes']})")
    opt = make_optimizer(torch, str(spec.get("optimizer", "sgd")), model.parameters(), spec.get("learning_rate"))
    batch = int(spec.get("batch_size", 64))
    x = torch.randn((batch, *shape))
    y = torch.randint(0, int(spec["classes"]), (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for n in spec["threads"]:
        torch.set_num_threads(int(n))
        for _ in range(WARMUP_STEPS):
            step()
        times = []
        for _ in range(int(spec.get("steps", 20))):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        emit(
            "point",
            threads=int(n),
            threads_in_use=torch.get_num_threads(),
            step_s=med,
            step_min_s=min(times),
            samples_per_s=batch / med,
        )
    emit("finished", torch=torch.__version__)


def main() -> int:
    try:
        spec = json.loads(sys.stdin.read())
        scale(spec)
    except KeyboardInterrupt:
        emit("cancelled")
        return 130
    except WorkerError as exc:
        emit("error", reason=str(exc))
        return 1
    except (ValueError, KeyError, TypeError) as exc:
        emit("error", reason=f"bad input: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
