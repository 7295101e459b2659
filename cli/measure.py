"""``python main.py measure WORKLOAD.json``: measure a few training steps on this machine's GPU
under torch.profiler and predict each candidate GPU by scaling every kernel (docs/sizing.md,
"Measure on this GPU"); ``--trace`` scales a Chrome trace the user recorded instead."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cli.sizing_run import ask_on_terminal
from core.errors import TrainRigError
from core.estimate.profile_read import parse_trainrig_profile, read_profile_file
from core.estimate.profile_scale import ScaleResult, scale_profile
from core.hardware.catalogue import DeviceSpec, find_device, load_catalogue
from core.output.measure_report import profile_summary, scale_to_dict, scale_to_text
from core.spec.workload import parse_workload, read_workload_document
from core.storage.store import Store
from telemetry.candidates import resolve_candidates
from telemetry.measure import MeasureJob, measure_spec, measured_source
from telemetry.pytorch_env import find_torch_environment
from telemetry.tracer import resolve_torch_models


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "measure",
        help="measure the workload's step on this GPU (torch.profiler) and scale it to candidate GPUs",
    )
    p.add_argument("workload", help="workload JSON file (see docs/workload.md)")
    p.add_argument(
        "--candidate",
        "-c",
        action="append",
        default=[],
        metavar="NAME",
        help="GPU to predict (a unique part of its catalogue name); repeatable; default: the workload's "
        "candidates, else every current NVIDIA GPU of the catalogue",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--trace", type=Path, metavar="TRACE.json", help="scale this profile or Chrome trace, measure nothing"
    )
    p.add_argument("--measured-on", metavar="NAME", help="with --trace: the catalogue GPU the trace was recorded on")
    p.add_argument("--python", help="the Python with PyTorch to measure with (default: found automatically)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: exercise the pipeline without a GPU")
    p.add_argument("--save-profile", type=Path, metavar="FILE", help="also write the measured profile (JSON) here")
    p.add_argument("--trust-code", action="store_true", help="run the workload's PyTorch code without asking")
    p.set_defaults(func=run, store_mode=lambda a: "read")


def _candidates(args: argparse.Namespace, workload) -> list[DeviceSpec]:  # type: ignore[no-untyped-def]
    if args.candidate or workload.hardware.candidates:
        return resolve_candidates(args.candidate, workload)[0]
    return [d for d in load_catalogue() if d.runs_cuda and d.availability == "current"]


def run(args: argparse.Namespace, store: Store | None) -> int:
    document = read_workload_document(args.workload)
    base = Path(args.workload).resolve().parent
    workload = parse_workload(resolve_torch_models(document, base, trust_code=args.trust_code, ask=ask_on_terminal))
    catalogue = load_catalogue()
    if args.trace is not None:
        profile = read_profile_file(args.trace, precision=workload.training.precision)
        source = find_device(args.measured_on, catalogue) if args.measured_on else measured_source(profile, catalogue)
        return _show(args, scale_profile(profile, source, _candidates(args, workload)))
    env = find_torch_environment(args.python, strict=True)
    if not env.ok:
        print(f"trainrig measure: {env.message}", file=sys.stderr)
        return 2
    if args.device == "cuda" and not env.cuda_available:
        print(
            f"trainrig measure: no CUDA GPU here ({env.message}); measure-and-scale runs the workload on an NVIDIA "
            "GPU. Use `size` for a prediction from the model, --trace with a trace recorded elsewhere, or "
            "--device cpu to exercise the pipeline",
            file=sys.stderr,
        )
        return 2
    trusted = base if args.trust_code else None
    spec = measure_spec(workload, args.device, trusted)

    def say(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rmeasuring: step {done}/{total}", end="", file=sys.stderr, flush=True)

    raw = MeasureJob(env.python, spec, on_progress=say).run()
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if args.save_profile is not None:
        try:
            args.save_profile.write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            raise TrainRigError(f"the profile was not saved to {args.save_profile}: {exc.strerror or exc}") from None
        print(f"trainrig measure: wrote the profile to {args.save_profile}", file=sys.stderr)
    profile = parse_trainrig_profile(raw, "the measurement")
    if profile.device_type != "cuda":
        text = profile_summary(profile)
        note = "a CPU profile exercises the pipeline only: CPU ops do not scale to GPUs, so no candidate is predicted"
        print(
            json.dumps({"measured": raw, "predictions": [], "notes": [note]}, indent=2)
            if args.json
            else f"{text}\n\n{note}"
        )
        return 0
    return _show(args, scale_profile(profile, measured_source(profile, catalogue), _candidates(args, workload)))


def _show(args: argparse.Namespace, result: ScaleResult) -> int:
    print(json.dumps(scale_to_dict(result), indent=2) if args.json else scale_to_text(result))
    return 0
