"""The GPU host's reference prices (core/estimate/host.py REFERENCE: per dispatched operator and per
step) as the least-squares fit of the recorded steps without convolutions that the host bounds on
the reference host: the shared fit set's seed MLP and BERT-base b64 bf16 on an H100 SXM host
(tests/fixtures/gpu/h100-sxm-fit-set.jsonl, the protocol of the shared measurements). The fit runs
the whole step model — the kernel model, the host's dispatch op by op and where it leaves the device
waiting (core/estimate/host.py device_wait) — and minimises the squared relative errors
(Gauss-Newton on numerical derivatives; the step is piecewise linear in both prices). Then every
other recorded step, none of which was fitted, is printed against the fitted prices — the fit set's
small CNN among them.

    python3 benchmarks/fit_host_gpu.py
    python3 benchmarks/fit_host_gpu.py --cudnn   # also the price of a cuDNN convolution call

The third price, a call of cuDNN's convolutions (``cudnn_call_s``), is fitted with ``--cudnn``: for
each price from 0 to 80 µs the two others are refitted as above, and the one whose seeded half of a
lent H200's convolutional networks (benchmarks/accuracy_suite_recorded.py) has the least squared log
error is kept; the other half is held out.

``--suites`` (the committed prices since 2026-11-26, an eighth session): all three prices fitted together
on a seeded half of the steps two H100 leases measured each at its own host probe (the third and fourth
suites, benchmarks/accuracy_suite_recorded.py --calibrated: 295 steps, the host-bound among them from
seed MLPs to BERT, small CNNs and eager attention), minimising the squared log errors (Gauss-Newton);
held out on the other half, a fresh H200 lease's 133 random architectures, the two first suites and the
fit set. The fit set's two steps alone, above, pin two prices on one MLP and one transformer.

The figures go in docs/accuracy.md ("The host's price per operator").
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy_suite_recorded as suites  # noqa: E402
from accuracy_cuda_recorded import predict, recorded_cases  # noqa: E402
from accuracy_suite_recorded import FIT_SEED, H100_FOURTH, H100_FRESH, conv_halves, recorded  # noqa: E402
from accuracy_suite_recorded import cases as suite_cases  # noqa: E402
from fitting import least_log_error, seeded_halves  # noqa: E402

import core.estimate.pass_work as pass_work  # noqa: E402
from core.estimate.host import REFERENCE  # noqa: E402

# the fit set's lines the host bounds without a convolution (its ResNet-50 lines are the device's: they say
# nothing of the host; its small CNN's two convolutions would mix the cuDNN call's price into the other two)
FIT = {("seed-mlp", "fit set")}
FIT_BERT = ("bert-base", 64)


def is_fit(case: dict) -> bool:
    return (case["model"], case["set"]) in FIT or (
        (case["model"], case["batch"]) == FIT_BERT and case["set"] == "fit set"
    )


@contextmanager
def prices(per_operator: float, per_step: float, per_cudnn: float | None = None) -> Iterator[None]:
    """The step model with these reference host prices (seconds), restored after."""
    saved = pass_work.OVERHEAD_PER_OPERATOR_S, pass_work.OVERHEAD_PER_STEP_S, pass_work.PER_CUDNN_CALL_S
    pass_work.OVERHEAD_PER_OPERATOR_S = per_operator
    pass_work.OVERHEAD_PER_STEP_S = {**saved[1], "gpu": per_step}
    if per_cudnn is not None:
        pass_work.PER_CUDNN_CALL_S = per_cudnn
    suites._speed.cache_clear()  # a probe's host speed is solved through the same prices
    try:
        yield
    finally:
        pass_work.OVERHEAD_PER_OPERATOR_S, pass_work.OVERHEAD_PER_STEP_S, pass_work.PER_CUDNN_CALL_S = saved
        suites._speed.cache_clear()


# the suites whose every line carries its own host probe, measured on H100 hosts: the fit's half of each
PROBED_H100 = (H100_FRESH, H100_FOURTH)


def probed_halves(seed: int = FIT_SEED) -> dict[Path, tuple[list[dict], list[dict]]]:
    """Each probed H100 suite's (fit half, held-out half) of its lines, by a seeded shuffle."""
    return {path: seeded_halves(recorded(path), seed) for path in PROBED_H100}


def suite_log_errors(lines: dict[Path, list[dict]], prices_s: Sequence[float]) -> np.ndarray:
    """log(predicted / measured) of every line, each at its own probe's host speed, at ``prices_s``
    (per operator, per step, per cuDNN call)."""
    with prices(*prices_s):
        return np.log1p([r["error"] for path, ls in lines.items() for r in suite_cases(path, ls, calibrated=True)])


@lru_cache(maxsize=1)
def _fit_set_probe() -> dict:
    """The fit set's seed MLP step: the host probe's workload, on the reference host."""
    (probe,) = [c for c in recorded_cases() if (c["model"], c["set"]) == ("seed-mlp", "fit set")]
    return probe


def anchored(ratios: Sequence[float]) -> np.ndarray:
    """The prices (per operator, per step, per cuDNN call) with per step and per cuDNN call at ``ratios`` ×
    the per-operator price, scaled so that the reference host is still the fit set's: its seed MLP step
    (the host probe's workload) predicted at the speed of 1 as it was measured there (a few secant turns:
    the step is about linear in the prices)."""
    probe = _fit_set_probe()

    def miss(per_operator: float) -> float:
        with prices(per_operator, per_operator * ratios[0], per_operator * ratios[1]):
            return predict(probe)[1] / probe["step_ms"] - 1

    a, b = 10e-6, 20e-6
    fa, fb = miss(a), miss(b)
    for _ in range(6):
        a, fa, b = b, fb, b - fb * (b - a) / (fb - fa)
        fb = miss(b)
        if abs(fb) < 1e-9:
            break
    return np.array([b, b * ratios[0], b * ratios[1]])


def fit_suites(seed: int = FIT_SEED) -> tuple[float, float, float]:
    """(per operator, per step, per cuDNN call) seconds minimising the squared log errors of the probed
    H100 suites' fit halves, anchored to the fit set's reference host (Gauss-Newton on the two ratios to
    the per-operator price, numerical derivatives, from the fit set's prices)."""
    lines = {path: halves[0] for path, halves in probed_halves(seed).items()}
    x = np.array([0.320e-3 / 17.68e-6, 54e-6 / 17.68e-6])  # the fit set's ratios (before 2026-11-26, an eighth session)
    steps = np.array([0.1, 0.01])
    for _ in range(20):
        r = suite_log_errors(lines, anchored(x))
        jac = np.column_stack(
            [(suite_log_errors(lines, anchored(x + np.eye(2)[i] * steps[i])) - r) / steps[i] for i in range(2)]
        )
        delta = np.linalg.lstsq(jac, -r, rcond=None)[0]
        x = np.maximum(x + delta, 0.0)
        if np.all(np.abs(delta) < steps * 1e-2):
            break
    return tuple(float(v) for v in anchored(x))  # type: ignore[return-value]


def relative_errors(cases: list[dict], per_operator: float, per_step: float) -> np.ndarray:
    with prices(per_operator, per_step):
        return np.array([predict(c)[1] / c["step_ms"] - 1 for c in cases])


def fit(cases: list[dict], start: tuple[float, float] = (20e-6, 0.5e-3)) -> tuple[float, float]:
    """(per operator, per step) seconds minimising the squared relative errors of ``cases``."""
    x = np.array(start)
    steps = np.array([1e-7, 1e-5])
    for _ in range(20):
        r = relative_errors(cases, *x)
        jac = np.column_stack(
            [(relative_errors(cases, *(x + np.eye(2)[i] * steps[i])) - r) / steps[i] for i in range(2)]
        )
        delta = np.linalg.lstsq(jac, -r, rcond=None)[0]
        x = np.maximum(x + delta, 0.0)
        if np.all(np.abs(delta) < steps * 1e-3):
            break
    return float(x[0]), float(x[1])


def fit_cudnn(seed: int = FIT_SEED) -> tuple[float, float, float]:
    """(per operator, per step, per cuDNN call) seconds: for each price of a cuDNN call (0–80 µs by
    2 µs) the other two refitted on the fit set's host-bound steps, and of those the one whose fit
    half of the H200 suite's convolutional networks has the least squared log error."""
    fitted = [c for c in recorded_cases() if is_fit(c)]
    half, _ = conv_halves(recorded(), seed)

    def refit(cudnn: float) -> tuple[float, float]:
        with prices(pass_work.OVERHEAD_PER_OPERATOR_S, pass_work.OVERHEAD_PER_STEP_S["gpu"], cudnn):
            return fit(fitted)

    def errors(cudnn: float) -> list[float]:
        with prices(*refit(cudnn), cudnn):
            return [r["error"] for r in suite_cases(lines=half)]

    cudnn = least_log_error([step * 2e-6 for step in range(41)], errors)
    return (*refit(cudnn), cudnn)


def held_out_suites(seed: int = FIT_SEED) -> dict[str, list[float]]:
    """Each held-out set's errors at the committed prices: the probed H100 suites' other halves, the fresh
    H200 lease, the first H200 and H100 suites (sized at their lease's probe) and the fifth H100 lease."""
    errors = {
        f"{path.name}, held-out half": [r["error"] for r in suite_cases(path, halves[1], calibrated=True)]
        for path, halves in probed_halves(seed).items()
    }
    for path in (suites.H200_FRESH, suites.DEFAULT, suites.H100_SUITE, suites.H100_FIFTH):
        errors[path.name] = [r["error"] for r in suite_cases(path, calibrated=True)]
    return errors


def _prices_line(label: str, fitted: Sequence[float]) -> str:
    """The three prices ``fitted`` against the committed ones, one line."""
    per_operator, per_step, cudnn = fitted
    return (
        f"{label}: {per_operator * 1e6:.2f} µs per operator, {per_step * 1e3:.3f} ms per step, {cudnn * 1e6:.1f} µs "
        f"per cuDNN call (committed: {REFERENCE['per_operator_s'] * 1e6:.2f} µs, "
        f"{REFERENCE['per_step_s']['gpu'] * 1e3:.3f} ms, {REFERENCE['cudnn_call_s'] * 1e6:.1f} µs)"
    )


def _held_line(name: str, errors: Sequence[float]) -> str:
    within, mean = sum(abs(e) <= 0.25 for e in errors), statistics.mean(map(abs, errors))
    return f"| {name} | {len(errors)} | {within} ({within / len(errors):.0%}) | {mean:.1%} |"


def main() -> None:
    if "--suites" in sys.argv:
        print(_prices_line("fit on the probed H100 suites' halves", fit_suites()) + "\n")
        print("| held out | steps | within 25 % | mean \\|error\\| |\n|---|---|---|---|")
        for name, errors in held_out_suites().items():
            print(_held_line(name, errors))
        print()
    if "--cudnn" in sys.argv:  # the earlier fit: the fit set's two steps and the first H200's CNN half
        print(_prices_line("fit on the fit set and the H200's CNN half", fit_cudnn()))
        _, held = conv_halves(recorded())
        print(_held_line("H200 convolutional networks, held-out half", [r["error"] for r in suite_cases(lines=held)]))
        print()
    cases = recorded_cases()
    fitted = [c for c in cases if is_fit(c)]
    per_operator, per_step = fit(fitted)
    print(
        f"fit on {len(fitted)} host-bound steps of the fit set: {per_operator * 1e6:.2f} µs per operator, "
        f"{per_step * 1e3:.3f} ms per step (committed: {pass_work.OVERHEAD_PER_OPERATOR_S * 1e6:.2f} µs, "
        f"{pass_work.OVERHEAD_PER_STEP_S['gpu'] * 1e3:.3f} ms)\n"
    )
    print("| case | set | measured | predicted | error | part |")
    print("|---|---|---|---|---|---|")
    held = []
    with prices(per_operator, per_step):
        for c in cases:
            ms = predict(c)[1]
            error = ms / c["step_ms"] - 1
            part = "fit" if is_fit(c) else "held out"
            if part == "held out":
                held.append(abs(error))
            print(
                f"| {c['model']} b{c['batch']} {c['optimizer']} {c['precision']} | {c['set']} | "
                f"{c['step_ms']:.2f} ms | {ms:.2f} ms | {error:+.0%} | {part} |"
            )
    print(
        f"\nheld out: {sum(e <= 0.25 for e in held)} of {len(held)} within 25 %, mean |error| "
        f"{statistics.mean(held):.1%}"
    )


if __name__ == "__main__":
    main()
