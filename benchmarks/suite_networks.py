"""The networks benchmarks/gpu_suite.py measures, as TrainRig layer-list models: MLPs, VGG, ResNets,
transformer encoders and decoders, LSTM/GRU language models, the accuracy presets, and a seeded generator of
random architectures of every family."""

from __future__ import annotations

import json
import random
from typing import Any

from core.network.presets import accuracy_models


def mlp(widths: list[int], features: int = 256, classes: int = 10) -> dict[str, Any]:
    layers: list[dict[str, Any]] = []
    for w in widths:
        layers += [{"type": "linear", "out_features": w}, {"type": "relu"}]
    return {"input_shape": [features], "layers": [*layers, {"type": "linear", "out_features": classes}]}


def vgg(cfg: list[int | str], size: int, classes: int) -> dict[str, Any]:
    """VGG (Simonyan & Zisserman 2015) from its configuration: channel counts and "M" for pooling."""
    layers: list[dict[str, Any]] = []
    for c in cfg:
        if c == "M":
            layers.append({"type": "maxpool2d", "kernel_size": 2})
        else:
            layers += [{"type": "conv2d", "out_channels": c, "kernel_size": 3, "padding": 1}, {"type": "relu"}]
    side = size // 32
    return {
        "input_shape": [3, size, size],
        "layers": [
            *layers,
            {"type": "flatten"},
            {"type": "linear", "out_features": 4096 if side > 1 else 512},
            {"type": "relu"},
            {"type": "linear", "out_features": classes},
        ],
    }


def resnet(blocks: list[int], size: int, classes: int, width: int = 64) -> dict[str, Any]:
    """A ResNet of basic blocks (He et al. 2016: ResNet-18 is [2, 2, 2, 2]) with batch norm."""

    def conv(c: int, k: int, s: int) -> list[dict[str, Any]]:
        return [
            {"type": "conv2d", "out_channels": c, "kernel_size": k, "stride": s, "padding": k // 2, "bias": False},
            {"type": "batchnorm2d"},
        ]

    layers: list[dict[str, Any]] = [*conv(width, 7, 2), {"type": "relu"}, {"type": "maxpool2d", "kernel_size": 2}]
    c = width
    for stage, n in enumerate(blocks):
        out = width * 2**stage
        for i in range(n):
            s = 2 if stage > 0 and i == 0 else 1
            block: dict[str, Any] = {
                "type": "residual",
                "layers": [*conv(out, 3, s), {"type": "relu"}, *conv(out, 3, 1)],
            }
            if s != 1 or out != c:
                block["shortcut"] = conv(out, 1, s)
            layers += [block, {"type": "relu"}]
            c = out
    layers += [
        {"type": "adaptive_avgpool2d", "output_size": 1},
        {"type": "flatten"},
        {"type": "linear", "out_features": classes},
    ]
    return {"input_shape": [3, size, size], "layers": layers}


def transformer(dim: int, heads: int, depth: int, seq: int, vocab: int, causal: bool) -> dict[str, Any]:
    """An encoder (BERT-like, post-norm) or a causal decoder (GPT-like, pre-norm, tied head)."""
    block = {
        "type": "transformer_block",
        "nhead": heads,
        "dim_feedforward": 4 * dim,
        "dropout": 0.1,
        "activation": "gelu",
        "norm_first": causal,
        "causal": causal,
    }
    head: list[dict[str, Any]] = (
        [{"type": "layernorm"}, {"type": "linear", "out_features": vocab, "bias": False, "tie_weights": True}]
        if causal
        else [{"type": "linear", "out_features": 2}]
    )
    return {
        "input_shape": [seq],
        "input_dtype": "int64",
        "layers": [
            {"type": "embedding", "num_embeddings": vocab, "embedding_dim": dim},
            {"type": "positional_embedding", "num_embeddings": seq},
            {"type": "repeat", "times": depth, "layers": [block]},
            *head,
        ],
    }


def rnn(kind: str, hidden: int, layers: int, seq: int, vocab: int) -> dict[str, Any]:
    return {
        "input_shape": [seq],
        "input_dtype": "int64",
        "layers": [
            {"type": "embedding", "num_embeddings": vocab, "embedding_dim": hidden},
            {"type": kind, "hidden_size": hidden, "num_layers": layers},
            {"type": "linear", "out_features": vocab},
        ],
    }


def _vocab(model: dict[str, Any], old: int, new: int) -> dict[str, Any]:
    """``model`` with every layer of ``old`` classes or embeddings given ``new`` instead."""
    text = json.dumps(model)
    for key in ("num_embeddings", "out_features"):
        text = text.replace(f'"{key}": {old}', f'"{key}": {new}')
    return json.loads(text)


def networks() -> dict[str, tuple[dict[str, Any], str]]:
    """Name → (TrainRig model, family). 34 networks; CNNs also run channels_last."""
    presets = accuracy_models()
    nets: dict[str, tuple[dict[str, Any], str]] = {
        "mlp-2x256": (mlp([256, 256]), "mlp"),
        "mlp-4x1024": (mlp([1024] * 4, 1024), "mlp"),
        "mlp-8x2048": (mlp([2048] * 8, 2048), "mlp"),
        "mlp-wide-8192": (mlp([8192, 8192], 4096, 1000), "mlp"),
        "seed-mlp": (presets["seed-mlp"], "mlp"),
        "lenet-5": (presets["lenet-5"], "cnn"),
        "small-cnn": (presets["small-cnn"], "cnn"),
        "residual-cnn": (presets["residual-cnn"], "cnn"),
        "vgg-11-cifar": (vgg([64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"], 32, 10), "cnn"),
        "vgg-16-cifar": (
            vgg([64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"], 32, 10),
            "cnn",
        ),
        "vgg-11": (vgg([64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"], 224, 1000), "cnn"),
        "resnet-18-cifar": (resnet([2, 2, 2, 2], 32, 10), "resnet"),
        "resnet-18": (resnet([2, 2, 2, 2], 224, 1000), "resnet"),
        "resnet-34": (resnet([3, 4, 6, 3], 224, 1000), "resnet"),
        "resnet-50": (presets["resnet-50"], "resnet"),
        "tiny-gpt": (presets["tiny-gpt"], "decoder"),
        "bert-base": (presets["bert-base"], "encoder"),
        "gpt2-small": (presets["gpt2-small"], "decoder"),
        # GPT-2's vocabulary padded to a multiple of 64 (nanoGPT's 50,304): half-precision GEMMs over
        # 50,257 rows miss the tensor cores' 16-byte alignment (Karpathy 2023: ~25 % of nanoGPT's step);
        # the pair measures what that costs here (docs/accuracy.md, recorded GPT-2 bf16 −13 %)
        "gpt2-small-vocab50304": (_vocab(presets["gpt2-small"], 50257, 50304), "decoder"),
        "lstm-lm": (presets["lstm-lm"], "rnn"),
        "lstm-512-seq64": (rnn("lstm", 512, 1, 64, 8000), "rnn"),
        "lstm-1024x2-seq128": (rnn("lstm", 1024, 2, 128, 10000), "rnn"),
        "gru-512x2-seq128": (rnn("gru", 512, 2, 128, 8000), "rnn"),
        "gru-1024-seq32": (rnn("gru", 1024, 1, 32, 10000), "rnn"),
    }
    for seq in (128, 256, 512):
        nets[f"encoder-512x6-seq{seq}"] = (transformer(512, 8, 6, seq, 30522, False), "encoder")
        nets[f"encoder-768x12-seq{seq}"] = (transformer(768, 12, 12, seq, 30522, False), "encoder")
    for seq in (256, 512, 1024):
        nets[f"decoder-512x8-seq{seq}"] = (transformer(512, 8, 8, seq, 32000, True), "decoder")
    nets["decoder-1024x12-seq1024"] = (transformer(1024, 16, 12, 1024, 32000, True), "decoder")
    return nets


def random_network(rng: random.Random) -> tuple[dict[str, Any], str]:
    """One random architecture: an MLP, a plain CNN or a transformer, sizes drawn from ``rng``."""
    kind = rng.choice(("mlp", "cnn", "encoder", "decoder"))
    if kind == "mlp":
        return mlp(
            [rng.choice((128, 256, 512, 1024, 2048, 4096)) for _ in range(rng.randint(1, 8))],
            rng.choice((64, 784, 3072)),
        ), kind
    if kind == "cnn":
        size, layers, c = rng.choice((32, 64, 128)), [], 3
        for _ in range(rng.randint(2, 6)):
            c = rng.choice((16, 32, 64, 128, 256))
            layers += [{"type": "conv2d", "out_channels": c, "kernel_size": rng.choice((1, 3, 5)), "padding": "same"}]
            layers += [{"type": "batchnorm2d"}] if rng.random() < 0.5 else []
            layers += [{"type": "relu"}]
            if size > 8 and rng.random() < 0.6:
                layers.append({"type": "maxpool2d", "kernel_size": 2})
                size //= 2
        for layer in layers:  # padding "same" for odd kernels
            if layer.get("padding") == "same":
                layer["padding"] = layer["kernel_size"] // 2
        first = rng.choice((32, 64, 128))
        model = {
            "input_shape": [3, first, first],
            "layers": [
                *layers,
                {"type": "adaptive_avgpool2d", "output_size": 1},
                {"type": "flatten"},
                {"type": "linear", "out_features": 10},
            ],
        }
        return model, kind
    dim = rng.choice((128, 256, 384, 512, 768))
    heads = rng.choice([h for h in (2, 4, 8, 12) if dim % h == 0])
    return transformer(
        dim,
        heads,
        rng.randint(1, 8),
        rng.choice((64, 128, 256, 512)),
        rng.choice((1000, 8000, 32000)),
        kind == "decoder",
    ), kind


# The host-cost ladder (gpu_suite.py --ladder): the same block stacked 1, 2, 4 and 8 times on a tiny input, so
# a step is the host's and its growth per block is what the host pays for one block's operators. A linear
# block is the control without cuDNN; a convolution alone, with cuDNN's batch norm, and with max pooling
# too tell which of a small CNN's layers the host pays more for than the model prices (docs/accuracy.md,
# "A fifth H100 lease").
LADDER_BLOCKS = {
    "linear": [{"type": "linear", "out_features": 64}, {"type": "relu"}],
    "conv": [{"type": "conv2d", "out_channels": 16, "kernel_size": 3, "padding": 1}, {"type": "relu"}],
    "conv+bn": [
        {"type": "conv2d", "out_channels": 16, "kernel_size": 3, "padding": 1},
        {"type": "batchnorm2d"},
        {"type": "relu"},
    ],
    "conv+bn+pool": [
        {"type": "conv2d", "out_channels": 16, "kernel_size": 3, "padding": 1},
        {"type": "batchnorm2d"},
        {"type": "relu"},
        {"type": "maxpool2d", "kernel_size": 3, "stride": 1, "padding": 1},  # keeps the image's size
    ],
}
LADDER_DEPTHS = (1, 2, 4, 8)
LADDER_PRECISIONS = ("fp32", "bf16_mixed")  # bf16: autocast's casts around each layer, cuDNN in half
LADDER_BATCHES = (8,)


def ladder_networks() -> dict[str, tuple[dict[str, Any], str]]:
    """The ladder's networks: name → (model, family "ladder <block>"); names say the block and the depth."""
    nets = {}
    for block, layers in LADDER_BLOCKS.items():
        for depth in LADDER_DEPTHS:
            stacked = [dict(layer) for _ in range(depth) for layer in layers]
            if block == "linear":
                model = {"input_shape": [64], "layers": [*stacked, {"type": "linear", "out_features": 10}]}
            else:
                tail = [{"type": "adaptive_avgpool2d", "output_size": 1}, {"type": "flatten"}]
                model = {
                    "input_shape": [3, 16, 16],
                    "layers": [*stacked, *tail, {"type": "linear", "out_features": 10}],
                }
            nets[f"ladder-{block}-x{depth}"] = (model, f"ladder {block}")
    return nets


# The recurrent-algorithm grid (gpu_suite.py --recurrent, benchmarks/recurrent_grid.py reads it): one-layer
# LSTMs and GRUs either side of PyTorch's choices of cuDNN's algorithm (core/estimate/gpu_rnn.py
# rnn_algorithms) at RECURRENT_SEQ time steps: hidden 64 and 128 (the small-hidden kernels forward and
# backward), 192 (forward only), 256 and 512 (the persistent kernel in half precision at a batch a multiple
# of 8 up to 128), and a two-layer LSTM of 256 (one call, never persistent). No suite has measured a hidden
# size under 256: the small-hidden kernels are priced as the persistent one, unmeasured.
RECURRENT_HIDDEN = (64, 128, 192, 256, 512)
RECURRENT_SEQ = 64
RECURRENT_VOCAB = 1000
RECURRENT_PRECISIONS = ("fp32", "bf16_mixed", "fp16_mixed")  # autocast runs cuDNN's layers in fp16 either way
RECURRENT_BATCHES = (20, 64, 256)  # not a multiple of 8; one; past 128 (PyTorch's persistent rule)


def recurrent_networks() -> dict[str, tuple[dict[str, Any], str]]:
    """The recurrent grid's networks: name → (model, family "recurrent lstm" or "recurrent gru")."""
    nets = {}
    for kind in ("lstm", "gru"):
        for hidden in RECURRENT_HIDDEN:
            nets[f"rnn-{kind}-{hidden}"] = (rnn(kind, hidden, 1, RECURRENT_SEQ, RECURRENT_VOCAB), f"recurrent {kind}")
    nets["rnn-lstm-256x2"] = (rnn("lstm", 256, 2, RECURRENT_SEQ, RECURRENT_VOCAB), "recurrent lstm")
    return nets


def all_layers(model: dict[str, Any]) -> list[dict[str, Any]]:
    """Every layer of a model, those inside repeat and residual containers included."""
    out = []
    for layer in model.get("layers", []):
        out.append(layer)
        out += all_layers({"layers": layer.get("layers", []) + layer.get("shortcut", [])})
    return out


def suite_case(name: str, family: str, model: dict[str, Any], batch: int, precision: str, fmt: str) -> dict[str, Any]:
    """One case to measure: a network in one precision, batch and memory format (attention as SDPA picks)."""
    return {
        "name": name,
        "family": family,
        "model": model,
        "batch": batch,
        "precision": precision,
        "memory_format": fmt,
        "attention": "auto",
    }


def _grid_cases(
    nets: dict[str, tuple[dict[str, Any], str]], precisions: tuple[str, ...], batches: tuple[int, ...]
) -> list[dict[str, Any]]:
    """Every network of a grid in each precision at each batch, NCHW."""
    return [
        suite_case(name, family, model, batch, precision, "contiguous")
        for name, (model, family) in nets.items()
        for precision in precisions
        for batch in batches
    ]


def ladder_cases(quick: bool) -> list[dict[str, Any]]:
    """The host-cost ladder (LADDER_BLOCKS) at LADDER_BATCHES in LADDER_PRECISIONS; ``quick``: depths 1 and 2
    in fp32, batch 4."""
    out = _grid_cases(ladder_networks(), LADDER_PRECISIONS, LADDER_BATCHES)
    if quick:
        out = [{**c, "batch": 4} for c in out if c["precision"] == "fp32" and c["name"].endswith(("-x1", "-x2"))]
    return out


def recurrent_cases(quick: bool) -> list[dict[str, Any]]:
    """The recurrent-algorithm grid (recurrent_networks) in RECURRENT_PRECISIONS at RECURRENT_BATCHES;
    ``quick``: hidden 64 and 256 in fp32 at batch 4."""
    out = _grid_cases(recurrent_networks(), RECURRENT_PRECISIONS, RECURRENT_BATCHES)
    if quick:
        keep = ("rnn-lstm-64", "rnn-lstm-256")
        out = [{**c, "batch": 4} for c in out if c["name"] in keep and c["precision"] == "fp32" and c["batch"] == 20]
    return out
