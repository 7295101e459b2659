"""Predicted vs measured on this machine's CPU: FLOPs, peak training memory, step time.

FLOPs: torch.utils.flop_counter (math SDPA, oneDNN off). Memory: MemTracker live-tensor
high-water mark of a steady-state fp32 step. Step time: median of at least 5 steps (and 0.5 s)
after 2 warm-up steps, against the "this-machine" prediction — with default efficiencies, or after
`calibrate`. With --rounds N the calibration and the step measurements are repeated N times and the
medians compared (a shared machine's speed drifts by ±20 % over tens of seconds).

Run: python benchmarks/accuracy.py [--quick] [--calibrate [--rounds 3]] > table.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.estimate.sizing import size_candidate
from core.hardware.catalogue import load_catalogue
from core.network.model import analyze_model
from core.network.presets import accuracy_models
from core.spec.workload import parse_workload
from telemetry.machine import probe_machine, this_machine_device
from torchbridge.models import build_module, example_batch, measure_step_memory, measure_step_time

CASES = [
    # (model, batches, optimizers)
    ("seed-mlp", [64, 512, 4096], ["sgd", "adam"]),
    ("lenet-5", [32, 256], ["sgd_momentum", "adam"]),
    ("small-cnn", [32, 256], ["sgd", "adamw"]),
    ("residual-cnn", [64, 512], ["sgd", "rmsprop"]),
    ("tiny-gpt", [8, 32], ["adamw"]),
    ("lstm-lm", [20], ["sgd"]),
    ("resnet-50", [4], ["sgd_momentum"]),
]


def counted_flops(model: dict) -> int:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    module = build_module(model)
    with sdpa_kernel(SDPBackend.MATH), torch.backends.mkldnn.flags(enabled=False):
        with FlopCounterMode(display=False) as counter:
            module(example_batch(model, 1))
    return counter.get_total_flops()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="first batch and optimizer of each model only")
    parser.add_argument("--calibrate", action="store_true", help="calibrate first and predict with measured rates")
    parser.add_argument(
        "--rounds", type=int, default=1, help="independent rounds of (calibrate, measure every case); medians are shown"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import torch

    models = accuracy_models()
    machine = probe_machine()
    device = this_machine_device(machine, load_catalogue())
    cases = [
        (name, batch, opt)
        for name, batches, optimizers in CASES
        for batch in (batches[:1] if args.quick else batches)
        for opt in (optimizers[:1] if args.quick else optimizers)
    ]

    def workload(name: str, batch: int, opt: str) -> Any:
        return parse_workload(
            {
                "model": models[name],
                "data": {"samples": batch * 10},
                # what measure_step_time times: tensors in memory, no DataLoader, no loss.item() (as
                # benchmarks/cpu_random_suite.py; a DataLoader's work is predicted and measured by `run`)
                "training": {
                    "batch_size": batch,
                    "epochs": 1,
                    "optimizer": opt,
                    "loop": {"style": "device_tensors", "sync_every": 0},
                },
            }
        )

    predicted: dict[tuple[str, int, str], list[float]] = {c: [] for c in cases}
    measured: dict[tuple[str, int, str], list[float]] = {c: [] for c in cases}
    for _ in range(max(1, args.rounds)):
        rates = None
        if args.calibrate:
            from core.estimate.calibration import efficiency_from_calibration
            from telemetry.calibrate import run_calibration

            rates = efficiency_from_calibration(run_calibration(sys.executable), "cpu")
        for c in cases:
            predicted[c].append(size_candidate(workload(*c), device, 1, calibrated=rates).step.step_s)
            measured[c].append(measure_step_time(models[c[0]], c[1], c[2]))
    rounds = f"; median of {args.rounds} rounds (calibrate, then measure every case)" if args.rounds > 1 else ""
    print(
        f"Machine: {device.name}; PyTorch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"step time {'after `calibrate`' if args.calibrate else 'with default efficiencies (not calibrated)'}"
        f"{rounds}\n"
    )
    print(
        "| model | batch | optimizer | FLOPs/sample engine | FLOPs torch | peak memory predicted | measured | error "
        "| step predicted | measured | error | error by round |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    flops = {name: (analyze_model(models[name]).forward_flops, counted_flops(models[name])) for name, _, _ in cases}
    for c in cases:
        name, batch, opt = c
        engine_flops, torch_flops = flops[name]
        mem_predicted = size_candidate(workload(*c), device, 1).memory.tensor_peak
        mem_measured = measure_step_memory(models[name], batch, opt)["total"]
        t_pred, t_meas = statistics.median(predicted[c]), statistics.median(measured[c])
        by_round = " ".join(f"{p / m - 1:+.0%}" for p, m in zip(predicted[c], measured[c], strict=True))
        print(
            f"| {name} | {batch} | {opt} | {engine_flops:,} | {torch_flops:,} | {mem_predicted / 2**20:.2f} MiB "
            f"| {mem_measured / 2**20:.2f} MiB | {mem_predicted / mem_measured - 1:+.1%} | {t_pred * 1e3:.2f} ms "
            f"| {t_meas * 1e3:.2f} ms | {t_pred / t_meas - 1:+.0%} | {by_round} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
