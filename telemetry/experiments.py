"""Running a one-factor experiment: each value's workload sized on this machine and trained in turn
by the trainer (each a stored run with its telemetry), repeat r of every value with seed r, so the
values differ only in the factor; then the summary table (core.output.experiment_summary)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.output.experiment_summary import ExperimentRow, summarise
from core.spec.experiment import Factor, Variant
from core.storage.store import Store, this_host
from telemetry.runs import Run
from telemetry.training import size_here, trainer_spec, training_run

# (a value, the sizing's prediction on this machine) → (the prediction its runs are compared with,
# more training_run arguments)
VariantSetup = Callable[[Variant, dict[str, Any] | None], tuple[dict[str, Any] | None, Mapping[str, Any]]]


@dataclass(frozen=True)
class ExperimentPlan:
    name: str
    factor: Factor
    variants: tuple[Variant, ...]
    repeats: int = 1
    epochs: int | None = None
    samples: int | None = None
    device: str = "cpu"


@dataclass
class ExperimentOutcome:
    plan: ExperimentPlan
    run_ids: list[int | None] = field(default_factory=list)
    results: list[tuple[Any, dict[str, Any], dict[str, list[float]]]] = field(default_factory=list)
    cancelled: bool = False

    @property
    def rows(self) -> list[ExperimentRow]:
        return summarise(self.plan.factor.values, self.results)


def run_record(r: Run) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """A finished run as the summary reads it (status, metrics, measured, prediction) and its
    sampled columns."""
    record = {
        "status": r.status,
        "metrics": r.metrics or {},
        "measured": r.measured(),
        "prediction": r.prediction,
        "threads": (r.started or {}).get("threads"),  # PyTorch's threads in the (first) process
    }
    cols: dict[str, list[float]] = {}
    if r.sampler is not None:
        _t, v = r.sampler.buffer.snapshot()
        for j, c in enumerate(r.sampler.columns):
            cols[c] = [float(x) for x in v[:, j]] if len(v) else []
    return record, cols


def run_experiment(
    python: str,
    plan: ExperimentPlan,
    store: Store | None,
    *,
    rate_hz: float,
    wait: Callable[[Run], None],
    on_run: Callable[[int, int, Variant, int, Run], None] = lambda *_: None,
    run_kwargs: Mapping[str, Any] | None = None,
    setup: VariantSetup | None = None,
) -> ExperimentOutcome:
    """Train every value ``plan.repeats`` times, one run after another. ``wait(run)`` blocks until
    the run ends (and may cancel it); a cancelled run stops the experiment. ``on_run(i, n, variant,
    repeat, run)`` is called as each run starts. ``setup(variant, prediction)`` may replace the
    prediction a value's runs are compared with and add to their ``training_run`` arguments (the
    process scaling: a torchrun launch per process count)."""
    out = ExperimentOutcome(plan)
    total = len(plan.variants) * plan.repeats
    i = 0
    for variant in plan.variants:
        workload, prediction = size_here(variant.document, store)
        extra: Mapping[str, Any] = {}
        if setup is not None:
            prediction, extra = setup(variant, prediction)
        # the plan's epochs and samples for every run, but never over the factor being varied: the Telemetry
        # tab always gives its epochs, and an experiment over epochs trained every value for that many
        epochs = None if plan.factor.path == "training.epochs" else plan.epochs
        samples = None if plan.factor.path == "data.samples" else plan.samples
        for repeat in range(plan.repeats):
            spec = trainer_spec(workload, epochs=epochs, samples=samples, device=plan.device, seed=repeat)
            r = training_run(
                python,
                spec,
                store=store,
                name=f"{plan.name}: {variant.label}" + (f" #{repeat + 1}" if plan.repeats > 1 else ""),
                workload_document=variant.document,
                prediction=prediction,
                rate_hz=rate_hz,
                **{**dict(run_kwargs or {}), **extra},
            )
            i += 1
            on_run(i, total, variant, repeat, r)
            r.start()
            wait(r)
            record, cols = run_record(r)
            out.run_ids.append(r.run_id)
            out.results.append((variant.value, record, cols))
            if r.status == "cancelled":
                out.cancelled = True
                return out
    return out


def summary_dict(factor: str, rows: list[ExperimentRow], run_ids: list[int | None]) -> dict[str, Any]:
    def spread(s: Any) -> dict[str, float] | None:
        return None if s is None else {"mean": s.mean, "sd": s.sd, "n": s.n}

    return {
        "factor": factor,
        "run_ids": run_ids,
        "rows": [
            {
                "value": r.value,
                "runs": r.runs,
                "failed": r.failed,
                "training_time_s": spread(r.training_time_s),
                "accuracy": spread(r.accuracy),
                "macro_f1": spread(r.macro_f1),
                "step_s": spread(r.step_s),
                "predicted_step_s": r.predicted_step_s,
                "training_memory_bytes": spread(r.peak_memory_bytes),
                "predicted_memory_bytes": r.predicted_memory_bytes,
                "resources_mean_max": r.resources,
            }
            for r in rows
        ],
    }


def save_one_factor(
    store: Store | None, plan: ExperimentPlan, outcome: ExperimentOutcome, document: Mapping[str, Any]
) -> tuple[int | None, str, dict[str, Any]]:
    """Record a one-factor experiment with its runs (the Results tab lists it): its id (None
    without a database), its status (finished, failed: a run did not finish, or cancelled) and
    its summary."""
    rows = outcome.rows
    summary = summary_dict(plan.factor.name, rows, outcome.run_ids)
    complete = all(r.runs and not r.failed for r in rows)
    status = "cancelled" if outcome.cancelled else "finished" if complete else "failed"
    plan_doc = {
        "values": list(plan.factor.values),
        "repeats": plan.repeats,
        "device": plan.device,
        "epochs": plan.epochs,
        "samples": plan.samples,
        "workload": dict(document),
    }
    if store is None:
        return None, status, summary
    name = f"{plan.name}: {plan.factor.name}"
    eid = store.save_experiment(
        name, "one-factor", plan.factor.name, plan_doc, outcome.run_ids, summary, status, this_host()
    )
    return eid, status, summary
