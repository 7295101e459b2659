"""``python main.py calibrate``: measure this machine so "this-machine" sizings use its real rates."""

from __future__ import annotations

import argparse
import json

from core.estimate.calibration import what_calibration_applies
from core.storage.store import Store
from telemetry.calibrate import run_calibration
from telemetry.inventory import collect_inventory
from telemetry.pytorch_env import find_torch_environment


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="measure compute rates, overhead and storage of this machine")
    p.add_argument("--json", action="store_true", help="print the measurements as JSON")
    p.add_argument("--python", help="the Python with PyTorch to measure with (default: found automatically)")
    p.set_defaults(func=run, store_mode=lambda a: "write")


def run(args: argparse.Namespace, store: Store | None) -> int:
    env = find_torch_environment(args.python, strict=True)
    if not env.ok:
        print(f"trainrig calibrate: {env.message}")
        return 2
    result = run_calibration(env.python)
    inv = collect_inventory()
    result["fingerprint"] = inv["fingerprint"]
    if store is not None:
        result["calibration_id"] = store.save_calibration(inv["fingerprint"], result)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    g = 1e9
    print(f"Calibrated with {env.message} in {result['seconds']} s ({result['threads']} CPU threads)")
    for message in result.get("refused", []):  # measured twice above the device's physical peak: not stored
        print(f"  {message}")
    if result.get("unsteady"):
        print(f"  Note: {result['unsteady']}")
    print(
        f"  CPU matmul: fp32 {_rate(result.get('cpu_fp32_matmul_flops'), g)} GFLOP/s"
        + (f", bf16 {result['cpu_bf16_matmul_flops'] / g:,.1f} GFLOP/s" if result.get("cpu_bf16_matmul_flops") else "")
    )
    prof = result.get("cpu_profile") or {}
    if prof:
        lin = ", ".join(f"{r / g:,.0f} at {f / 1e6:,.0f} MFLOP" for f, r in prof["linear_train"])
        conv = ", ".join(f"{r / g:,.0f} at {w:,.0f} weights" for w, r in prof["conv_train"])
        print(f"  CPU training step rates, GFLOP/s by layer size: linear {lin}; convolution {conv}")
        for key, label in (
            ("linear_grid", "linear layers by rows and width"),
            ("conv_grid", "convolutions by channels and kernel"),
            ("conv_first_grid", "first convolutions by channels and kernel"),
        ):
            if prof.get(key):
                rates = [p[3] / g for p in prof[key]]
                span = f"{min(rates):,.0f}–{max(rates):,.0f}"
                print(f"  {label}: {len(rates)} shapes, {span} GFLOP/s")
        elem = ", ".join(f"{k} {v * 1e9:.2f}" for k, v in prof["elementwise_s"].items())
        print(f"  elementwise layers, ns per element (forward + backward): {elem}")
        curves = prof["optimizer_s"]  # [tensor elements, seconds per element] by optimizer
        sizes = "/".join(f"{n:,}" for n, _ in next(iter(curves.values())))
        opt = ", ".join(f"{k} " + "–".join(f"{t * 1e9:.2f}" for _, t in v) for k, v in curves.items())
        print(f"  optimizer step, ns per parameter in tensors of {sizes} elements: {opt}")
        fixed = ", ".join(f"{k} {v * 1e6:.1f}" for k, v in prof["optimizer_tensor_s"].items())
        print(f"  optimizer step, µs per parameter tensor: {fixed}")
    else:
        print(
            f"  CPU training step rates: linear {_rate(result.get('cpu_linear_train_flops'), g)}, "
            f"convolution {_rate(result.get('cpu_conv_train_flops'), g)} GFLOP/s"
        )
    print(f"  memory bandwidth {result['cpu_memory_bandwidth_bps'] / g:,.1f} GB/s")
    o = result["step_overhead"]
    print(f"  framework overhead {o['per_step_s'] * 1e6:,.0f} µs per step + {o['per_op_s'] * 1e6:,.1f} µs per op")
    h = result.get("host") or {}
    if h:
        print(
            f"  host: {h['per_call_s'] * 1e6:,.1f} µs per framework call; "
            f"DataLoader {h['loader_batch_s'] * 1e6:,.0f} µs "
            f"per batch + {h['loader_sample_s'] * 1e6:,.2f} µs per sample, {h['handoff_batch_s'] * 1e6:,.0f} µs per "
            f"batch from a worker; .item() {h['sync_s'] * 1e6:,.2f} µs"
        )
    for gpu in result.get("gpus", []):
        print(
            f"  {gpu['name']}: fp32 {_rate(gpu.get('fp32_matmul_flops'), 1e12)}, "
            f"tf32 {_rate(gpu.get('tf32_matmul_flops'), 1e12)}, bf16 {_rate(gpu.get('bf16_matmul_flops'), 1e12)} "
            f"TFLOP/s; {_rate(gpu.get('memory_bandwidth_bps'), g)} GB/s"
        )
    s = result["storage"]
    read = "unknown" if s["read_bps"] is None else f"{s['read_bps'] / 1e6:,.0f} MB/s"
    print(f"  storage read in {s['folder']}: {read} ({s['note']})")
    print(what_calibration_applies(result) if store is not None else "")
    return 0


def _rate(value: float | None, unit: float) -> str:
    """A measured rate in ``unit``s, or "refused" where calibrate refused it as impossible."""
    return "refused" if value is None else f"{value / unit:,.1f}"
