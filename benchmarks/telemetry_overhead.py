"""Telemetry overhead (SPEC 9: under 3 % of training time, goal 1 %): the same CPU training of the
seed MLP with and without the sampler at 10 Hz, in alternating rounds, by the trainer's own
training time (PyTorch's import excluded). Prints the ratio of the medians and the sampler's own
CPU time per second of run.

Run on an idle machine: python benchmarks/telemetry_overhead.py [--rounds 5] [--samples 40000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.paths import resource_path
from core.spec.workload import parse_workload, read_workload_document
from telemetry.training import WORKER, trainer_spec, training_run


def without_sampler(spec: dict) -> float:
    proc = subprocess.run(
        [sys.executable, str(resource_path(WORKER))], input=json.dumps(spec), capture_output=True, text=True, check=True
    )
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["training_time_s"])


def with_sampler(spec: dict, rate: float) -> tuple[float, float, float]:
    run = training_run(sys.executable, spec, store=None, name="overhead", rate_hz=rate)
    run.start()
    run.wait()
    if run.status != "finished":
        raise SystemExit(f"the run {run.status}: {run.reason}")
    assert run.metrics is not None and run.sampler is not None
    return float(run.metrics["training_time_s"]), run.sampler.cpu_time_s, run.elapsed_s


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=40_000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--rate", type=float, default=10.0)
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    workload = parse_workload(read_workload_document(root / "examples/seed-mlp.json"))
    spec = trainer_spec(workload, epochs=args.epochs, samples=args.samples)
    off: list[float] = []
    on: list[float] = []
    cpu_per_s: list[float] = []
    for r in range(args.rounds):  # alternate, so a neighbour's load hits both sides alike
        off.append(without_sampler(spec))
        t, cpu, elapsed = with_sampler(spec, args.rate)
        on.append(t)
        cpu_per_s.append(cpu / elapsed)
        print(
            f"round {r + 1}: without {off[-1]:.2f} s, with {on[-1]:.2f} s, sampler CPU {1e3 * cpu_per_s[-1]:.1f} ms/s"
        )
    ratio = statistics.median(on) / statistics.median(off)
    print(
        f"seed MLP, {args.samples} samples × {args.epochs} epochs, batch {spec['batch_size']}, {args.rounds} rounds: "
        f"median training time without {statistics.median(off):.2f} s, with the {args.rate:g} Hz sampler "
        f"{statistics.median(on):.2f} s — ratio {ratio:.3f} (goal ≤ 1.01, bar ≤ 1.03); "
        f"sampler CPU {1e3 * statistics.median(cpu_per_s):.1f} ms per second of run"
    )


if __name__ == "__main__":
    main()
