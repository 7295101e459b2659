"""Predicted vs measured on this machine's CPU: FLOPs, peak training memory, step time.

FLOPs: torch.utils.flop_counter (math SDPA, oneDNN off). Memory: MemTracker live-tensor
high-water mark of a steady-state fp32 step. Step time: median of 5 steps after 2 warm-up steps,
against the "this-machine" prediction with default (uncalibrated) efficiency.

Run: python benchmarks/accuracy.py [--quick] > table.md
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.catalogue import load_catalogue
from core.model import analyze_model
from core.paths import resource_path
from core.presets import load_presets
from core.sizing import size_candidate
from core.workload import parse_workload
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
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import torch

    models = {**json.loads(resource_path("reference_models.json").read_text())["models"]}
    models.update({n: p["model"] for n, p in load_presets().items() if "layers" in p["model"]})
    machine = probe_machine()
    device = this_machine_device(machine, load_catalogue())
    rates = None
    if args.calibrate:
        from telemetry.calibrate import efficiency_from_calibration, run_calibration

        rates = efficiency_from_calibration(run_calibration(sys.executable), "cpu")
    print(
        f"Machine: {device.name}; PyTorch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"step time {'after `calibrate`' if rates else 'with default efficiencies (not calibrated)'}\n"
    )
    print(
        "| model | batch | optimizer | FLOPs/sample engine | FLOPs torch | peak memory predicted | measured | error "
        "| step predicted | measured | error |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, batches, optimizers in CASES:
        model = models[name]
        engine_flops = analyze_model(model).forward_flops
        torch_flops = counted_flops(model)
        for batch in batches[:1] if args.quick else batches:
            for opt in optimizers[:1] if args.quick else optimizers:
                w = parse_workload(
                    {
                        "model": model,
                        "data": {"samples": batch * 10},
                        "training": {"batch_size": batch, "epochs": 1, "optimizer": opt},
                    }
                )
                cand = size_candidate(w, device, 1, calibrated=rates)
                predicted = cand.memory.tensor_peak
                measured = measure_step_memory(model, batch, opt)["total"]
                t_measured = measure_step_time(model, batch, opt)
                t_predicted = cand.step.step_s
                print(
                    f"| {name} | {batch} | {opt} | {engine_flops:,} | {torch_flops:,} | {predicted / 2**20:.2f} MiB "
                    f"| {measured / 2**20:.2f} MiB | {predicted / measured - 1:+.1%} | {t_predicted * 1e3:.2f} ms "
                    f"| {t_measured * 1e3:.2f} ms | {t_predicted / t_measured - 1:+.0%} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
