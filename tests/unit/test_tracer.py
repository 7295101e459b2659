"""Models given as PyTorch code: traced in a child process under FakeTensorMode, errors explained."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from core.errors import WorkloadError
from core.estimate.calibration import efficiency_from_calibration
from core.estimate.op_work import parameter_tensor_sizes
from core.estimate.sizing import size_candidate
from core.hardware.catalogue import device_from_entry
from core.network.model import analyze_model
from core.network.presets import load_presets
from core.spec.workload import parse_workload
from telemetry.tracer import resolve_torch_models, trace_torch_model
from tests.unit.test_calibration import PROFILE_PER_TENSOR

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="CI installs torch==2.13.0")

SEED_MLP = """
import torch.nn as nn

def make():
    return nn.Sequential(nn.Linear(75, 512), nn.LeakyReLU(), nn.Linear(512, 512), nn.LeakyReLU(),
                         nn.Linear(512, 512), nn.LeakyReLU(), nn.Linear(512, 10))
"""
TRAINING = {"batch_size": 512, "epochs": 10, "optimizer": "adam", "precision": "fp32"}


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "model.py"
    p.write_text(text)
    return p


def test_traced_model_agrees_with_the_layer_list_engine(tmp_path: Path) -> None:
    write(tmp_path, SEED_MLP)
    summary = trace_torch_model({"torch": "model.py:make", "input_shape": [75]}, TRAINING, tmp_path)
    s = summary["summary"]
    engine = analyze_model(load_presets()["seed-mlp"]["model"])
    assert s["parameters"] == engine.parameters == 569_354
    assert s["forward_flops_per_sample"] == engine.forward_flops
    trace = summary["trace"]
    cats = trace["peak_by_category"]
    assert cats["param"] == 569_354 * 4  # fp32 weights
    assert cats["opt"] == 2 * 569_354 * 4 + 8 * 4  # Adam's two moments and a step count per parameter tensor
    assert cats["act"] > 0 and sum(cats.values()) == trace["peak_bytes"]
    assert [(x["name"], x["type"], x["flops_per_sample"]) for x in trace["layers"]] == [
        (str(i), "Linear", row.flops)
        for i, row in zip((0, 2, 4, 6), [r for r in engine.rows if r.type == "linear"], strict=True)
    ]
    doc = resolve_torch_models(
        {"model": {"torch": "model.py:make", "input_shape": [75]}, "data": {"samples": 1000}, "training": TRAINING},
        tmp_path,
        ask=lambda question: question.endswith("Run it?"),  # the user said yes
    )
    w = parse_workload(doc)
    assert w.analysis.kind == "summary" and w.analysis.notes[0].startswith("traced from model.py:make")
    # the traced kernels time the step exactly as the layer list does (4 products, 3 LeakyReLUs)
    layers = parse_workload({**doc, "model": {"preset": "seed-mlp"}})
    cpu = device_from_entry({"name": "test CPU", "kind": "cpu", "fp32_tflops": 0.2, "source": "test"})
    # the tensors an optimizer steps, one fixed cost each: 4 linear layers' weights and biases
    sizes = sorted(int(n) for n in parameter_tensor_sizes(engine))
    assert len(trace["param_sizes"]) == 8 and sorted(trace["param_sizes"]) == sizes
    rates = efficiency_from_calibration(PROFILE_PER_TENSOR, "cpu")
    traced_step = size_candidate(w, cpu, 1, calibrated=rates).step
    layer_step = size_candidate(layers, cpu, 1, calibrated=rates).step
    assert traced_step.compute_s == pytest.approx(layer_step.compute_s)
    assert traced_step.memory_s == pytest.approx(layer_step.memory_s)
    assert traced_step.step_s == pytest.approx(layer_step.step_s)


CAUSAL_BLOCK = """
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim=16, heads=2, ffn=32):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.up, self.down = nn.Linear(dim, ffn), nn.Linear(ffn, dim)

    def forward(self, x):
        b, s, dim = x.shape
        h = self.norm1(x)
        q, k, v = (p(h).view(b, s, self.heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, dim))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def make():
    return Block()
"""


def test_attention_written_with_sdpa_counts_its_flops(tmp_path: Path) -> None:
    # PyTorch 2.13's FlopCounterMode has no formula for the CPU flash kernel that
    # F.scaled_dot_product_attention runs without dropout: the trace counted 262,144 FLOPs per
    # sample, half of this block's (the attention products are half its work at 64 tokens of 16)
    write(tmp_path, CAUSAL_BLOCK)
    training = {**TRAINING, "batch_size": 4}
    summary = trace_torch_model({"torch": "model.py:make", "input_shape": [64, 16]}, training, tmp_path)
    block = {
        "input_shape": [64, 16],
        "layers": [
            {
                "type": "transformer_block",
                "nhead": 2,
                "dim_feedforward": 32,
                "dropout": 0.0,
                "activation": "gelu",
                "norm_first": True,
                "causal": True,
            }
        ],
    }
    s, d, ffn = 64, 16, 32
    scores = 4 * s * s * d  # QK^T and PV over the full score matrix: the causal mask is not halved
    by_hand = 2 * s * 4 * d * d + scores + 2 * s * 2 * d * ffn
    assert by_hand == analyze_model(block).forward_flops == 524_288
    assert summary["summary"]["forward_flops_per_sample"] == pytest.approx(by_hand, rel=0.01)
    # the timing model sees the attention kernel as a matrix product of those FLOPs
    assert scores in [op["flops"] for op in summary["trace"]["ops"] if op["kind"] == "linear"]


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("def make(:\n    pass\n", "line 1: syntax error"),
        ("def make():\n    raise ValueError('no weights here')\n", "make() raised ValueError: no weights here (line 2"),
        ("def make():\n    return 42\n", "returned int, not a torch.nn.Module"),
        ("def other():\n    pass\n", "defines no function 'make'"),
    ],
)
def test_errors_in_the_users_file_are_explained(tmp_path: Path, code: str, words: str) -> None:
    write(tmp_path, code)
    with pytest.raises(WorkloadError) as err:
        trace_torch_model({"torch": "model.py:make", "input_shape": [75]}, TRAINING, tmp_path)
    assert err.value.path == "model.torch" and words in err.value.message


def test_a_factory_that_never_returns_hits_the_time_limit(tmp_path: Path) -> None:
    write(tmp_path, "def make():\n    while True:\n        pass\n")
    with pytest.raises(WorkloadError, match="did not finish within 3 s"):
        trace_torch_model({"torch": "model.py:make", "input_shape": [75]}, TRAINING, tmp_path, timeout_s=3)


def test_cli_sizes_a_pytorch_file(tmp_path: Path, cli) -> None:
    write(tmp_path, SEED_MLP)
    wl = tmp_path / "w.json"
    wl.write_text(
        json.dumps(
            {
                "name": "code",
                "model": {"torch": "model.py:make", "input_shape": [75]},
                # the classes given: checked against the traced model, not against the stand-in its workload is
                # checked with before the code runs (of one output: "data.outputs: is 10, more than the 1 …")
                "data": {"samples": 80909, "outputs": 10},
                "training": TRAINING,
            }
        )
    )
    code, out, err = cli("size", str(wl), "-c", "4090", "--json", "--no-save", "--trust-code")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["parameters"] == 569_354
    assert doc["model"]["traced"]["peak_by_category"]["param"] == 569_354 * 4
    code, out, err = cli("size", str(wl), "-c", "4090", "--no-save", "--trust-code")
    assert code == 0, err
    assert "Traced from model.py:make" in out and "parameters 2.17 MiB" in out and "6 (Linear): 10.2 kFLOP" in out
    wl.write_text(
        json.dumps(
            {"model": {"torch": "missing.py:make", "input_shape": [75]}, "data": {"samples": 1}, "training": TRAINING}
        )
    )
    code, _, err = cli("size", str(wl), "--no-save", "--trust-code")
    assert code == 2 and "missing.py does not exist" in err


def test_a_trace_that_crashes_on_its_device_is_retried_on_the_cpu(tmp_path: Path) -> None:
    # stands in for a PyTorch built with CUDA on a machine whose GPU cannot be used: the worker
    # aborts (as PyTorch does without a CUDA device guard) unless it is told to trace on the CPU
    write(tmp_path, SEED_MLP)
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        'case "$2" in *\\"device\\"*) exec "' + sys.executable + '" "$@";; esac\n'
        "echo 'terminate called after throwing an instance of c10::Error' >&2\nexit 134\n"
    )
    python.chmod(0o755)
    summary = trace_torch_model({"torch": "model.py:make", "input_shape": [75]}, TRAINING, tmp_path, python=str(python))
    assert summary["summary"]["parameters"] == 569_354 and summary["trace"]["device"] == "cpu"
    crash = tmp_path / "crash"
    crash.write_text("#!/bin/sh\necho 'Fatal Python error: Aborted' >&2\nexit 134\n")
    crash.chmod(0o755)
    with pytest.raises(WorkloadError, match=re.escape("tracing model.py:make failed: Fatal Python error: Aborted")):
        trace_torch_model({"torch": "model.py:make", "input_shape": [75]}, TRAINING, tmp_path, python=str(crash))
