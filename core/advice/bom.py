"""The recommended bill of materials for a sized workload: each line with its reason and source."""

from __future__ import annotations

import re
from dataclasses import replace

from core.advice.bom_line import BomLine
from core.advice.host import (
    MIN_HOST_CORES,
    SYSTEM_CORES,
    host_cores,
    l3_cache_mb,
    loader_cores,
    page_cache_ram_bytes,
)
from core.advice.power import power_line
from core.advice.purchase import best_purchase, usable_here
from core.estimate.cost import OWNED_NOTE
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
from core.estimate.timing import INTER_NODE_BPS, STORAGE_READ_BPS, dataset_bytes_on_disk, sample_bytes_on_disk
from core.hardware.catalogue import DeviceSpec, load_catalogue
from core.hardware.platforms import PlatformChoice, load_platforms, network_adapter
from core.units import fmt_bytes, fmt_seconds

RAM_SIZES_GB = (32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
DISK_SIZES_TB = (0.5, 1, 2, 4, 8, 16, 32, 64)
# Storage: TrainRig allowances, not from a source — a system disk with the OS, drivers, CUDA and
# Python environments, and the checkpoints kept while training.
SYSTEM_DISK_BYTES, CHECKPOINTS_KEPT = 200 * 10**9, 5


def choose_candidate(result: SizingResult) -> CandidateResult | None:
    """The listed candidate recommended: this machine where it does the job (core.advice.purchase.usable_here),
    else the one to buy (best_purchase)."""
    here = usable_here(result.candidates, result.workload.cost.deadline_hours)
    return here if here is not None else best_purchase(result.candidates)


def recommend_bom(result: SizingResult, best: CandidateResult | None = None) -> list[BomLine]:
    """The bill of materials for ``best`` (by default the listed candidate to buy); its priced lines
    are the capex, line for line."""
    w, m, t, d = result.workload, result.workload.analysis, result.workload.training, result.workload.data
    best = best if best is not None else choose_candidate(result)
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
        gpu_mem = 0
    else:
        # the GPUs' memory in one machine: four GH200 servers had the RAM of all four held against one's
        gpu_mem = (best.capacity_bytes or 0) * best.per_machine if best.device.kind != "cpu" else 0
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
        here = f" — {OWNED_NOTE}" if best.cost.owned else ""
        if best.device.kind == "cpu":
            lines.append(BomLine("Processor for training", best.device.name + here, why, best.device.source))
        else:
            lines.append(BomLine("Accelerator", best.label + here, why, best.device.source))
        if best.cost.owned:  # this machine's host is what it is: no CPU, memory, drive or platform to buy
            return lines
    # CPU: cores for the data loaders (the decode model's, per candidate) and the training, never
    # more threads than physical cores
    cores, cpu_spec, cpu_reason = cpu_cores(result, best)
    platform = best.cost.platform.platform if best is not None and best.cost.platform is not None else None
    if platform is not None and platform.cpu_cost_usd:  # the platform's CPUs are what is bought
        cpu_spec = f"{platform.cpu}: {platform.cores} physical cores (≥ {cores} needed)"
        if platform.cores < cores:
            cpu_spec += f" — fewer than needed: choose CPUs with ≥ {cores} cores for this platform"
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
    cache = page_cache_ram_bytes(d) if stored <= 2 * 10**12 and not storage_keeps_up(result, best) else 0.0
    want = max(32 * 10**9, gpu_mem, cache)
    ram_gb = next((s for s in RAM_SIZES_GB if s * 10**9 >= want), RAM_SIZES_GB[-1])
    channels = memory_channels(best)
    ram_reason = (
        f"≥ the GPUs' memory ({fmt_bytes(gpu_mem)}), so a checkpoint or a staged batch of each GPU fits in RAM"
        if gpu_mem
        else "room for the framework and data"
    )
    if not cache and stored <= 2 * 10**12:
        ram_reason += (
            f"; the {d.storage} drive reads the dataset at least twice as fast as training consumes it, so it need "
            "not stay in the page cache"
        )
    if cache:
        ram_reason += (
            f" and {cache / stored:g} × the dataset as stored ({fmt_bytes(stored)} of {d.format}) so the page cache "
            "keeps it after the first epoch"
        )
    in_channels = f" in {channels} channels" if channels else " on the module"
    ram_spec = f"{ram_gb} GB{in_channels}"
    priced_ram = best.cost.platform.platform.ram_gb if best is not None and best.cost.platform is not None else None
    if priced_ram is not None and priced_ram >= ram_gb:
        ram_spec = f"{priced_ram:,} GB{in_channels}, as the platform is priced (≥ {ram_gb} GB needed)"
    elif priced_ram is not None:
        ram_spec += (
            f" — more than the {priced_ram:,} GB the platform is priced with: the difference is not in the capex"
        )
    lines.append(
        BomLine(
            "Memory",
            ram_spec,
            ram_reason
            + (
                ""
                if not channels
                else f"; {channels}-channel memory keeps host bandwidth above what the GPUs pull"
                if best is not None and best.device.kind != "cpu"
                else f"; all {channels} channels populated: the CPU's memory bandwidth bounds its training"
            ),
            "Jamgharyan 2024 (four-channel RAM, memory bandwidth ≥ GPU consumption); Dettmers, 'A Full Hardware "
            "Guide to Deep Learning' (RAM at least as large as the GPU memory)",
        )
    )
    # storage: dataset twice (raw + working copy), checkpoints, system
    on_disk = dataset_bytes_on_disk(d)
    checkpoint = checkpoint_bytes(m.parameters, t.optimizer)
    need = 2 * on_disk + CHECKPOINTS_KEPT * checkpoint + SYSTEM_DISK_BYTES
    size_tb = next((s for s in DISK_SIZES_TB if s * 10**12 >= need), DISK_SIZES_TB[-1])
    kind, storage_reason = storage_choice(result, best)
    lines.append(
        BomLine(
            "Storage",
            f"{size_tb:g} TB {kind}",
            f"dataset {fmt_bytes(on_disk)} on disk ({d.format}) twice, {CHECKPOINTS_KEPT} checkpoints of "
            f"{fmt_bytes(checkpoint)}, {SYSTEM_DISK_BYTES / 1e9:.0f} GB for the system (TrainRig allowances)"
            + storage_reason,
            "Jamgharyan 2024 (RAID 0 / RAID 10); Panaite & Leba 2024 (storage tiers and formats)"
            if reads_bound(best)
            else "Panaite & Leba 2024 (storage tiers and formats); drive read rates: typical data sheets "
            "(core/estimate/timing.py, STORAGE_READ_BPS)",
        )
    )
    choice = best.cost.platform if best is not None else None
    if choice is not None:
        lines.append(platform_line(best, choice))  # type: ignore[arg-type]
        lines.append(power_line(best, choice, w.cost.host_power_w))  # type: ignore[arg-type]
    if best is not None and best.nodes > 1:
        lines += network_lines(best)
        lines = [
            replace(line, spec=f"{line.spec}, in each of the {best.nodes} nodes")
            if line.item in ("CPU", "Memory", "Storage", "Power supply", "Platform")
            else line
            for line in lines
        ]
    return priced(lines, best)


def platform_line(best: CandidateResult, choice: PlatformChoice) -> BomLine:
    """The machine around the accelerators: its CPUs, RAM, lanes, supplies and cooling (platforms.json)."""
    p = choice.platform
    machines = f"{choice.machines} × " if choice.machines > 1 else ""
    ram = f"{p.ram_gb:,} GB RAM" + (f" in {p.memory_channels} channels" if p.memory_channels else " on the module")
    spec = f"{machines}{p.name}: {p.cpu}, {ram}, {p.pcie_lanes} PCIe lanes"
    if best.device.kind == "cpu":
        why = f"a machine for the {best.device.name}"
    else:
        form = {"pcie": "PCIe", "sxm": "SXM", "oam": "OAM"}.get(best.device.form_factor or "pcie", "")
        n = choice.machines
        why = f"holds {best.count} {form} accelerator(s) per node".replace("  ", " ")
        why += f" ({choice.per_machine(best.count)} per machine, {n} machines)" if n > 1 else ""
        if choice.bought > best.count * max(1, choice.machines) or (
            choice.platform.sold_in and choice.bought > best.count
        ):
            why += (
                f"; {best.device.name} is sold on {choice.platform.sold_in[-1]}-GPU baseboards: {choice.bought} are "
                f"bought and paid for, {best.count} used by this training"
            )
        if best.count > 1 and best.device.p2p is False:
            why += "; these cards have no peer-to-peer: gradients travel through host memory"
    if not (p.base_cost_usd or p.cpu_cost_usd):
        why += f"; in the {best.device.name}'s price, which is the whole server's"
    return BomLine("Platform", spec, f"{why}; cooling: {p.cooling}", f"{p.source} ({p.price_date})")


def priced(lines: list[BomLine], best: CandidateResult | None) -> list[BomLine]:
    """The capex's lines (core.estimate.cost.CapexLine) attached to the bill's items, so that the
    bill's total is the capex: the devices, the platform (chassis, board, RAM, drives, supplies), the
    host CPUs, and the network between nodes."""
    if best is None:
        return lines
    roles = {
        "Accelerator": ("device",),
        "Processor for training": ("device",),
        "Platform": ("platform",),
        "CPU": ("cpus",),
        "Network adapters": ("adapter",),
        "Network switch": ("switch", "network"),
    }
    capex = list(best.cost.capex_lines)
    out = []
    for line in lines:
        take = next((c for c in capex if c.role in roles.get(line.item, ())), None)
        if take is not None:
            capex.remove(take)
            line = replace(line, quantity=take.quantity, unit_price=take.unit, total=take.total)
        out.append(line)
    for rest in capex:  # anything priced that has no line of its own still shows, so totals agree
        out.append(BomLine(rest.item, rest.item, "in the capex", rest.source, rest.quantity, rest.unit, rest.total))
    return out


def network_lines(best: CandidateResult) -> list[BomLine]:
    """What joins the nodes: one adapter per GPU at the line rate the step time assumes
    (INTER_NODE_BPS) and a switch port with its cable for each, priced from platforms.json."""
    gpus = best.count * best.nodes
    ps = load_platforms()
    adapter = network_adapter(ps)
    port = next((n for n in ps.network if n.per == "port"), None)
    gbps = INTER_NODE_BPS * 8 / 1e9
    timing = f"the step time assumes {gbps:.0f} Gb/s per GPU between nodes (INTER_NODE_BPS, core/estimate/timing.py)"
    lines = [
        BomLine(
            "Network adapters",
            f"{gpus} × {adapter.name}, {best.count} per node",
            f"one per GPU, so that each GPU sends its gradients over its own adapter (GPUDirect RDMA); {timing}",
            f"{adapter.source} ({adapter.price_date})",
        )
    ]
    if port is not None:
        lines.append(
            BomLine(
                "Network switch",
                f"{gpus} × {port.name}",
                f"one port for each of the {gpus} adapters; {timing}",
                f"{port.source} ({port.price_date})",
            )
        )
    return lines


# Above this much data on disk the bill asks for NVMe whatever the workload's tier: a TrainRig
# allowance, not from a source (the training times still assume the workload's own tier).
NVME_ABOVE_BYTES = 50 * 10**9
RAID_SPEC = ", 2 drives in RAID 0 (or 4 in RAID 10 for redundancy)"
TIER_NAMES = {
    "hdd": "7,200 rpm hard disk",
    "hdd_10k": "10,000 rpm hard disk",
    "sata_ssd": "SATA SSD",
    "nvme": "NVMe SSD",
    "ramdisk": "RAM disk",
    "network": "network share",
}


def reads_bound(best: CandidateResult | None) -> bool:
    """The step waits for its samples to be read from storage: input-bound, and reading is the
    slower half of the input pipeline (StepTime.read_s ≥ decode_s), not decoding on the CPU."""
    return best is not None and best.step.bound == "input pipeline" and best.step.read_s >= best.step.decode_s


def storage_choice(result: SizingResult, best: CandidateResult | None) -> tuple[str, str]:
    """The drives to buy and why (appended to the Storage line's reason): NVMe striped in RAID 0
    only when reading the samples is what the step waits for (reads_bound) — when it waits for
    decoding on the CPU, faster drives do not shorten it, and the reason says so; else NVMe for the
    workload's own NVMe or for more than NVME_ABOVE_BYTES of data, SATA otherwise. When the bill
    names another tier than the workload's, the reason says why and what the times assume."""
    d = result.workload.data
    on_disk = dataset_bytes_on_disk(d)
    own = TIER_NAMES.get(d.storage, d.storage)
    rate = f"{STORAGE_READ_BPS[d.storage] / 1e6:,.0f} MB/s"
    nvme = f"{STORAGE_READ_BPS['nvme'] / 1e9:g} GB/s"
    reason = ""
    if best is not None and reads_bound(best):
        st = best.step
        return "NVMe SSD" + RAID_SPEC, (
            f"; steps wait for reads from the workload's {own} ({fmt_seconds(st.read_s)} of each "
            f"{fmt_seconds(st.step_s)} step at {rate}): NVMe reads about {nvme} a drive, and reads are striped "
            "over two"
        )
    if best is not None and best.step.bound == "input pipeline":
        st = best.step
        reason = (
            f"; steps wait for decoding on the CPU ({fmt_seconds(st.decode_s)} a step), not for reads "
            f"({fmt_seconds(st.read_s)}): faster or striped drives would not shorten them (see the CPU line)"
        )
    if d.storage == "nvme":
        return "NVMe SSD", reason
    if on_disk <= NVME_ABOVE_BYTES:
        return "SATA SSD", reason
    if d.storage == "ramdisk":
        return "NVMe SSD", reason + "; NVMe holds the dataset the RAM disk is filled from"
    return "NVMe SSD", reason + (
        f"; NVMe rather than the workload's {own}: TrainRig's choice above {NVME_ABOVE_BYTES / 1e9:.0f} GB of "
        f"data ({fmt_bytes(on_disk)} here; about {nvme} a drive against {rate}); the training times assume the "
        f"{own}, whose reads do not hold up these steps"
    )


def storage_keeps_up(result: SizingResult, best: CandidateResult | None) -> bool:
    """The storage tier reads at least twice the bytes per second that ``best`` trains through
    (its global batch of samples as stored, per step): caching the dataset in RAM gains nothing."""
    if best is None or best.step.step_s <= 0:
        return False
    d = result.workload.data
    wanted = result.workload.training.batch_size * sample_bytes_on_disk(d) / best.step.step_s
    return 2 * wanted <= STORAGE_READ_BPS[d.storage]


def memory_channels(best: CandidateResult | None) -> int:
    """Channels to populate: a CPU candidate's own (its catalogue memory type, e.g. "DDR5-5200, 2
    channels"), else the platform's (0: memory on the module, GH200's, none to populate); 4 when neither is
    known."""
    if best is None:
        return 4
    if best.device.kind == "cpu":
        found = re.search(r"(\d+) channels", str(best.device.extra.get("memory_type", "")))
        if found:
            return int(found.group(1))
    platform = best.cost.platform
    return platform.platform.memory_channels if platform else 4


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
    machines = best.cost.platform.machines if best is not None and best.cost.platform is not None else 1
    count = best.per_machine if best is not None else 1  # the GPUs one host feeds
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
        ("each machine's " if machines > 1 else "")
        + f"{count} GPU(s) × {per_gpu} loader cores = {loaders}, + {count} training process(es), one per GPU, "
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
