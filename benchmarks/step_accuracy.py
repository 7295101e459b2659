"""How close the GPU step model comes on the recorded GPU suites, by what bounds the step: the figures
the sizing's step tooltip and the report quote (resources/step_accuracy.json, read by
core/output/sizing_report.step_accuracy_note). No GPU needed.

The suites are the 1,180 training steps of the 1,191 of benchmarks/gpu_suite.py that two lent H200s and
four lent H100s measured on 2026-11-26 and 27 (tests/fixtures/gpu/*-suite-*.jsonl; none fitted on but the
seeded halves some constants were fitted on, docs/accuracy.md, and the fifth H100's 93 measured after every
constant was set; the 11 left out timed fp16 steps whose optimizer GradScaler skipped,
benchmarks/fp16_skips.py). Three groups, as a user meets them:

- host-bound, at the reference host's speed: a GPU sized for a purchase, its host not measured;
- host-bound, after calibrate: the host's speed from calibrate's host probe on that machine;
- device-bound, after calibrate (the host barely matters there).

"Host-bound" is the model's own verdict (StepTime.host_bound), the one the tooltip is shown for.

    python3 benchmarks/step_accuracy.py            # print the groups and whether the resource holds them
    python3 benchmarks/step_accuracy.py --write    # and write resources/step_accuracy.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.accuracy_published import errors as published_errors  # noqa: E402
from benchmarks.accuracy_suite_recorded import (  # noqa: E402
    DEFAULT,
    DEVICES,
    H100_FIFTH,
    H100_FOURTH,
    H100_FRESH,
    H100_SUITE,
    H200_FRESH,
    cases,
)

OUT = ROOT / "resources" / "step_accuracy.json"
SUITES = (DEFAULT, H100_SUITE, H100_FRESH, H100_FOURTH, H200_FRESH, H100_FIFTH)
GROUPS = {
    "host_reference": "host-bound steps at the reference host's speed",
    "host_calibrated": "host-bound steps after calibrate measured their host",
    "device_calibrated": "device-bound steps after calibrate",
}


def _figures(errors: list[float]) -> dict[str, Any]:
    return {
        "steps": len(errors),
        "within_25": sum(abs(e) <= 0.25 for e in errors),
        "mean_abs_error": round(statistics.mean(abs(e) for e in errors), 3),
        "median_error": round(statistics.median(errors), 3),
    }


def groups() -> dict[str, dict[str, Any]]:
    """Each group's steps, how many within 25 %, the mean |error| and the median error."""
    errors: dict[str, list[float]] = {k: [] for k in GROUPS}
    for path in SUITES:
        errors["host_reference"] += [r["error"] for r in cases(path) if r["host_bound"]]
        for r in cases(path, calibrated=True):
            errors["host_calibrated" if r["host_bound"] else "device_calibrated"].append(r["error"])
    return {k: {"what": GROUPS[k], **_figures(v)} for k, v in errors.items()}


def recorded_on() -> str:
    """Which lent GPUs recorded the suites, from their lines: "two lent H200s and four lent H100s"."""
    counts: dict[str, int] = {}
    for path in SUITES:
        device = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["device"]
        short = DEVICES[device].split()[0]  # the catalogue entry's model: "H100", "H200"
        counts[short] = counts.get(short, 0) + 1
    words = {1: "a", 2: "two", 3: "three", 4: "four", 5: "five"}
    return " and ".join(
        f"{words.get(n, str(n))} lent {gpu}{'s' if n > 1 else ''}"
        for gpu, n in sorted(counts.items(), key=lambda kv: kv[1])
    )


def published() -> dict[str, Any]:
    """The held-out published throughputs (benchmarks/accuracy_published.py: the Lambda benchmark's rows the
    constants were not fitted on): how many, how many within 25 %, the mean |error|, and the GeForce cards'
    worst row (the tooltip warns a GeForce buyer of it)."""
    held = [(case, error) for case, _, error in published_errors() if case["part"] == "held-out"]
    worst, worst_error = min(((c, e) for c, e in held if "GeForce" in c["device"]), key=lambda ce: ce[1])
    network = {"bert_base_squad": "BERT-base", "bert_large_squad": "BERT-large", "resnet50": "ResNet-50"}
    return {
        "what": "held-out rows of the Lambda benchmark's published throughputs "
        "(resources/published/gpu_throughputs.json)",
        **_figures([e for _, e in held]),
        "gpus": len({c["device"] for c, _ in held}),
        "geforce_worst": {
            "error": round(worst_error, 3),
            "what": f"{network.get(worst['benchmark'], worst['benchmark'])} in {worst['precision'].split('_')[0]} "
            f"on the {worst['device'].replace('NVIDIA GeForce ', '')}",
        },
    }


def document() -> dict[str, Any]:
    steps = ", ".join(str(len(cases(path))) for path in SUITES)
    return {
        "about": "How close TrainRig's GPU step model comes on recorded steps, held out but for the seeded halves a "
        "few constants were fitted on, by what bounds the step, and on the published throughputs it was not "
        "fitted on (benchmarks/step_accuracy.py --write; docs/accuracy.md). Error: predicted / measured - 1.",
        "source": f"benchmarks/gpu_suite.py on {recorded_on()} ({steps} training steps: without the fp16 steps "
        "whose optimizer GradScaler skipped, benchmarks/fp16_skips.py), PyTorch 2.11 + CUDA 13, 2026-11-26 and 27: "
        + ", ".join(f"tests/fixtures/gpu/{p.name}" for p in SUITES),
        # the words the step's tooltip and the report quote: which GPUs recorded the steps
        "recorded_on": recorded_on(),
        "groups": groups(),
        "published": published(),
    }


def main() -> int:
    doc = document()
    for g in doc["groups"].values():
        print(
            f"{g['what']}: {g['within_25']} of {g['steps']} within 25 %, mean |error| {g['mean_abs_error']:.1%}, "
            f"median {g['median_error']:+.1%}"
        )
    if "--write" in sys.argv:
        OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
        return 0
    current = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    held = all(current.get(k) == doc[k] for k in ("groups", "published"))
    print(f"{OUT.relative_to(ROOT)} {'holds these' if held else 'is out of date: run with --write'}")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
