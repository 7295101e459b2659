"""The names recommendation rules use (docs/rules.md): a sizing, the candidate the recommendation
chooses and this machine's inventory turned into plain values.

Besides the figures a message prints, the names say where a rule applies — the model's size and
kind, what bounds the recommended candidate's step and each candidate's, the purpose, the device
kind, and whether this machine is a candidate at all (APPLICABILITY_NAMES); every rule's condition
uses one, so that a seed's advice speaks only where its paper's measurements apply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from core.advice.bom import TIER_NAMES, choose_candidate
from core.advice.host import host_cores, l3_cache_mb, loader_cores, loader_cores_per_gpu, page_cache_ram_bytes
from core.estimate.gpu_notes import CUDNN_LAYERS
from core.estimate.memory import checkpoint_bytes
from core.estimate.seed_formulas import token_sequence_length
from core.estimate.sizing import CandidateResult, SizingResult, fits_in_half_of_ram
from core.estimate.timing import FORMAT_SIZE_FACTOR, StepTime, dataset_bytes_on_disk
from core.hardware.catalogue import DeviceSpec
from core.units import fmt_bytes, fmt_count, fmt_seconds

# The names that say where a rule applies (docs/rules.md): every rule's condition uses one.
APPLICABILITY_NAMES = frozenset(
    {
        "params",
        "model_size",
        "workload_kind",
        "trains_on_tokens",
        "model_is_vision",
        "model_is_language",
        "purpose",
        "best_bound",
        "best_host_bound",
        "best_overhead_share",
        "best_input_share",
        "best_input_wait",
        "best_read_share",
        "bound",
        "input_wait",
        "overhead_share",
        "host_share",
        "device_load",
        "memory_share",
        "comm_share",
        "any_gpu",
        "any_cpu",
        "cpu_only",
        "any_nvidia_tensor_gpu",
        "any_nvidia_tf32_gpu",
        "best_is_cpu",
        "best_gpus",
        "is_gpu",
        "is_best",
        "about_this_machine",
        "best_is_this_machine",
        "storage",
        "data_format",
        "concurrent_runs",
    }
)
# Parameters at which a model stops being "small" (the seeds' networks: 0.06–50 M) and becomes
# "large" (LLM-class, sharded over GPUs).
SMALL_MODEL_PARAMS, LARGE_MODEL_PARAMS = 10_000_000, 1_000_000_000
SHARDING_TEXT = {
    "none": "no sharding",
    "ddp": "DDP",
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "ZeRO-3",
    "fsdp": "FSDP",
}


def rule_context(result: SizingResult, inventory: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The names workload-scope rules use (docs/rules.md)."""
    w, m, t, d = result.workload, result.workload.analysis, result.workload.training, result.workload.data
    cands = result.candidates
    best = choose_candidate(result)
    lead = best or cands[0]
    gpus = [c for c in cands if c.device.kind != "cpu"]
    cpus = [c for c in cands if c.device.kind == "cpu"]
    gpu_counts = [c.count for c in gpus] or [1]
    best_gpus = 0 if lead.device.kind == "cpu" else lead.count * lead.nodes
    node_gpus = 1 if lead.device.kind == "cpu" else max(1, lead.per_machine)  # four GH200 servers: one each
    fastest = min(cands, key=lambda c: c.train_time_s)
    fastest_cpu = min(cpus, key=lambda c: c.train_time_s) if cpus else None
    layer_types = {r.type for r in m.rows}
    vision = "conv2d" in layer_types or (m.kind == "summary" and len(m.input_shape) == 3)
    language = bool(layer_types & {"embedding", "lstm", "gru", "multihead_attention"})
    host = host_facts(inventory)
    # this machine's inventory speaks about the advice only when this machine is a candidate
    here = inventory is not None and any(c.device.is_this_machine for c in cands)
    ram = host["host_ram_bytes"] if here else None
    # a RAM disk holds the files as stored (JPEGs, not decoded tensors)
    on_disk = dataset_bytes_on_disk(d)
    ramdisk_fit = (
        ""
        if ram is None
        else (
            " — it fits in this machine's RAM"
            if fits_in_half_of_ram(on_disk, ram)
            else " — it does not fit in this machine's RAM"
        )
    )
    steps = math.ceil(d.samples / t.batch_size)
    k1 = result.seed.get("k1")
    step = lead.step
    return {
        **host,
        "params": m.parameters,
        "params_text": fmt_count(m.parameters),
        # an NVIDIA GPU with tensor cores among the candidates (cuBLAS's alignment rules apply to it)
        "any_nvidia_tensor_gpu": any(c.device.runs_cuda and has_tensor_peak(c.device) for c in gpus),
        # an NVIDIA GPU whose TF32 tensor peak is above its FP32 one among the candidates (Ampere and later
        # data-centre and workstation cards: where cuDNN's TF32 changes the step TrainRig prices; a GeForce
        # card's datasheet TF32 peak is its FP32 one), layers cuDNN runs (convolutions, LSTM/GRU) in the
        # network, and whether the workload lets cuDNN run them on TF32 in fp32
        "any_nvidia_tf32_gpu": any(
            c.device.runs_cuda and (c.device.tf32_flops or 0.0) > c.device.fp32_flops for c in gpus
        ),
        "cudnn_layers": bool(layer_types & CUDNN_LAYERS),
        "cudnn_tf32": t.cudnn_tf32,
        # the network's output width (classes, a vocabulary) and the multiple of 64 above it
        "classes": m.output_shape[-1] if m.output_shape else 0,
        "classes_text": f"{m.output_shape[-1]:,}" if m.output_shape else "unknown",
        "padded_classes_text": f"{-(-m.output_shape[-1] // 64) * 64:,}" if m.output_shape else "unknown",
        "model_size": model_size(m.parameters),
        "workload_kind": workload_kind(result),
        "trains_on_tokens": token_sequence_length(m.input_shape, m.input_dtype) is not None,
        "samples": d.samples,
        "samples_text": f"{d.samples:,}",
        "dataset_bytes": result.dataset_bytes,
        "dataset_text": fmt_bytes(result.dataset_bytes),
        "dataset_on_disk_text": f"{fmt_bytes(on_disk)} of {d.format}",
        "ram_for_dataset": fmt_bytes(page_cache_ram_bytes(d)),
        "ramdisk_fit_text": ramdisk_fit,
        "k1": k1,
        "k1_text": "unknown" if k1 is None else f"{k1:.3g}",
        "n_na_bytes": result.seed.get("n_na_bytes"),
        "batch": t.batch_size,
        "epochs": t.epochs,
        "steps_per_epoch": steps,
        "steps_per_epoch_text": f"{steps:,}",
        "optimizer": t.optimizer,
        "precision": t.precision,
        "checkpointing": t.checkpointing,
        "sharding": t.sharding,
        "nodes": t.nodes,
        "reserve_percent": t.reserve_percent,
        "storage": d.storage,
        "storage_text": TIER_NAMES.get(d.storage, d.storage),
        "data_format": d.format,
        "data_format_upper": d.format.upper(),
        "jpeg_ratio": f"{FORMAT_SIZE_FACTOR[d.format] / FORMAT_SIZE_FACTOR['jpeg']:.2g}",
        "reads_text": fmt_bytes(dataset_bytes_on_disk(d) * t.epochs),
        "checkpoint_text": fmt_bytes(checkpoint_bytes(m.parameters, t.optimizer)),
        "purpose": w.goal.purpose,
        "concurrent_runs": w.goal.concurrent_runs,
        "l3_wanted_mb": l3_cache_mb(w.goal.concurrent_runs),
        "host_l3_text": f" (this machine: {host['host_l3_mb']} MB)" if here and host["host_l3_mb"] else "",
        "host_tlb_text": f" (this machine: {host['host_tlb']})" if here and host["host_tlb"] != "unknown" else "",
        "gpu_count_max": max(gpu_counts),
        # per node: each node's host feeds its own GPUs
        "cores_needed": host_cores(node_gpus, loader_cores_per_gpu(result, node_gpus)),
        "loader_cores": loader_cores(node_gpus, loader_cores_per_gpu(result, node_gpus)),
        "model_is_vision": vision,
        "model_is_language": language,
        "model_domain": "vision" if vision else "language" if language else "neural",
        "any_gpu": bool(gpus),
        "any_cpu": bool(cpus),
        "cpu_only": not gpus,
        "about_this_machine": here,
        "best_is_this_machine": here and lead.device.is_this_machine,
        "best_fits": best is not None,
        "best_device": lead.device.name,
        "best_count": lead.count,
        "best_gpus": best_gpus,
        "best_is_cpu": lead.device.kind == "cpu",
        "best_bound": step.bound,
        "best_host_bound": not lead.device.kind == "cpu" and step.host_bound,
        **host_terms(step),
        "best_overhead_share": _share(step.overhead_s, step),
        "best_overhead_pct": f"{_share(step.overhead_s, step):.0%}",
        "best_input_share": _share(step.input_s, step),
        "best_input_wait": input_wait(step),
        "best_read_share": _share(step.read_s, step),
        "best_decode_share": _share(step.decode_s, step),
        "best_largest_batch": lead.largest_batch,
        "best_step": fmt_seconds(step.step_s),
        "best_input": fmt_seconds(step.input_s),
        "best_read": fmt_seconds(step.read_s),
        "best_decode": fmt_seconds(step.decode_s),
        "best_loader_cores": step.loader_cores,
        "best_time": f"{fmt_seconds(lead.train_time_s)} ({lead.device.name} × {lead.count})",
        "fastest_text": f"{fmt_seconds(fastest.train_time_s)} ({fastest.device.name} × {fastest.count})",
        "cpu_device": fastest_cpu.device.name if fastest_cpu else None,
        "cpu_time": fmt_seconds(fastest_cpu.train_time_s) if fastest_cpu else None,
        "accelerator_text": _accelerator_text(gpus),
    }


def host_terms(step: StepTime) -> dict[str, str]:
    """The host side of the recommended candidate's step in words (core/estimate/host.py)."""
    h = step.host
    return {
        "best_host_time": fmt_seconds(step.host_s),
        "best_device_time": fmt_seconds(step.device_s),
        "best_device_load": f"{step.device_load:.0%}",
        "best_host_pct": f"{min(1.0, step.host_s / step.step_s):.0%}" if h is not None and step.step_s else "unknown",
        "best_host_cpu": h.cpu if h is not None else "unknown",
        "best_loop": h.loop.describe() if h is not None else "unknown",
        "best_loader_text": (
            f"; the DataLoader and the copy to the device take {fmt_seconds(step.loader_s)} of it in the main process"
            if step.loader_s > 0.1 * step.host_s
            else ""
        ),
    }


def model_size(params: int) -> str:
    """The model's size class by parameter count: "small" (the seeds' networks), "medium" or
    "large" (LLM-class)."""
    if params < SMALL_MODEL_PARAMS:
        return "small"
    return "medium" if params < LARGE_MODEL_PARAMS else "large"


def workload_kind(result: SizingResult) -> str:
    """What kind of network trains: "rnn" (LSTM/GRU), "transformer" (attention), "cnn" (convolutions),
    "mlp" (linear layers without embeddings) or "unknown", from the layer list, else from a traced
    model's module names and kernels, else (a summary model) from its input: an image is a "cnn"."""
    m = result.workload.analysis
    types = {r.type for r in m.rows}
    if m.trace:
        names = " ".join(str(x.get("type", "")) for x in m.trace.get("layers") or []).lower()
        kinds = {str(op.get("kind")) for op in m.trace.get("ops") or []}
        types |= {t for t, words in _TRACE_WORDS.items() if any(word in names for word in words)}
        types |= {t for t, kind in _TRACE_KINDS.items() if kind in kinds}
        if {"embedding", "softmax"} <= kinds:  # token embeddings feeding attention's softmax
            types.add("multihead_attention")
    if types & {"lstm", "gru"}:
        return "rnn"
    if "multihead_attention" in types:
        return "transformer"
    if "conv2d" in types:
        return "cnn"
    if "linear" in types and not types & {"embedding", "positional_embedding"}:
        return "mlp"
    if m.kind == "summary" and len(m.input_shape) == 3:
        return "cnn"
    return "unknown"


_TRACE_WORDS = {
    "lstm": ("lstm", "gru", "rnn"),
    "multihead_attention": ("attention", "transformer"),
    "conv2d": ("conv",),
}
_TRACE_KINDS = {"conv2d": "conv", "linear": "linear", "embedding": "embedding"}


def input_wait(step: StepTime) -> str:
    """What the step waits for when its input pipeline bounds it: "read" (the storage tier cannot
    deliver the samples in time), "decode" (the loader cores cannot decode and augment them in
    time), or "none" (the input arrives in time, or something else bounds the step). The slower of
    the two is the wait (core/estimate/timing.py: input = max(read, decode) per micro-step)."""
    if step.bound != "input pipeline":
        return "none"
    return "decode" if step.decode_s > step.read_s else "read"


def _share(part: float, step: StepTime) -> float:
    return part / step.step_s if step.step_s else 0.0


def _accelerator_text(gpus: Sequence[CandidateResult]) -> str:
    """The fastest accelerator sized (fitting ones first), or that none was sized."""
    if not gpus:
        return "no accelerator is among the candidates — add one to size the difference"
    fitting = [c for c in gpus if c.fits] or list(gpus)
    f = min(fitting, key=lambda c: c.train_time_s)
    return f"on {f.device.name} × {f.count} it takes {fmt_seconds(f.train_time_s)}" + (
        "" if f.fits else ", though it does not fit"
    )


def candidate_context(
    result: SizingResult,
    c: CandidateResult,
    siblings: Sequence[CandidateResult] = (),
    lead: CandidateResult | None = None,
) -> dict[str, Any]:
    """The names candidate-scope rules add, for one device × count; ``siblings`` are the table's
    rows of the same device (every count), ``lead`` the recommended candidate."""
    dev, mem, st = c.device, c.memory, c.step
    bandwidth = dev.bandwidth / 1e9 if dev.bandwidth else None
    link = dev.interconnect or "PCIe"
    short = [x.count for x in siblings if x.fits is False] or [c.count]
    fitting = [x.count for x in siblings if x.fits]
    sharding = result.workload.training.sharding
    return {
        "device": dev.name,
        "count": c.count,
        "fits": bool(c.fits),
        "fits_at_other_count": not c.fits and bool(fitting),
        "short_counts_text": _counts_text(short),
        "fit_counts_text": _counts_text(fitting),
        "sharding_text": SHARDING_TEXT[sharding],
        # where the need was taken when the finding covers several counts or a sharding
        "need_on_text": _need_on_text(c.count if len(set(short)) > 1 else None, sharding),
        "capacity_bytes": c.capacity_bytes,
        "capacity_text": fmt_bytes(c.capacity_bytes),
        "need_text": fmt_bytes(mem.total),
        "need_at_text": _need_at_text(result, c),
        "memory_use": mem.total / c.capacity_bytes if c.capacity_bytes else None,
        "micro_batch": c.micro_batch,
        "accumulation_steps": c.accumulation_steps,
        "batch_per_device": _per_device(result, c),
        "batch_per_device_text": f"{_per_device(result, c):,}",
        "n_na_text": fmt_bytes(float(result.seed.get("n_na_bytes") or 0)),
        "is_gpu": dev.kind != "cpu",
        "is_best": c is lead,
        "is_this_machine": dev.is_this_machine,
        "has_tensor_cores": has_tensor_peak(dev),
        # what mixed precision does to the peak the sizing uses (1 on a TPU: FP32 already runs as BF16)
        "half_peak_ratio": dev.half_flops / dev.fp32_flops if dev.half_flops and dev.fp32_flops else 1.0,
        "fp32_peak": fmt_count(dev.fp32_flops, "FLOP/s"),
        "half_peak": fmt_count(dev.half_flops, "FLOP/s") if dev.half_flops else "unknown",
        "tf32_peak": fmt_count(dev.tf32_flops, "FLOP/s") if dev.tf32_flops else "n/a",
        "bandwidth_gbs": bandwidth,
        "largest_batch": c.largest_batch,
        "largest_batch_text": "unknown" if c.largest_batch is None else f"{c.largest_batch:,}",
        # NVLink, Infinity Fabric, RoCE, ICI or NeuronLink between the devices, not only PCIe
        "has_nvlink": dev.nvlink,
        "interconnect": link,
        "comm_text": fmt_seconds(st.comm_s),
        "step_text": fmt_seconds(st.step_s),
        # host memory is reached over PCIe; NVLink joins the GPUs to each other
        "gpu_host_traffic": "an unknown rate"
        if dev.host_link_bw is None
        else f"{c.count * dev.host_link_bw / 1e9:,.0f} GB/s",
        "host_link": dev.host_link or "a host link the catalogue does not give",
        "bound": st.bound,
        "input_wait": input_wait(st),
        "overhead_share": _share(st.overhead_s, st),
        "overhead_pct": f"{st.overhead_s / st.step_s:.0%}" if st.step_s else "unknown",
        # the host's whole share (framework calls, DataLoader, copy, synchronisations): core/estimate/host.py
        "host_share": min(1.0, _share(st.host_s, st)) if st.host is not None else _share(st.overhead_s, st),
        "host_pct": f"{min(1.0, _share(st.host_s, st)):.0%}" if st.host is not None else "unknown",
        # the device's busy share of the step: the host runs beside it, so a host share above half
        # leaves the device idle only when the host paces the step
        "device_load": st.device_load if st.host is not None else 1.0 - _share(st.overhead_s, st),
        "device_load_pct": f"{st.device_load:.0%}" if st.host is not None else "unknown",
        "memory_share": _share(st.memory_s, st),
        "memory_pct": f"{_share(st.memory_s, st):.0%}",
        "comm_share": _share(st.comm_s, st),
        "comm_pct": f"{st.comm_s / st.step_s:.0%}" if st.step_s else "unknown",
        "activation_share": mem.activations / mem.tensor_peak if mem.tensor_peak else 0.0,
        "activation_pct": f"{mem.activations / mem.tensor_peak:.0%}" if mem.tensor_peak else "unknown",
    }


def has_tensor_peak(dev: DeviceSpec) -> bool:
    """Whether the device has tensor (matrix) units that half precision runs on: its dense
    FP16/BF16 peak is above its FP32 peak (NVIDIA tensor cores, AMD matrix cores, Gaudi's MMEs,
    Trainium's tensor engine), or it publishes a half-precision peak and no FP32 rate at all (TPUs:
    XLA runs FP32 matmuls as BF16 passes on the MXUs). A core count in the catalogue is not needed:
    the B200's is not published."""
    if dev.half_flops is None:
        return bool(dev.extra.get("tensor_cores"))  # a user's device that gives a count but no peak
    if not dev.extra.get("fp32_tflops"):
        return True
    return dev.half_flops > dev.fp32_flops


def _need_on_text(count: int | None, sharding: str) -> str:
    """ " (× 1, FSDP)": the count the need was taken on (when a finding covers several) and the sharding."""
    parts = ([f"× {count}"] if count is not None else []) + ([SHARDING_TEXT[sharding]] if sharding != "none" else [])
    return f" ({', '.join(parts)})" if parts else ""


def _counts_text(counts: Sequence[int]) -> str:
    """[1, 2, 4] → "× 1, × 2 and × 4"."""
    parts = [f"× {n}" for n in sorted(set(counts))]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1] if parts else ""


def _per_device(result: SizingResult, c: CandidateResult) -> int:
    return -(-result.workload.training.batch_size // (c.count * c.nodes))


def _need_at_text(result: SizingResult, c: CandidateResult) -> str:
    """Where the memory per device was taken: the batch when it runs in one pass, else the micro-batch."""
    if c.accumulation_steps == 1 and c.micro_batch == _per_device(result, c):
        return f"batch {result.workload.training.batch_size}"
    if result.workload.training.micro_batch_size is None and c.micro_batch == 1:
        return "a micro-batch of one sample per device, with gradient accumulation"
    return f"micro-batch {c.micro_batch}"


def host_facts(inventory: Mapping[str, Any] | None) -> dict[str, Any]:
    """The names taken from this machine's inventory (all None when it is not known)."""
    inv = inventory or {}
    cpu, mem = inv.get("cpu") or {}, inv.get("memory") or {}
    blas = (inv.get("software") or {}).get("blas") or []
    l3 = [c for c in (cpu.get("caches") or []) if c.get("level") == 3]
    return {
        "host_physical_cores": cpu.get("physical_cores"),
        "host_logical_cores": cpu.get("logical_cores"),
        "host_sockets": cpu.get("sockets"),
        "host_ram_bytes": mem.get("total_bytes"),
        "host_memory_channels": mem.get("channels"),
        "host_blas_threads": max((b.get("threads") or 0 for b in blas), default=None) or None,
        "host_tlb": cpu.get("tlb") or "unknown",
        "host_l3_mb": round(sum(c["total_bytes"] for c in l3) / 2**20) if l3 else None,
    }
