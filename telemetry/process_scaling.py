"""The process-scaling experiment's side on this machine (``experiment --processes 1,2,4``): which
counts this machine can run, the sizing's prediction for that many devices, and how each count is
launched (1: a plain run; more: torchrun with DistributedDataParallel, gloo on the CPU, NCCL on GPUs)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.errors import TrainRigError
from core.hardware.candidates import THIS_MACHINE
from core.spec.experiment import Factor, Variant
from core.spec.workload import Workload
from core.storage.store import Store
from telemetry.candidates import recommend_here
from telemetry.experiments import VariantSetup
from telemetry.machine import probe_machine
from telemetry.training import Launch, prediction_for

MAX_PROCESSES = 256
NO_CPU_MODEL = (
    "not modelled: the sizing sizes N devices, each with its own cores or GPU, not N processes sharing this CPU's "
    "cores (nor gloo's all-reduce through shared memory)"
)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), which the gloo ranks share."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def parse_process_counts(text: str, device: str) -> list[int]:
    """``"1,2,4"`` → [1, 2, 4], refused with a TrainRigError before anything runs when a count is
    not a whole number, under 1, repeated, when 1 (the baseline) is missing, or when it is more
    than this machine's CPUs (gloo on the CPU) or GPUs (NCCL: one GPU a rank)."""
    counts = []
    for part in str(text).split(","):
        try:
            counts.append(int(part.strip()))
        except ValueError:
            raise TrainRigError(
                f"--processes takes process counts such as 1,2,4; {part.strip()!r} is not one"
            ) from None
    if any(n < 1 for n in counts):
        raise TrainRigError(f"--processes: a count is 1 or more; got {text}")
    if len(set(counts)) != len(counts):
        raise TrainRigError(f"--processes repeats a count: {text}")
    if 1 not in counts or len(counts) < 2:
        raise TrainRigError(f"--processes compares 1 process (the baseline) with more, e.g. 1,2; got {text}")
    counts.sort()
    if device == "cpu":
        limit, what = usable_cpus(), "CPUs this process may use (gloo runs one process a CPU at most here)"
    else:
        gpus = len(probe_machine().gpus)
        limit, what = (gpus, "GPUs NVML sees (NCCL runs one process a GPU)") if gpus else (MAX_PROCESSES, "")
    if counts[-1] > min(limit, MAX_PROCESSES):
        raise TrainRigError(f"--processes {counts[-1]} is more than the {min(limit, MAX_PROCESSES)} {what}".rstrip())
    return counts


def process_factor(document: Mapping[str, Any], counts: Sequence[int]) -> tuple[Factor, tuple[Variant, ...]]:
    """The factor and its values: the same workload document at every count (same global batch,
    same seed), so the counts differ only in the processes."""
    factor = Factor("processes", tuple(counts))
    return factor, tuple(Variant(n, f"{n} process" + ("es" if n > 1 else ""), dict(document)) for n in counts)


def scaling_predictions(
    workload: Workload, counts: Sequence[int], device: str, store: Store | None
) -> tuple[dict[int, dict[str, Any] | None], dict[int, str]]:
    """The sizing's prediction on this machine for each count as that many devices (the pipeline of
    `size`, with this machine's calibration), and a note per count saying what it is of or why
    there is none: N CPU processes sharing one CPU are not a model the sizing has."""
    sized = replace(workload, hardware=replace(workload.hardware, counts=tuple(counts)))
    rec, *_ = recommend_here(sized, [THIS_MACHINE], store)
    here = {c.count: c for c in rec.result.candidates if c.device.is_this_machine}
    kind = next((c.device.kind for c in here.values()), None)
    predictions: dict[int, dict[str, Any] | None] = {}
    notes: dict[int, str] = {}
    for n in counts:
        c = here.get(n)
        if device == "cpu" and kind != "cpu":
            predictions[n], notes[n] = None, "this machine is sized as its GPU; the runs are on the CPU"
        elif device != "cpu" and kind == "cpu":
            predictions[n], notes[n] = None, "this machine's GPU is not in the catalogue: the sizing has no GPU to size"
        elif c is None:  # a CPU is sized as one device
            predictions[n], notes[n] = None, NO_CPU_MODEL
        else:
            predictions[n] = {**prediction_for(c), "model_key": workload.model_key}
            notes[n] = f"{n} × {c.device.name}" + (", all-reduce over its interconnect" if n > 1 else "")
    return predictions, notes


def process_setup(predictions: Mapping[int, dict[str, Any] | None], device: str) -> VariantSetup:
    """How each count runs: 1 as a plain run; more through torchrun, on the CPU each process given
    its share of the CPUs as PyTorch threads (torchrun's default is 1 thread each)."""
    cpus = usable_cpus()

    def setup(variant: Variant, _prediction: dict[str, Any] | None) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        n = int(variant.value)
        if n == 1:
            return predictions.get(1), {}
        extra: dict[str, Any] = {"launch": Launch(n)}
        if device == "cpu" and "OMP_NUM_THREADS" not in os.environ:
            extra["env"] = {"OMP_NUM_THREADS": str(max(1, cpus // n))}
        return predictions.get(n), extra

    return setup
