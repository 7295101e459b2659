"""What PyTorch's kernels save for backward, against the engine's graph: the fused RMSNorm that
nn.RMSNorm runs on CUDA, and the math attention kernel without dropout (PyTorch 2.13, CPU)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed in CI (torch==2.13.0)")

from core.estimate.activations import ActivationPolicy, math_score_saves  # noqa: E402
from core.estimate.step_replay import memory_profile  # noqa: E402
from core.network.model import analyze_model  # noqa: E402


def saved_bytes(run: Any) -> dict[int, int]:
    """Bytes per storage that autograd saves while ``run()`` executes (parameters left out)."""
    saved: dict[int, int] = {}

    def pack(t: Any) -> Any:
        if not isinstance(t, torch.nn.Parameter):
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return saved


@pytest.fixture
def fused_rms_norm_on_cpu() -> Iterator[None]:
    """A CPU kernel for aten::_fused_rms_norm, so that autograd records the fused op's own node
    (FusedRmsNormBackward0, what CUDA runs) instead of the CPU's decomposition; removed after."""
    lib = torch.library.Library("aten", "IMPL")

    def fused(inp: Any, shape: list[int], weight: Any, eps: float | None) -> tuple[Any, Any]:
        dims = tuple(range(-len(shape), 0))
        rstd = torch.rsqrt(inp.float().pow(2).mean(dims, keepdim=True) + (eps or 1e-6))
        out = inp * rstd
        return (out * weight if weight is not None else out).to(inp.dtype), rstd

    lib.impl("_fused_rms_norm", fused, "CPU")
    try:
        yield
    finally:
        lib._destroy()


def test_rmsnorm_saves_what_the_fused_kernel_saves(fused_rms_norm_on_cpu: None) -> None:
    # the fused kernel keeps its input and the reciprocal RMS per row (8,448 bytes here), not the
    # normalised tensor the CPU's decomposition also keeps (16,640): the issue's +4 bytes ×
    # sequence × batch × hidden per Llama layer (two norms, bf16) on GPUs
    batch, length, dim = 4, 16, 32
    x = torch.randn(batch, length, dim, requires_grad=True)
    weight = torch.nn.Parameter(torch.ones(dim))
    nodes: list[str] = []

    def run() -> None:
        out = torch.ops.aten._fused_rms_norm(x, [dim], weight, 1e-5)[0]
        nodes.append(type(out.grad_fn).__name__)

    measured = sum(saved_bytes(run).values())
    assert nodes == ["FusedRmsNormBackward0"]
    model = analyze_model(
        {"input_shape": [length, dim], "layers": [{"type": "linear", "out_features": dim}, {"type": "rmsnorm"}]}
    )
    graph = model.graph
    assert graph is not None
    op = next(o for o in graph.ops if o.name == "rmsnorm")
    engine = sum(graph.tensors[t].elems for t in op.saved) * batch * 4
    assert engine == measured == 8_448
    # the GPU profile counts the fused saves, the CPU profile the decomposed ones on top
    gpu = memory_profile(model, ActivationPolicy(device_kind="gpu")).saved_float
    cpu = memory_profile(model, ActivationPolicy(device_kind="cpu")).saved_float
    assert (cpu - gpu) * batch * 4 == 16_640 - 8_448


@pytest.mark.parametrize("causal", [False, True])
def test_math_attention_without_dropout_keeps_the_softmax_output(causal: bool) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    batch, heads, length, head_dim = 2, 4, 64, 16
    q, k, v = (torch.randn(batch, heads, length, head_dim, requires_grad=True) for _ in range(3))

    def run() -> None:
        with sdpa_kernel(SDPBackend.MATH):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    beyond_qkv = sum(saved_bytes(run).values()) - 3 * q.numel() * 4
    model = analyze_model(
        {
            "input_shape": [length, heads * head_dim],
            "layers": [{"type": "multihead_attention", "num_heads": heads, "dropout": 0.0, "causal": causal}],
        }
    )
    assert model.graph is not None
    op = next(o for o in model.graph.ops if o.name == "sdpa")
    floats, fixed = math_score_saves(ActivationPolicy(attention="math", device_kind="cpu"), op)
    assert (floats * 4 + fixed) * batch == beyond_qkv == batch * heads * length * length * 4
    # the kernel PyTorch picks on its own (CPU flash without dropout) keeps no scores
    assert math_score_saves(ActivationPolicy(attention="auto", device_kind="cpu"), op) == (0, 0)
