"""Build a real torch.nn.Module from a layer list, for tracing, training and parity checks.

torch is imported inside the functions (never at module level, so importing core stays light);
import-linter allows this one module to reach torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from core.paths import worker_module


def build_module(model: Mapping[str, Any], attention: str = "auto") -> Any:
    """An nn.Module equivalent to a layer-list model (``input_shape`` + ``layers``). ``attention``
    (a workload's ``training.attention``): "eager" writes the attention out in Python (matmul,
    division by √d, the causal mask's addition, softmax, dropout, matmul: Hugging Face's eager
    attention); "math" runs F.scaled_dot_product_attention on its math backend; otherwise SDPA picks."""
    import torch
    from torch import nn

    from core.network.layers_seq import expand_transformer_block

    class Residual(nn.Module):
        def __init__(self, branch: nn.Module, shortcut: nn.Module) -> None:
            super().__init__()
            self.branch, self.shortcut = branch, shortcut

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.branch(x) + self.shortcut(x)

    class Rotary(nn.Module):
        """Rotary embeddings over (batch, length, heads, head_dim): "complex" as Meta's reference code
        and torchtitan (pairs as complex numbers in fp32), "rotate_half" as Hugging Face's Llama."""

        def __init__(self, style: str, head_dim: int, length: int) -> None:
            super().__init__()
            self.style = style
            freqs = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
            angles = torch.outer(torch.arange(length).float(), freqs)
            self.register_buffer("cis", torch.polar(torch.ones_like(angles), angles), persistent=False)
            full = torch.cat((angles, angles), dim=-1)
            self.register_buffer("cos", full.cos(), persistent=False)
            self.register_buffer("sin", full.sin(), persistent=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            length = x.shape[1]
            if self.style == "complex":
                xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
                return torch.view_as_real(xc * self.cis[:length].view(1, length, 1, -1)).flatten(3).type_as(x)
            cos = self.cos[:length].view(1, length, 1, -1).to(x.dtype)
            sin = self.sin[:length].view(1, length, 1, -1).to(x.dtype)
            x1, x2 = x.chunk(2, dim=-1)
            return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class RMSNormFp32(nn.Module):
        """RMSNorm decomposed in fp32 (Llama's reference code, Hugging Face's LlamaRMSNorm)."""

        def __init__(self, dim: int, eps: float = 1e-5, elementwise_affine: bool = True) -> None:
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim)) if elementwise_affine else None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            xf = x.float()
            y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
            return y * self.weight if self.weight is not None else y

    class Attention(nn.Module):
        def __init__(
            self, dim: int, heads: int, kv_heads: int, bias: bool, causal: bool, p: float, rotary: Any = None
        ) -> None:
            super().__init__()
            self.heads, self.kv_heads, self.causal, self.p, self.rotary = heads, kv_heads, causal, p, rotary
            self.masks: dict[Any, Any] = {}  # eager attention's additive mask per (length, device)
            kv_dim = dim * kv_heads // heads
            self.q = nn.Linear(dim, dim, bias=bias)
            self.k = nn.Linear(dim, kv_dim, bias=bias)
            self.v = nn.Linear(dim, kv_dim, bias=bias)
            self.o = nn.Linear(dim, dim, bias=bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, length, dim = x.shape
            d = dim // self.heads
            q = self.q(x).view(b, length, self.heads, d)
            k = self.k(x).view(b, length, self.kv_heads, d)
            if self.rotary is not None:
                q, k = self.rotary(q), self.rotary(k)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            v = self.v(x).view(b, length, self.kv_heads, d).transpose(1, 2)
            if attention == "eager":
                return self.o(self.eager(q, k, v).transpose(1, 2).reshape(b, length, dim))
            if attention == "math":
                from torch.nn.attention import SDPBackend, sdpa_kernel

                with sdpa_kernel(SDPBackend.MATH):
                    y = self.sdpa(q, k, v)
            else:
                y = self.sdpa(q, k, v)
            return self.o(y.transpose(1, 2).reshape(b, length, dim))

        def eager(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            if self.kv_heads != self.heads:
                k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
                v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
            length = q.shape[-2]
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            # the additive mask Hugging Face's and NVIDIA's BERT add to every layer's scores (padding:
            # zeros for a full batch; causal: −inf above the diagonal), built once
            key = (length, q.device)
            if key not in self.masks:
                mask = torch.zeros((length, length), device=q.device)
                if self.causal:
                    mask = torch.full((length, length), float("-inf"), device=q.device).triu(1)
                self.masks[key] = mask
            scores = scores + self.masks[key]
            probs = nn.functional.softmax(scores, dim=-1)
            probs = nn.functional.dropout(probs, self.p, self.training)
            return torch.matmul(probs, v)

        def sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return nn.functional.scaled_dot_product_attention(
                q,
                k,
                v,
                dropout_p=self.p if self.training else 0.0,
                is_causal=self.causal,
                enable_gqa=self.kv_heads != self.heads,
            )

    class SwiGLU(nn.Module):
        def __init__(self, dim: int, hidden: int, bias: bool) -> None:
            super().__init__()
            self.gate = nn.Linear(dim, hidden, bias=bias)
            self.up = nn.Linear(dim, hidden, bias=bias)
            self.down = nn.Linear(hidden, dim, bias=bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.down(nn.functional.silu(self.gate(x)) * self.up(x))

    class Positional(nn.Module):
        def __init__(self, num: int, dim: int) -> None:
            super().__init__()
            self.table = nn.Parameter(torch.zeros(num, dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.table[: x.shape[1]]

    class Recurrent(nn.Module):
        def __init__(self, rnn: nn.Module) -> None:
            super().__init__()
            self.rnn = rnn

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]

    embeddings: list[nn.Embedding] = []

    def one(spec: Mapping[str, Any], shape: list[int]) -> tuple[nn.Module, list[int]]:
        kind = spec["type"].lower()
        args = {k: v for k, v in spec.items() if k != "type"}
        if kind == "linear":
            n = nn.Linear(shape[-1], args["out_features"], bias=args.get("bias", True))
            if args.get("tie_weights"):
                n.weight = embeddings[0].weight
            return n, [*shape[:-1], args["out_features"]]
        if kind == "conv2d":
            args.pop("in_channels", None)
            n = nn.Conv2d(shape[0], **args)
            return n, list(_meta_shape(n, shape))
        if kind in ("maxpool2d", "avgpool2d", "adaptive_avgpool2d"):
            cls = {"maxpool2d": nn.MaxPool2d, "avgpool2d": nn.AvgPool2d, "adaptive_avgpool2d": nn.AdaptiveAvgPool2d}[
                kind
            ]
            n = cls(**args)
            return n, list(_meta_shape(n, shape))
        if kind in ("batchnorm1d", "batchnorm2d"):
            args.pop("num_features", None)
            return (nn.BatchNorm1d if kind == "batchnorm1d" else nn.BatchNorm2d)(shape[0], **args), shape
        if kind in ("layernorm", "rmsnorm"):
            args.pop("normalized_shape", None)
            if args.pop("implementation", "fused") == "fp32_decomposed":
                return RMSNormFp32(shape[-1], **args), shape
            return (nn.LayerNorm if kind == "layernorm" else nn.RMSNorm)(shape[-1], **args), shape
        simple = {
            "relu": nn.ReLU,
            "tanh": nn.Tanh,
            "sigmoid": nn.Sigmoid,
            "silu": nn.SiLU,
            "gelu": nn.GELU,
            "leaky_relu": nn.LeakyReLU,
            "dropout": nn.Dropout,
        }
        if kind in simple:
            return simple[kind](**args), shape
        if kind == "softmax":
            return nn.Softmax(dim=-1), shape
        if kind == "flatten":
            return nn.Flatten(), [math.prod(shape)]
        if kind == "embedding":
            e = nn.Embedding(args["num_embeddings"], args["embedding_dim"], padding_idx=args.get("padding_idx"))
            embeddings.append(e)
            return e, [*shape, args["embedding_dim"]]
        if kind == "positional_embedding":
            return Positional(args["num_embeddings"], shape[-1]), shape
        if kind in ("lstm", "gru"):
            args.pop("input_size", None)
            args["batch_first"] = True
            rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(shape[-1], **args)
            dirs = 2 if args.get("bidirectional") else 1
            return Recurrent(rnn), [shape[0], dirs * args["hidden_size"]]
        if kind == "multihead_attention":
            heads = args["num_heads"]
            style = args.get("rotary", "none")
            rotary = Rotary(style, shape[-1] // heads, shape[0]) if style != "none" else None
            return Attention(
                shape[-1],
                heads,
                args.get("kv_heads", heads),
                args.get("bias", True),
                args.get("causal", False),
                args.get("dropout", 0.0),
                rotary,
            ), shape
        if kind == "swiglu":
            return SwiGLU(shape[-1], args["hidden_features"], args.get("bias", False)), shape
        if kind == "transformer_block":
            specs = expand_transformer_block(
                shape[-1],
                args["nhead"],
                args.get("kv_heads", args["nhead"]),
                args.get("dim_feedforward", 2048),
                args.get("dropout", 0.1),
                args.get("activation", "relu"),
                args.get("norm_first", False),
                args.get("bias", True),
                args.get("causal", False),
                args.get("norm", "layernorm"),
                args.get("mlp", "standard"),
                args.get("rotary", "none"),
                args.get("norm_implementation", "fused"),
            )
            return seq(specs, shape)
        if kind == "repeat":
            mods = []
            for _ in range(args["times"]):
                m, shape = seq(args["layers"], shape)
                mods.append(m)
            return nn.Sequential(*mods), shape
        if kind == "residual":
            branch, out = seq(args["layers"], shape)
            shortcut = seq(args["shortcut"], shape)[0] if "shortcut" in args else nn.Identity()
            return Residual(branch, shortcut), out
        raise ValueError(f"no PyTorch equivalent for layer type {kind!r}")

    def seq(specs: Sequence[Mapping[str, Any]], shape: list[int]) -> tuple[nn.Module, list[int]]:
        mods = []
        for s in specs:
            m, shape = one(s, shape)
            mods.append(m)
        return nn.Sequential(*mods), shape

    module, _ = seq(model["layers"], list(model["input_shape"]))
    # the list sits in a closure cell that the classes above keep alive in a reference cycle: emptied, so
    # the module's embeddings are freed with it, not at the next garbage collection (a long process such
    # as gpu_suite's otherwise carried earlier networks' embeddings into later cases' peak memory)
    embeddings.clear()
    return module


def _meta_shape(module: Any, shape: list[int]) -> Any:
    """Output shape of ``module`` for one sample, computed on the meta device (no memory)."""
    import copy

    import torch

    probe = copy.deepcopy(module).to("meta")
    return probe(torch.empty(1, *shape, device="meta")).shape[1:]


def example_batch(model: Mapping[str, Any], batch: int, device: str = "cpu") -> Any:
    """A random input batch of the model's shape and dtype."""
    import torch

    shape = (batch, *model["input_shape"])
    if model.get("input_dtype", "float32") == "int64":
        return torch.zeros(shape, dtype=torch.long, device=device)
    return torch.randn(shape, device=device)


def make_optimizer(module: Any, name: str, lr: float = 1e-3) -> Any:
    """The torch.optim optimizer a workload's ``training.optimizer`` names."""
    import torch

    params = module.parameters()
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    cls = {
        "adam": torch.optim.Adam,
        "adamw": torch.optim.AdamW,
        "adagrad": torch.optim.Adagrad,
        "rmsprop": torch.optim.RMSprop,
    }[name]
    return cls(params, lr=lr)


def measure_step_memory(model: Mapping[str, Any], batch: int, optimizer: str, seed: int = 0) -> dict[str, int]:
    """Live-tensor high-water mark of a steady-state fp32 training step on the CPU, in bytes.

    Two steps (forward, cross-entropy loss, backward, optimizer step, ``zero_grad()``) run under
    ``torch.distributed._tools.mem_tracker.MemTracker``; the statistics of the first are reset,
    so the second — with optimizer state present — is measured. The batch is created inside
    the tracked region, as a data loader would.
    """
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    torch.manual_seed(seed)
    module = build_module(model)
    opt = make_optimizer(module, optimizer)
    loss_fn = torch.nn.CrossEntropyLoss()
    tracker = MemTracker()
    tracker.track_external(module, opt)
    with tracker:
        for step in range(2):
            x = example_batch(model, batch)
            out = module(x)
            target = torch.zeros(out.shape[:-1], dtype=torch.long)
            loss = loss_fn(out.reshape(-1, out.shape[-1]), target.reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad()
            del x, out, target, loss
            if step == 0:
                tracker.reset_mod_stats()
    peak = tracker.get_tracker_snapshot("peak")
    stats = next(iter(peak.values()))
    return {str(k).rsplit(".", 1)[-1].lower(): int(v) for k, v in stats.items()}


def measure_step_time(
    model: Mapping[str, Any], batch: int, optimizer: str, steps: int = 5, warmup: int = 2, min_total_s: float = 0.5
) -> float:
    """Median wall time of a full fp32 training step on the CPU, in seconds: at least ``steps`` steps
    after ``warmup``, and short steps repeated until they add up to ``min_total_s``.

    The optimizer runs at learning rate 0: every step does the arithmetic of a training step, but
    the weights stay where they started. At a real rate a random network on one repeated batch
    learns it within a step or a few dozen (loss exactly 0), its gradients turn denormal, and an x86
    CPU computes those many times slower: seen 0.6 s steps become 12 s (the 29.6 M-parameter CNN of
    the random suite), and 5.8 ms become 7.3 ms with one constant label. A training run on a real
    data set stays clear of that; the step's cost is its shapes'. The labels are random classes."""
    import statistics
    import time

    import torch

    torch.manual_seed(0)
    module = build_module(model)
    opt = make_optimizer(module, optimizer, lr=0.0)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = example_batch(model, batch)
    labels: Any = None
    times: list[float] = []
    done = 0
    while done < warmup or len(times) < steps or (sum(times) < min_total_s and len(times) < 1000):
        t = time.perf_counter()
        out = module(x)
        if labels is None:
            seeded = torch.Generator().manual_seed(0)
            labels = torch.randint(0, out.shape[-1], out.shape[:-1], generator=seeded).reshape(-1)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), labels)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if done >= warmup:
            times.append(time.perf_counter() - t)
        done += 1
    return statistics.median(times)


def set_tf32(torch: Any, precision: str, cudnn_tf32: bool = False) -> None:
    """TF32 as TrainRig prices ``precision``: every matrix product on TF32 in tf32; in fp32, matmuls
    IEEE and cuDNN's convolutions and RNNs on TF32 only when ``cudnn_tf32`` (the workload's
    training.cudnn_tf32). The workers keep their own copy (resources/workers/train.py set_cudnn): a
    frozen build's workers run without the app's packages."""
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32" or (precision == "fp32" and cudnn_tf32)


def _measure_worker() -> Any:
    """resources/workers/measure.py, the measure worker's module: the training step it times, GradScaler's
    readings and its settling, which the GPU suite's and accuracy_cuda.py's measurements share."""
    return worker_module("measure")


def cuda_training_step(
    module: Any, model: Mapping[str, Any], batch: int, optimizer: str, precision: str, dev: Any, fmt: Any = None
) -> tuple[Any, Any]:
    """(step, scaler): one training step of ``module`` on ``dev`` as the GPU measurements run it — the measure
    worker's (resources/workers/measure.py training_step: forward, cross-entropy on fp32 logits, backward,
    optimizer step, ``zero_grad(set_to_none=True)``; mixed precision under ``torch.autocast``,
    ``torch.amp.GradScaler`` for fp16 on a GPU) — on one random batch already on the device.

    The optimizer runs at learning rate 0, as ``measure_step_time`` does on the CPU: the arithmetic
    of a training step at the initial weights. At 1e-3 on one repeated batch with one label a network
    learns the batch in a step, its activations then grow step after step, and in fp16 they leave the
    format's range: GradScaler finds inf, skips ``optimizer.step()`` and halves its scale, every step
    after — a VGG-11's step measured so had no optimizer in it (docs/accuracy.md, "fp16 steps that
    trained nothing")."""
    import torch

    opt = make_optimizer(module, optimizer, lr=0.0)
    dtype = {"fp16_mixed": torch.float16, "bf16_mixed": torch.bfloat16}.get(precision)
    scaler = torch.amp.GradScaler(dev.type, enabled=precision == "fp16_mixed" and dev.type == "cuda")
    x = example_batch(model, batch, str(dev))
    if fmt is not None and x.dim() == 4:
        x = x.contiguous(memory_format=fmt)
    return _measure_worker().training_step(torch, module, x, opt, scaler, dtype, dev), scaler


def loss_scale(scaler: Any) -> float:
    """GradScaler's current scale (a synchronisation); 1 where it is off (the measure worker's)."""
    return float(_measure_worker().loss_scale(scaler))


def skipped_steps(scale_before: float, scale_after: float) -> int:
    """Optimizer steps GradScaler skipped between two readings of its scale (the measure worker's)."""
    return int(_measure_worker().skipped_steps(scale_before, scale_after))


def settle_scaler(step: Any, scaler: Any) -> int:
    """Extra warm-up steps while GradScaler still skips the optimizer, at most the measure worker's
    SETTLE_STEPS; the steps it took."""
    return int(_measure_worker().settle_scaler(step, scaler)[0])


def measure_cuda_step(
    model: Mapping[str, Any], batch: int, optimizer: str, precision: str, steps: int = 10, cudnn_tf32: bool = False
) -> dict[str, float]:
    """Peak allocated bytes and median time of a steady-state CUDA training step (``cuda_training_step``).
    In fp32 matmuls run IEEE, and cuDNN's layers on TF32 only when ``cudnn_tf32`` (the workload's
    training.cudnn_tf32; the steps recorded on 2026-11-22 ran with it off).

    ``torch.cuda.max_memory_allocated`` is reset after the first step (optimizer state then
    exists) and read after the next; time is the median of ``steps`` synchronised steps, after
    GradScaler settles (``settle_scaler``); ``optimizer_skipped`` counts timed steps it skipped.
    """
    import statistics
    import time

    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    module = build_module(model).to(dev)
    set_tf32(torch, precision, cudnn_tf32)
    step, scaler = cuda_training_step(module, model, batch, optimizer, precision, dev)
    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    reserved = torch.cuda.max_memory_reserved()
    settle_scaler(step, scaler)
    scale = loss_scale(scaler)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return {
        "peak_allocated": float(peak),
        "peak_reserved": float(reserved),
        "step_s": statistics.median(times),
        "optimizer_skipped": float(skipped_steps(scale, loss_scale(scaler))),
    }
