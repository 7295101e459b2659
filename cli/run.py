"""``python main.py run WORKLOAD.json``: train the workload here with telemetry, store the run and
print the sizing's prediction beside the measurement."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, TextIO

from cli.sizing_run import size_file
from core.errors import TrainRigError
from core.hardware.candidates import THIS_MACHINE
from core.storage.store import Store
from telemetry.pytorch_env import find_torch_environment
from telemetry.runs import Run
from telemetry.sampler import DEFAULT_RATE_HZ, MAX_RATE_HZ, MIN_RATE_HZ
from telemetry.training import Launch, this_machine_prediction, trainer_spec, training_run

EXIT_FAILED = 1
EXIT_CANCELLED = 130


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="train a workload on this machine with live telemetry and store the run")
    p.add_argument("workload", help="workload JSON file (a layer list or a preset)")
    p.add_argument("--epochs", type=int, help="epochs to train (default: the workload's)")
    p.add_argument("--samples", type=int, help="training samples of the synthetic set (default: the workload's)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda:N")
    p.add_argument("--csv", type=Path, help="train on this CSV (feature columns and a label column) instead")
    p.add_argument("--rate", type=float, default=DEFAULT_RATE_HZ, help="samples per second, 1–20 (default 10)")
    p.add_argument("--python", help="the Python with PyTorch (default: the one TrainRig finds)")
    p.add_argument(
        "--nproc-per-node",
        type=int,
        default=1,
        help="processes on this machine, launched by torchrun with DistributedDataParallel (gloo on the CPU, "
        "NCCL on GPUs: one per GPU with --device cuda); the global batch is split over them",
    )
    p.add_argument("--nnodes", type=int, default=1, help="machines taking part (each runs this command)")
    p.add_argument("--rdzv-endpoint", help="HOST:PORT of the first machine, where several meet")
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="a model given as PyTorch code (model.torch): run its Python code to trace and train it, without asking",
    )
    p.set_defaults(func=run, store_mode=lambda a: "write")


def check_rate(rate: float) -> None:
    if not MIN_RATE_HZ <= rate <= MAX_RATE_HZ:
        raise TrainRigError(f"--rate must be {MIN_RATE_HZ:g}–{MAX_RATE_HZ:g} samples per second, not {rate:g}")


def run(args: argparse.Namespace, store: Store | None) -> int:
    check_rate(args.rate)
    if args.device != "cpu" and not args.device.startswith("cuda"):
        raise TrainRigError(f"--device must be cpu or cuda:N, not {args.device!r}")
    if args.csv is not None and not args.csv.is_file():
        why = "is a folder" if args.csv.is_dir() else "is not a regular file" if args.csv.exists() else "does not exist"
        raise TrainRigError(f"the CSV {args.csv} {why}")
    if not 1 <= args.nproc_per_node <= 256 or not 1 <= args.nnodes <= 1024:
        raise TrainRigError("--nproc-per-node must be 1–256 and --nnodes 1–1024")
    launch = Launch(args.nproc_per_node, args.nnodes, args.rdzv_endpoint)
    launch.arguments()  # several machines without a meeting point: refused before anything runs
    sizing = size_file(args.workload, [THIS_MACHINE], store, trust_code=args.trust_code)
    workload = sizing.recommendation.result.workload
    # the trainer runs model code only for a model.torch the user agreed to trace just now (size_file
    # asked, or --trust-code); a trace's file named in a hand-written summary is never run
    doc_model = sizing.document.get("model") if isinstance(sizing.document, dict) else None
    code_dir = Path(args.workload).resolve().parent if isinstance(doc_model, dict) and "torch" in doc_model else None
    spec = trainer_spec(
        workload,
        epochs=args.epochs,
        samples=args.samples,
        device=args.device,
        csv=str(args.csv.resolve()) if args.csv else None,
        base_dir=code_dir,
    )
    prediction = this_machine_prediction(sizing.recommendation)
    if launch.processes > 1:
        # the sizing counts devices, not processes sharing one: nothing to compare the steps with
        prediction = None
        print(
            f"{launch.processes} processes with DistributedDataParallel: each rank's step and all-reduce are "
            "measured; the sizing's single-device prediction is not compared"
        )
    env = find_torch_environment(args.python, strict=True)
    if not env.ok:
        raise TrainRigError(env.message)
    bar = ProgressBar(sys.stderr)
    r = training_run(
        env.python,
        spec,
        store=store,
        name=workload.name,
        workload_document=sizing.document,
        prediction=prediction,
        rate_hz=args.rate,
        on_message=lambda _run, msg: bar.show(msg),
        launch=launch if launch.processes > 1 else None,
    )
    print(f"Training {workload.name} on {args.device} with {env.python} ({env.message})")
    if prediction:
        print(f"  sized on {prediction['device']}")
    r.start()
    wait_with_cancel(r)
    bar.close()
    print(run_summary(r))
    return {"finished": 0, "cancelled": EXIT_CANCELLED}.get(r.status, EXIT_FAILED)


def wait_with_cancel(r: Run) -> None:
    """Wait for the run; Ctrl+C cancels it (SIGINT to its process group, then forced)."""
    while True:
        try:
            if r.wait(0.2):
                return
        except KeyboardInterrupt:
            print("\ncancelling… (the run stops within 5 s)", file=sys.stderr)
            r.cancel()


class ProgressBar:
    """One line redrawn on a terminal; one line per epoch elsewhere (logs, pipes)."""

    def __init__(self, out: TextIO, width: int = 30) -> None:
        self.out = out
        self.width = width
        self.tty = out.isatty()
        self.drawn = False

    def show(self, msg: dict[str, Any]) -> None:
        if msg.get("event") != "progress":
            return
        line = progress_line(msg, self.width)
        if self.tty:
            self.out.write("\r" + line)
            self.drawn = True
        elif msg.get("epoch_end"):
            self.out.write(line + "\n")
        self.out.flush()

    def close(self) -> None:
        if self.drawn:
            self.out.write("\n")
            self.out.flush()


def progress_line(msg: dict[str, Any], width: int = 30) -> str:
    it, total = int(msg.get("iteration", 0)), max(1, int(msg.get("iterations", 1)))
    filled = int(width * it / total)
    elapsed = float(msg.get("elapsed_s", 0.0))
    eta = elapsed * (total - it) / it if it else math.nan
    return (
        f"epoch {msg.get('epoch')}/{msg.get('epochs')} [{'#' * filled}{'.' * (width - filled)}] "
        f"{100 * it / total:3.0f}% it {it}/{total} loss {msg.get('loss', math.nan):.4f} "
        f"acc {msg.get('accuracy', math.nan):.3f} {msg.get('samples_per_s', 0):,.0f} samples/s "
        f"ETA {_duration(eta)}"
    )


def _duration(s: float) -> str:
    if not math.isfinite(s):
        return "–"
    s = round(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def run_summary(r: Run) -> str:
    lines = [
        f"Run {r.run_id if r.run_id is not None else '(not stored)'}: {r.status}"
        + (f" — {r.reason}" if r.reason else "")
    ]
    m = r.metrics or {}
    if m:
        lines.append(
            f"  training time {m['training_time_s']:.2f} s, held-out accuracy {m['accuracy']:.3f}, "
            f"macro F1 {m['macro_f1']:.3f}"
            + (f" (chance {m['chance_accuracy']:.3f})" if m.get("chance_accuracy") else "")
        )
    measured = r.measured()
    p = r.prediction or {}
    if measured.get("median_step_s") is not None:
        lines.append("  Prediction vs measurement")
        lines.append(
            _compare("step time", p.get("step_s"), measured["median_step_s"], 1e3, "ms", "median after warm-up")
        )
        if measured.get("training_memory_bytes") is not None:
            how = (
                "peak RSS growth after PyTorch and the data were loaded"
                if "RSS" in str(measured.get("peak_memory_kind"))
                else str(measured.get("peak_memory_kind"))
            )
            lines.append(
                _compare(
                    "training memory", p.get("peak_memory_bytes"), measured["training_memory_bytes"], 2**-20, "MiB", how
                )
            )
        if measured.get("peak_memory_bytes") is not None:
            peak_mib = measured["peak_memory_bytes"] / 2**20
            lines.append(f"    process peak memory {peak_mib:,.0f} MiB ({measured.get('peak_memory_kind')})")
    for rank in m.get("ranks") or []:
        lines.append(
            f"    rank {rank['rank']}: median step {rank['median_step_s'] * 1e3:,.2f} ms, all-reduce of the gradients "
            f"{rank['allreduce_s'] * 1e3:,.2f} ms ({rank['allreduce_share']:.0%} of the step at most: DDP overlaps it "
            "with backward)"
        )
    lines += telemetry_summary(r)
    return "\n".join(lines)


def _compare(label: str, predicted: float | None, measured: float, scale: float, unit: str, how: str) -> str:
    if predicted is None:
        return f"    {label:16} measured {measured * scale:,.2f} {unit} ({how}); no prediction"
    err = predicted / measured - 1
    return (
        f"    {label:16} predicted {predicted * scale:,.2f} {unit}, measured {measured * scale:,.2f} {unit} "
        f"({how}): prediction {err:+.0%}"
    )


def telemetry_summary(r: Run) -> list[str]:
    s = r.sampler
    if s is None:
        return []
    _t, v = s.buffer.snapshot()
    out = [
        f"  Telemetry: {len(v)} samples at {s.rate_hz:g} Hz over {r.elapsed_s:.1f} s (sampler CPU {s.cpu_time_s:.2f} s)"
    ]
    for col, label, scale, unit in (
        ("proc_cpu_percent", "process CPU", 1, "% of a core"),
        ("proc_rss_bytes", "process memory", 2**-20, "MiB"),
        ("cpu_percent", "machine CPU", 1, "%"),
    ):
        if col in s.columns and len(v):
            x = v[:, s.columns.index(col)]
            x = x[x == x]
            if len(x):
                out.append(f"    {label:16} mean {x.mean() * scale:,.0f}, peak {x.max() * scale:,.0f} {unit}")
    for col, why in s.reasons.items():
        out.append(f"    {col}: {why}")
    for t, msg in s.all_events()[:10]:
        out.append(f"    at {t:.1f} s: {msg}")
    if r.garbage_lines:
        out.append(f"    {r.garbage_lines} output line(s) of the trainer were not messages")
    return out
