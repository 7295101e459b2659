"""Measure worker: a few real training steps of a workload under torch.profiler, as compact JSON.

Run by TrainRig (`measure`, the wizard's "Measure on this GPU") in the Python environment with
PyTorch, in a child process with a time limit. It reads one JSON object on stdin:

    {"model": {"input_shape": [...], "layers": [...]} | {"input_shape": [...], "torch": {"file", "factory"}},
     "batch_size": 64, "optimizer": "adamw", "precision": "bf16_mixed", "device": "cuda",
     "warmup": 3, "steps": 5, "chrome_trace": null}

and prints one JSON object (format "trainrig-profile", version 1): each CUDA kernel's name, calls and
total device time over the profiled steps (on ``"device": "cpu"`` each CPU op's self time, so the
pipeline can be exercised without a GPU), the synchronised wall time and host time (the time until
the host had issued the step's work) of as many steps timed without the profiler (``step_wall_s``,
``step_host_s``: tracing slows the host, so the profiled steps' own times are kept apart as
``profiled_step_wall_s``/``profiled_step_host_s``), the device's name and SM count, and the PyTorch
and CUDA versions. Progress goes to stderr as lines "progress <done> <total>". On a problem it
prints {"error": "..."} and exits 3; without a CUDA GPU (and no ``"device": "cpu"``) it says so.
The step is the trainer's: forward, cross-entropy on fp32 logits, backward, optimizer step (at
learning rate 0: the weights stay where they started), zero_grad(set_to_none=True); mixed precision
under torch.autocast, GradScaler for fp16, whose first steps may skip the optimizer while it lowers
its scale: the warm-up runs until it stops, and a measured step it skipped is refused.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


# fp16: extra warm-up steps at most while GradScaler still lowers its loss scale
SETTLE_STEPS = 20


class MeasureError(Exception):
    """A problem to report as {"error": ...}, not a bug."""


def progress(done: int, total: int) -> None:
    sys.stderr.write(f"progress {done} {total}\n")
    sys.stderr.flush()


def build(torch: Any, model_doc: dict[str, Any], attention: str = "auto") -> Any:
    """The workload's module: PyTorch code the user agreed to run, else the layer list — built with
    TrainRig's torchbridge when this worker runs from the source tree (every layer type), else
    with the trainer's builder (plain layers)."""
    sys.path.insert(0, HERE)
    import train  # the trainer worker beside this file: its builders never import the app

    shape = [int(v) for v in model_doc["input_shape"]]
    if "torch" in model_doc:
        return train.load_model(torch, model_doc["torch"], shape)[0]
    root = os.path.dirname(os.path.dirname(HERE))
    if os.path.isdir(os.path.join(root, "torchbridge")):
        sys.path.insert(0, root)
        from torchbridge.models import build_module

        return build_module(model_doc, attention)
    try:
        return train.build_model(torch, shape, model_doc["layers"])[0]
    except train.WorkerError as exc:
        raise MeasureError(str(exc)) from None


def make_step(torch: Any, module: Any, spec: dict[str, Any], dev: Any) -> tuple[Any, Any]:
    """(step, scaler): the workload's training step on one random batch, and its GradScaler (off but in
    fp16). The optimizer runs at learning rate 0: a step's arithmetic at the initial weights. At a real
    rate the network learns the one repeated batch and its one label within a step, its activations then
    grow, and in fp16 they leave the format's range within a few steps: GradScaler skips the optimizer
    in every step after, and the profile had no optimizer in it (a VGG-11's, docs/accuracy.md)."""
    import train

    precision = str(spec.get("precision", "fp32"))
    opt = train.make_optimizer(torch, str(spec.get("optimizer", "adam")), module.parameters(), 0.0)
    if dev.type == "cuda":
        # cuDNN's TF32 in fp32 and its algorithm search: the workload's training.cudnn_tf32 and
        # cudnn_benchmark (TrainRig's defaults: off)
        train.set_cudnn(torch, precision, spec)
    dtype = {"fp16_mixed": torch.float16, "bf16_mixed": torch.bfloat16}.get(precision)
    if dtype is torch.float16 and dev.type != "cuda":
        raise MeasureError("fp16 mixed precision needs a CUDA GPU; measure bf16_mixed or fp32 on the CPU")
    scaler = torch.amp.GradScaler(dev.type, enabled=dtype is torch.float16)
    model_doc = spec["model"]
    shape = (int(spec["batch_size"]), *[int(v) for v in model_doc["input_shape"]])
    if model_doc.get("input_dtype") == "int64":
        x = torch.zeros(shape, dtype=torch.long, device=dev)
    else:
        x = torch.randn(shape, device=dev)
    fmt = train.layout(torch, spec, model_doc["input_shape"])  # as the trainer runs it
    module.to(memory_format=fmt)
    return training_step(torch, module, x.to(memory_format=fmt), opt, scaler, dtype, dev), scaler


def training_step(torch: Any, module: Any, x: Any, opt: Any, scaler: Any, dtype: Any, dev: Any) -> Any:
    """One training step of ``module`` on the batch ``x``: forward under ``torch.autocast`` in ``dtype``
    (None: fp32), cross-entropy on fp32 logits against label 0, backward through ``scaler``, the optimizer
    step, ``zero_grad(set_to_none=True)``. The GPU suite and accuracy_cuda.py run this one too
    (torchbridge.models.cuda_training_step)."""

    def step() -> None:
        with torch.autocast(dev.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            out = module(x)
            logits = out.reshape(-1, out.shape[-1]).float()
            target = torch.zeros(logits.shape[0], dtype=torch.long, device=dev)
            loss = torch.nn.functional.cross_entropy(logits, target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    return step


def loss_scale(scaler: Any) -> float:
    """GradScaler's scale (a synchronisation); 1 where it is off. Each optimizer step it skips
    halves it; 2,000 good steps in a row, far more than a measurement takes, double it."""
    return float(scaler.get_scale()) if scaler.is_enabled() else 1.0


def skipped_steps(scale_before: float, scale_after: float) -> int:
    """Optimizer steps GradScaler skipped between two readings of its scale (each halved it)."""
    return max(0, round(math.log2(scale_before / scale_after))) if scale_after > 0 else 0


def settle_scaler(step: Any, scaler: Any, limit: int = SETTLE_STEPS) -> tuple[int, bool]:
    """fp16: more warm-up steps while GradScaler still lowers its scale (the scaled gradients overflowed,
    the optimizer step was skipped), at most ``limit``: (the steps it took, whether the scale stopped falling;
    True where the scaler is off)."""
    extra = 0
    while scaler.is_enabled() and extra < limit:
        before = loss_scale(scaler)
        step()
        extra += 1
        if loss_scale(scaler) >= before:
            return extra, True
    return extra, not scaler.is_enabled()


def settle(step: Any, scaler: Any) -> None:
    """settle_scaler, refused where the scale never stops falling: such steps train nothing."""
    if settle_scaler(step, scaler)[1]:
        return
    raise MeasureError(
        f"in fp16 every one of {SETTLE_STEPS} more warm-up steps overflowed (GradScaler skipped the optimizer "
        f"step and halved its scale each time, now {loss_scale(scaler):g}): the model's values leave fp16's "
        "range, so its steps are not training steps; measure it in bf16_mixed"
    )


def kernels_from_trace(path: str) -> list[dict[str, Any]]:
    """Device kernels, copies and fills of a Chrome trace, summed by name."""
    with open(path, encoding="utf-8") as fh:
        events = json.load(fh).get("traceEvents", [])
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        k = out.setdefault(e["name"], {"name": e["name"], "count": 0, "total_us": 0.0, "_bps": [], "cat": e["cat"]})
        k["count"] += 1
        k["total_us"] += float(e.get("dur", 0.0))
        bps = (e.get("args") or {}).get("blocks per SM")
        if isinstance(bps, (int, float)):
            k["_bps"].append(float(bps))
    for k in out.values():
        bps = k.pop("_bps")
        k["blocks_per_sm"] = sum(bps) / len(bps) if bps else None
    return sorted(out.values(), key=lambda k: -k["total_us"])


def cpu_ops(prof: Any) -> list[dict[str, Any]]:
    """CPU ops by their self time (no op counted twice), for a profile taken with "device": "cpu"."""
    rows = [
        {"name": e.key, "count": int(e.count), "total_us": float(e.self_cpu_time_total), "blocks_per_sm": None}
        for e in prof.key_averages()
        if e.self_cpu_time_total > 0 and not e.key.startswith(("ProfilerStep", "Optimizer.", "## "))
    ]
    return sorted(rows, key=lambda k: -k["total_us"])


def cpu_name() -> str:
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    want = str(spec.get("device", "cuda"))
    if want == "cuda" and not torch.cuda.is_available():
        built = "a CPU-only build" if not torch.backends.cuda.is_built() else "CUDA built in, but no usable GPU"
        raise MeasureError(
            f"no CUDA GPU: PyTorch {torch.__version__} here is {built}; measure-and-scale needs an NVIDIA GPU "
            "(or use --device cpu to exercise the pipeline on the CPU)"
        )
    dev = torch.device(want)
    warmup, steps = int(spec.get("warmup", 3)), int(spec.get("steps", 5))
    total = warmup + 2 * steps  # warm-up, timed steps, profiled steps
    torch.manual_seed(0)
    try:
        module = build(torch, spec["model"], str(spec.get("attention", "auto"))).to(dev)
    except MeasureError:
        raise
    except Exception as exc:
        raise MeasureError(f"the model cannot be built: {type(exc).__name__}: {exc}") from None
    module.train()
    step, scaler = make_step(torch, module, spec, dev)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def timed_steps(done: int, span: Any) -> tuple[list[float], list[float]]:
        """Each of ``steps`` steps' synchronised wall time and host time (until its work was issued),
        each inside ``span(i)``; ``done`` steps came before (for the progress lines)."""
        wall, host = [], []
        for i in range(steps):
            sync()
            t0 = time.perf_counter()
            with span(i):
                step()
                t_issued = time.perf_counter()
                sync()
            wall.append(time.perf_counter() - t0)
            host.append(t_issued - t0)
            progress(done + i + 1, total)
        return wall, host

    try:
        for i in range(warmup):
            step()
            sync()
            progress(i + 1, total)
        settle(step, scaler)
        scale = loss_scale(scaler)
        # the step's wall and host times without the profiler: tracing every op slows the host
        # (on an H200's host the seed MLP's step took 1.6 ms alone and 3.2 ms profiled)
        wall, host = timed_steps(warmup, lambda i: contextlib.nullcontext())
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        with profile(activities=activities) as prof:
            p_wall, p_host = timed_steps(warmup + steps, lambda i: record_function(f"ProfilerStep#{i}"))
        skipped = skipped_steps(scale, loss_scale(scaler))
        if skipped > 0:
            raise MeasureError(
                f"GradScaler skipped the optimizer step in {skipped} of the {2 * steps} measured fp16 steps "
                "(their gradients overflowed): those steps are not training steps; measure again, or in bf16_mixed"
            )
    except torch.cuda.OutOfMemoryError:
        raise MeasureError(
            f"out of memory on {torch.cuda.get_device_name(dev)} at batch {spec['batch_size']}: "
            "measure a smaller batch (the scaling is per step; the sizing scales the batch)"
        ) from None
    except RuntimeError as exc:
        raise MeasureError(f"a training step failed: {exc}") from None
    trace_path = spec.get("chrome_trace")
    if dev.type == "cuda":
        keep = bool(trace_path)
        if not keep:
            fd, trace_path = tempfile.mkstemp(prefix="trainrig-trace-", suffix=".json")
            os.close(fd)
        try:
            prof.export_chrome_trace(trace_path)
            kernels = kernels_from_trace(trace_path)
        finally:
            if not keep:
                os.unlink(trace_path)
        props = torch.cuda.get_device_properties(dev)
        name, sms = props.name, int(props.multi_processor_count)
    else:
        if trace_path:
            prof.export_chrome_trace(trace_path)
        kernels = cpu_ops(prof)
        name, sms = cpu_name(), None
    return {
        "format": "trainrig-profile",
        "version": 1,
        "about": spec.get("about") or f"measured by TrainRig's measure worker on {name}",
        "device": name,
        "device_type": dev.type,
        "sm_count": sms,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "precision": spec.get("precision", "fp32"),
        "optimizer": spec.get("optimizer", "adam"),
        "batch_size": int(spec["batch_size"]),
        "steps": steps,
        "warmup": warmup,
        "step_wall_s": wall,
        "step_host_s": host,
        "profiled_step_wall_s": p_wall,
        "profiled_step_host_s": p_host,
        "kernels": kernels,
    }


def main() -> int:
    try:
        spec = json.loads(sys.stdin.read())
        result = measure(spec)
    except MeasureError as exc:
        print(json.dumps({"error": str(exc)}))
        return 3
    except (ValueError, KeyError, TypeError) as exc:
        print(json.dumps({"error": f"the measure request is not usable: {type(exc).__name__}: {exc}"}))
        return 3
    except ImportError as exc:
        print(json.dumps({"error": f"PyTorch is not usable here: {exc}"}))
        return 3
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
