"""The GPU host's operator counts (resources/host_ops.json, core/estimate/host.py training_operators):
what PyTorch dispatches per kind of graph op in a training pass, counted by
benchmarks/count_host_ops.py, and priced per operator by the host model (docs/sizing.md §4b)."""

from __future__ import annotations

from typing import Any

import pytest

from core.estimate import host
from core.network.model import analyze_model
from core.network.presets import accuracy_models, load_presets
from core.spec.workload import parse_workload

pytest_plugins = ["tests.skip_guard"]  # CI: a skipped test fails the run (TRAINRIG_REQUIRE_ALL=1)


def _graph(name: str) -> Any:
    return analyze_model(accuracy_models()[name]).graph


def test_every_kind_of_op_in_the_presets_has_a_counted_row() -> None:
    # a kind without a row would be priced at a guessed 3 operators
    doc = host.host_ops_table()
    known = set(doc["kinds"]) | set(doc["aliases"])
    for name in load_presets():
        g = parse_workload({"model": {"preset": name}}).analysis.graph
        if g is None:  # a published summary: no layer list
            continue
        sequence = any(op.name in ("embedding", "sdpa", "qkv_proj") for op in g.ops)
        kinds = {host._op_kind(op, sequence) for op in g.ops}
        assert kinds <= known, f"{name}: {kinds - known}"


def test_bert_base_dispatches_about_two_thousand_operators_a_step_under_autocast() -> None:
    # BERT-base's 12 blocks: 1,678 operators in fp32 (views and transposes included: each is a dispatch),
    # 2,088 under bf16 autocast (the casts of 73 linear layers' inputs, weights and biases, and of their
    # gradients); GradScaler adds 11 under fp16. At 17.3 µs each, with AdamW's kernels after the last
    # dispatch, that is the 38.8-41.3 ms two H100 hosts measured at batch 32 and 64, where the kernels
    # take 12-18 ms.
    model = parse_workload({"model": {"preset": "bert-base"}}).analysis
    assert host.training_operators(model, "fp32") == 1678
    assert host.training_operators(model, "bf16_mixed") == 2088
    assert host.training_operators(model, "fp16_mixed") == 2088 + host.GRADSCALER_OPERATORS
    assert host.training_operators(model, "tf32") == host.training_operators(model, "fp32")


def test_a_biasless_projection_counts_fewer_operators() -> None:
    # Llama's projections have no biases: each linear layer on a sequence dispatches 13, not 16
    rows = host.host_ops_table()["kinds"]
    with_bias = rows["linear_seq"]["forward"] + rows["linear_seq"]["backward"]
    without = rows["linear_seq_nobias"]["forward"] + rows["linear_seq_nobias"]["backward"]
    assert (with_bias, without) == (16, 13)


@pytest.mark.parametrize(
    ("name", "tolerance"),
    [
        ("seed-mlp", 0.05),
        ("lenet-5", 0.10),
        ("small-cnn", 0.10),
        ("residual-cnn", 0.20),  # its first convolution has no input gradient: 14 fewer under autocast
        ("resnet-50", 0.02),
        ("tiny-gpt", 0.02),
        ("lstm-lm", 0.05),
        ("bert-base", 0.02),
    ],
)
def test_the_table_over_a_graph_counts_what_pytorch_dispatches_for_the_whole_network(
    name: str, tolerance: float
) -> None:
    pytest.importorskip("torch", reason="PyTorch is installed in CI (torch==2.13.0)")
    from benchmarks.count_host_ops import count_model

    for autocast in (False, True):
        forward, backward = count_model(accuracy_models()[name], 2, autocast, loss="cross_entropy")
        table = host.graph_operators(_graph(name), autocast)
        assert abs(table / (forward + backward) - 1) <= tolerance, (autocast, table, forward + backward)


def test_the_committed_table_is_what_this_pytorch_dispatches() -> None:
    # rerun benchmarks/count_host_ops.py --write when a PyTorch release changes its dispatch
    torch = pytest.importorskip("torch", reason="PyTorch is installed in CI (torch==2.13.0)")
    from benchmarks.count_host_ops import count_kinds

    doc = host.host_ops_table()
    assert torch.__version__.split("+")[0] == doc["torch"].split("+")[0]
    assert count_kinds() == doc["kinds"]
