"""Measure-and-scale checked on real GPUs: given two profiles of the same workload recorded on two
GPUs, scale each to the other GPU and report the error against what that GPU measured.

Record the profiles on each GPU with the same workload file (same batch, precision, optimizer):

    python main.py measure WORKLOAD.json --save-profile h100.json      # on the first GPU
    python main.py measure WORKLOAD.json --save-profile a100.json      # on the second GPU
    python benchmarks/measure_scale.py h100.json a100.json [more pairs …]

Chrome traces from torch.profiler's export_chrome_trace work too (add --precision when their kernel
names do not say it). Each profile's GPU must match a catalogue entry (its datasheet figures).
The issue's bar: within 15 % between GPUs of one generation. The figures go in docs/accuracy.md.

    python benchmarks/measure_scale.py --h200-to-h100

scales the profiles a lent H200 recorded (tests/fixtures/profiles/h200-*.profile.json) to the H100 SXM
and compares their kernels with the steps the shared fit set recorded on an H100 (the same
workloads). Only device-bound steps compare: those profiles' host times were taken under the
profiler (their files say so).

    python3 benchmarks/measure_scale.py --h100-h200

scales the profiles a lent H100 recorded on 2026-11-26 (tests/fixtures/profiles/h100-*.profile.json, the
same workloads) and the H200's each to the other GPU and compares the kernels' time a step with the
kernels the other GPU's profile measured: both sides are real kernels of one generation (Hopper).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.errors import TrainRigError
from core.estimate.profile_read import read_profile_file
from core.estimate.profile_scale import scale_profile
from core.hardware.catalogue import load_catalogue
from core.output.measure_report import CLASS_LABELS
from telemetry.measure import measured_source


def compare(a_path: Path, b_path: Path, precision: str | None) -> list[str]:
    cat = load_catalogue()
    a, b = read_profile_file(a_path, precision), read_profile_file(b_path, precision)
    for p, path in ((a, a_path), (b, b_path)):
        if p.device_type != "cuda":
            raise TrainRigError(f"{path} was recorded on the {p.device_type.upper()}, not on a CUDA GPU")
    src_a, src_b = measured_source(a, cat), measured_source(b, cat)
    if src_a.name == src_b.name:
        raise TrainRigError(f"{a_path} and {b_path} were both recorded on a {src_a.name}: nothing to scale between")
    if a.precision != b.precision:
        raise TrainRigError(f"{a_path} ran {a.precision} and {b_path} {b.precision}: not the same workload")
    rows = []
    for p, src, other, target in ((a, src_a, b, src_b), (b, src_b, a, src_a)):
        r = scale_profile(p, src, [target])
        if not r.predictions:
            rows.append(f"| {src.name} → {target.name} | cannot scale: {r.refused[0].reason} |||||")
            continue
        pred = r.predictions[0]
        measured = other.wall_s
        if measured is None:
            rows.append(f"| {src.name} → {target.name} | {pred.step_s * 1e3:.2f} ms | no wall time recorded ||||")
            continue
        measured_kinds = other.by_kind()
        worst = max(
            (c for c in pred.by_class if measured_kinds.get(c.kind)),
            key=lambda c: abs(c.predicted_s / measured_kinds[c.kind] - 1),
            default=None,
        )
        worst_text = (
            f"{CLASS_LABELS[worst.kind]} {worst.predicted_s / measured_kinds[worst.kind] - 1:+.0%}" if worst else "—"
        )
        rows.append(
            f"| {src.name} → {target.name} | {pred.step_s * 1e3:.2f} ms | {measured * 1e3:.2f} ms | "
            f"{pred.step_s / measured - 1:+.1%} | {pred.bound} | {worst_text} |"
        )
    return rows


ROOT = Path(__file__).resolve().parent.parent
# the H200 profiles and the fit set's H100 steps of the same workloads (ms)
# the H200 profiles' workloads → their lines in the fit set recorded on the H100
H200_TO_H100 = {
    "seed-mlp": "seed MLP",
    "small-cnn": "small CNN",
    "small-cnn-cl": "small CNN channels_last",
    "resnet50-fp16": "ResNet-50 fp16",
    "resnet50-fp16-cl": "ResNet-50 fp16 channels_last",
    "bert-base-b64": "BERT-base b64 bf16",
}


def h200_to_h100() -> list[dict]:
    """Each H200 profile's kernels (ms a step), scaled to the H100 SXM, and the step the fit set
    recorded there; ``compares``: that step is the device's (its kernels over 80 % of it)."""
    cat = load_catalogue()
    h100 = next(d for d in cat if d.name == "NVIDIA H100 SXM")
    fit_set = (ROOT / "tests/fixtures/gpu/h100-sxm-fit-set.jsonl").read_text(encoding="utf-8").splitlines()
    recorded = {m["name"]: m["step_time_s"] * 1e3 for m in map(json.loads, fit_set)}
    out = []
    for name, line in H200_TO_H100.items():
        profile = read_profile_file(ROOT / f"tests/fixtures/profiles/h200-{name}.profile.json", None)
        pred = scale_profile(profile, measured_source(profile, cat), [h100]).predictions[0]
        device_ms, measured_ms = pred.device_s * 1e3, recorded[line]
        out.append(
            {
                "name": name,
                "kernels_ms": profile.device_s * 1e3,
                "device_ms": device_ms,
                "measured_ms": measured_ms,
                "compares": device_ms > 0.8 * measured_ms,
            }
        )
    return out


def h100_h200() -> list[dict]:
    """Each workload profiled on both the H100 SXM and the H200 (H200_TO_H100's names and GPT-2):
    its kernels scaled from each GPU to the other, against the kernels the other measured (ms a step)."""
    cat = load_catalogue()
    out = []
    for name in [*H200_TO_H100, "gpt2-bf16-b8"]:
        profiles = [
            read_profile_file(ROOT / f"tests/fixtures/profiles/{gpu}-{name}.profile.json", None)
            for gpu in ("h100", "h200")
        ]
        sources = [measured_source(p, cat) for p in profiles]
        for i in (0, 1):
            src, target, other = sources[i], sources[1 - i], profiles[1 - i]
            pred = scale_profile(profiles[i], src, [target]).predictions[0]
            out.append(
                {
                    "name": name,
                    "scaled": f"{src.name} → {target.name}",
                    "predicted_ms": pred.device_s * 1e3,
                    "measured_ms": other.device_s * 1e3,
                    "error": pred.device_s / other.device_s - 1,
                }
            )
    return out


def main() -> int:
    if "--h100-h200" in sys.argv:
        print("| workload | scaled | kernels predicted | kernels measured | error |")
        print("|---|---|---|---|---|")
        for r in h100_h200():
            print(
                f"| {r['name']} | {r['scaled']} | {r['predicted_ms']:.2f} ms | {r['measured_ms']:.2f} ms "
                f"| {r['error']:+.1%} |"
            )
        return 0
    if "--h200-to-h100" in sys.argv:
        print("| workload | H200 kernels | scaled to the H100 SXM | H100 step recorded | error | |")
        print("|---|---|---|---|---|---|")
        for r in h200_to_h100():
            bound = "device-bound: compares" if r["compares"] else "host-bound there: does not compare"
            print(
                f"| {r['name']} | {r['kernels_ms']:.2f} ms | {r['device_ms']:.2f} ms | {r['measured_ms']:.2f} ms "
                f"| {r['device_ms'] / r['measured_ms'] - 1:+.1%} | {bound} |"
            )
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profiles", nargs="+", type=Path, help="pairs of profiles: GPU A, GPU B, [GPU A', GPU B', …]")
    ap.add_argument("--precision", help="the workload's precision, for traces whose kernel names do not say it")
    args = ap.parse_args()
    if len(args.profiles) % 2:
        print("measure_scale: give the profiles in pairs (the same workload on two GPUs)", file=sys.stderr)
        return 2
    print("| scaled | predicted step | measured step | error | bound | worst class of kernels |")
    print("|---|---|---|---|---|---|")
    try:
        for i in range(0, len(args.profiles), 2):
            for row in compare(args.profiles[i], args.profiles[i + 1], args.precision):
                print(row, flush=True)
    except TrainRigError as exc:
        print(f"measure_scale: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
