"""What memory alone decides of a sized candidate: its capacity, the micro-batch that fits and whether the
workload fits at all (core/estimate/sizing.py size_candidate prices the step on top). A finding that tries
other batches, GPU counts or sharding for a candidate that does not fit asks this alone: a fifth of a
sizing's time, the step time being the rest."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from core.estimate.memory import (
    MemoryBreakdown,
    PhaseLines,
    breakdown_at,
    gpu_workspace_bytes,
    largest_batch_per_device,
    phase_lines,
)
from core.estimate.timing import accumulation_steps
from core.hardware.catalogue import GIB, DeviceSpec
from core.hardware.platforms import PlatformChoice, platform_for
from core.spec.large import check_degrees
from core.spec.workload import Workload


@dataclass(frozen=True)
class MemoryPlan:
    """What memory alone decides of a candidate (no step time): its capacity, micro-batch and whether it fits."""

    kind: str  # "cpu" or "gpu" (accelerators hold their own memory, as GPUs do)
    runtime: str  # whose runtime memory counts: "cpu", "gpu" (CUDA's context) or "accelerator" (unknown)
    capacity: int | None
    choice: PlatformChoice | None  # the platform a bought device comes in (None: this machine's)
    ram_note: str
    per_device: int
    micro_batch: int
    micro_note: str
    accumulation_steps: int
    memory: MemoryBreakdown
    fits: bool | None
    layout_problem: str | None
    largest: int | None


def memory_plan(workload: Workload, device: DeviceSpec, count: int, host_ram_bytes: int | None = None) -> MemoryPlan:
    """The memory side of size_candidate for ``count`` × ``device`` (``host_ram_bytes``: this machine's RAM, the
    capacity of its own CPU)."""
    t, m, d = workload.training, workload.analysis, workload.data
    kind = "cpu" if device.kind == "cpu" else "gpu"
    # the runtime's own memory: CUDA's context on NVIDIA GPUs; unknown on TPUs and Trainium
    runtime = kind if kind == "cpu" or device.runs_cuda else "accelerator"
    nodes = max(t.nodes, 1)
    devices = count * nodes
    reserve = t.reserve_percent / 100
    target_bytes = 8 * (m.output_elems // max(1, m.output_shape[-1]))  # int64 class index per output row

    @functools.cache
    def lines_for(accumulating: bool) -> PhaseLines:
        return phase_lines(
            m,
            precision=t.precision,
            optimizer=t.optimizer,
            device_kind=kind,
            devices=devices,
            sharding=t.sharding,
            checkpointing=t.checkpointing,
            target_bytes_per_sample=target_bytes,
            workspace_bytes=gpu_workspace_bytes(device.extra.get("compute_capability")) if device.kind == "gpu" else 0,
            accumulating=accumulating,
            large=t.large,
            nodes=nodes,
        )

    choice = None if device.is_this_machine else platform_for(device, count)
    ram_note = ""
    if kind == "gpu":
        capacity = device.memory_bytes
    elif choice is not None:  # a CPU to buy: the RAM of the machine it is bought in, not this one's
        capacity = choice.platform.ram_gb * GIB
        ram_note = f"RAM: the {choice.platform.ram_gb:,} GB its platform ({choice.platform.name}) is priced with"
    else:
        capacity = host_ram_bytes
    per_device = -(-t.batch_size // devices)
    micro, micro_note = micro_batch_for(lines_for, per_device, t.micro_batch_size, capacity, runtime, reserve)
    steps_acc = accumulation_steps(per_device, micro)
    mem = breakdown_at(lines_for(steps_acc > 1), micro, runtime, reserve)
    fits = None if capacity is None else mem.total <= capacity
    layout_problem = check_degrees(t.large, devices)
    if layout_problem is not None:  # the model-parallel groups do not divide these devices
        fits = False
    largest = None
    if capacity is not None:  # held at once, without accumulation; never more than the dataset
        largest = min(largest_batch_per_device(lines_for(False), capacity, runtime, reserve) * devices, d.samples)
    return MemoryPlan(
        kind,
        runtime,
        capacity,
        choice,
        ram_note,
        per_device,
        micro,
        micro_note,
        steps_acc,
        mem,
        fits,
        layout_problem,
        largest,
    )


def micro_batch_for(
    lines_for: Callable[[bool], PhaseLines],
    per_device: int,
    wanted: int | None,
    capacity: int | None,
    runtime: str,
    reserve: float,
) -> tuple[int, str]:
    """The micro-batch per device and why: the workload's own ``micro_batch_size`` (at most the
    batch per device); else the whole batch per device when it fits at once or the capacity is
    unknown; else the largest micro-batch that fits with the gradients kept between micro-steps;
    1 when not even one sample fits (the candidate does not fit)."""
    if wanted is not None:
        return min(wanted, per_device), "set in the workload"
    if capacity is None or breakdown_at(lines_for(False), per_device, runtime, reserve).total <= capacity:
        return per_device, ""
    largest = largest_batch_per_device(lines_for(True), capacity, runtime, reserve)
    if largest < 1:
        return 1, "not even one sample fits"
    return largest, "the largest that fits"
