"""cuDNN's recurrent layers as the GPU kernel model prices them (core/estimate/gpu_rnn.py): the algorithm
PyTorch picks (aten/src/ATen/native/cudnn/RNN.cpp get_algo), the call's fixed cost, and what a user sees
of it in a sized step."""

from __future__ import annotations

import pytest

from core.estimate.gpu_kernels import figures
from core.estimate.gpu_rnn import RNN_CALL_S, RNN_PERSIST_STEP_S, rnn_algorithms, rnn_op_s
from core.estimate.op_work import forward_work
from core.estimate.sizing import size_candidate
from core.hardware.catalogue import find_device, load_catalogue
from core.network.model import analyze_model
from core.spec.workload import parse_workload

CATALOGUE = tuple(load_catalogue())


def gpu(name: str):
    return figures(find_device(name, CATALOGUE))


def lstm_model(hidden: int = 512, layers: int = 1, kind: str = "lstm", features: int = 256) -> dict:
    return {
        "input_shape": [64],
        "input_dtype": "int64",
        "layers": [
            {"type": "embedding", "num_embeddings": 1000, "embedding_dim": features},
            {"type": kind, "hidden_size": hidden, "num_layers": layers},
            {"type": "linear", "out_features": 1000},
        ],
    }


def recurrent_ops(model: dict):
    ops, _ = forward_work(analyze_model(model))
    return [op for op in ops if op.rnn]


@pytest.mark.parametrize(
    ("device", "model", "batch", "precision", "expected"),
    [
        # one layer, hidden and input multiples of 128, batch a multiple of 8 up to 128, in half precision
        ("H100 SXM", lstm_model(), 64, "fp16_mixed", ("persist", "persist")),
        # torch.autocast runs cuDNN's recurrent layers in fp16 whatever its dtype (AutocastRNN.cpp)
        ("H100 SXM", lstm_model(), 64, "bf16_mixed", ("persist", "persist")),
        ("H100 SXM", lstm_model(), 20, "fp16_mixed", ("standard", "standard")),  # batch not a multiple of 8
        ("H100 SXM", lstm_model(), 256, "fp16_mixed", ("standard", "standard")),  # over 128
        ("H100 SXM", lstm_model(), 64, "fp32", ("standard", "standard")),  # PERSIST_STATIC is half only
        ("H100 SXM", lstm_model(kind="gru"), 64, "fp16_mixed", ("standard", "standard")),  # no GRUs on 8.0+
        ("H100 SXM", lstm_model(hidden=650), 64, "fp16_mixed", ("standard", "standard")),  # not a multiple of 128
        ("H100 SXM", lstm_model(hidden=2048), 64, "fp16_mixed", ("standard", "standard")),  # over 1,024
        ("A100 80GB SXM", lstm_model(), 64, "fp16_mixed", ("persist", "persist")),  # 8.0, 108 SMs
        ("GeForce RTX 3090", lstm_model(), 64, "fp16_mixed", ("standard", "standard")),  # 8.6 is excluded
        ("NVIDIA L4", lstm_model(), 64, "fp16_mixed", ("standard", "standard")),  # 58 SMs, under 98
        ("T4", lstm_model(), 64, "fp16_mixed", ("standard", "standard")),  # Turing never
        ("Tesla V100 SXM2 32GB", lstm_model(), 64, "fp16_mixed", ("persist", "persist")),  # Volta: b % 16, seq ≥ 40
        ("Tesla V100 SXM2 32GB", lstm_model(), 24, "fp16_mixed", ("standard", "standard")),
        # a small hidden size: the small-H persistent kernels, any precision (forward ≤ 192, backward ≤ 128)
        ("H100 SXM", lstm_model(hidden=128), 20, "fp32", ("small_h", "small_h")),
        ("GeForce RTX 3090", lstm_model(hidden=160, kind="gru"), 20, "tf32", ("small_h", "standard")),
    ],
)
def test_pytorch_picks_cudnns_algorithm(device: str, model: dict, batch: int, precision: str, expected) -> None:
    (op,) = recurrent_ops(model)
    assert rnn_algorithms(op, batch, precision, gpu(device)) == expected


def test_a_stacked_module_is_one_call_that_the_persistent_kernel_does_not_take() -> None:
    ops = recurrent_ops(lstm_model(hidden=512, layers=2, features=512))
    assert [op.rnn_layers for op in ops] == [2, 2]
    assert all(rnn_algorithms(op, 64, "fp16_mixed", gpu("H100 SXM")) == ("standard",) * 2 for op in ops)


def test_a_persistent_layer_is_priced_without_the_hosts_chain_per_step() -> None:
    h100 = gpu("H100 SXM")
    (op,) = recurrent_ops(lstm_model())
    steps = op.rnn[3]
    persistent = rnn_op_s(op, 64, "fp16_mixed", h100)
    standard = rnn_op_s(op, 64, "fp16_mixed", h100, algorithm="standard")
    # 64 steps forward and backward at 4 µs each against the chain's 16 µs and a pointwise kernel
    assert persistent < standard - steps * 2 * 12e-6
    assert persistent >= RNN_CALL_S + steps * 2 * RNN_PERSIST_STEP_S
    # the host's speed moves the call's cost, not a persistent kernel's steps
    assert persistent - rnn_op_s(op, 64, "fp16_mixed", h100, host_speed=2.0) == pytest.approx(RNN_CALL_S / 2)


def test_the_sized_step_of_a_persistent_lstm_is_faster_than_at_a_batch_cudnn_chains() -> None:
    # what a user sees: the one-layer fp16 LSTM at batch 64 steps in less time than at batch 60, where
    # PyTorch leaves cuDNN's standard algorithm (a batch not a multiple of 8)
    h100 = find_device("H100 SXM", CATALOGUE)

    def step(batch: int) -> float:
        doc = {
            "model": lstm_model(),
            "data": {"samples": 10000, "outputs": 64, "dtype": "int64", "format": "raw"},
            "training": {"batch_size": batch, "epochs": 1, "precision": "fp16_mixed", "optimizer": "adamw"},
        }
        return size_candidate(parse_workload(doc), h100, 1).step.step_s

    assert step(64) < 0.9 * step(60)


def _assumptions(batch: int, precision: str, model: dict | None = None) -> list[str]:
    doc = {
        "model": model or lstm_model(),
        "data": {"samples": 10000, "outputs": 64, "dtype": "int64", "format": "raw"},
        "training": {"batch_size": batch, "epochs": 1, "precision": precision, "optimizer": "adamw"},
    }
    c = size_candidate(parse_workload(doc), find_device("H100 SXM", CATALOGUE), 1)
    return [a for a in c.assumptions if "cuDNN's" in a and ("recurrent" in a or "persistent" in a)]


def test_the_sizing_says_which_algorithm_runs_the_lstm_and_what_would_give_it_the_persistent_kernel() -> None:
    (note,) = _assumptions(64, "fp16_mixed")
    assert note.startswith("cuDNN's persistent kernel runs the LSTM at batch 64 a GPU") and "4 µs a time step" in note
    (note,) = _assumptions(60, "fp16_mixed")
    assert "standard algorithm at batch 60 a GPU" in note and "0.9 ms a layer's call" in note
    assert note.endswith(
        "at a batch a GPU that is a multiple of 8 up to 128 PyTorch gives its LSTM cuDNN's persistent "
        "kernel (about 4 µs a time step)"
    )
    (note,) = _assumptions(64, "fp32")
    assert "under torch.autocast PyTorch gives its LSTM cuDNN's persistent kernel" in note
    # a GRU never gets it on this GPU: the note names the chain and no way out
    (note,) = _assumptions(64, "fp16_mixed", lstm_model(kind="gru"))
    assert "standard algorithm" in note and "persistent" not in note
