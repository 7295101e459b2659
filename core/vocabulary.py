"""The shared vocabulary of a workload: precisions, optimizers, shardings and input element types.

One definition each, imported by the workload parser, the estimates, the rules and the bill of
materials, so that a name means the same thing in JSON, CSV, the window and the PDF."""

from __future__ import annotations

# Bytes per element by training precision: (parameter, gradient, activation, optimizer state).
PRECISION_BYTES = {
    "fp32": (4, 4, 4, 4),
    "tf32": (4, 4, 4, 4),
    "fp16_mixed": (4, 4, 2, 4),  # torch.autocast: fp32 params/grads, half activations
    "bf16_mixed": (4, 4, 2, 4),
}
# Optimizer state tensors kept per parameter (torch.optim defaults).
OPTIMIZER_STATES = {"sgd": 0, "sgd_momentum": 1, "adam": 2, "adamw": 2, "adagrad": 1, "rmsprop": 1}
# Jamgharyan/Subbotin N_v: algorithm variables per weight (the gradient plus optimizer state).
ALGORITHM_VARIABLES = {k: 1 + v for k, v in OPTIMIZER_STATES.items()}
SHARDINGS = ("none", "ddp", "zero1", "zero2", "zero3", "fsdp")
# What each sharding divides among the data-parallel devices (Rajbhandari et al. 2020, ZeRO stages
# 1–3; FSDP full shard as ZeRO-3): optimizer states, then gradients, then parameters too.
SHARDS_OPTIMIZER_STATES = ("zero1", "zero2", "zero3", "fsdp")
SHARDS_GRADIENTS = ("zero2", "zero3", "fsdp")
SHARDS_PARAMETERS = ("zero3", "fsdp")
# Bytes per element of the input data by element type.
INPUT_DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "uint8": 1}
