"""Kernel profiles of chosen suite steps on a lent GPU: each case's workload (a line of a recorded suite,
benchmarks/gpu_suite.py's format) run by TrainRig's measure worker (resources/workers/measure.py: a few
steps timed, a few more under torch.profiler, every CUDA kernel's calls and device time), so a step the
model misses can be taken apart kernel by kernel where no GPU is at hand.

    python3 benchmarks/profile_cases.py --cases picked.jsonl --out profiles.jsonl [--budget-s 150]

Each output line: the case's name, precision, batch and memory format, the suite's measured step, the
workload and the worker's whole profile (format "trainrig-profile"). The cases read: any lines with "name"
and "workload".
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKERS = ROOT / "resources" / "workers"
# what a lent H100 profiled on 2026-11-26 (benchmarks/row_reductions.py and flash_attention.py read it)
RECORDED = ROOT / "tests/fixtures/gpu/h100-profiles-2026-11-26d.jsonl"


def recorded(path: Path = RECORDED) -> list[dict[str, Any]]:
    """The profiled steps of ``path``, one dict a line (this script's output format)."""
    return [json.loads(s) for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]


def as_profile(d: dict[str, Any], gpu: str, **extra: Any) -> dict[str, Any]:
    """A recorded profiled step as the kernel benchmarks read it (row_reductions.py, cnn_kernels.py): its label,
    catalogue ``gpu``, workload, batch, precision, layout, kernels and profiled steps, and ``extra``."""
    p = d["profile"]
    return {
        **extra,
        "label": f"{d['name']} {d['precision']} b{d['batch']}",
        "gpu": gpu,
        "workload": d["workload"],
        "batch": d["batch"],
        "precision": d["precision"],
        "layout": d["memory_format"],
        "kernels": p["kernels"],
        "steps": p["steps"],
    }


def spec_of(line: dict[str, Any], device: str, warmup: int, steps: int) -> dict[str, Any]:
    """The measure worker's request for a suite line's step, as the suite ran it."""
    training = line["workload"]["training"]
    keys = ("optimizer", "precision", "memory_format", "attention", "cudnn_tf32", "cudnn_benchmark")
    return {
        "model": line["workload"]["model"],
        "batch_size": int(training["batch_size"]),
        **{k: training[k] for k in keys if k in training},
        "device": device,
        "warmup": warmup,
        "steps": steps,
        "about": f"{line['name']}: a suite step profiled by benchmarks/profile_cases.py",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, required=True, help="JSON lines with name and workload")
    ap.add_argument("--out", type=Path, required=True, help="append one JSON line a case here")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--budget-s", type=float, help="start no case after S seconds")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(WORKERS))
    import measure  # resources/workers/measure.py
    import torch

    lines = [json.loads(s) for s in args.cases.read_text(encoding="utf-8").splitlines() if s.strip()]
    started = time.monotonic()
    with args.out.open("a", encoding="utf-8") as sink:
        for i, line in enumerate(lines, 1):
            if args.budget_s is not None and time.monotonic() - started > args.budget_s:
                print(f"profile_cases: budget spent, {i - 1} of {len(lines)} profiled", file=sys.stderr)
                break
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            training = line["workload"]["training"]
            try:
                profile = measure.measure(spec_of(line, args.device, args.warmup, args.steps))
            except Exception as exc:  # out of memory, a layer the device cannot run: say so, go on
                print(f"[{i}/{len(lines)}] {line['name']}: failed: {exc}".splitlines()[0], file=sys.stderr)
                continue
            out = {
                "name": line["name"],
                "precision": training["precision"],
                "batch": training["batch_size"],
                "memory_format": training.get("memory_format", "contiguous"),
                "suite_step_s": line.get("step_time_s"),
                "workload": line["workload"],
                "profile": profile,
            }
            sink.write(json.dumps(out) + "\n")
            sink.flush()
            kernel_ms = sum(k["total_us"] for k in profile["kernels"]) / 1e3 / profile["steps"]
            wall_ms = sorted(profile["step_wall_s"])[len(profile["step_wall_s"]) // 2] * 1e3
            print(
                f"[{i}/{len(lines)}] {line['name']} {training['precision']} b{training['batch_size']}: "
                f"wall {wall_ms:.2f} ms, kernels {kernel_ms:.2f} ms",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
