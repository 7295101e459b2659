"""The sizing engine: a workload and candidate devices in, memory / compute / time / cost out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.estimate import seed_formulas as seed
from core.estimate.activations import activation_note
from core.estimate.cost import CostEstimate, estimate_cost
from core.estimate.gpu_notes import gpu_kernel_note, kernel_assumptions
from core.estimate.memory import (
    CPU_RUNTIME_BYTES,
    MemoryBreakdown,
)
from core.estimate.memory_plan import memory_plan
from core.estimate.model_states import states_note
from core.estimate.parallel_time import time_note
from core.estimate.pass_work import train_flops_per_sample
from core.estimate.timing import (
    STORAGE_READ_BPS,
    StepTime,
    dataset_bytes_on_disk,
    sample_bytes_on_disk,
    scaled_time,
    step_time,
)
from core.hardware.catalogue import DeviceSpec
from core.hardware.platforms import PlatformChoice
from core.spec.loop import loop_for
from core.spec.workload import Workload
from core.units import fmt_bytes, fmt_seconds
from core.vocabulary import ALGORITHM_VARIABLES, INPUT_DTYPES, PRECISION_BYTES

ENGINE_SOURCE = "TrainRig sizing engine (docs/sizing.md)"


@dataclass(frozen=True)
class CandidateResult:
    device: DeviceSpec
    count: int
    nodes: int
    fits: bool | None  # a micro-batch of one sample or more fits; None: capacity unknown (a CPU's RAM not fixed)
    capacity_bytes: int | None
    memory: MemoryBreakdown
    largest_batch: int | None  # global batch held at once across the devices, at most the dataset
    step: StepTime
    steps_per_epoch: int
    train_time_s: float
    cost: CostEstimate
    meets_deadline: bool | None
    within_budget: bool | None
    assumptions: tuple[str, ...]

    @property
    def micro_batch(self) -> int:
        """Samples per device in one forward/backward pass."""
        return self.memory.batch_per_device

    @property
    def accumulation_steps(self) -> int:
        """Micro-steps per optimizer step (1: no gradient accumulation)."""
        return self.step.accumulation_steps

    @property
    def label(self) -> str:
        """ "NVIDIA A100 80GB SXM × 2 per node × 2 nodes": every device counted (the PDF's summary read "2 ×" of 4)."""
        return f"{self.device.name} × {self.count}" + (f" per node × {self.nodes} nodes" if self.nodes > 1 else "")

    @property
    def per_machine(self) -> int:
        """The devices one host feeds: a node's, or one machine's where the node takes several."""
        return self.cost.platform.per_machine(self.count) if self.cost.platform is not None else self.count

    @property
    def break_even(self) -> tuple[float | None, int | None]:
        """Hours and runs after which owning these devices costs less than renting them; none where they do not
        fit (a candidate that lacked memory read "buying pays off after 2,330 runs")."""
        return (None, None) if self.fits is False else (self.cost.break_even_hours, self.cost.break_even_runs)

    @property
    def buy_or_rent(self) -> str | None:
        """Buy or rent for the expected use (CostEstimate.verdict); None where it does not fit: there is
        nothing to buy or rent (a candidate that lacked memory read "rent · 48,817 runs")."""
        return None if self.fits is False else self.cost.verdict


@dataclass(frozen=True)
class SizingResult:
    workload: Workload
    candidates: tuple[CandidateResult, ...]
    dataset_bytes: int
    dataset_fit: dict[str, object]
    train_flops: float
    seed: dict[str, object]
    notes: tuple[str, ...]


def size_workload(
    workload: Workload,
    devices: Sequence[DeviceSpec],
    *,
    host_ram_bytes: int | None = None,
    calibrated: Mapping[str, Mapping[str, Any]] | None = None,
) -> SizingResult:
    """Size ``workload`` on every device × GPU count of ``workload.hardware.counts``.

    ``host_ram_bytes`` is the RAM of this machine when known (CPU candidates and dataset fit).
    ``calibrated`` maps a device name to its measured rates (``telemetry.calibrate``).
    """
    if not devices:
        raise ValueError("at least one candidate device is needed")
    results = []
    for device in devices:
        counts = workload.hardware.counts if device.kind != "cpu" else (1,)
        for count in counts:
            results.append(size_candidate(workload, device, count, host_ram_bytes, (calibrated or {}).get(device.name)))
    d = workload.data
    dataset = d.samples * (d.features + d.outputs) * INPUT_DTYPES[d.dtype]
    return SizingResult(
        workload=workload,
        candidates=tuple(results),
        dataset_bytes=dataset,
        dataset_fit=dataset_fit(dataset, host_ram_bytes),
        train_flops=float(
            train_flops_per_sample(workload.analysis, workload.training.checkpointing, workload.training.large)
        )
        * d.samples
        * workload.training.epochs,
        seed=seed_figures(workload),  # Hooda's R and T_train: on the recommended candidate (recommend())
        notes=workload.analysis.notes,
    )


def size_candidate(
    workload: Workload,
    device: DeviceSpec,
    count: int,
    host_ram_bytes: int | None = None,
    calibrated: Mapping[str, Any] | None = None,
) -> CandidateResult:
    t, m, d = workload.training, workload.analysis, workload.data
    p = memory_plan(workload, device, count, host_ram_bytes)
    kind, choice, per_device, micro, steps_acc = p.kind, p.choice, p.per_device, p.micro_batch, p.accumulation_steps
    nodes = max(t.nodes, 1)
    devices = count * nodes
    # machines the network joins: a node's devices in several machines (4 × GH200 are four servers) talk over it
    linked = nodes * (choice.machines if choice is not None and kind == "gpu" else 1)
    max_loaders = loader_core_limit(choice, count) if kind == "gpu" else None
    read_bps, read_note = effective_read_bps(workload, host_ram_bytes)
    st = step_time(
        m,
        device,
        batch_per_device=per_device,
        devices=devices,
        nodes=linked,
        precision=t.precision,
        optimizer=t.optimizer,
        checkpointing=t.checkpointing,
        sharding=t.sharding,
        read_bps=read_bps,
        disk_bytes_per_sample=sample_bytes_on_disk(d),
        calibrated=calibrated,
        micro_batch=micro,
        data=d,
        max_loader_cores=max_loaders,
        loop=loop_for(t.loop, d.format),
        host_cpu=choice.platform.cpu if choice is not None and kind == "gpu" else None,
        memory_format=t.memory_format,
        compile_model=t.compile,
        cudnn_tf32=t.cudnn_tf32,
        cudnn_benchmark=t.cudnn_benchmark,
        large=t.large,
    )
    steps = math.ceil(d.samples / t.batch_size)
    total = st.step_s * steps * t.epochs
    assumptions = [
        f"efficiency {st.efficiency:.0%} of the {t.precision} peak {st.peak_flops / 1e12:.3g} TFLOP/s"
        + (
            f" ({calibrated.get('note', 'calibrated')})"
            if calibrated and set(calibrated) - {"run_scale", "runs"}
            else gpu_kernel_note(device, m)
        )
        + (
            "; measured above the estimated peak (cores × clock × FLOP per cycle): the clock or FLOP per"
            " cycle it assumes is below what this processor reaches"
            if st.efficiency > 1
            else ""
        ),
        f"global batch {t.batch_size} split over {devices} device(s): {per_device} per device"
        + (
            f"; {count} per node in {choice.machines} × {choice.platform.name}, joined by the network"
            if choice is not None and kind == "gpu" and choice.machines > 1
            else ""
        ),
        read_note,
        *([st.input_note] if st.input_note else []),
        *host_assumptions(st),
        *([p.ram_note] if p.ram_note else []),
        *([f"cannot run this layout: {p.layout_problem}"] if p.layout_problem else []),
        *states_note(t.large, p.memory.offload_cpu_bytes, p.memory.offload_nvme_bytes, count),
    ]
    assumptions += kernel_assumptions(device, m, t, micro)
    if max_loaders is not None and st.loader_cores_needed > st.loader_cores and st.loader_cores == max_loaders:
        assert choice is not None
        assumptions.append(
            f"the {choice.platform.name}'s {choice.platform.cores} cores leave {max_loaders} loader cores per GPU, "
            f"fewer than the {st.loader_cores_needed:.1f} that keep up: decoding paces the step"
        )
    if steps_acc > 1 or p.micro_note:
        last = per_device - (steps_acc - 1) * micro
        assumptions.append(
            f"micro-batch {micro} × {steps_acc} accumulation steps per device"
            + (f" (the last micro-batch {last})" if last != micro else "")
            + f" ({p.micro_note}): memory is that of one micro-batch, with the gradients kept between "
            "micro-steps; each micro-step pays its own compute, memory-bound work, input and per-step "
            "framework overhead; the optimizer step and the gradient all-reduce run once per step"
            if steps_acc > 1
            else f"micro-batch {micro} per device ({p.micro_note})"
        )
    if calibrated and "run_scale" in calibrated:
        assumptions.append(
            f"step corrected by {calibrated.get('runs', 1)} local training run(s) on this machine: they measured "
            f"{calibrated['run_scale']:.2f} × the predicted step (median), so the device's work is scaled by it"
        )
    if m.graph is None and not m.trace:
        assumptions.append(
            "per-op overhead unknown for a summary model (no layer list): only the per-step framework overhead "
            "is counted"
        )
    if workload.goal.purpose == "finetune":
        assumptions.append(
            "fine-tuning sized as full fine-tuning: every weight is trained (frozen layers and adapters are not "
            "modelled), so memory and time are those of training from scratch"
        )
    if p.runtime == "accelerator":
        assumptions.append(
            f"no runtime memory overhead is known for {device.name} (the CUDA context applies to NVIDIA GPUs "
            "only): the tensors alone are counted, so the memory is a lower bound"
        )
    if not st.overhead_known:
        assumptions.append(
            f"no per-step overhead is known for {device.name}; the step time is a lower bound (the framework "
            "overhead TrainRig knows was measured on CUDA and CPU hosts)"
        )
    if workload.cost.currency != "USD":
        c = workload.cost
        assumptions.append(
            f"money in {c.currency} at {c.per_usd:g} {c.currency} per USD ({c.rate_date}), set in the workload: "
            "catalogue prices and the USD defaults converted; the prices you give are taken as "
            f"{c.currency}"
        )
    if (note := time_note(t.large, device, t.precision, st.accumulation_steps)) is not None:
        assumptions.append(note)
    if (note := activation_note(t.large, t.checkpointing, kind, t.precision)) is not None:
        assumptions.append(note)
    if t.scaling_model != "analytic" and devices > 1:
        # one device, analytic: the baseline Wünsche's observed speed-ups are applied to
        single = replace(workload, training=replace(t, nodes=1, scaling_model="analytic"))
        one = size_candidate(single, device, 1, host_ram_bytes, calibrated)
        total = scaled_time(one.train_time_s, devices, t.scaling_model)
        assumptions.append(f"multi-GPU time from Wünsche 2016 scaling ({t.scaling_model})")
    cost = estimate_cost(device, count, nodes, total / 3600, workload.cost)
    c = workload.cost
    deadline = None if c.deadline_hours is None else total / 3600 <= c.deadline_hours
    budget = None
    if c.budget is not None and cost.capex is not None:
        budget = cost.capex <= c.budget
    return CandidateResult(
        device,
        count,
        nodes,
        p.fits,
        p.capacity,
        p.memory,
        p.largest,
        st,
        steps,
        total,
        cost,
        deadline,
        budget,
        tuple(assumptions),
    )


def host_assumptions(st: StepTime) -> list[str]:
    """What the sizing assumes of the host side of the step (core/estimate/host.py), and what it
    implies when the host sets the pace."""
    h = st.host
    if h is None:
        return []
    text = f"training loop: {h.loop.describe()}; host CPU: {h.cpu}"
    if st.host_bound and st.device_s > 0:
        text += (
            f"; host-bound: the host needs {fmt_seconds(st.host_s)} per step and the device {fmt_seconds(st.device_s)} "
            f"(device load {st.device_load:.0%}), so a faster device would shorten the step only by the kernels "
            "the host waits for after its last dispatch"
        )
    return [text]


def loader_core_limit(choice: PlatformChoice | None, count: int) -> int | None:
    """The loader cores the machine around ``count`` devices has for each: its cores less one per
    training process and one for the system, shared by the devices in it; None when not known."""
    if choice is None or not choice.platform.cores:
        return None
    per_machine = choice.per_machine(count)
    return max(1, (choice.platform.cores - per_machine - 1) // per_machine)


TMPFS_DEFAULT_FRACTION = 0.5  # Linux mounts tmpfs with at most half of RAM unless told otherwise (tmpfs(5))


def fits_in_half_of_ram(nbytes: float, ram_bytes: int) -> bool:
    """Whether ``nbytes`` of data fit in half of the RAM: the most a default tmpfs RAM disk holds
    (tmpfs(5)), and the share TrainRig counts on the page cache keeping for a dataset while the
    training process uses the rest."""
    return nbytes <= ram_bytes * TMPFS_DEFAULT_FRACTION


def dataset_fit(dataset_bytes: int, host_ram_bytes: int | None) -> dict[str, object]:
    """Whether the whole dataset fits in this machine's RAM or a RAM disk (tmpfs).

    A RAM disk takes its size from RAM and loses its content on power loss: Jamgharyan 2024 asks
    for an uninterruptible power supply with it.
    """
    if host_ram_bytes is None:
        return {"host_ram_bytes": None, "fits_in_ram": None, "fits_in_ramdisk": None}
    return {
        "host_ram_bytes": host_ram_bytes,
        "fits_in_ram": dataset_bytes <= host_ram_bytes - CPU_RUNTIME_BYTES,
        "fits_in_ramdisk": fits_in_half_of_ram(dataset_bytes, host_ram_bytes),
        "ramdisk_note": "a RAM disk subtracts its size from RAM and needs a UPS (Jamgharyan 2024)",
    }


# RAM of the host of a catalogue candidate whose host is not known: TrainRig's assumption of a
# workstation with 4 × 16 GiB DIMMs (the output says "assumed"); only decides whether the dataset
# stays in the page cache after the first epoch.
DEFAULT_HOST_RAM = 64 * 2**30


def effective_read_bps(workload: Workload, host_ram_bytes: int | None) -> tuple[float, str]:
    """Read rate averaged over the epochs: after the first, a dataset that fits in half the RAM
    comes from the page cache (RAM speed) rather than from its storage tier."""
    d, epochs = workload.data, workload.training.epochs
    tier = STORAGE_READ_BPS[d.storage]
    ram = host_ram_bytes or DEFAULT_HOST_RAM
    dataset = dataset_bytes_on_disk(d)
    note = f"data read from {d.storage} at {tier / 1e6:.0f} MB/s ({d.format})"
    if d.storage == "ramdisk" or not fits_in_half_of_ram(dataset, ram) or epochs == 1:
        return tier, note
    cached = STORAGE_READ_BPS["ramdisk"]
    # time per epoch-average byte: one epoch from the tier, the rest from the page cache
    bps = epochs / (1 / tier + (epochs - 1) / cached)
    return (
        bps,
        note + f" for the first epoch, then from the page cache ({fmt_bytes(dataset)} fits in half of "
        f"{fmt_bytes(ram)} RAM{'' if host_ram_bytes else ', assumed'})",
    )


def seed_figures(workload: Workload, candidate: CandidateResult | None = None) -> dict[str, object]:
    """SPEC 3.1: the seed formulas exactly as the papers define them, with their sources.

    N_na, K1, T1, T2 and C_train depend on the workload alone. Hooda's R (per device), T_train and
    T1, T2 in seconds need a device: with ``candidate`` they are given on its devices (the
    recommended one, core.advice.recommendation.recommend), T_train = C_train / (R × devices).
    Hooda's S is counted in samples, or in tokens when the samples are token sequences."""
    m, d, t = workload.analysis, workload.data, workload.training
    eta_b = INPUT_DTYPES[d.dtype]
    eta_w = PRECISION_BYTES[t.precision][0]
    n_v = ALGORITHM_VARIABLES[t.optimizer] * m.parameters
    k1_value = seed.k1(m.parameters, d.samples, d.features) if m.parameters > 1 else None
    seq = seed.token_sequence_length(m.input_shape, m.input_dtype)
    s_value, s_unit = seed.hooda_s(d.samples, seq)
    c = seed.c_train(m.parameters, s_value, t.epochs)
    figures: dict[str, object] = {
        "n_na_bytes": seed.n_na(eta_b, d.samples, d.features, d.outputs, eta_w, m.parameters, 4, n_v),
        "n_na_inputs": {
            "eta_b": eta_b,
            "S": d.samples,
            "N": d.features,
            "N_M": d.outputs,
            "eta_w": eta_w,
            "N_w": m.parameters,
            "eta_v": 4,
            "N_v": n_v,
        },
        "k1": k1_value,
        "k1_meaning": seed.k1_meaning(k1_value) if k1_value is not None else "K1 needs N_w > 1",
        "t1_ops": m.t1_ops,
        "t2_ops": m.t2_ops,
        "parallelism_t1_over_t2": m.t1_ops / m.t2_ops if m.t2_ops else None,
        "hooda_s": s_value,
        "hooda_s_unit": s_unit,
        "hooda_s_note": f"S = {d.samples:,} samples"
        if seq is None
        else f"S = {d.samples:,} sequences × {seq:,} tokens = {s_value:,} tokens",
        "c_train_flop": c,
        "sources": {
            "n_na_bytes": f"{seed.JAMGHARYAN}, eq. 1",
            "t1_ops": f"{seed.JAMGHARYAN}, eq. 2",
            "t2_ops": f"{seed.JAMGHARYAN}, eq. 3",
            "k1": f"{seed.JAMGHARYAN}, eq. 4",
            "peak_flops": f"{seed.HOODA}, eq. 1",
            "c_train_flop": f"{seed.HOODA}, eq. 3",
            "t_train_s": f"{seed.HOODA}, eq. 4",
        },
    }
    if candidate is None:
        return figures
    device, n = candidate.device, candidate.count * candidate.nodes
    if device.cuda_cores and device.clock_hz:
        r = seed.peak_flops(device.cuda_cores, device.clock_hz)
        r_note = f"R = 2·N·C with N = {device.cuda_cores} CUDA cores, C = {device.clock_hz / 1e9:.3f} GHz"
    else:
        r = device.fp32_flops
        r_note = "no CUDA cores: the device's FP32 peak stands in for R"
    t_peak = seed.t_train(c, r * n)
    lo, hi = seed.REAL_OVERHEAD
    clock = device.clock_hz or 1e9
    return {
        **figures,
        "t1_s": m.t1_ops / r,
        "t2_s": m.t2_ops / clock,
        "peak_flops": r,
        "peak_flops_note": r_note,
        "t_train_s": t_peak,
        "t_train_real_s": [t_peak / (1 - lo), t_peak / (1 - hi)],
        "t_train_note": f"C_train / R on {device.name}" if n == 1 else f"C_train / ({n} × R) on {n} × {device.name}",
        "device": device.name,
        "devices": n,
    }
