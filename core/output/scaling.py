"""Process scaling (``experiment --processes 1,2,4``): the same workload trained at each process
count, the measured speed-ups and training-time cut per doubling beside the sizing's prediction for
that many devices and Wünsche 2016's published cuts.

Wünsche 2016, section IV.C (GPU-Cluster), citing Shi et al. 2016 [8]: doubling the GPUs cut the
training time by 35 % in CNTK and MXNet, 28 % in Caffe and 10 % in Torch and TensorFlow. With a cut
c per doubling, N devices are expected to take t1 × (1 − c)^log2(N) (``core.estimate.timing.
scaled_time``, the sizing's own ``scaling_model: wuensche-*``)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.estimate.timing import WUENSCHE_DOUBLING_CUT, scaled_time
from core.units import fmt_seconds

SOURCE = (
    "Wünsche 2016, §IV.C GPU-Cluster (after Shi et al. 2016): doubling the GPUs cut training time by "
    "35 % (CNTK, MXNet), 28 % (Caffe), 10 % (Torch, TensorFlow)"
)
FRAMEWORK_NAMES = {"cntk": "CNTK", "mxnet": "MXNet", "caffe": "Caffe", "torch": "Torch", "tensorflow": "TensorFlow"}


def published_cuts() -> dict[str, float]:
    """Wünsche's cut per doubling by framework group, largest first: {"CNTK/MXNet": 0.35, …};
    read from the sizing's ``WUENSCHE_DOUBLING_CUT`` so both say the same."""
    groups: dict[float, list[str]] = {}
    for key, cut in WUENSCHE_DOUBLING_CUT.items():
        groups.setdefault(cut, []).append(FRAMEWORK_NAMES[key.removeprefix("wuensche-")])
    return {"/".join(names): cut for cut, names in sorted(groups.items(), reverse=True)}


def speed_up(t1_s: float, tn_s: float) -> float:
    """How many times faster N processes trained than one (t1 / tN)."""
    return t1_s / tn_s


def cut_per_doubling(t_from_s: float, t_to_s: float, n_from: int, n_to: int) -> float:
    """The training-time cut per doubling of the process count that takes ``t_from_s`` at
    ``n_from`` to ``t_to_s`` at ``n_to``: 1 − (t_to / t_from)^(1 / log2(n_to / n_from)), the inverse
    of Wünsche's t × (1 − c)^log2(N). Negative: more processes were slower."""
    if n_to <= n_from:
        raise ValueError(f"a doubling goes to more processes: {n_from} → {n_to}")
    return 1 - (t_to_s / t_from_s) ** (1 / math.log2(n_to / n_from))


def wuensche_expected(t1_s: float, n: int) -> dict[str, float]:
    """The training time each published cut expects at ``n`` devices from the measured one-device
    time ``t1_s``, by framework group."""
    key = {cut: k for k, cut in WUENSCHE_DOUBLING_CUT.items()}
    return {group: scaled_time(t1_s, n, key[cut]) for group, cut in published_cuts().items()}


@dataclass(frozen=True)
class ScalingRow:
    processes: int
    status: str  # the run's: finished, failed, cancelled
    ranks: int  # ranks that reported (1: a plain run)
    threads: int | None  # PyTorch threads per process
    training_time_s: float | None
    epoch_s: float | None  # mean time of an epoch
    step_s: float | None  # rank 0's median step of the global batch
    allreduce_share: float | None  # the largest rank's all-reduce over its step (DDP overlaps it: at most)
    speed_up: float | None  # over one process, by training time
    cut_from_previous: float | None  # training-time cut per doubling from the previous count
    predicted_step_s: float | None  # the sizing's step for this many devices
    predicted_speed_up: float | None
    prediction_note: str  # why there is no prediction, or what it is of
    wuensche_s: dict[str, float] = field(default_factory=dict)  # expected training time by framework group


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(float(x)) else None


def scaling_rows(
    runs: Sequence[tuple[int, Mapping[str, Any]]],
    predicted_step_s: Mapping[int, float | None],
    notes: Mapping[int, str],
) -> list[ScalingRow]:
    """One row per (process count, stored run record: status, metrics, threads), in that order.
    ``predicted_step_s``: the sizing's step at each count (None: not modelled, ``notes`` says why).
    Speed-ups and Wünsche's expectations are taken from the 1-process run's training time."""
    base = next((r for n, r in runs if n == 1 and r.get("status") == "finished"), None)
    t1 = _number(((base or {}).get("metrics") or {}).get("training_time_s"))
    p1 = predicted_step_s.get(1)
    rows: list[ScalingRow] = []
    previous: tuple[int, float] | None = None
    for n, record in runs:
        m = record.get("metrics") or {}
        done = record.get("status") == "finished"
        t = _number(m.get("training_time_s")) if done else None
        ranks = m.get("ranks") or []
        shares = [s for s in (_number(r.get("allreduce_share")) for r in ranks) if s is not None]
        epochs = [e for e in (_number(x) for x in m.get("epoch_s") or []) if e is not None]
        pn = predicted_step_s.get(n)
        rows.append(
            ScalingRow(
                processes=n,
                status=str(record.get("status", "not run")),
                ranks=len(ranks) if ranks else (1 if done else 0),
                threads=record.get("threads"),
                training_time_s=t,
                epoch_s=statistics.fmean(epochs) if done and epochs else None,
                step_s=_number(m.get("median_step_s")) if done else None,
                allreduce_share=max(shares) if shares else None,
                speed_up=speed_up(t1, t) if t1 and t else None,
                cut_from_previous=cut_per_doubling(previous[1], t, previous[0], n) if previous and t else None,
                predicted_step_s=pn,
                predicted_speed_up=p1 / pn if p1 and pn else None,
                prediction_note=notes.get(n, ""),
                wuensche_s=wuensche_expected(t1, n) if t1 else {},
            )
        )
        if t is not None:
            previous = (n, t)
    return rows


def verdict(rows: Sequence[ScalingRow]) -> str:
    """The measured cut per doubling, from one process to the most that finished, against the
    published range (Torch/TensorFlow's 10 % to CNTK/MXNet's 35 %)."""
    cuts = published_cuts()
    lo, hi = min(cuts.values()), max(cuts.values())
    base = next((r for r in rows if r.processes == 1 and r.training_time_s), None)
    top = max((r for r in rows if r.processes > 1 and r.training_time_s), key=lambda r: r.processes, default=None)
    if base is None or top is None or base.training_time_s is None or top.training_time_s is None:
        return "no verdict: a finished 1-process run and a finished run of more processes are needed"
    c = cut_per_doubling(base.training_time_s, top.training_time_s, 1, top.processes)
    text = (
        f"measured cut per doubling 1 → {top.processes} processes: {c:+.0%} "
        f"(training time {fmt_seconds(base.training_time_s)} → {fmt_seconds(top.training_time_s)}); "
        f"published {lo:.0%}–{hi:.0%}"
    )
    shown = round(c, 2)  # judged as printed: a +10% cut is Torch's 10 %, not below it
    if shown < lo:
        return text + ": below the published range" + (" (more processes were slower)" if c < 0 else "")
    if shown > hi:
        return text + ": above the published range"
    closest = min(cuts, key=lambda g: abs(cuts[g] - c))
    return text + f": within the published range, closest to {closest} ({cuts[closest]:.0%})"


def scaling_text(rows: Sequence[ScalingRow]) -> str:
    """The table as the command prints it, the notes on the sizing's prediction under it."""
    groups = list(published_cuts())
    head = (
        f"{'procs':>5} {'ranks':>5} {'threads':>7} {'status':>9} {'time':>9} {'epoch':>9} {'step':>9} {'speed-up':>8} "
        f"{'cut/2×':>7} {'all-reduce':>10} {'sizing step':>11} {'sizing ×':>8}  Wünsche: "
        + " / ".join(f"{g} {published_cuts()[g]:.0%}" for g in groups)
    )
    lines = [head]

    def s(x: float | None) -> str:
        return fmt_seconds(x) if x is not None else "—"

    for r in rows:
        lines.append(
            f"{r.processes:>5} {r.ranks:>5} {r.threads if r.threads is not None else '—':>7} {r.status:>9} "
            f"{s(r.training_time_s):>9} {s(r.epoch_s):>9} "
            f"{s(r.step_s):>9} {_times(r.speed_up):>8} {_pct(r.cut_from_previous):>7} {_share(r.allreduce_share):>10} "
            f"{s(r.predicted_step_s):>11} {_times(r.predicted_speed_up):>8}  "
            + (" / ".join(s(r.wuensche_s.get(g)) for g in groups) if r.wuensche_s else "—")
        )
    notes = sorted({(r.processes, r.prediction_note) for r in rows if r.prediction_note})
    lines += [f"  sizing, {n} process(es): {note}" for n, note in notes]
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return f"{x:+.0%}" if x is not None else "—"


def _share(x: float | None) -> str:
    return f"{x:.0%}" if x is not None else "—"


def _times(x: float | None) -> str:
    return f"{x:.2f}×" if x is not None else "—"


def summary_json(rows: Sequence[ScalingRow], run_ids: Sequence[int | None]) -> dict[str, Any]:
    """The experiment's stored summary (``--json`` prints it): rows, verdict, the published cuts
    and their source."""
    return {
        "factor": "processes",
        "run_ids": list(run_ids),
        "rows": [r.__dict__ for r in rows],
        "verdict": verdict(rows),
        "published_cuts": published_cuts(),
        "source": SOURCE,
    }
