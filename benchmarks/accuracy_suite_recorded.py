"""The engine's step times against a GPU suite's recorded steps (benchmarks/gpu_suite.py's JSON
lines), by family and precision, with the worst cases. No GPU needed. Default: the 201 steps a lent
H200 measured on 2026-11-26 (a shuffled, seeded sample of the suite and of 40 random architectures,
seed 2026), none of which the model was fitted on; a lent H100 measured 173 of the first 177 of the
same order the same day (tests/fixtures/gpu/h100-suite-2026-11-26.jsonl).

``--calibrated``: as `calibrate` on that machine would size them, the host's speed from the host
probe (core/estimate/host_probe.py) each line carries (gpu_suite.py now times it), else the one its
lease measured (tests/fixtures/gpu/hosts.json); without it, at the reference host's speed, as a
purchase of that GPU is sized.

Lines that recorded the host's time to issue a step (``host_issue_s``, gpu_suite.py since 2026-11-27) also
get the model's host seconds against it, apart from the device's.

Lines whose median timed step was not a training step are left out and listed apart: fp16 steps in
which GradScaler skipped the optimizer (the suite trained one batch with one label at learning rate
1e-3 until 2026-11-26, a ninth session; benchmarks/fp16_skips.py replays which; later lines say it
themselves, ``optimizer_skipped``).

    python3 benchmarks/accuracy_suite_recorded.py [SUITE.jsonl] [--calibrated] [--worst 15]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fitting import seeded_halves  # noqa: E402
from core.estimate.host_probe import SPEED_KEY, probe_speed  # noqa: E402
from core.estimate.sizing import size_candidate  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

DEFAULT = ROOT / "tests/fixtures/gpu/h200-suite-2026-11-26.jsonl"
H100_SUITE = ROOT / "tests/fixtures/gpu/h100-suite-2026-11-26.jsonl"
# a third H100 lease: cases 203–396 of that order, never measured before, each line with its own probe
H100_FRESH = ROOT / "tests/fixtures/gpu/h100-suite-2026-11-26c.jsonl"
# a fourth H100 lease: cases 398–880 of that order (397 steps; the rest ran out of memory or out of time),
# measured after every constant but the row reductions' was set: the most held-out of the suites
H100_FOURTH = ROOT / "tests/fixtures/gpu/h100-suite-2026-11-26d.jsonl"
# a second H200 lease: 133 steps of 60 random architectures of another seed (2027, --random-only), a host
# probe before and after each step
H200_FRESH = ROOT / "tests/fixtures/gpu/h200-suite-2026-11-26e.jsonl"
# a fifth H100 lease (2026-11-27): 93 steps of 60 random architectures of a seed no constant saw (2028,
# --random-only --shuffle 2028), a host probe before and after each, and the time the host took to issue each step
H100_FIFTH = ROOT / "tests/fixtures/gpu/h100-suite-2026-11-27.jsonl"
# the same lease: the first 16 convolutional cases of that order again, each in a fresh process (--isolate)
H100_ISOLATED = ROOT / "tests/fixtures/gpu/h100-isolated-2026-11-27.jsonl"
HOSTS = ROOT / "tests/fixtures/gpu/hosts.json"
# the name CUDA reports → the catalogue entry (an "NVIDIA H200" with 700 W is the SXM part)
DEVICES = {"NVIDIA H200": "H200 SXM", "NVIDIA H100 80GB HBM3": "H100 SXM"}


TIMED_STEPS = 20  # gpu_suite.py's --steps by default
CONV_FAMILIES = ("cnn", "resnet", "random cnn")
FIT_SEED = 2026  # the convolutional networks' split: benchmarks/fit_host_gpu.py --cudnn fits on one half


SKIPS = ROOT / "tests/fixtures/gpu/fp16-skips.json"


@lru_cache(maxsize=1)
def replayed_skips() -> dict[tuple[str, str, int], tuple[int, int]]:
    """(suite file, line name, batch) → (timed steps whose optimizer GradScaler skipped, timed steps), as
    benchmarks/fp16_skips.py replayed the fp16 lines recorded before the suite counted them itself."""
    doc = json.loads(SKIPS.read_text(encoding="utf-8"))
    out = {}
    for c in doc["cases"]:
        if c["skipped"] is None:
            continue
        for suite, name in c["lines"]:
            run = doc["runs"][suite]
            warmup, steps = int(run["warmup"]), int(run["steps"])
            out[(suite, name, int(c["batch"]))] = (sum(warmup <= s < warmup + steps for s in c["skipped"]), steps)
    return out


def optimizer_skipped(m: dict, suite: str) -> tuple[int, int]:
    """(timed steps of a recorded line whose optimizer GradScaler skipped, its timed steps): the line's
    own count, else the replay's (none where neither knows: not fp16, or a replay over its budget)."""
    if "optimizer_skipped" in m:
        return int(m["optimizer_skipped"]), int(m.get("timed_steps", TIMED_STEPS))
    training = m["workload"]["training"]
    if training["precision"] != "fp16_mixed":  # GradScaler runs in fp16 only
        return 0, TIMED_STEPS
    return replayed_skips().get((suite, m["name"], int(training["batch_size"])), (0, TIMED_STEPS))


def not_training(m: dict) -> bool:
    """Whether a line's median timed step skipped the optimizer: half or more of its timed steps did."""
    return 2 * m.get("optimizer_skipped", 0) >= m.get("timed_steps", TIMED_STEPS)


def recorded(path: Path = DEFAULT) -> list[dict]:
    """The recorded lines, each with its workload as measured (tensors already on the device) and its
    ``optimizer_skipped`` count (``cases`` leaves out those that were not training steps)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = json.loads(line)
        m["optimizer_skipped"], m["timed_steps"] = optimizer_skipped(m, path.name)
        doc = json.loads(json.dumps(m["workload"]))
        doc["training"]["loop"] = "device_tensors"
        # lines recorded before the workload named it: the suite ran every case with cudnn.benchmark
        # on but those it names "cudnn heuristics"
        doc["training"].setdefault("cudnn_benchmark", "cudnn heuristics" not in m["name"])
        out.append({**m, "workload": doc})
    return out


def probed_gpu_lines(path: Path, lines: list[dict], needs: str) -> bool:
    """Whether ``lines`` (of ``path``) are each sized at their own host probe: every one carries it (True) or
    none (False, the reference host's). Raises ValueError for lines measured off the recorded GPUs (``needs``
    says what reads them) or a mix of probed and unprobed lines (two recordings)."""
    others = sorted({str(m.get("device")) for m in lines} - set(DEVICES))
    if others:
        raise ValueError(f"{path}: measured on {', '.join(others)}; {needs}, on one of {', '.join(DEVICES)}")
    probed = {bool(m.get("host_probe_s")) for m in lines}
    if len(probed) > 1:
        raise ValueError(f"{path}: some lines carry a host probe and some do not: a mix of two recordings")
    return probed == {True}


def conv_halves(lines: list[dict], seed: int = FIT_SEED) -> tuple[list[dict], list[dict]]:
    """The convolutional networks' steps: (fit half, held-out half), by a seeded shuffle."""
    return seeded_halves([m for m in lines if m["family"] in CONV_FAMILIES], seed)


def step_probe_s(m: dict) -> float | None:
    """The host probe a line's step is sized at: with a probe timed on both sides of the step (gpu_suite
    --probe-every 1), their mean — the host's speed around the step, where the probe before it alone missed
    the host's drift during it (the second H200 lease: mean |error| 14.4 → 13.1 %); else the probe before it,
    or None (the lease's one probe in hosts.json)."""
    before, after = m.get("host_probe_s"), m.get("host_probe_after_s")
    if before is None or after is None:
        return before
    return (float(before) + float(after)) / 2


def host_calibration(path: Path, probe_s: float | None = None, device: str | None = None) -> dict:
    """What calibrate's host probe would give on the host that recorded ``path``: the calibration's host
    figures, {SPEED_KEY: speed}, from ``probe_s`` on the catalogue ``device`` (a line's own probe, as
    gpu_suite now times it) or else from the lease's probe in hosts.json."""
    if probe_s is None:
        probe_s, device = _lease_probe(path.name)
    return {"host": {SPEED_KEY: _speed(float(probe_s), str(device))}}


@lru_cache(maxsize=16)
def _lease_probe(name: str) -> tuple[float, str]:
    """The host probe hosts.json holds for the suite file ``name``, and its catalogue GPU."""
    runs = json.loads(HOSTS.read_text(encoding="utf-8"))["runs"]
    if name not in runs:
        raise ValueError(f"{name}: its lines carry no host probe and tests/fixtures/gpu/hosts.json has none")
    return float(runs[name]["host_probe_s"]), str(runs[name]["device"])


@lru_cache(maxsize=64)
def _speed(probe_s: float, device: str) -> float:
    speed, note = probe_speed(probe_s, find_device(device, tuple(load_catalogue())))
    if speed is None:
        raise ValueError(note)
    return speed


def cases(
    path: Path = DEFAULT, lines: list[dict] | None = None, calibrated: bool = False, training_only: bool = True
) -> list[dict]:
    """Each recorded step with the prediction for its GPU (tensors already on the device, as measured);
    ``calibrated``: with the recording host's speed from its host probe (host_calibration);
    ``training_only``: without the lines whose median step was not a training step (``not_training``)."""
    cat = tuple(load_catalogue())
    out = []
    for m in lines if lines is not None else recorded(path):
        if training_only and not_training(m):
            continue
        doc = m["workload"]
        cal = None
        if calibrated:
            cal = host_calibration(path, step_probe_s(m), DEVICES[m["device"]])
        step = size_candidate(parse_workload(doc), find_device(DEVICES[m["device"]], cat), 1, calibrated=cal).step
        out.append(
            {
                "name": m["name"],
                "family": m["family"],
                "precision": doc["training"]["precision"],
                "batch": doc["training"]["batch_size"],
                "measured_s": m["step_time_s"],
                "predicted_s": step.step_s,
                "bound": step.bound,
                "host_bound": step.host_bound,
                "optimizer_s": step.optimizer_s,
                # the host's side apart: the model's host seconds and, in lines since 2026-11-27, the
                # measured time until the host had issued the step (before its synchronisation)
                "predicted_host_s": step.host_s,
                "measured_host_s": m.get("host_issue_s"),
                "optimizer_skipped": m.get("optimizer_skipped", 0),
                "timed_steps": m.get("timed_steps", TIMED_STEPS),
                "error": step.step_s / m["step_time_s"] - 1,
            }
        )
    return out


def summary(errors: list[float]) -> str:
    a = [abs(e) for e in errors]
    n = len(a)
    within = sum(x <= 0.25 for x in a)
    return f"{n} | {within} ({within / n:.0%}) | {statistics.mean(a):.0%} | {statistics.median(errors):+.0%}"


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    worst = int(sys.argv[sys.argv.index("--worst") + 1]) if "--worst" in sys.argv else 15
    path = Path(args[0]) if args and not args[0].isdigit() else DEFAULT
    try:
        calibrated = "--calibrated" in sys.argv
        every = recorded(path)
        rows = cases(path, every, calibrated)
        apart = cases(path, [m for m in every if not_training(m)], calibrated, training_only=False)
    except ValueError as exc:
        print(f"accuracy_suite_recorded: {exc}", file=sys.stderr)
        return 2
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        groups[f"family: {r['family']}"].append(r["error"])
        groups[f"precision: {r['precision']}"].append(r["error"])
    print("| group | cases | within 25 % | mean abs error | median error |")
    print("|---|---|---|---|---|")
    print(f"| **all** | {summary([r['error'] for r in rows])} |")
    for name in sorted(groups):
        print(f"| {name} | {summary(groups[name])} |")
    print("\n| worst cases | precision | batch | measured | predicted | error | bound |")
    print("|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: -abs(r["error"]))[:worst]:
        print(
            f"| {r['name']} | {r['precision']} | {r['batch']} | {r['measured_s'] * 1e3:.2f} ms "
            f"| {r['predicted_s'] * 1e3:.2f} ms | {r['error']:+.0%} | {r['bound']} |"
        )
    host_side = [r for r in rows if r["measured_host_s"] and r["precision"] != "fp16_mixed"]
    if host_side:
        # fp16 steps wait for the device inside GradScaler before the optimizer step: not the host's alone
        print("\nThe host's side apart (lines that recorded the time to issue a step; fp16 left out):")
        print("\n| host side | steps | within 25 % | mean abs error | median error |")
        print("|---|---|---|---|---|")
        for label, bound in (("host-bound steps", True), ("device-bound steps", False)):
            errors = [r["predicted_host_s"] / r["measured_host_s"] - 1 for r in host_side if r["host_bound"] == bound]
            if errors:
                print(f"| {label} | {summary(errors)} |")
    if apart:
        print(
            f"\nLeft out: {len(apart)} of {len(every)} lines timed a median step whose optimizer GradScaler skipped "
            "(not training steps; the prediction includes the optimizer's kernels, listed)"
        )
        print(
            "\n| left out | precision | batch | timed steps skipped | measured | predicted | optimizer in it | error |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for r in apart:
            print(
                f"| {r['name']} | {r['precision']} | {r['batch']} | {r['optimizer_skipped']} of {r['timed_steps']} "
                f"| {r['measured_s'] * 1e3:.2f} ms "
                f"| {r['predicted_s'] * 1e3:.2f} ms | {r['optimizer_s'] * 1e3:.2f} ms | {r['error']:+.0%} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
