"""The work of one forward/backward pass at a per-device micro-batch, as core/estimate/timing.py
puts it together into a step: matrix products, memory-bound work and the optimizer's share of it
(core/estimate/op_work.py, and the large-model terms of core/estimate/parallel_time.py), the FLOPs,
and the framework's calls that issue them (core/estimate/host.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from core.estimate import host as host_model
from core.estimate import parallel_time
from core.estimate.activations import activation_policy, recompute_per_sample
from core.estimate.op_work import GpuPass, PassSetup, gpu_pass, op_times, uses_gpu_kernels
from core.network.model import ModelAnalysis
from core.spec.large import DEFAULT_LARGE, LargeModelSpec, ParallelSpec
from core.vocabulary import OPTIMIZER_STATES, PRECISION_BYTES

# Framework cost (Python, dispatch, kernel launches), seconds. On a CPU per framework call (3 per
# graph op) and per step (the optimizer's and the loss's fixed costs): TrainRig defaults before
# calibration. On a GPU per operator PyTorch dispatches (core/estimate/host.py training_operators)
# and per step, the synchronisation at its end apart, and per call of cuDNN's convolutions: 17.3 µs,
# 0.35 ms and 54 µs on the reference host,
# fitted on the shared H100 fit set's host-bound steps (benchmarks/fit_host_gpu.py, docs/accuracy.md).
# Only for CPUs and NVIDIA GPUs: no figure is known for TPUs, Trainium or other accelerators (XLA
# and Neuron compile the step), so their overhead is 0 and the sizing says the step is a lower bound.
# On a GPU these are the reference host's (core/estimate/host.py), divided by the host CPU's speed.
OVERHEAD_PER_OP_S = host_model.REFERENCE["per_call_s"]
OVERHEAD_PER_OPERATOR_S = host_model.REFERENCE["per_operator_s"]
PER_CUDNN_CALL_S = host_model.REFERENCE["cudnn_call_s"]
OVERHEAD_PER_STEP_S = host_model.REFERENCE["per_step_s"]


@dataclass(frozen=True)
class PassWork:
    """One forward/backward pass at a micro-batch, with the optimizer's share kept apart."""

    compute: float
    memory: float  # memory-bound work, the optimizer's included
    optimizer: float  # the optimizer's share of ``memory``
    work: float  # as the device runs it, optimizer included
    work_no_optimizer: float
    input_s: float
    overhead: float  # framework overhead, optimizer's calls included
    overhead_no_optimizer: float
    flops: float
    # on an accelerator, the device's idle time waiting for the host's dispatch where the slower side
    # changes along the pass (core/estimate/host.py device_wait), with and without the optimizer step
    wait: float = 0.0
    wait_no_optimizer: float = 0.0
    # GradScaler synchronises the optimizer step (fp16, an optimizer that is not fused): whatever the
    # loop's synchronisations, the host and the device meet every step
    synchronised: bool = False


def train_flops_per_sample(model: ModelAnalysis, checkpointing: bool, large: LargeModelSpec = DEFAULT_LARGE) -> int:
    """Forward + backward (≈ 2× forward: input and weight gradients) + recomputation: the whole
    forward under full checkpointing, the wrapped blocks' when only every Nth is
    (``large.checkpoint_every``)."""
    if checkpointing and large.checkpoint_every > 1 and model.graph is not None:
        policy = activation_policy(replace(large, parallel=ParallelSpec()), True)
        return int(model.forward_flops * 3 + recompute_per_sample(model, policy, 4).flops)
    return model.forward_flops * (4 if checkpointing else 3)


def pass_work(
    setup: PassSetup,
    b: int,
    n_ops: int,
    sizes: Sequence[float],
    shards: int = 1,
    speed: float = 1.0,
    # memory format, compile, cuDNN TF32, cuDNN's algorithm search
    kernel_options: tuple[str, bool, bool, bool] = ("contiguous", False, False, False),
    large: LargeModelSpec = DEFAULT_LARGE,
) -> PassWork:
    """The work of one forward/backward pass of ``b`` samples per device, with the optimizer step's
    memory-bound work and framework calls kept apart (they run once per optimizer step).

    ``shards``: the devices the optimizer states are partitioned over (ZeRO-1/2/3, FSDP full shard;
    Rajbhandari et al. 2020): each updates 1/shards of the parameters, so the optimizer's
    memory-bound work is divided by it. Its framework calls are kept: FSDP2 steps a dim-0 shard of
    every parameter, as many calls as unsharded; DeepSpeed's ZeRO steps one flat partition per
    parameter group, fewer — kept as an upper bound rather than divided."""
    model, ops, device, kind, precision, optimizer, checkpointing, peak_rate, cal = setup.parts()
    flops = train_flops_per_sample(model, checkpointing or large.checkpoint_every > 1, large) * b
    pb, gb, _, ob = PRECISION_BYTES[precision]
    p = model.parameters
    order = None
    if not ops:  # a published summary: totals only, compute and memory traffic overlap
        compute = flops / peak_rate
        states = 2 * OPTIMIZER_STATES[optimizer] * ob
        traffic = p * (3 * pb + 2 * gb + states + pb)
        traffic += 2 * model.activation_bytes_per_sample * b
        memory = traffic / device.bandwidth if device.bandwidth else 0.0
        # the optimizer reads and writes its state and writes the weights (of its shard)
        opt = p * (states + pb) / device.bandwidth if device.bandwidth else 0.0
        if shards > 1:
            memory -= opt - opt / shards
            opt /= shards
        work, work_no_opt = max(compute, memory), max(compute, memory - opt)
        n_ops = 0  # no layer list: the per-op overhead is unknown and not counted (the sizing says so)
    else:
        options = {
            "memory_format": kernel_options[0],
            "compile_model": kernel_options[1],
            "cudnn_tf32": kernel_options[2],
            "cudnn_benchmark": kernel_options[3],
            "fp8": large.fp8,
            "attention": large.attention,
            # half precision under torch.autocast (fp32 weights), not a model held in half precision
            "autocast": large.precision_layout == "autocast",
            "host_speed": speed,  # the host launches a recurrent layer's time steps (gpu_rnn.rnn_op_s)
        }
        if uses_gpu_kernels(setup):  # the kernels op by op: where the host's dispatch leaves the GPU waiting
            order = gpu_pass(setup, b, **options)
            compute, memory_no_opt, opt = order.compute, order.memory, order.optimizer
        else:
            compute, memory_no_opt, opt = op_times(setup, b, sizes, **options)
        extra_compute, extra_memory, opt = parallel_time.large_terms(
            setup, b, large, opt, len(sizes), kernel_options[1]
        )
        compute += extra_compute
        memory_no_opt += extra_memory
        opt /= shards
        memory = memory_no_opt + opt
        work, work_no_opt = compute + memory, compute + memory_no_opt  # the ops run one after another
    s = float(cal.get("run_scale", 1.0))  # what this machine's local runs measured against the prediction
    wait = wait_no_opt = 0.0  # the device idle while the host dispatches (an accelerator's kernels op by op)
    # GradScaler reads its found-inf flag every optimizer step (a fused optimizer takes it on the device)
    synchronised = kind != "cpu" and precision == "fp16_mixed" and large.optimizer_impl != "fused"
    overhead_known = device.kind == "cpu" or device.runs_cuda or "per_step_s" in cal
    if kind != "cpu":
        # an accelerator's host: the reference host's costs over this host CPU's speed; the
        # optimizer in its foreach implementation (PyTorch's default for CUDA tensors)
        # per operator PyTorch dispatches (resources/host_ops.json), not per framework call
        per_op = OVERHEAD_PER_OPERATOR_S / speed if overhead_known else 0.0
        per_cudnn = PER_CUDNN_CALL_S / speed if overhead_known else 0.0
        per_step = cal.get("per_step_s", OVERHEAD_PER_STEP_S["gpu"] / speed if overhead_known else 0.0)
        tensors = len(sizes) if ops else 0
        # a summary model's parameter tensors are not known: no optimizer calls are invented for it
        known = overhead_known and bool(ops)
        # the optimizer's Python before its first kernel, then its calls (each a dispatch)
        opt_python = host_model.OPTIMIZER_PYTHON_PER_TENSOR_S / speed * tensors if known else 0.0
        opt_n = host_model.FOREACH_CALLS[optimizer] if known else 0
        if known and large.optimizer_impl == "fused":  # one call per parameter group
            opt_python, opt_n = 0.0, 2
        elif known and large.optimizer_impl == "per_tensor":  # a loop of ops per tensor in Python
            opt_python, opt_n = 0.0, parallel_time.PER_TENSOR_KERNELS[optimizer] * tensors
        opt_calls = opt_python + opt_n * per_op
        # a summary model's operators are not known either: none are invented
        pass_s = (
            per_op * host_model.training_operators(model, precision, large.attention)
            + per_cudnn * host_model.cudnn_calls(model, precision, large.attention)
            if ops
            else 0.0
        )
        overhead = per_step + pass_s + opt_calls
        if order is not None and model.graph is not None and overhead_known:
            wait, wait_no_opt = _device_waits(
                order,
                model,
                precision,
                large.attention,
                work_no_opt,
                opt,
                per_step,
                (per_op, per_cudnn),
                (opt_python, opt_n),
                synchronised,
            )
    else:
        # framework calls as PyTorch issues them (core/estimate/host.py: calls per kind of graph op)
        calls = host_model.forward_calls(model) if ops else n_ops
        per_op = cal.get("per_op_s", OVERHEAD_PER_OP_S if overhead_known else 0.0)
        per_step = cal.get("per_step_s", OVERHEAD_PER_STEP_S["cpu"] if overhead_known else 0.0)
        per_tensor = cal.get("optimizer_tensor_s", {}).get(optimizer)
        if per_tensor is not None:  # measured: the optimizer's ops per parameter tensor
            tensors = len(sizes) if ops else n_ops
            overhead = per_step + per_op * 3 * calls + float(per_tensor) * tensors
        else:
            overhead = per_step + per_op * (3 * calls + (2 if optimizer != "sgd" else 1) * n_ops)
        pass_s = per_op * 3 * calls
    return PassWork(
        compute * s,
        memory * s,
        opt * s,
        work * s,
        work_no_opt * s,
        0.0,
        overhead * s,
        (per_step + pass_s) * s,
        float(flops),
        wait * s,
        wait_no_opt * s,
        synchronised,
    )


def _device_waits(
    order: GpuPass,
    model: ModelAnalysis,
    precision: str,
    attention: str,
    work_no_opt: float,
    opt: float,
    per_step: float,
    prices: tuple[float, float],
    optimizer: tuple[float, int],
    synchronised: bool,
) -> tuple[float, float]:
    """(with the optimizer step, without) the device's idle seconds in a pass on an accelerator while
    the host dispatches it (host.device_wait); ``optimizer``: its Python before its first kernel and
    its calls. The host issues, in order: a third of its fixed work
    per step (``zero_grad`` and the loop's head), each op's forward operators, the loss's, a third
    (``backward()``'s entry), each op's backward operators in reverse, GradScaler's under fp16, the
    last third (``optimizer.step()``'s Python) and the optimizer's Python over its tensors, then each
    of its calls with an equal share of its kernels. The device runs each piece's kernels as the GPU
    kernel model prices them, autocast's casts and the large-model terms
    (core/estimate/parallel_time.py) spread over the passes by their kernels' seconds, so the pieces
    add up to the pass's work. ``synchronised``: GradScaler reads its found-inf flag before the
    optimizer step (fp16 with an optimizer that is not fused), a synchronisation, after which the host
    runs the optimizer step's Python and issues its calls to an idle device."""
    assert model.graph is not None
    split = host_model.operator_split(model.graph, precision in ("bf16_mixed", "fp16_mixed"), attention)
    k = order.kernels
    passes = float(k.forward.sum() + k.backward.sum())
    scale = (work_no_opt - order.loss) / passes if passes > 0 else 0.0
    scaler = host_model.GRADSCALER_OPERATORS if precision == "fp16_mixed" else 0
    third = per_step / 3
    per_op, per_cudnn = prices
    host = np.concatenate(
        (
            [third],
            per_op * split.forward + per_cudnn * split.cudnn_forward,
            [per_op * (split.loss_forward + split.loss_backward) + third],
            (per_op * split.backward + per_cudnn * split.cudnn_backward)[::-1],
            [per_op * scaler],
        )
    )
    device = np.concatenate(([0.0], k.forward * scale, [order.loss], (k.backward * scale)[::-1], [0.0]))
    # a micro-step before the last: no optimizer step (its overhead keeps the whole fixed work)
    without = host_model.device_wait(np.append(host, third), np.append(device, 0.0))
    python_s, n_calls = optimizer
    calls = max(1, min(n_calls, 64))  # the calls as at most 64 equal pieces
    opt_host = np.concatenate(([third + python_s], np.full(calls, n_calls * per_op / calls)))
    opt_device = np.concatenate(([0.0], np.full(calls, opt / calls)))
    if not synchronised:
        return host_model.device_wait(np.append(host, opt_host), np.append(device, opt_device)), without
    # GradScaler's synchronisation: host and device meet, then the optimizer step starts afresh
    meet = max(float(host.sum()), float(device.sum()) + host_model.device_wait(host, device))
    finish = meet + opt + host_model.device_wait(opt_host, opt_device)
    return finish - float(device.sum()) - opt, without
