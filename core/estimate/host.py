"""The host side of a training step: what the CPU's main process does for each step, term by term,
and how it combines with the device's work (docs/sizing.md §4b).

Per step, on one core of the host CPU:
- dispatch: on a GPU, every operator PyTorch dispatches for the forward and backward pass (its
  dispatcher, autograd's bookkeeping and the kernel launch; views and casts are operators too),
  counted per kind of graph op in resources/host_ops.json (benchmarks/count_host_ops.py: forward,
  backward, and autocast's casts), at one price per operator; on a CPU the framework calls as the
  CPU timing model counts them (per kind of graph op, two more in backward per forward call); the
  optimizer's calls (PyTorch's default on CUDA is the foreach implementation: a few calls per step
  whatever the tensor count, plus its Python loop over the parameters; on a CPU the for-loop
  implementation: a few calls per tensor) and a fixed cost per step (``zero_grad``,
  ``backward()``'s entry, ``optimizer.step()``'s Python, one synchronisation);
- the DataLoader in the main process: with ``num_workers=0`` its sampler, fetcher and collation
  (per batch and per sample); with workers, the hand-off of each batch from a worker (the workers'
  own work runs in parallel and paces the step only when they cannot keep up);
- the copy of the batch to the device: from pageable memory the host waits for it (staged through
  a pinned buffer); with ``pin_memory`` and ``non_blocking`` it overlaps;
- synchronisations (``loss.item()``, metrics) and per-step log lines.

Every cost is at the reference CPU (resources/host_cpus.json) and scales with the host CPU's
single-thread speed; this machine's calibration replaces them with what it measured here.

On an accelerator the host queues kernels and runs ahead of the device until a synchronisation;
with one every step, the device waits for what the host does after it (loading the next batch,
copying it) and the host waits for the device's last kernel:
step = serial host work + max(dispatch, device work + waits), where the waits are the device's idle
time while the host dispatches, played op by op (``device_wait``: the slower side can change along
the step). Without a synchronisation each step the host's loader work overlaps too and the step is
max(host, device) (docs/sizing.md §4b). On a CPU the two add.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from core.estimate.host_probe import gpu_host_speed
from core.network.graph import Graph
from core.network.model import ModelAnalysis
from core.paths import resource_path
from core.spec.loop import LoopSpec

# Forward framework calls per graph op as a CPU's timing model counts them (×3 with backward, at the
# cost per call `calibrate` measures; a GPU's host counts dispatched operators instead,
# resources/host_ops.json); ops not named: 1. A linear layer on a 2-D input is one addmm; on a
# sequence, F.linear reshapes around the matrix product.
FORWARD_CALLS = {
    "qkv_proj": 15,  # three linear layers on a sequence (3 calls each), a view and a transpose per head split
    "sdpa": 4,  # scaled_dot_product_attention and the transpose/reshape that merge the heads
    "rmsnorm": 6,  # nn.RMSNorm decomposed: pow, mean, add, rsqrt, mul, mul
    "rotary": 14,  # on q and k: float, reshape, view_as_complex, mul, view_as_real, flatten, type_as
    "batchnorm1d": 2,  # batch_norm and the num_batches_tracked increment
    "batchnorm2d": 2,
    "silu_mul": 2,
    "positional_embedding": 2,  # the position lookup and the add
}
SEQUENCE_LINEAR_CALLS = 3  # view, addmm/mm, view: a linear layer whose input has a sequence dimension
SEQUENCE_LINEAR = {"linear", "out_proj", "gate_up", "down"}
DROPOUT_CALLS = 4  # a CPU's dropout: bernoulli_, div_, mul, and the mask
# Calls of one optimizer step in PyTorch's foreach implementation (the default for CUDA tensors,
# torch.optim docs "Algorithms"): each _foreach_* call covers every tensor — counted from the
# single-device foreach code paths of torch/optim/*.py (2.x).
FOREACH_CALLS = {"sgd": 1, "sgd_momentum": 3, "adam": 12, "adamw": 13, "rmsprop": 8, "adagrad": 6}
# The optimizer's Python per parameter tensor (the _init_group loop: grad and state look-ups, list
# appends), seconds on the reference CPU: TrainRig estimate, a few µs per tensor.
OPTIMIZER_PYTHON_PER_TENSOR_S = 4e-6

# Host costs on the reference CPU (seconds). per_operator: what the host spends on each operator
# PyTorch dispatches on a CUDA device (the dispatcher, autograd's bookkeeping, the kernel launch:
# resources/host_ops.json counts them per graph op), per_step on a GPU (loss.backward()'s and
# optimizer.step()'s Python, zero_grad, one synchronisation, counted apart as sync_s) and cudnn_call_s
# (below): fitted together on a seeded half of the 591 steps two lent H100s measured, each at its own
# host probe (the third and fourth suites: seed MLPs to BERT, small CNNs, eager attention), through
# the whole step model, the device's waits included, by least squared log error, their scale anchored
# so that the fit set's seed MLP (the host probe's workload) is still the reference host's 1.69 ms
# (benchmarks/fit_host_gpu.py --suites: 15.68 µs per operator + 0.469 ms per step + 65.5 µs per cuDNN
# call, 2026-11-26, a ninth session, without the fp16 steps whose optimizer GradScaler skipped; 15.66,
# 0.470 and 64.5 with them); held out on the other halves, a second H200 lease's 133 random
# architectures (107 → 119 within 25 %), the first H200 and H100 suites and the fit set
# (docs/accuracy.md, "The host's prices fitted on the probed suites"). Before, the fit set's seed MLP and
# BERT-base b64 alone pinned the first two (17.68 µs + 0.320 ms; 54 µs a cuDNN call fitted on a lent
# H200's CNN steps), which priced every host-bound CNN 7–17 % too fast and every encoder 6–16 % too slow
# on five suites.
# per_call: a framework call as a CPU's timing model counts them (3 per graph op), 15 µs, the CPU
# default before calibration; a CPU's per step is TrainRig's default before calibration. The
# DataLoader's figures were measured on the development machine (benchmarks/host_costs.py: 8.0 µs
# per sample, 100 µs per batch, hand-off 2.3 ms per batch with 2 workers on 2 busy cores, an upper
# bound) and scaled to the reference CPU by the two CPUs'
# single-thread speeds (×0.63).
REFERENCE = {
    "per_call_s": 15e-6,
    "per_operator_s": 15.68e-6,
    # per call of cuDNN's convolution (forward, input gradient, weight gradient) beyond its operators'
    # price: the cuDNN frontend's host work (the execution plan's lookup by shape, its workspace, the
    # launch through cuDNN's graph API). Fitted with the two others on the probed H100 suites (above; 54 µs
    # when fitted on a seeded half of a lent H200's host-bound CNN steps, benchmarks/fit_host_gpu.py --cudnn)
    "cudnn_call_s": 65.5e-6,
    "per_step_s": {"cpu": 200e-6, "gpu": 0.469e-3},
    "loader_batch_s": 63e-6,
    "loader_sample_s": 5.1e-6,
    "handoff_batch_s": 1.4e-3,
    "sync_s": 30e-6,  # a device-to-host round trip of a scalar beyond the wait (cudaMemcpy of 4 bytes)
    "log_line_s": 20e-6,  # one formatted line to a terminal or file (print, a logger)
}
# GradScaler's operators per step (fp16): scale (and its backward), the unscale's non-finite check,
# the reciprocal, the found-inf copies and its read (a synchronisation), _amp_update_scale_: counted
# with a dispatch mode on torch.amp.GradScaler's step, whatever the tensor count.
GRADSCALER_OPERATORS = 11

# What resources/workers/host_bench.py's per_call_s (a small relu and linear from Python on CPU tensors)
# would read on the reference CPU: 17.7 µs measured on the development machine × 0.63 (the two CPUs'
# single-thread speeds). A calibration's own per_call_s over this gives its CPU's speed.
REFERENCE_BENCH_CALL_S = 11.2e-6
PAGEABLE_COPY_FACTOR = 0.5  # of the link's rate: a copy from pageable memory is staged through a pinned buffer
HOST_COPY_BPS = 10e9  # collating (stacking) samples in RAM, bytes/s: one core's memory copy rate (TrainRig estimate)


@dataclass(frozen=True)
class HostTime:
    """The host's seconds per step on one core, by term, and how they meet the device."""

    dispatch_s: float  # framework calls: forward, backward, optimizer, per step
    loader_s: float  # the DataLoader in the main process (workers 0) or the hand-off from workers
    copy_s: float  # host→device copy the host waits for (pageable memory)
    sync_s: float
    log_s: float
    worker_s: float  # one batch's loading spread over the workers: paces the step when they lag
    speed: float  # the host CPU's single-thread speed relative to the reference
    cpu: str  # what the speed is from
    loop: LoopSpec = field(default_factory=LoopSpec)
    probed: bool = False  # the speed is this machine's GPU host as calibrate's host probe measured it

    @property
    def serial_s(self) -> float:
        """What the host does after a synchronisation before the device has work again."""
        return self.loader_s + self.copy_s + self.log_s

    @property
    def total_s(self) -> float:
        return self.dispatch_s + self.loader_s + self.copy_s + self.sync_s + self.log_s


def combine(host: HostTime, device_s: float, kind: str, wait_s: float = 0.0, synchronised: bool = False) -> float:
    """The step from the host's and the device's seconds: added on a CPU; on an accelerator the
    slower of the two, plus what a synchronisation every k steps makes the device wait for, once per
    k steps: the host's serial work after it (loading and copying the next batch, logging) and its
    dispatch where the host is the slower in turn (``wait_s``: the device's idle time in one step
    while the host dispatches it, device_wait) — max(host, device) + max(0, device + serial + wait −
    max(host, device)) / k (k = 1: max(host, device + serial + wait); none: max(host, device)). As
    played op by op: between synchronisations the host runs ahead into the next step's dispatch and
    the device into its queued kernels. ``synchronised``: the step synchronises itself every step
    (GradScaler), whatever the loop does. Never faster than the loader workers' pace."""
    if kind == "cpu":
        return device_s + host.total_s
    k = 1 if synchronised else host.loop.sync_every
    slower = max(host.total_s, device_s)
    if not k:
        return max(slower, host.worker_s)
    return max(slower + max(0.0, device_s + host.serial_s + wait_s - slower) / k, host.worker_s)


def training_operators(model: ModelAnalysis, precision: str, attention: str = "auto") -> int:
    """Operators a CUDA device's host dispatches for one forward and backward pass and its loss
    (resources/host_ops.json per graph op, autocast's casts under a mixed precision, GradScaler's
    under fp16, the attention as ``attention`` computes it); a traced model without a graph: three
    per forward call."""
    if model.graph is not None:
        n = graph_operators(model.graph, precision in ("bf16_mixed", "fp16_mixed"), attention=attention)
    else:
        n = 3 * forward_calls(model)
    return n + (GRADSCALER_OPERATORS if precision == "fp16_mixed" else 0)


def cudnn_calls(model: ModelAnalysis, precision: str, attention: str = "auto") -> int:
    """Calls into cuDNN's convolutions in one forward and backward pass (0 without a layer graph)."""
    if model.graph is None:
        return 0
    return operator_split(model.graph, precision in ("bf16_mixed", "fp16_mixed"), attention).cudnn_calls


def forward_calls(model: ModelAnalysis) -> int:
    """Framework calls of one forward pass as a CPU's timing model counts them: per kind of graph
    op, a traced model's own count, 0 for a published summary (no layer list)."""
    if model.graph is not None:
        return _graph_calls(model.graph)
    trace = model.trace or {}
    return int(trace.get("op_calls", len(trace.get("ops", ()))))


@lru_cache(maxsize=1)
def host_ops_table() -> dict[str, Any]:
    """resources/host_ops.json: operators PyTorch dispatches per graph op kind in a training pass
    (forward, backward, and the extra under autocast), counted by benchmarks/count_host_ops.py."""
    return dict(json.loads(resource_path("host_ops.json").read_text(encoding="utf-8")))


def _op_kind(op: Any, sequence: bool) -> str:
    if op.variant in ("rmsnorm_fp32", "rotary_complex", "rotary_half"):
        return str(op.variant)
    if op.name == "linear" and sequence:
        return "linear_seq"
    if op.name == "conv2d" and len(op.tensor_sizes) == 1:
        return "conv2d_nobias"
    return str(op.name)


def graph_operators(g: Graph, autocast: bool, table: Mapping[str, Any] | None = None, attention: str = "auto") -> int:
    """Operators PyTorch dispatches in one forward and backward pass of ``g`` and its cross-entropy
    loss, as CUDA runs them (resources/host_ops.json; a kind not counted there: one forward and two
    backward operators), with autocast's casts when ``autocast``; attention "math" as the math
    kernel's decomposition, "eager" as the attention written out in Python."""
    if table is None:  # the committed table, once per graph (the what-if loop re-times it)
        return operator_split(g, autocast, attention).total
    return _split_operators(g, autocast, table, attention).total


@dataclass(frozen=True)
class OperatorSplit:
    """Operators dispatched per graph op (forward order) in its forward and in its backward, and
    the loss's (after the forward, before the backward)."""

    forward: np.ndarray
    backward: np.ndarray
    loss_forward: float
    loss_backward: float
    # calls into cuDNN's convolutions per graph op: the forward, and in backward the weight gradient and
    # (but for the layer that reads the network's input) the input gradient
    cudnn_forward: np.ndarray
    cudnn_backward: np.ndarray

    @property
    def total(self) -> int:
        return round(self.loss_forward + self.loss_backward + float(self.forward.sum() + self.backward.sum()))

    @property
    def cudnn_calls(self) -> int:
        return round(float(self.cudnn_forward.sum() + self.cudnn_backward.sum()))


@lru_cache(maxsize=256)
def operator_split(g: Graph, autocast: bool, attention: str = "auto") -> OperatorSplit:
    """graph_operators op by op, forward and backward apart (the committed table): where in the step
    the host's dispatch falls, for device_wait."""
    return _split_operators(g, autocast, host_ops_table(), attention)


def _split_operators(g: Graph, autocast: bool, doc: Mapping[str, Any], attention: str) -> OperatorSplit:
    kinds = doc.get("kinds", doc)
    aliases = doc.get("aliases", {})
    sequence = any(op.name in ("embedding", "sdpa", "qkv_proj") for op in g.ops)

    def ops_of(kind: str, biases: bool = True) -> tuple[float, float]:
        if kind in aliases:
            name, times = aliases[kind]
            if name == "linear_seq" and not biases and "linear_seq_nobias" in kinds:
                name = "linear_seq_nobias"
            f, b = ops_of(name)
            return times * f, times * b
        row = kinds.get(kind)
        if row is None:
            return 1.0, 2.0
        return (
            row["forward"] + (row["forward_autocast"] if autocast else 0),
            row["backward"] + (row["backward_autocast"] if autocast else 0),
        )

    def biases(op: Any) -> bool:  # a projection with a bias per linear layer: two tensors each
        return op.name not in aliases or len(op.tensor_sizes) >= 2 * aliases[op.name][1]

    core = {"math": "sdpa_math", "eager": "sdpa_eager"}.get(attention, "sdpa")

    def kind_of(op: Any) -> str:
        kind = _op_kind(op, sequence)
        return core if kind == "sdpa" and core in kinds else kind

    per_op = np.array([ops_of(kind_of(op), biases(op)) for op in g.ops], dtype=float).reshape(-1, 2)
    loss = ops_of("cross_entropy")
    network_input = g.ops[0].input_id if g.ops else -1
    convs = np.array([op.name == "conv2d" for op in g.ops], dtype=float)
    reads_input = np.array([op.input_id == network_input for op in g.ops], dtype=float)
    return OperatorSplit(per_op[:, 0], per_op[:, 1], loss[0], loss[1], convs, convs * (2 - reads_input))


def device_wait(host: Sequence[float], device: Sequence[float]) -> float:
    """Seconds the device idles in a pass waiting for the host's dispatch: the host issues the pass's
    pieces in order (``host``: its seconds to issue each), queueing their kernels (``device``: their
    seconds), and runs ahead while the device is busy; the device starts a piece once the host has
    issued it and the device has finished the one before. The device finishes at max over k of (the
    host's time to issue pieces 0…k + the device's time for pieces k…n), so the pass takes the slower
    of the two where one of them is slower throughout, and more where the slow side changes along
    the pass (a host-bound stretch the device cannot make up for after it)."""
    h = np.asarray(host, dtype=float)
    d = np.asarray(device, dtype=float)
    if not len(d):
        return 0.0
    finish = float(np.max(np.cumsum(h) + np.cumsum(d[::-1])[::-1]))
    return max(0.0, finish - float(d.sum()))


@lru_cache(maxsize=256)
def _graph_calls(g: Graph) -> int:
    calls = 0
    # a network of token sequences (embeddings, attention) runs its linear layers on sequences
    sequence = any(op.name in ("embedding", "sdpa", "qkv_proj") for op in g.ops)
    for op in g.ops:
        if op.name == "dropout":
            calls += DROPOUT_CALLS
        elif op.name in SEQUENCE_LINEAR and sequence:
            calls += SEQUENCE_LINEAR_CALLS
        else:
            calls += FORWARD_CALLS.get(op.name, 1)
    return calls


def loader_host(
    loop: LoopSpec,
    batch: int,
    sample_bytes: float,
    costs: Mapping[str, float],
    link_bps: float | None,
    kind: str,
) -> tuple[float, float, float]:
    """(main-process loader seconds, copy seconds the host waits for, workers' seconds per batch) of
    one step of ``batch`` samples of ``sample_bytes`` each, at ``costs`` (this host's)."""
    if loop.style == "device_tensors":
        return 0.0, 0.0, 0.0
    fetch = costs["loader_batch_s"] + batch * (costs["loader_sample_s"] + sample_bytes / HOST_COPY_BPS)
    if loop.workers:
        main, workers = costs["handoff_batch_s"], fetch / loop.workers
    else:
        main, workers = fetch, 0.0
    copy = 0.0
    if kind != "cpu" and not loop.pin_memory and link_bps:
        copy = batch * sample_bytes / (link_bps * PAGEABLE_COPY_FACTOR)
    return main, copy, workers


@lru_cache(maxsize=1)
def _cpu_table() -> tuple[str, dict[str, float]]:
    doc = json.loads(resource_path("host_cpus.json").read_text(encoding="utf-8"))
    ipc = {k: float(v["ipc"]) for k, v in doc["core_ipc"].items()}
    scores = {c["name"]: float(c["boost_ghz"]) * ipc[c["core"]] for c in doc["cpus"]}
    return str(doc["reference"]), scores


def cpu_speed(cpu: str | None) -> tuple[float, str]:
    """Single-thread speed of the CPU named ``cpu`` (a platform's "cpu" text, e.g. "2 × Intel Xeon
    Platinum 8480C (112 cores)") relative to the reference CPU, and where it is from; 1.0 with a
    note when the CPU is not in resources/host_cpus.json."""
    reference, scores = _cpu_table()
    for name, score in scores.items():
        if cpu and name in cpu:
            return score / scores[reference], f"{name}, {score / scores[reference]:.2f}× the reference CPU's core"
    return 1.0, f"{cpu or 'the host CPU'} not rated: the reference CPU's speed ({reference})"


def host_costs(measured: Mapping[str, Any] | None, speed: float, kind: str) -> dict[str, float]:
    """Seconds per term for this host: measured on this machine (calibrate) where given, else the
    reference costs divided by the host CPU's speed."""
    out = {k: (v[kind if kind == "cpu" else "gpu"] if isinstance(v, dict) else v) / speed for k, v in REFERENCE.items()}
    for k, v in (measured or {}).items():
        if k in out and isinstance(v, (int, float)) and v >= 0:
            out[k] = float(v)
    return out


def probed_host(measured: Mapping[str, Any] | None, kind: str) -> bool:
    """Whether an accelerator's host speed comes from calibrate's host probe on this machine's GPU (a
    calibration's host figures ``measured`` that hold a plausible one), not from a CPU's rating."""
    return kind != "cpu" and gpu_host_speed(measured) is not None


def host_speed(measured: Mapping[str, Any] | None, host_cpu: str | None, kind: str) -> tuple[float, str]:
    """The host CPU's single-thread speed relative to the reference host and what it is from: this
    machine's calibration (for its GPU, the host probe's step on it, core/estimate/host_probe.py; else its
    measured cost per call against the reference CPU's), else the host
    CPU's rating (resources/host_cpus.json). A CPU candidate is its own host: its measured or
    default costs are used as they are."""
    if probed_host(measured, kind) and (gpu_speed := gpu_host_speed(measured)):
        return gpu_speed, (
            f"this machine's GPU host, measured by calibrate's host probe ({gpu_speed:.2f}× the reference host's speed)"
        )
    per_call = (measured or {}).get("per_call_s")
    if per_call:
        speed = REFERENCE_BENCH_CALL_S / float(per_call)
        return speed, f"this machine's CPU, measured by calibrate ({speed:.2f}× the reference CPU's core)"
    if kind == "cpu":
        return 1.0, "the CPU itself"
    return cpu_speed(host_cpu)
