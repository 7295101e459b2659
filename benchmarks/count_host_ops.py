"""Count the operators PyTorch dispatches for each kind of graph op in a training step: forward and
backward, in fp32 and under autocast, and write them to resources/host_ops.json, the table the
GPU host model prices (core/estimate/host.py, docs/sizing.md §4b).

    python3 benchmarks/count_host_ops.py            # print the table and the whole-model check
    python3 benchmarks/count_host_ops.py --write    # and write resources/host_ops.json

Method: every operator that reaches PyTorch's dispatcher below autograd is counted with a
``TorchDispatchMode`` (kernels, views, allocations alike: each costs the host a dispatch, and each
kernel a launch). A kind's count is the difference between a small network with the op and the
same network without it, so the op is counted in the middle of a network (its input needs a
gradient). Counted on a CPU build of PyTorch; where CUDA dispatches differently the count is
adjusted and says so:

- dropout: CUDA runs one ``native_dropout`` kernel (forward) and ``native_dropout_backward``; the CPU
  runs ``empty_like``, ``bernoulli_``, ``div_`` and ``mul``: 3 forward operators fewer per
  ``bernoulli_``;
- attention: CUDA's memory-efficient and flash kernels take the dropout inside one kernel; the
  attention is counted without dropout, where the CPU runs its fused flash kernel too.

Autocast is counted with ``torch.autocast("cpu", dtype=torch.bfloat16)``: the casts of each matrix
product's inputs and weights (forward) and of their gradients (backward). CUDA's autocast lists
cast the same matrix products (``linear``, ``conv2d``, ``matmul``, the RNN cells).

The check at the end sums the table over each accuracy network's graph and compares it with the
whole network's count.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "resources" / "host_ops.json"

VECTOR = {"input_shape": [16], "layers": [{"type": "linear", "out_features": 32}]}
IMAGE = {"input_shape": [4, 8, 8], "layers": [{"type": "conv2d", "out_channels": 8, "kernel_size": 3, "padding": 1}]}
SEQUENCE = {
    "input_shape": [16],
    "input_dtype": "int64",
    "layers": [{"type": "embedding", "num_embeddings": 100, "embedding_dim": 32}],
}
# graph op kind: (the network it is added to, the layers that add it); "minus": kinds whose own
# counts are taken off (a residual's branch, the projections around an attention)
CASES: dict[str, dict[str, Any]] = {
    "linear": {"base": VECTOR, "add": [{"type": "linear", "out_features": 32}]},
    "linear_seq": {"base": SEQUENCE, "add": [{"type": "linear", "out_features": 32}]},
    "linear_seq_nobias": {"base": SEQUENCE, "add": [{"type": "linear", "out_features": 32, "bias": False}]},
    "conv2d": {"base": IMAGE, "add": [{"type": "conv2d", "out_channels": 8, "kernel_size": 3, "padding": 1}]},
    "conv2d_nobias": {
        "base": IMAGE,
        "add": [{"type": "conv2d", "out_channels": 8, "kernel_size": 3, "padding": 1, "bias": False}],
    },
    "maxpool2d": {"base": IMAGE, "add": [{"type": "maxpool2d", "kernel_size": 2}]},
    "avgpool2d": {"base": IMAGE, "add": [{"type": "avgpool2d", "kernel_size": 2}]},
    "adaptive_avgpool2d": {"base": IMAGE, "add": [{"type": "adaptive_avgpool2d", "output_size": 1}]},
    "batchnorm2d": {"base": IMAGE, "add": [{"type": "batchnorm2d"}]},
    "batchnorm1d": {"base": VECTOR, "add": [{"type": "batchnorm1d"}]},
    "layernorm": {"base": SEQUENCE, "add": [{"type": "layernorm"}]},
    "rmsnorm": {"base": SEQUENCE, "add": [{"type": "rmsnorm"}]},
    "rmsnorm_fp32": {"base": SEQUENCE, "add": [{"type": "rmsnorm", "implementation": "fp32_decomposed"}]},
    "dropout": {"base": VECTOR, "add": [{"type": "dropout", "p": 0.5}]},
    "flatten": {"base": IMAGE, "add": [{"type": "flatten"}]},
    "embedding": {"base": None, "add": [{"type": "embedding", "num_embeddings": 100, "embedding_dim": 32}]},
    "positional_embedding": {"base": SEQUENCE, "add": [{"type": "positional_embedding", "num_embeddings": 16}]},
    "lstm": {"base": SEQUENCE, "add": [{"type": "lstm", "hidden_size": 32}]},
    "add": {"base": IMAGE, "add": [{"type": "residual", "layers": [{"type": "relu"}]}], "minus": ["relu"]},
    # the attention's three graph ops: its projections as linear layers on a sequence, the rest sdpa
    "sdpa": {
        "base": SEQUENCE,
        "add": [{"type": "multihead_attention", "num_heads": 4}],
        "minus": ["linear_seq"] * 4,
    },
    # PyTorch's math attention kernel (training.attention "math"):
    # the CPU's decomposition with dropout, dropout as CUDA's one native_dropout
    "sdpa_math": {
        "base": SEQUENCE,
        "add": [{"type": "multihead_attention", "num_heads": 4, "dropout": 0.1}],
        "minus": ["linear_seq"] * 4,
        "fused_attention": False,
    },
    # the attention written out in Python (training.attention "eager"): torchbridge's eager module
    "sdpa_eager": {
        "base": SEQUENCE,
        "add": [{"type": "multihead_attention", "num_heads": 4, "dropout": 0.1}],
        "minus": ["linear_seq"] * 4,
        "fused_attention": False,
        "attention": "eager",
    },
    "rotary_complex": {
        "base": SEQUENCE,
        "add": [{"type": "multihead_attention", "num_heads": 4, "bias": False, "rotary": "complex"}],
        "minus": ["linear_seq_nobias"] * 4 + ["sdpa"],
    },
    "rotary_half": {
        "base": SEQUENCE,
        "add": [{"type": "multihead_attention", "num_heads": 4, "bias": False, "rotary": "rotate_half"}],
        "minus": ["linear_seq_nobias"] * 4 + ["sdpa"],
    },
    "silu_mul": {
        "base": SEQUENCE,
        "add": [{"type": "swiglu", "hidden_features": 64}],
        "minus": ["linear_seq_nobias"] * 3,
    },
}
for _act in ("relu", "tanh", "sigmoid", "silu", "gelu", "leaky_relu", "softmax"):
    CASES[_act] = {"base": IMAGE, "add": [{"type": _act}]}
# graph op kinds counted as another kind (the projections of an attention or a SwiGLU: linear layers
# on a sequence; without biases when the op has one tensor per linear layer); a GRU as an LSTM: the CPU
# build runs a GRU step by step (hundreds of operators), CUDA's cuDNN the whole recurrence in one
ALIASES = {
    "qkv_proj": ("linear_seq", 3),
    "out_proj": ("linear_seq", 1),
    "gate_up": ("linear_seq", 2),
    "down": ("linear_seq", 1),
    "gru": ("lstm", 1),
}


class _Count:
    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = collections.Counter()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counter[func.overloadpacket.__name__] += 1
                return func(*args, **(kwargs or {}))

        self.counter, self.mode = counter, Mode()


def _cuda_adjusted(counter: collections.Counter) -> int:
    """Operators as CUDA dispatches them: dropout's four CPU operators are one native_dropout."""
    return sum(counter.values()) - 3 * counter.get("bernoulli_", 0)


def count_model(
    model: dict[str, Any] | None,
    batch: int,
    autocast: bool,
    loss: str = "sum",
    fused_attention: bool = True,
    attention: str = "auto",
) -> tuple[int, int]:
    """(forward, backward) operators of one training pass of ``model`` at ``batch``, attention without
    dropout (CUDA's fused kernels) unless not ``fused_attention``; ``model`` None: the loss alone on a
    tensor that needs a gradient."""
    import torch

    from torchbridge.models import build_module, example_batch

    torch.manual_seed(0)
    if model is None:
        mod, x = None, torch.randn(batch, 16, 32, requires_grad=True)  # the loss on a leaf
    else:
        mod = build_module(model, attention)
        for sub in mod.modules():  # CUDA's fused attention kernels take the dropout inside
            if fused_attention and hasattr(sub, "causal") and hasattr(sub, "p"):
                sub.p = 0.0
        x = example_batch(model, batch)
    counts = []
    for _ in range(2):  # the second pass: weights' autocast copies and lazy state as in a steady step
        fwd, bwd = _Count(), _Count()
        with fwd.mode, torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = mod(x) if mod is not None else x
            if loss == "cross_entropy":
                target = torch.zeros(out.shape[:-1], dtype=torch.long)
                value = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), target.reshape(-1))
            else:
                value = out.sum()
        with bwd.mode:
            value.backward()
        if mod is not None:
            mod.zero_grad(set_to_none=True)
        counts = [_cuda_adjusted(fwd.counter), _cuda_adjusted(bwd.counter)]
    return counts[0], counts[1]


def _with(base: dict[str, Any] | None, layers: list[dict[str, Any]]) -> dict[str, Any]:
    if base is None:
        return {**SEQUENCE, "layers": layers}
    return {**base, "layers": [*base["layers"], *layers]}


def count_kinds() -> dict[str, dict[str, int]]:
    """Each kind's operators: forward and backward in fp32, and the extra under autocast."""
    table: dict[str, dict[str, int]] = {}
    # a kind after the kinds it takes off
    simple = {"linear_seq", "linear_seq_nobias", "relu"}
    order = sorted(CASES, key=lambda k: len(set(CASES[k].get("minus", [])) - simple) + bool(CASES[k].get("minus")))
    for kind in order:
        case = CASES[kind]
        row = {}
        for autocast in (False, True):
            fused, attention = case.get("fused_attention", True), case.get("attention", "auto")
            f1, b1 = count_model(
                _with(case["base"], case["add"]), 4, autocast, fused_attention=fused, attention=attention
            )
            f0, b0 = count_model(case["base"], 4, autocast) if case["base"] else count_model(None, 4, autocast)
            for minus in case.get("minus", []):
                f0 += table[minus]["forward"] + (table[minus]["forward_autocast"] if autocast else 0)
                b0 += table[minus]["backward"] + (table[minus]["backward_autocast"] if autocast else 0)
            if autocast:
                row["forward_autocast"] = f1 - f0 - row["forward"]
                row["backward_autocast"] = b1 - b0 - row["backward"]
            else:
                row["forward"], row["backward"] = f1 - f0, b1 - b0
        table[kind] = row
    loss = {}
    for autocast in (False, True):
        f, b = count_model({**VECTOR}, 4, autocast, loss="cross_entropy")
        fs, bs = count_model({**VECTOR}, 4, autocast)
        key = "_autocast" if autocast else ""
        loss["forward" + key], loss["backward" + key] = f - fs, b - bs
    loss["forward_autocast"] -= loss["forward"]
    loss["backward_autocast"] -= loss["backward"]
    table["cross_entropy"] = loss
    return table


def check(table: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """Each accuracy network's whole count against the table summed over its graph."""
    from core.estimate.host import graph_operators
    from core.network.model import analyze_model
    from core.network.presets import accuracy_models

    rows = []
    models = accuracy_models()
    for name in ("seed-mlp", "lenet-5", "small-cnn", "residual-cnn", "resnet-50", "tiny-gpt", "lstm-lm", "bert-base"):
        model = models[name]
        g = analyze_model(model).graph
        for autocast in (False, True):
            f, b = count_model(model, 2, autocast, loss="cross_entropy")
            predicted = graph_operators(g, autocast, table)
            rows.append((name, "autocast" if autocast else "fp32", f + b, predicted))
    return rows


def main() -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write resources/host_ops.json")
    args = ap.parse_args()
    table = count_kinds()
    print(f"{'kind':22s} {'fwd':>5s} {'bwd':>5s} {'+fwd ac':>8s} {'+bwd ac':>8s}")
    for kind, row in table.items():
        print(
            f"{kind:22s} {row['forward']:5d} {row['backward']:5d} "
            f"{row['forward_autocast']:8d} {row['backward_autocast']:8d}"
        )
    doc = {
        "about": "Operators PyTorch dispatches per graph op kind in a training pass (forward, backward; the extra "
        "under autocast), counted by benchmarks/count_host_ops.py with a TorchDispatchMode on a CPU build, "
        "adjusted to CUDA's dispatch (dropout one native_dropout; attention one fused kernel).",
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
        "aliases": {k: list(v) for k, v in ALIASES.items()},
        "kinds": table,
    }
    if args.write:
        OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    print("\nwhole networks (batch 2, cross-entropy) against the table over their graphs:")
    for name, mode, whole, predicted in check(doc):
        error = 100 * (predicted / whole - 1)
        print(f"  {name:14s} {mode:9s} counted {whole:5d}  table {predicted:5d}  {error:+5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
