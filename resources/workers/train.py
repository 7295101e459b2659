"""Training worker: trains a layer-list model and reports on stdout as JSON lines.

Run by TrainRig (`run`, the Telemetry tab) in the Python environment with PyTorch, never inside
the app, and it never imports the app. It reads one JSON object on stdin:

    {"model": {"input_shape": [75], "layers": [...]}, "classes": 10, "samples": 80909,
     "batch_size": 512, "epochs": 2, "optimizer": "adam", "precision": "fp32",
     "device": "cpu", "seed": 0, "csv": null, "holdout": 0.2, "memory_format": "contiguous"}

and writes one JSON object per line: {"event": "started", ...}, {"event": "progress", "epoch",
"iteration", "loss", "accuracy", "samples_per_s", ...}, then {"event": "finished", ...} with the
metrics, or {"event": "error", "reason": ...} (an out-of-memory says so). SIGINT stops it between
steps with {"event": "cancelled"}. The data is a deterministic synthetic set of the model's input
shape — for the seed MLP 75 features and 10 imbalanced classes — or the user's CSV (feature columns
and a label column, "label" or else the last); a bad CSV is refused with its row and the reason.
``"memory_format": "channels_last"`` trains an image model's weights and batches NHWC, as the
workload was sized; the "started" event says which layout ran.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the worker's own modules, beside it
from train_data import class_weights, file_data, macro_f1, read_csv, synthetic
from worker_common import RANK, WORLD, WorkerError, emit

PROGRESS_EVERY_S = 0.2
WARMUP_STEPS = 5


# --- model ----------------------------------------------------------------------------------
def load_model(torch: Any, ref: dict[str, Any], input_shape: Sequence[int]) -> Any:
    """The module a factory in the user's file returns, and its output shape for one sample."""
    import importlib.util

    path = str(ref["file"])
    spec = importlib.util.spec_from_file_location("trainrig_user_model", path)
    if spec is None or spec.loader is None:
        raise WorkerError(f"{path} cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    factory = getattr(module, str(ref["factory"]), None)
    if not callable(factory):
        raise WorkerError(f"{path} defines no function {ref['factory']!r}")
    model = factory()
    if not isinstance(model, torch.nn.Module):
        raise WorkerError(f"{ref['factory']}() returned {type(model).__name__}, not a torch.nn.Module")
    with torch.no_grad():
        out = model(torch.zeros((2, *input_shape)))
    return model, tuple(out.shape[1:])


def build_model(torch: Any, input_shape: Sequence[int], layers: Sequence[dict[str, Any]]) -> Any:
    """An nn.Sequential of the layer list; input sizes are inferred by running a zero batch."""
    nn = torch.nn
    simple = {
        "relu": nn.ReLU,
        "leaky_relu": nn.LeakyReLU,
        "tanh": nn.Tanh,
        "sigmoid": nn.Sigmoid,
        "gelu": nn.GELU,
        "silu": nn.SiLU,
        "elu": nn.ELU,
        "dropout": nn.Dropout,
        "dropout2d": nn.Dropout2d,
        "maxpool2d": nn.MaxPool2d,
        "avgpool2d": nn.AvgPool2d,
        "adaptive_avgpool2d": nn.AdaptiveAvgPool2d,
        "flatten": nn.Flatten,
        "identity": nn.Identity,
    }
    modules = []
    x = torch.zeros((2, *input_shape))
    for i, spec in enumerate(layers):
        kind = str(spec.get("type", "")).lower()
        args = {k: v for k, v in spec.items() if k != "type"}
        shape = x.shape[1:]
        try:
            if kind == "linear":
                m = nn.Linear(shape[-1], args["out_features"], bias=args.get("bias", True))
            elif kind == "conv2d":
                args.pop("in_channels", None)
                m = nn.Conv2d(shape[0], **args)
            elif kind in ("batchnorm1d", "batchnorm2d"):
                args.pop("num_features", None)
                m = (nn.BatchNorm1d if kind == "batchnorm1d" else nn.BatchNorm2d)(shape[0], **args)
            elif kind == "layernorm":
                args.pop("normalized_shape", None)
                m = nn.LayerNorm(shape[-1], **args)
            elif kind == "softmax":
                m = nn.Softmax(dim=-1)
            elif kind in simple:
                m = simple[kind](**args)
            else:
                raise WorkerError(f"model.layers[{i}]: the trainer does not support layer type {kind!r}")
            m.eval()
            with torch.no_grad():
                x = m(x)
        except WorkerError:
            raise
        except (TypeError, KeyError, ValueError, RuntimeError) as exc:
            raise WorkerError(f"model.layers[{i}] ({kind}): {exc}") from None
        modules.append(m)
    model = nn.Sequential(*modules)
    model.train()
    return model, tuple(x.shape[1:])


def set_cudnn(torch: Any, precision: str, spec: dict[str, Any]) -> None:
    """cuDNN and TF32 as TrainRig priced the run: every matrix product on TF32 in tf32; in fp32,
    matmuls IEEE and cuDNN's convolutions and RNNs on TF32 only when the workload's
    training.cudnn_tf32 says so (the app's copy: torchbridge.models.set_tf32; a worker never imports
    the app); cuDNN's algorithm search (torch.backends.cudnn.benchmark) when its
    training.cudnn_benchmark says so (TrainRig's default and PyTorch's: off)."""
    cudnn_tf32 = bool(spec.get("cudnn_tf32", False))
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32" or (precision == "fp32" and cudnn_tf32)
    torch.backends.cudnn.benchmark = bool(spec.get("cudnn_benchmark", False))


def layout(torch: Any, spec: dict[str, Any], input_shape: Sequence[int]) -> Any:
    """The memory format the workload was sized in: channels_last for an image model when its
    training.memory_format says so (weights and batches NHWC), else PyTorch's preserve_format."""
    if spec.get("memory_format") == "channels_last" and len(input_shape) == 3:
        return torch.channels_last
    return torch.preserve_format


def make_optimizer(torch: Any, name: str, params: Any, lr: float | None = None) -> Any:
    """The workload's optimizer as the sizing counts it ("sgd" keeps no state, "sgd_momentum" one
    buffer), at the workload's learning rate or, when it gives none, a common default (0 is a rate:
    the measure worker's)."""
    opt = torch.optim

    def rate(default: float) -> float:
        return default if lr is None else lr

    table = {
        "sgd": lambda: opt.SGD(params, lr=rate(0.01)),
        "sgd_momentum": lambda: opt.SGD(params, lr=rate(0.01), momentum=0.9),
        "adam": lambda: opt.Adam(params, lr=rate(1e-3)),
        "adamw": lambda: opt.AdamW(params, lr=rate(1e-3)),
        "rmsprop": lambda: opt.RMSprop(params, lr=rate(1e-3)),
        "adagrad": lambda: opt.Adagrad(params, lr=rate(0.01)),
    }
    if name not in table:
        raise WorkerError(f"the trainer does not know the optimizer {name!r} (it knows {', '.join(table)})")
    return table[name]()


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory. On Linux VmHWM of /proc/self/status: getrusage's
    ru_maxrss survives fork and exec, so a child of a large process would report its parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


# --- training -------------------------------------------------------------------------------
def train(spec: dict[str, Any]) -> None:
    import torch

    seed = int(spec.get("seed", 0))
    torch.manual_seed(seed)
    device = torch.device(spec.get("device", "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise WorkerError(f"{device} was asked for but this PyTorch has no usable CUDA device")
    dist = None
    if WORLD > 1:  # DistributedDataParallel under torchrun: gloo on CPUs, NCCL on GPUs
        import torch.distributed as dist

        if device.type == "cuda":
            device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}")
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    model_doc = spec["model"]
    input_shape = [int(v) for v in model_doc["input_shape"]]
    classes = int(spec["classes"])
    if "torch" in model_doc:  # PyTorch code the user agreed to run
        model, out_shape = load_model(torch, model_doc["torch"], input_shape)
    else:
        model, out_shape = build_model(torch, input_shape, model_doc["layers"])
    if list(out_shape) != [classes]:
        raise WorkerError(
            f"the model's output is {list(out_shape)}; a classifier of {classes} classes needs [{classes}]"
        )
    holdout = float(spec.get("holdout", 0.2))
    files = None
    if spec.get("files"):  # one file per sample, read by a DataLoader while training
        files, x_test, y_test, epoch_bytes = file_data(torch, spec["files"]["dir"], input_shape, classes)
        x_train = y_train = None
    elif spec.get("csv"):
        features = math.prod(input_shape)
        xs, ys, _labels = read_csv(spec["csv"], features, classes)
        x_all = torch.tensor(xs, dtype=torch.float32).reshape((len(xs), *input_shape))
        y_all = torch.tensor(ys)
        perm = torch.randperm(len(xs), generator=torch.Generator().manual_seed(seed))
        x_all, y_all = x_all[perm], y_all[perm]
        n_test = max(1, int(len(xs) * holdout))
        x_test, y_test, x_train, y_train = x_all[:n_test], y_all[:n_test], x_all[n_test:], y_all[n_test:]
    else:
        n_train = int(spec["samples"])
        n_test = max(1, round(n_train * holdout / (1 - holdout)))
        x_all, y_all = synthetic(torch, input_shape, classes, n_train + n_test, seed)
        x_train, y_train, x_test, y_test = x_all[:n_train], y_all[:n_train], x_all[n_train:], y_all[n_train:]
    if dist is not None and files is None:  # each rank trains its shard with its share of the global batch
        x_train, y_train = x_train[RANK::WORLD], y_train[RANK::WORLD]
    rss_at_start = peak_rss_bytes()  # PyTorch, the data set and the model's weights are in memory now
    fmt = layout(torch, spec, input_shape)
    model = model.to(device, memory_format=fmt)
    net = model
    if dist is not None:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    precision = spec.get("precision", "fp32")
    if precision not in ("fp32", "bf16", "fp16"):
        raise WorkerError(f"the trainer runs fp32, bf16 or fp16, not {precision!r}")
    if precision == "fp16" and device.type != "cuda":
        raise WorkerError("fp16 training needs a CUDA device; use bf16 or fp32 on the CPU")
    if device.type == "cuda":  # as it was sized: the workload's training.cudnn_tf32 and cudnn_benchmark
        set_cudnn(torch, precision, spec)
    autocast = precision != "fp32"
    amp_dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
    optimizer = make_optimizer(torch, spec.get("optimizer", "adam"), model.parameters(), spec.get("learning_rate"))
    loss_fn = torch.nn.CrossEntropyLoss()
    batch = max(1, int(spec["batch_size"]) // WORLD)  # the global batch, split over the ranks
    epochs = int(spec["epochs"])
    n = len(files) if files is not None else len(x_train)
    per_epoch = math.ceil(n / batch)
    total_iters = per_epoch * epochs
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    emit(
        "started",
        torch=torch.__version__,
        device=str(device),
        threads=torch.get_num_threads(),
        train_samples=n,
        test_samples=len(x_test),
        epochs=epochs,
        iterations=total_iters,
        parameters=sum(p.numel() for p in model.parameters()),
        data="csv" if spec.get("csv") else "synthetic",
        rss_before_bytes=rss_at_start,
        memory_format="channels_last" if fmt is torch.channels_last else "contiguous",
    )
    gen = torch.Generator().manual_seed(seed + 1)
    workers = int((spec.get("files") or {}).get("workers", 0))
    loader = (
        torch.utils.data.DataLoader(
            files, batch_size=batch, shuffle=True, generator=gen, num_workers=workers, persistent_workers=workers > 0
        )
        if files is not None
        else None
    )

    def batches() -> Any:
        """(inputs, labels, seconds the step waited for them) of one epoch."""
        if loader is not None:
            it = iter(loader)
            while True:
                t0 = time.perf_counter()
                try:
                    xb, yb = next(it)
                except StopIteration:
                    return
                yield xb.to(device, memory_format=fmt), yb.to(device), time.perf_counter() - t0
        else:
            order = torch.randperm(n, generator=gen)
            for b in range(per_epoch):
                idx = order[b * batch : (b + 1) * batch]
                xb = x_train[idx].to(device, non_blocking=True, memory_format=fmt)
                yield xb, y_train[idx].to(device, non_blocking=True), 0.0

    wait_s = 0.0
    epoch_s: list[float] = []
    step_times: list[float] = []
    iteration = 0
    t_start = time.perf_counter()
    last_emit = 0.0
    seen = 0
    for epoch in range(1, epochs + 1):
        correct = count = 0
        loss_sum = 0.0
        t_epoch = time.perf_counter()
        for b, (xb, yb, waited) in enumerate(batches()):
            wait_s += waited
            t = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=autocast):
                out = net(xb)
                loss = loss_fn(out.float(), yb)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            loss_v = float(loss.detach())  # waits for the device: the step is complete
            step_times.append(time.perf_counter() - t)
            iteration += 1
            seen += len(yb)
            loss_sum += loss_v * len(yb)
            correct += int((out.detach().argmax(1) == yb).sum())
            count += len(yb)
            now = time.perf_counter()
            if now - last_emit >= PROGRESS_EVERY_S or b == per_epoch - 1:
                last_emit = now
                recent = step_times[-20:]
                emit(
                    "progress",
                    epoch=epoch,
                    epochs=epochs,
                    iteration=iteration,
                    iterations=total_iters,
                    loss=loss_sum / count,
                    accuracy=correct / count,
                    samples_per_s=seen / (now - t_start),
                    step_s=statistics.median(recent),
                    elapsed_s=now - t_start,
                    epoch_end=b == per_epoch - 1,
                )
        epoch_s.append(time.perf_counter() - t_epoch)
    training_time = time.perf_counter() - t_start
    model.eval()
    preds: list[int] = []
    with torch.no_grad(), torch.autocast(device.type, dtype=amp_dtype, enabled=autocast):
        for b in range(0, len(x_test), 4096):
            preds += model(x_test[b : b + 4096].to(device)).argmax(1).cpu().tolist()
    truth = y_test.tolist()
    accuracy = sum(1 for p, t in zip(preds, truth, strict=True) if p == t) / len(truth)
    steady = step_times[WARMUP_STEPS:] if len(step_times) > 2 * WARMUP_STEPS else step_times
    if device.type == "cuda":
        peak, kind = int(torch.cuda.max_memory_allocated(device)), "torch.cuda.max_memory_allocated"
    else:
        peak, kind = peak_rss_bytes(), "peak RSS of the process"
    ranks = None
    if dist is not None:
        ranks = rank_figures(torch, dist, model, statistics.median(steady), device)
    emit(
        "finished",
        training_time_s=training_time,
        accuracy=accuracy,
        macro_f1=macro_f1(preds, truth, classes),
        chance_accuracy=max(class_weights(classes)) if not spec.get("csv") else None,
        median_step_s=statistics.median(steady),
        steps=len(step_times),
        warmup_steps=len(step_times) - len(steady),
        peak_memory_bytes=peak,
        peak_memory_kind=kind,
        rss_before_bytes=rss_at_start,
        device=str(device),
        epochs=epochs,
        iterations=iteration,
        **({"world_size": WORLD, "ranks": ranks} if ranks is not None else {}),
        epoch_s=epoch_s,
        data_wait_s=wait_s,  # the steps' time waiting for their batch (files: the DataLoader reading them)
        data_wait_share=wait_s / training_time if training_time else 0.0,
        **({"read_bytes_per_epoch": epoch_bytes, "loader_workers": workers} if files is not None else {}),
    )
    if dist is not None:
        dist.destroy_process_group()


def rank_figures(torch: Any, dist: Any, model: Any, median_step_s: float, device: Any) -> list[dict[str, Any]]:
    """Every rank's median step and the share of it an all-reduce of the gradients takes (one
    all-reduce of the parameters' size, timed after training: DDP overlaps it with backward, so this
    is the most it can add), gathered on every rank."""
    grads = torch.zeros(sum(p.numel() for p in model.parameters()), device=device)
    for _ in range(2):
        dist.all_reduce(grads)
    times = []
    for _ in range(5):
        dist.barrier()
        t = time.perf_counter()
        dist.all_reduce(grads)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t)
    allreduce = statistics.median(times)
    mine = {
        "rank": RANK,
        "median_step_s": median_step_s,
        "allreduce_s": allreduce,
        "allreduce_share": allreduce / median_step_s,
    }
    gathered: list[Any] = [None] * WORLD
    dist.all_gather_object(gathered, mine)
    return gathered


def main() -> int:
    try:  # the specification on stdin, or in TRAINRIG_SPEC (torchrun's ranks share no stdin)
        spec = json.loads(os.environ.get("TRAINRIG_SPEC") or sys.stdin.read())
    except ValueError as exc:
        emit("error", reason=f"the trainer was given an unreadable specification: {exc}")
        return 2
    try:
        train(spec)
    except KeyboardInterrupt:
        emit("cancelled", reason="stopped on request")
        return 130
    except WorkerError as exc:
        emit("error", reason=str(exc))
        return 2
    except MemoryError:
        emit("error", reason="out of memory on the CPU (MemoryError)", oom=True)
        return 3
    except RuntimeError as exc:  # torch.OutOfMemoryError is a RuntimeError
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower():
            where = spec.get("device", "cpu")
            emit("error", reason=f"out of memory on {where}: {text}", oom=True)
            return 3
        emit("error", reason=f"{type(exc).__name__}: {text}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
