"""The recommended bill of materials for a sized workload: each line with its reason and source."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from core.advice.host import (
    MIN_HOST_CORES,
    SYSTEM_CORES,
    host_cores,
    l3_cache_mb,
    loader_cores,
    page_cache_ram_bytes,
)
from core.estimate.input_pipeline import (
    GPU_DECODE_ADVICE,
    LOADER_CORES_PER_GPU,
    MAX_LOADER_CORES_PER_DEVICE,
    MIN_LOADER_CORES_CPU,
    DecodeCost,
    decode_cost,
)
from core.estimate.memory import checkpoint_bytes
from core.estimate.sizing import CandidateResult, SizingResult
from core.estimate.timing import INTER_NODE_BPS, dataset_bytes_on_disk
from core.hardware.catalogue import DeviceSpec, load_catalogue
from core.units import fmt_bytes, fmt_seconds

RAM_SIZES_GB = (32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
DISK_SIZES_TB = (0.5, 1, 2, 4, 8, 16, 32, 64)
# Power supply: GPUs and CPU at their catalogue TDPs (vendor data sheets); the rest is TrainRig's
# allowance for board, RAM, drives and fans (no published breakdown is used: edit for your build);
# 25 % headroom is TrainRig's margin for transients.
OTHER_W, PSU_HEADROOM = 150, 1.25
# Storage: TrainRig allowances, not from a source — a system disk with the OS, drivers, CUDA and
# Python environments, and the checkpoints kept while training.
SYSTEM_DISK_BYTES, CHECKPOINTS_KEPT = 200 * 10**9, 5
# Items the bill of materials names without a price: the catalogue has none for them, so neither
# the bill's total nor the capex counts them (core/output/report.py prices the rest).
UNPRICED = "price not in the catalogue: not counted in the total or the capex"
NETWORK_ITEMS = ("Network adapters", "Network switch")


@dataclass(frozen=True)
class BomLine:
    item: str
    spec: str
    reason: str
    source: str

    def as_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


def choose_candidate(result: SizingResult) -> CandidateResult | None:
    """The candidate to buy: it fits; then meets the deadline and budget; then the lowest TCO
    among those (fastest when costs are unknown)."""
    fitting = [c for c in result.candidates if c.fits]
    if not fitting:
        return None

    def key(c: CandidateResult) -> tuple[Any, ...]:
        return (
            c.meets_deadline is False,
            c.within_budget is False,
            c.cost.tco if c.cost.tco is not None else math.inf,
            c.train_time_s,
        )

    return min(fitting, key=key)


def recommend_bom(result: SizingResult) -> list[BomLine]:
    w, m, t, d = result.workload, result.workload.analysis, result.workload.training, result.workload.data
    best = choose_candidate(result)
    lines: list[BomLine] = []
    if best is None:
        lines.append(
            BomLine(
                "Accelerator",
                "none of the candidates fits",
                "every candidate lacks memory even for a micro-batch of one sample (or for the micro-batch set in "
                "the workload): see the critical findings for a way out",
                "Jamgharyan 2024, GPU recommendations",
            )
        )
        count, gpu_mem, gpu_w, link_bw = 1, 0, 0.0, 0.0
    else:
        count = best.count
        gpu_mem = (best.capacity_bytes or 0) * count if best.device.kind != "cpu" else 0
        gpu_w = (best.device.tdp_w or 0) * count if best.device.kind != "cpu" else 0.0
        link_bw = (best.device.interconnect_bw or 0) * count
        verdict = []
        if best.meets_deadline is not None:
            verdict.append("meets the deadline" if best.meets_deadline else "misses the deadline")
        if best.within_budget is not None:
            verdict.append("within budget" if best.within_budget else "over budget")
        accumulation = (
            f", micro-batch {best.micro_batch} × {best.accumulation_steps} accumulation steps"
            if best.accumulation_steps > 1
            else ""
        )
        why = (
            f"fits ({fmt_bytes(best.memory.total)} of {fmt_bytes(best.capacity_bytes)} per device{accumulation}), "
            "trains in "
            f"{fmt_seconds(best.train_time_s)}"
            + (f", {', '.join(verdict)}" if verdict else "")
            + (f", TCO {best.cost.tco:,.0f} {best.cost.currency}" if best.cost.tco is not None else "")
        )
        if best.device.kind == "cpu":
            lines.append(BomLine("Processor for training", best.device.name, why, best.device.source))
        else:
            per = f" per node × {best.nodes} nodes" if best.nodes > 1 else ""
            lines.append(BomLine("Accelerator", f"{best.device.name} × {count}{per}", why, best.device.source))
    # CPU: cores for the data loaders (the decode model's, per candidate) and the training, never
    # more threads than physical cores
    cores, cpu_spec, cpu_reason = cpu_cores(result, best)
    if w.goal.concurrent_runs > 1:
        l3 = l3_cache_mb(w.goal.concurrent_runs)
        cpu_spec += f", ≥ {l3} MB L3"
        cpu_reason += f"; {w.goal.concurrent_runs} networks at once need cache, and one socket avoids NUMA traffic"
    lines.append(
        BomLine(
            "CPU",
            cpu_spec,
            cpu_reason,
            "Jamgharyan 2024 (multi-core CPU, cache, sockets); Wünsche 2016 (threads ≤ physical cores); decode "
            "cost per sample: published measurements (docs/sizing.md, Input pipeline)",
        )
    )
    # RAM: twice the GPU memory for pinned staging; the dataset as stored (what the page cache
    # holds) cached when it is reasonable
    stored = dataset_bytes_on_disk(d)
    cache = page_cache_ram_bytes(d) if stored <= 2 * 10**12 else 0.0
    want = max(32 * 10**9, 2 * gpu_mem, cache)
    ram_gb = next((s for s in RAM_SIZES_GB if s * 10**9 >= want), RAM_SIZES_GB[-1])
    channels = 8 if count >= 4 else 4
    ram_reason = f"≥ 2 × the GPUs' memory ({fmt_bytes(gpu_mem)})" if gpu_mem else "room for the framework and data"
    if cache:
        ram_reason += (
            f" and {cache / stored:g} × the dataset as stored ({fmt_bytes(stored)} of {d.format}) so the page cache "
            "keeps it after the first epoch"
        )
    lines.append(
        BomLine(
            "Memory",
            f"{ram_gb} GB in {channels} channels",
            ram_reason + f"; {channels}-channel memory keeps host bandwidth above what the GPUs pull",
            "Jamgharyan 2024 (four-channel RAM, memory bandwidth ≥ GPU consumption)",
        )
    )
    # storage: dataset twice (raw + working copy), checkpoints, system
    on_disk = dataset_bytes_on_disk(d)
    checkpoint = checkpoint_bytes(m.parameters, t.optimizer)
    need = 2 * on_disk + CHECKPOINTS_KEPT * checkpoint + SYSTEM_DISK_BYTES
    size_tb = next((s for s in DISK_SIZES_TB if s * 10**12 >= need), DISK_SIZES_TB[-1])
    input_bound = best is not None and best.step.bound == "input pipeline"
    kind = "NVMe SSD" if input_bound or on_disk > 50 * 10**9 or d.storage == "nvme" else "SATA SSD"
    raid = ", 2 drives in RAID 0 (or 4 in RAID 10 for redundancy)" if input_bound else ""
    lines.append(
        BomLine(
            "Storage",
            f"{size_tb:g} TB {kind}{raid}",
            f"dataset {fmt_bytes(on_disk)} on disk ({d.format}) twice, {CHECKPOINTS_KEPT} checkpoints of "
            f"{fmt_bytes(checkpoint)}, {SYSTEM_DISK_BYTES / 1e9:.0f} GB for the system (TrainRig allowances)"
            + ("; steps wait for data, so reads are striped" if input_bound else ""),
            "Jamgharyan 2024 (RAID 0 / RAID 10); Panaite & Leba 2024 (storage tiers and formats)",
        )
    )
    cpu_w, cpu_note = cpu_power(best, cores)
    psu = math.ceil((gpu_w + cpu_w + OTHER_W) * PSU_HEADROOM / 100) * 100
    lines.append(
        BomLine(
            "Power supply",
            f"{psu:,} W",
            f"GPUs {gpu_w:,.0f} W + CPU {cpu_w:,.0f} W ({cpu_note}) + rest {OTHER_W} W (board, RAM, drives, fans), "
            "with 25 % headroom",
            "GPU and CPU TDPs from the catalogue (vendor data sheets); the rest and the headroom are TrainRig "
            "allowances",
        )
    )
    if best is not None and best.nodes > 1:
        lines += network_lines(best)
        lines = [
            replace(line, spec=f"{line.spec}, in each of the {best.nodes} nodes")
            if line.item in ("CPU", "Memory", "Storage", "Power supply")
            else line
            for line in lines
        ]
    if link_bw and count > 1 and best is not None and "nvlink" not in (best.device.interconnect or "").lower():
        lines.append(
            BomLine(
                "Platform",
                f"{count} × PCIe x16 slots at full width",
                "PCIe-connected GPUs exchange gradients through the host; NVLink boards avoid that",
                "Hooda 2023 §3.3.1",
            )
        )
    return lines


def cpu_cores(result: SizingResult, best: CandidateResult | None) -> tuple[int, str, str]:
    """Physical cores of the host, the CPU line's spec and its reason, whose parts add up to the
    cores asked for. With GPUs: each GPU's loader cores from the decode model (the candidate's
    StepTime.loader_cores: enough to decode as fast as the GPU trains, at least a few, at most what
    a host gives a GPU), one core per training process and one for the system. A CPU that trains:
    its loader cores and its training threads, no GPU."""
    d = result.workload.data
    cost = decode_cost(d)
    cpu_only = best.device.kind == "cpu" if best is not None else all(c.device.kind == "cpu" for c in result.candidates)
    if cpu_only:
        return _cpu_training_cores(best.device if best is not None else result.candidates[0].device, best, cost)
    count = best.count if best is not None else 1
    per_gpu = best.step.loader_cores if best is not None and best.step.loader_cores else LOADER_CORES_PER_GPU
    needed = best.step.loader_cores_needed if best is not None else 0.0
    loaders = loader_cores(count, per_gpu)
    parts = loaders + count + SYSTEM_CORES
    cores = host_cores(count, per_gpu)
    name = result.workload.model_ref or result.workload.name
    pace = needed / cost.per_sample_s if cost.per_sample_s else 0.0
    per_sample = f"{cost.describe()}: {cost.per_sample_s * 1e3:.3g} ms of one core a sample"
    few = f"{per_gpu} per GPU, the few a GPU's data loader wants"
    if not cost.per_sample_s:
        csv = d.format == "csv"
        feed = "a CSV dataset is parsed once when it is loaded" if csv else f"{cost.describe()} needs no decoding"
        feed += f"; {few}"
    elif best is None:
        feed = f"no candidate fits, so the decoding ({per_sample}) is not sized at a GPU's pace: {few}"
    elif needed <= LOADER_CORES_PER_GPU:
        feed = f"{name} at {pace:,.0f} samples/s per GPU needs ≈ {needed:.1f} cores per GPU ({per_sample}); {few}"
    elif needed <= MAX_LOADER_CORES_PER_DEVICE:
        feed = f"{name} at {pace:,.0f} samples/s per GPU needs ≈ {needed:.1f} cores per GPU ({per_sample})"
    else:
        feed = (
            f"{name} at {pace:,.0f} samples/s per GPU would need ≈ {needed:.0f} cores per GPU ({per_sample}), more "
            f"than a host gives a GPU: {per_gpu} counted, so steps wait for data — {GPU_DECODE_ADVICE}"
        )
    total = (
        f"{count} GPU(s) × {per_gpu} loader cores = {loaders}, + {count} training process(es), one per GPU, "
        f"+ {SYSTEM_CORES} for the system = {parts}"
        + (f", rounded up to {MIN_HOST_CORES}, the smallest host TrainRig recommends" if cores > parts else "")
    )
    most = max((int(c.extra.get("cores") or 0) for c in load_catalogue() if c.kind == "cpu"), default=0)
    sockets = "one socket" if cores <= most else f"two sockets (no catalogue CPU has {cores} cores)"
    return (
        cores,
        f"≥ {cores} physical cores, {sockets}",
        f"{feed}; {total}; use no more threads than physical cores",
    )


def _cpu_training_cores(device: DeviceSpec, best: CandidateResult | None, cost: DecodeCost) -> tuple[int, str, str]:
    """A CPU that trains: loader cores plus training threads, adding up to its cores (or to
    MIN_HOST_CORES when the catalogue does not give them)."""
    loaders = best.step.loader_cores if best is not None and best.step.loader_cores else MIN_LOADER_CORES_CPU
    known = int(device.extra.get("cores") or 0)
    threads = max(1, (known or MIN_HOST_CORES) - loaders)
    cores = loaders + threads
    whose = (
        f"the {device.name}'s {known} cores"
        if known == cores
        else f"more than the {device.name}'s {known}"
        if known
        else f"the {device.name}'s cores are not in the catalogue: TrainRig asks for {MIN_HOST_CORES}"
    )
    needed = best.step.loader_cores_needed if best is not None else 0.0
    decode = f" ({cost.describe()} takes ≈ {needed:.2g} core at the training pace)" if cost.per_sample_s else ""
    return (
        cores,
        f"≥ {cores} physical cores, one socket",
        f"{loaders} loader core(s){decode} + {threads} training threads (torch.set_num_threads({threads})) = "
        f"{cores}, {whose}; use no more threads than physical cores",
    )


def network_lines(best: CandidateResult) -> list[BomLine]:
    """What joins the nodes: one adapter per GPU at the inter-node rate the step time assumes
    (INTER_NODE_BPS) and a switch with a port for each; unpriced (UNPRICED)."""
    gpus = best.count * best.nodes
    gbps = INTER_NODE_BPS * 8 / 1e9
    timing = f"the step time assumes {gbps:.0f} Gb/s between nodes (INTER_NODE_BPS, core/estimate/timing.py)"
    return [
        BomLine(
            "Network adapters",
            f"{gpus} × {gbps:.0f} Gb/s InfiniBand (EDR / HDR100) or Ethernet with RoCE, PCIe x16 "
            f"(e.g. NVIDIA ConnectX-6), {best.count} per node — {UNPRICED}",
            f"one per GPU, so that each GPU sends its gradients over its own adapter (GPUDirect RDMA); {timing}",
            "NVIDIA ConnectX-6 adapter user manuals (100 Gb/s per port; PCIe 3.0/4.0 x16); NVIDIA GPUDirect RDMA",
        ),
        BomLine(
            "Network switch",
            f"a {gbps:.0f} Gb/s InfiniBand or RoCE Ethernet switch with ≥ {gpus} ports, and {gpus} cables — {UNPRICED}",
            f"one port for each of the {gpus} adapters; {timing}",
            "TrainRig sizing (one port per adapter)",
        ),
    ]


def cpu_power(best: CandidateResult | None, cores: int) -> tuple[float, str]:
    """Watts of the host CPU and where the figure comes from: a CPU candidate's own catalogue TDP;
    otherwise the lowest TDP among catalogue CPUs with the ``cores`` the CPU line asks for (or,
    when none has that many, the one with the most cores)."""
    if best is not None and best.device.kind == "cpu" and best.device.tdp_w:
        return float(best.device.tdp_w), f"{best.device.name} TDP"
    cpus = [d for d in load_catalogue() if d.kind == "cpu" and d.tdp_w]
    enough = [d for d in cpus if int(d.extra.get("cores") or 0) >= cores]
    if enough:
        pick = min(enough, key=lambda d: float(d.tdp_w or 0))
        return float(pick.tdp_w or 0), f"{pick.name} TDP, the catalogue's lowest with ≥ {cores} cores"
    pick = max(cpus, key=lambda d: int(d.extra.get("cores") or 0))
    return float(pick.tdp_w or 0), f"{pick.name} TDP, the catalogue's CPU with the most cores"
