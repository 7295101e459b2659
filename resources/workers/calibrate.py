"""Calibration worker: measures this machine with PyTorch and prints one JSON object.

Run by `python main.py calibrate` in the Python environment with PyTorch (never inside the app
process). Each figure is the best of a few repetitions after a warm-up.
"""

from __future__ import annotations

import json
import sys
import time


def best_of(fn, repeat: int = 5, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    import torch

    out: dict = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    out["cpu_fp32_matmul_flops"] = 2 * n**3 / best_of(lambda: a @ b)
    try:
        ab, bb = a.bfloat16(), b.bfloat16()
        out["cpu_bf16_matmul_flops"] = 2 * n**3 / best_of(lambda: ab @ bb, repeat=3)
    except RuntimeError:
        out["cpu_bf16_matmul_flops"] = None
    out["cpu_linear_train_flops"], out["cpu_conv_train_flops"] = train_rates(torch, torch.device("cpu"))
    big = torch.empty(64 * 2**20 // 4)
    dst = torch.empty_like(big)
    out["cpu_memory_bandwidth_bps"] = 2 * big.numel() * 4 / best_of(lambda: dst.copy_(big))
    out["step_overhead"] = step_overhead(torch)
    if torch.cuda.is_available():
        out["gpus"] = [gpu(torch, i) for i in range(torch.cuda.device_count())]
    print(json.dumps(out))
    return 0


def train_rates(torch, dev) -> tuple[float, float]:
    """FLOP/s of a training step's forward and backward (3 × forward FLOPs) for a linear layer of a
    typical size and for a 3×3 convolution — what layers of those kinds reach in practice."""
    lin = torch.nn.Linear(1024, 1024).to(dev)
    x = torch.randn(512, 1024, device=dev, requires_grad=True)  # a hidden layer: input gradients too

    def lin_step() -> None:
        lin(x).sum().backward()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    linear = 3 * 2 * 512 * 1024 * 1024 / best_of(lin_step, repeat=3)
    conv = torch.nn.Conv2d(32, 64, 3, padding=1).to(dev)
    xc = torch.randn(16, 32, 56, 56, device=dev, requires_grad=True)

    def conv_step() -> None:
        conv(xc).sum().backward()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    convolution = 3 * 2 * 16 * 64 * 56 * 56 * 32 * 9 / best_of(conv_step, repeat=3)
    return linear, convolution


def step_overhead(torch) -> dict:
    """Framework cost of a training step: two tiny MLPs whose work is negligible; the slope over
    their op counts is the cost per op, the intercept the cost per step."""
    results = []
    for depth in (2, 12):
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(8, 8), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(8, 2))
        opt = torch.optim.Adam(model.parameters())
        xb, yb = torch.randn(4, 8), torch.zeros(4, dtype=torch.long)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step(model=model, opt=opt, xb=xb, yb=yb, loss_fn=loss_fn) -> None:
            loss_fn(model(xb), yb).backward()
            opt.step()
            opt.zero_grad()

        results.append((2 * depth + 1, best_of(lambda: [step() for _ in range(20)], repeat=5) / 20))
    (ops1, t1), (ops2, t2) = results
    # the engine counts 3 op costs for forward+backward and 2 for the optimizer per graph op
    per_op = max((t2 - t1) / ((ops2 - ops1) * 5), 0.0)
    per_step = max(t1 - per_op * ops1 * 5, 0.0)
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

        res[f"{label}_matmul_flops"] = 2 * n**3 / best_of(mm, repeat=5)
    big = torch.empty(512 * 2**20, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(big)

    def copy() -> None:
        dst.copy_(big)
        torch.cuda.synchronize(dev)

    res["memory_bandwidth_bps"] = 2 * big.numel() / best_of(copy)
    torch.backends.cuda.matmul.allow_tf32 = False
    res["linear_train_flops"], res["conv_train_flops"] = train_rates(torch, dev)
    return res


if __name__ == "__main__":
    sys.exit(main())
