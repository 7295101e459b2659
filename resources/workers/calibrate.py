"""Calibration worker: measures this machine with PyTorch and prints one JSON object.

Run by `python main.py calibrate` in the Python environment with PyTorch (never inside the app
process). Each figure is the median of a few repetitions after a warm-up.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any

from host_bench import measure_host  # this folder: run as a script, its folder is on the path


def median_time(fn, repeat: int = 5, warmup: int = 2, min_total_s: float = 0.2) -> float:
    """The median time of at least ``repeat`` calls after ``warmup`` calls, repeating short calls until
    they add up to ``min_total_s``: the sustained figure a training run sees (the minimum would
    report a clock boost or an idle neighbour as the machine's speed)."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    while len(times) < repeat or (sum(times) < min_total_s and len(times) < 500):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    import torch

    out: dict = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    out["cpu_fp32_matmul_flops"] = 2 * n**3 / median_time(lambda: a @ b)
    try:
        ab, bb = a.bfloat16(), b.bfloat16()
        out["cpu_bf16_matmul_flops"] = 2 * n**3 / median_time(lambda: ab @ bb, repeat=3)
    except RuntimeError:
        out["cpu_bf16_matmul_flops"] = None
    out["cpu_profile"] = profile(torch, torch.device("cpu"))
    # the headline rates: a 512×1024×1024 linear layer and a 64→64-channel convolution
    out["cpu_linear_train_flops"] = out["cpu_profile"]["linear_train"][2][1]
    out["cpu_conv_train_flops"] = out["cpu_profile"]["conv_train"][2][1]
    big = torch.empty(64 * 2**20 // 4)
    dst = torch.empty_like(big)
    out["cpu_memory_bandwidth_bps"] = 2 * big.numel() * 4 / median_time(lambda: dst.copy_(big))
    out["step_overhead"] = step_overhead(torch, out["cpu_profile"]["optimizer_tensor_s"]["sgd"])
    out["host"] = measure_host(torch)  # the host side of a step: dispatch, DataLoader, sync (host_bench.py)
    # the first figure measured again at the end: a machine whose speed changed meanwhile (another
    # program busy, a thermal or power limit) measured the figures between at another speed
    out["cpu_fp32_matmul_flops_end"] = 2 * n**3 / median_time(lambda: a @ b)
    if torch.cuda.is_available():
        out["gpus"] = [gpu(torch, i) for i in range(torch.cuda.device_count())]
    print(json.dumps(out))
    return 0


# Layer sizes whose training-step rate is measured. Linear layers (rows, in, out): the rate grows
# with the FLOPs of one call (1×1 convolutions are matrix products too and use it). 3×3
# convolutions (batch, in channels, out channels, height = width): the rate grows with the weights
# (in × out channels × kernel area, the inner sizes of the convolution's matrix product). A network's
# first convolution (1–3 image channels) computes no input gradient and has its own sizes.
LINEAR_SIZES = {"cpu": [(64, 256, 256), (128, 512, 512), (512, 1024, 1024), (1024, 1024, 2048)]}
LINEAR_SIZES["cuda"] = [(512, 1024, 1024), (2048, 2048, 2048), (8192, 4096, 4096)]
CONV_SIZES = {"cpu": [(256, 8, 8, 16), (32, 16, 32, 32), (16, 64, 64, 28), (8, 128, 256, 28)]}
CONV_SIZES["cuda"] = [(256, 8, 8, 32), (64, 32, 64, 56), (64, 128, 128, 28), (128, 256, 256, 28)]
FIRST_CONV_SIZES = {"cpu": [(256, 1, 8, 28), (64, 3, 32, 32)], "cuda": [(256, 1, 8, 28), (256, 3, 64, 64)]}
# Convolutions on a CPU by their channels and kernel: oneDNN blocks its kernels over in and out
# channels, so the weights alone (in × out × kernel area) do not say how a convolution runs: an
# 8 → 128 channel 5 × 5 layer reached 113 GFLOP/s and a 128 → 16 one 276, where the rate by weights
# said 280 and 305; a 1 → 64 first layer 23 where it said 120. Measured at batch 16 on 32 × 32 images
# as [in channels, out channels, kernel side, FLOP/s]; a network's first convolution (no input
# gradient) on 1 and 3 channels.
CONV_GRID = {"cpu": {"batch": 16, "hw": 32, "cin": (4, 16, 64, 256), "k": (3, 5), "cout": (8, 32, 128)}}
FIRST_CONV_GRID = {"cpu": {"batch": 16, "hw": 32, "cin": (1, 3), "k": (3, 5), "cout": (8, 32, 128)}}
# Linear layers on a CPU by their rows (batch × positions) and width: a skinny product runs far below
# a square one of the same FLOPs (16 × 1024 × 1024 at 87 GFLOP/s, 64 × 1024 × 1024 at 182, here),
# and a small one below the rate of the smallest size above (16 × 128 × 128 at 57). Measured as
# [rows, width (square layers), 1, FLOP/s], each net of the same step on a 1 × 1 layer: the
# framework's calls, which the model prices per op (2026-11-25, docs/accuracy.md).
LINEAR_GRID = {"cpu": {"rows": (16, 64, 256, 1024), "width": (128, 512, 1536)}}
# Linear layers (in, out features) timed at batch 8, where a step costs by its weights' bytes: 2 MiB
# of weights (in the caches) and 40 MiB (past them and past glibc's mmap threshold).
WEIGHT_STREAM_SIZES = [(1024, 512), (65536, 160)]
# Elements per elementwise measurement: large enough that the per-element cost dominates the call.
# On a CPU also at a size past the caches and past glibc's largest mmap threshold (32 MiB), where
# every fresh tensor is new memory the kernel must fault in and zero: a large activation costs per
# element several times what a cached one does (docs/accuracy.md, "CPU: large activations").
ELEMENTS = {"cpu": 2**21, "cuda": 2**26}
LARGE_ELEMENTS = {"cpu": 2**24}
# Parameter tensor sizes (elements) at which the optimizer's cost per element is measured.
# On a CPU up to 2**24 (64 MiB a tensor): past the caches, and past the allocator's reuse for the
# temporaries PyTorch's per-tensor Adam makes (sqrt, div), a large layer's step costs per element
# about twice what a 16 MiB one does.
OPTIMIZER_SIZES = {"cpu": [2**14, 2**17, 2**20, 2**22, 2**24], "cuda": [2**18, 2**22, 2**26]}
OPTIMIZER_ELEMENTS = {"cpu": 2**22, "cuda": 2**26}  # elements in all per timed step, at every size up to it
OPTIMIZERS = ("sgd", "sgd_momentum", "adam", "adamw", "rmsprop", "adagrad")


def sync(torch, dev) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def net_of_call(seconds: float, fixed: float) -> float:
    """A layer's measured step time net of the framework's fixed cost per call (``fixed``, timed on a
    layer with next to no work), at least a quarter of the measurement: on a many-core host a small
    layer can take less than that fixed cost's measurement (a 16-core GPU host timed a 1 × 1
    convolution's call at 0.51 ms and smaller 3 × 3 first layers below it), and the difference would
    be zero or negative — a rate of 10⁸ GFLOP/s, which calibrate then refuses."""
    return max(seconds - fixed, 0.25 * seconds)


def train_rates(torch, dev) -> dict[str, Any]:
    """FLOP/s of a training step's forward and backward (3 × forward FLOPs; 2 × for a first layer,
    which computes no input gradient) of linear layers, as [forward FLOPs of one call, rate] pairs,
    and of 3×3 convolutions, as [weights, rate] pairs, without a convolution's fixed cost per call
    (``conv_call_s``, measured on a convolution with next to no work)."""
    linear = []
    for rows, n_in, n_out in LINEAR_SIZES[dev.type]:
        fwd = 2 * rows * n_in * n_out
        linear.append([fwd, 3 * fwd / linear_step_time(torch, dev, rows, n_in, n_out)])

    def conv_time(batch: int, cin: int, cout: int, hw: int, k: int, first: bool) -> float:
        layer = torch.nn.Conv2d(cin, cout, k, padding=k // 2).to(dev)
        xc = torch.randn(batch, cin, hw, hw, device=dev, requires_grad=not first)

        def conv_step() -> None:
            layer(xc).sum().backward()
            sync(torch, dev)

        return median_time(conv_step, repeat=3)

    call = conv_time(8, 8, 8, 4, 1, False)
    curves: dict[str, Any] = {"linear_train": linear, "conv_train": [], "conv_first_train": [], "conv_call_s": call}
    if dev.type in LINEAR_GRID:
        curves["linear_grid"] = linear_grid(torch, dev, LINEAR_GRID[dev.type])
    if dev.type == "cpu":  # by the layer's weight bytes: in cache, and past the caches and the allocator
        curves["weight_stream"] = [
            [4 * n_in * n_out, weight_stream(torch, dev, 8, n_in, n_out)] for n_in, n_out in WEIGHT_STREAM_SIZES
        ]
    for key, sizes, first in (("conv_train", CONV_SIZES, False), ("conv_first_train", FIRST_CONV_SIZES, True)):
        for batch, cin, cout, hw in sizes[dev.type]:
            fwd = 2 * batch * cout * hw * hw * cin * 9
            seconds = net_of_call(conv_time(batch, cin, cout, hw, 3, first), call)
            curves[key].append([cin * cout * 9, (2 if first else 3) * fwd / seconds])
    for key, grids, first in (("conv_grid", CONV_GRID, False), ("conv_first_grid", FIRST_CONV_GRID, True)):
        if dev.type not in grids:
            continue
        g = grids[dev.type]
        curves[key] = []
        for cin in g["cin"]:
            for k in g["k"]:
                for cout in g["cout"]:
                    fwd = 2 * g["batch"] * cout * g["hw"] ** 2 * cin * k * k
                    seconds = net_of_call(conv_time(g["batch"], cin, cout, g["hw"], k, first), call)
                    curves[key].append([cin, cout, k, (2 if first else 3) * fwd / seconds])
    return curves


def linear_step_time(torch, dev, rows: int, n_in: int, n_out: int) -> float:
    """Median seconds of a hidden linear layer's training step (forward, input and weight gradients;
    the gradients accumulate into the last step's) at ``rows`` rows."""
    lin = torch.nn.Linear(n_in, n_out).to(dev)
    x = torch.randn(rows, n_in, device=dev, requires_grad=True)  # a hidden layer: input gradients too

    def step() -> None:
        lin(x).sum().backward()
        sync(torch, dev)

    return median_time(step, repeat=3)


def linear_grid(torch, dev, grid: dict) -> list[list[float]]:
    """[rows, width, 1, FLOP/s] of square linear layers' training steps (forward, input and weight
    gradients: 3 × forward FLOPs), net of the same step on a 1 × 1 layer (its framework calls; at
    least a quarter of the step is kept as arithmetic, so noise cannot make a rate of nothing). The
    gradients accumulate into the last step's, as the layer rates by size were measured: written
    new (a loop after ``zero_grad()``) a skinny layer ran 10–18 % faster, and that grid read worse
    on four random suites (docs/accuracy.md): the extra pass stands in for what a real step's ops
    cost beyond the tiny MLP the framework's cost per op is measured on."""

    empty = linear_step_time(torch, dev, 1, 1, 1)
    points = []
    for rows in grid["rows"]:
        for width in grid["width"]:
            seconds = linear_step_time(torch, dev, rows, width, width)
            fwd = 2 * rows * width * width
            points.append([rows, width, 1, 3 * fwd / net_of_call(seconds, empty)])
    return points


def weight_stream(torch, dev, rows: int = 8, n_in: int = 65536, n_out: int = 160) -> float:
    """Seconds per byte of weights of a training step of a linear layer at a small batch (for the
    large size, a flattened image into a classifier): its weights read in forward and for the
    input's gradient, and its gradient written, each a pass over them (3 passes), the gradient new
    memory each step as after ``zero_grad()``. At such a batch a step costs by its weights' bytes,
    not its FLOPs."""
    lin = torch.nn.Linear(n_in, n_out).to(dev)
    x = torch.randn(rows, n_in, device=dev, requires_grad=True)

    def step() -> None:
        lin.weight.grad = lin.bias.grad = x.grad = None
        lin(x).sum().backward()
        sync(torch, dev)

    return median_time(step, repeat=5) / (3 * 4 * n_in * n_out)


def elementwise_costs(torch, dev, n: int | None = None, repeat: int = 7) -> dict[str, float]:
    """Seconds per element of the forward and backward of each kind of elementwise layer (per input
    element for pooling, per output element otherwise), on tensors of ``n`` elements."""
    F = torch.nn.functional
    n = n or ELEMENTS[dev.type]
    image = (n // (32 * 32 * 32), 32, 32, 32)
    rows = (n // 256, 256)
    bn = torch.nn.BatchNorm2d(32).to(dev)
    ln = torch.nn.LayerNorm(256).to(dev)
    emb = torch.nn.Embedding(1000, 128).to(dev)
    idx = torch.randint(0, 1000, (n // 128,), device=dev)
    other = torch.randn(image, device=dev, requires_grad=True)
    cases = {
        "relu": (image, F.relu),
        "tanh": (image, torch.tanh),
        "gelu": (image, F.gelu),
        "batchnorm": (image, bn),
        "maxpool": (image, lambda x: F.max_pool2d(x, 2)),
        "avgpool": (image, lambda x: F.avg_pool2d(x, 2)),
        "dropout": (image, lambda x: F.dropout(x, 0.1, training=True)),
        "add": (image, lambda x: x + other),
        "layernorm": (rows, ln),
        "softmax": (rows, lambda x: torch.softmax(x, -1)),
    }
    out = {}
    for name, (shape, fn) in cases.items():
        x = torch.randn(shape, device=dev, requires_grad=True)
        grad = torch.ones_like(fn(x))

        def run(x=x, fn=fn, grad=grad) -> None:
            x.grad = other.grad = None
            fn(x).backward(grad)
            sync(torch, dev)

        out[name] = median_time(run, repeat=repeat) / x.numel()
    grad = torch.ones(n // 128, 128, device=dev)

    def lookup() -> None:
        emb.weight.grad = None
        emb(idx).backward(grad)
        sync(torch, dev)

    out["embedding"] = median_time(lookup, repeat=repeat) / grad.numel()
    if n == ELEMENTS[dev.type]:
        # cross-entropy over few classes costs per row, not per class: log-softmax, NLL and their
        # backward on 16,384 rows of 10 classes (about 100 ns a row on a CPU whatever the width
        # up to ~100; per element it is softmax's cost past that)
        logits = torch.randn(2**14, 10, device=dev, requires_grad=True)
        labels = torch.randint(0, 10, (2**14,), device=dev)

        def loss() -> None:
            logits.grad = None
            F.cross_entropy(logits, labels).backward()
            sync(torch, dev)

        out["cross_entropy_row"] = median_time(loss, repeat=repeat) / 2**14
    return out


def first_touch_s_per_byte(torch, n: int = 2**24) -> float:
    """Seconds per byte a fresh tensor of ``n`` fp32 elements costs beyond writing it in place: new
    memory faulted in and zeroed by the kernel (glibc serves allocations over its mmap threshold,
    at most 32 MiB, from fresh pages each time); 0 where the allocator reuses memory."""
    buf = torch.empty(n)

    def fresh() -> None:
        torch.empty(n).fill_(1.0)

    return max(0.0, median_time(fresh) - median_time(lambda: buf.fill_(1.0))) / (4 * n)


def optimizer_costs(torch, dev) -> tuple[dict[str, list[list[float]]], dict[str, float]]:
    """Seconds per parameter element of one optimizer step, as [tensor elements, seconds] pairs (a
    small tensor stays in cache, a large one streams from memory), and seconds per parameter
    tensor (PyTorch's default implementation on a CPU loops over the tensors, a few ops each)."""

    def timed(name: str, tensors: int, n: int) -> float:
        params = [torch.nn.Parameter(torch.randn(n, device=dev)) for _ in range(tensors)]
        for p in params:
            p.grad = torch.randn_like(p)
        kind, kwargs = {
            "sgd": ("SGD", {"lr": 0.01}),
            "sgd_momentum": ("SGD", {"lr": 0.01, "momentum": 0.9}),
            "adam": ("Adam", {}),
            "adamw": ("AdamW", {}),
            "rmsprop": ("RMSprop", {}),
            "adagrad": ("Adagrad", {}),
        }[name]
        opt = getattr(torch.optim, kind)(params, **kwargs)

        def step() -> None:
            opt.step()
            sync(torch, dev)

        return median_time(step, repeat=5)

    per_element, per_tensor = {}, {}
    for name in OPTIMIZERS:
        # 64 tensors of 8 elements: the fixed cost per tensor; then the cost per element by size
        per_tensor[name] = timed(name, 64, 8) / 64
        per_element[name] = []
        for n in OPTIMIZER_SIZES[dev.type]:
            k = max(1, OPTIMIZER_ELEMENTS[dev.type] // n)  # as many elements in all at every size
            seconds = max(timed(name, k, n) - k * per_tensor[name], 0.0) / (k * n)
            per_element[name].append([n, seconds])
    return per_element, per_tensor


def profile(torch, dev) -> dict:
    """What the timing model needs of a device: layer rates by size, elementwise and optimizer costs."""
    per_element, per_tensor = optimizer_costs(torch, dev)
    out = {
        **train_rates(torch, dev),
        "elementwise_s": elementwise_costs(torch, dev),
        "elementwise_elements": ELEMENTS[dev.type],
        "optimizer_s": per_element,
        "optimizer_tensor_s": per_tensor,
    }
    if dev.type in LARGE_ELEMENTS:
        out["elementwise_large_s"] = elementwise_costs(torch, dev, LARGE_ELEMENTS[dev.type], repeat=3)
        out["elementwise_large_elements"] = LARGE_ELEMENTS[dev.type]
        out["first_touch_s_per_byte"] = first_touch_s_per_byte(torch)
    return out


def step_overhead(torch, sgd_per_tensor: float) -> dict:
    """Framework cost of a training step: two tiny MLPs whose work is negligible, less their SGD
    steps' measured cost per parameter tensor (SGD's is small and steady, so the subtraction cannot
    swallow the slope); the slope over their op counts is the cost per op, the intercept the cost
    per step."""
    results = []
    for depth in (2, 12):
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(8, 8), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        xb, yb = torch.randn(4, 8), torch.zeros(4, dtype=torch.long)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step(model=model, opt=opt, xb=xb, yb=yb, loss_fn=loss_fn) -> None:
            loss_fn(model(xb), yb).backward()
            opt.step()
            opt.zero_grad()

        seconds = median_time(lambda: [step() for _ in range(20)], repeat=5) / 20
        tensors = 2 * (depth + 1)  # weight and bias of each linear layer
        results.append((2 * depth + 1, seconds - sgd_per_tensor * tensors))
    (ops1, t1), (ops2, t2) = results
    # the engine counts 3 op costs (forward, backward) per graph op, the optimizer's per tensor
    per_op = max((t2 - t1) / ((ops2 - ops1) * 3), 0.0)
    per_step = max(t1 - per_op * ops1 * 3, 0.0)
    return {"per_op_s": per_op, "per_step_s": per_step}


def gpu(torch, i: int) -> dict:
    dev = torch.device(f"cuda:{i}")
    n = 8192
    res = {"name": torch.cuda.get_device_name(i)}
    for label, dtype, tf32 in (
        ("fp32", torch.float32, False),
        ("tf32", torch.float32, True),
        ("bf16", torch.bfloat16, False),
    ):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a, b = torch.randn(n, n, device=dev, dtype=dtype), torch.randn(n, n, device=dev, dtype=dtype)

        def mm(a=a, b=b) -> None:
            a @ b
            torch.cuda.synchronize(dev)

        res[f"{label}_matmul_flops"] = 2 * n**3 / median_time(mm, repeat=5)
    big = torch.empty(512 * 2**20, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(big)

    def copy() -> None:
        dst.copy_(big)
        torch.cuda.synchronize(dev)

    res["memory_bandwidth_bps"] = 2 * big.numel() / median_time(copy)
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        res["profile"] = profile(torch, dev)
    except RuntimeError as exc:  # out of memory on a small GPU: the matmul rates above still hold
        res["profile_error"] = str(exc).splitlines()[0]
    try:
        res["host_probe_s"] = host_probe(torch, dev)
    except (RuntimeError, OSError, ValueError, KeyError) as exc:  # the rates above still hold; say why
        res["host_probe_error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return res


def host_probe(torch, dev) -> float:
    """The median training step of the host probe (resources/host_probe.json) on ``dev``: a step whose
    kernels take microseconds on a GPU, so it times this machine's host (core/estimate/host_probe.py)."""
    import train  # the trainer worker beside this file: its builders never import the app

    with open(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "host_probe.json"), encoding="utf-8"
    ) as fh:
        probe = json.load(fh)
    torch.manual_seed(0)
    shape = [int(v) for v in probe["model"]["input_shape"]]
    module = train.build_model(torch, shape, probe["model"]["layers"])[0].to(dev)
    opt = train.make_optimizer(torch, probe["optimizer"], module.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    batch = int(probe["batch_size"])

    def step() -> None:  # as benchmarks/accuracy_cuda.py measures its first case
        x = torch.randn(batch, *shape, device=dev)
        loss = loss_fn(module(x).float(), torch.zeros(batch, dtype=torch.long, device=dev))
        loss.backward()
        opt.step()
        opt.zero_grad()
        sync(torch, dev)

    for _ in range(int(probe["warmup_steps"])):
        step()
    times = []
    for _ in range(int(probe["timed_steps"])):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


if __name__ == "__main__":
    sys.exit(main())
