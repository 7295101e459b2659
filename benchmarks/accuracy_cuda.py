"""Predicted vs measured on a CUDA GPU: peak training memory and step time.

Memory: torch.cuda.max_memory_allocated over a steady-state step against the engine's
``tensor_peak`` (GPU: foreach optimizers, memory-efficient attention). Time: median of 10
synchronised steps against the prediction for the matching catalogue device (default efficiency).

Run on a machine with a CUDA GPU: python benchmarks/accuracy_cuda.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.estimate.sizing import size_candidate
from core.hardware.catalogue import load_catalogue
from core.network.presets import accuracy_models
from core.spec.workload import parse_workload
from telemetry.machine import probe_machine, this_machine_device
from torchbridge.models import measure_cuda_step

CASES = [
    ("seed-mlp", 512, "adam", "fp32"),
    ("seed-mlp", 4096, "adam", "fp32"),
    ("seed-mlp", 4096, "sgd", "bf16_mixed"),
    ("lenet-5", 256, "sgd_momentum", "fp32"),
    ("small-cnn", 256, "adamw", "fp32"),
    ("residual-cnn", 512, "rmsprop", "fp32"),
    ("resnet-50", 32, "sgd_momentum", "fp32"),
    ("resnet-50", 64, "sgd_momentum", "bf16_mixed"),
    ("resnet-50", 128, "adam", "tf32"),
    ("tiny-gpt", 32, "adamw", "fp32"),
    ("lstm-lm", 20, "sgd", "fp32"),
    ("bert-base", 32, "adamw", "bf16_mixed"),
    ("gpt2-small", 8, "adamw", "bf16_mixed"),
    ("gpt2-small", 8, "adamw", "fp32"),
]


def main() -> None:
    warnings.filterwarnings("ignore")
    import torch

    models = accuracy_models()
    machine = probe_machine()
    device = this_machine_device(machine, load_catalogue())
    rates = None
    if "--calibrate" in sys.argv:
        from core.estimate.calibration import efficiency_from_calibration
        from telemetry.calibrate import run_calibration

        rates = efficiency_from_calibration(run_calibration(sys.executable), "gpu")
        print(f"calibrated: {rates}")
    print(
        f"GPU: {torch.cuda.get_device_name()} ({machine.gpus[0].name if machine.gpus else 'no NVML'}); "
        f"candidate: {device.name}; PyTorch {torch.__version__}\n"
    )
    print(
        "| model | batch | optimizer | precision | peak predicted | measured | error | reserved "
        "| step predicted | measured | error |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, batch, opt, prec in CASES:
        w = parse_workload(
            {
                "model": models[name],
                "data": {"samples": batch * 10},
                "training": {
                    "batch_size": batch,
                    "epochs": 1,
                    "optimizer": opt,
                    "precision": prec,
                    # as measured: random tensors already on the GPU, no data loader
                    "loop": "device_tensors",
                },
            }
        )
        cand = size_candidate(w, device, 1, calibrated=rates)
        try:
            m = measure_cuda_step(models[name], batch, opt, prec)
        except Exception as exc:  # report and go on with the next case
            print(f"| {name} | {batch} | {opt} | {prec} | failed: {type(exc).__name__}: {exc} |||||||")
            continue
        p, t = cand.memory.tensor_peak, cand.step.step_s
        print(
            f"| {name} | {batch} | {opt} | {prec} | {p / 2**20:,.1f} MiB | {m['peak_allocated'] / 2**20:,.1f} MiB "
            f"| {p / m['peak_allocated'] - 1:+.1%} | {m['peak_reserved'] / 2**20:,.1f} MiB | {t * 1e3:.2f} ms "
            f"| {m['step_s'] * 1e3:.2f} ms | {t / m['step_s'] - 1:+.0%} |",
            flush=True,
        )
    free, total = torch.cuda.mem_get_info()
    print(
        f"\nCUDA context and workspaces: {(total - free - torch.cuda.memory_reserved()) / 2**20:.0f} MiB "
        f"used on the device beyond PyTorch's reserved pool (after the runs)"
    )


if __name__ == "__main__":
    main()
