"""Trace a user's PyTorch model without real memory: parameters, forward FLOPs and the live-tensor
high-water mark of one steady-state training step under FakeTensorMode.

Usage (run by TrainRig in the Python environment with PyTorch, in a child process with a time
limit): python trace.py '{"file": ..., "factory": ..., "input_shape": [...], "input_dtype": ...,
"batch": 64, "optimizer": "adam"}'. Prints one JSON object; on a problem {"error": "..."} and exit 3.
"""

from __future__ import annotations

import json
import runpy
import sys
import traceback


def fail(message: str) -> int:
    print(json.dumps({"error": message}))
    return 3


def user_frame(exc: BaseException, path: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    where = f" (line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


# aten ops of a forward pass → the kinds the timing model knows (docs/sizing.md §4): matrix
# products timed by their FLOPs, elementwise kernels by their elements (pooling: input elements)
MATMUL_OPS = {
    **dict.fromkeys(("mm", "addmm", "bmm", "baddbmm"), "linear"),
    **dict.fromkeys(
        (
            "_scaled_dot_product_flash_attention_for_cpu",
            "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_efficient_attention",
            "_scaled_dot_product_cudnn_attention",
            "_scaled_dot_product_fused_attention_overrideable",
            "_scaled_dot_product_attention_math_for_mps",
        ),
        "linear",
    ),
    "convolution": "conv",
}
ELEMENTWISE_OPS = {
    **dict.fromkeys(("relu", "leaky_relu", "threshold", "hardtanh", "clamp_min", "clamp"), "relu"),
    **dict.fromkeys(("tanh", "sigmoid"), "tanh"),
    **dict.fromkeys(("gelu", "silu", "mish", "elu", "softplus"), "gelu"),
    **dict.fromkeys(
        ("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional"),
        "batchnorm",
    ),
    **dict.fromkeys(("native_layer_norm", "_fused_rms_norm"), "layernorm"),
    **dict.fromkeys(("_softmax", "_log_softmax"), "softmax"),
    "max_pool2d_with_indices": "maxpool",
    **dict.fromkeys(("avg_pool2d", "_adaptive_avg_pool2d", "adaptive_avg_pool2d"), "avgpool"),
    **dict.fromkeys(("native_dropout", "bernoulli", "bernoulli_"), "dropout"),
    **dict.fromkeys(("add", "add_", "sub", "mul", "mul_", "div", "where", "masked_fill"), "add"),
    "embedding": "embedding",
}
POOLING = {"maxpool", "avgpool"}

# SDPA kernels that FlopCounterMode has no formula for in some PyTorch versions (2.13: the CPU
# flash kernel every CPU trace without dropout runs, the overrideable fused kernel, the MPS math
# kernel): without one their attention products count 0 FLOPs. A formula PyTorch registers wins.
SDPA_FORWARD = (
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_attention_math_for_mps",
)
SDPA_BACKWARD = (
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_fused_attention_overrideable_backward",
)


def sdpa_forward_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """QK^T and PV, 2 FLOPs per multiply-add, over the full s_q × s_k score matrix.

    A causal mask is not halved: FlopCounterMode's own SDPA formula ignores is_causal, and the
    layer-list engine (core/network/layers_seq.py) counts the full matrix the same way.
    """
    b, h, s_q, d_qk = query_shape  # query heads: grouped key/value heads are broadcast
    s_k, d_v = key_shape[-2], value_shape[-1]
    return 2 * b * h * s_q * s_k * (d_qk + d_v)


def sdpa_backward_flops(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """As FlopCounterMode's fused SDPA backward: the scores recomputed (1 product) and the
    gradients of both products (4): 2.5× the forward for equal head sizes."""
    b, h, s_q, d_qk = query_shape
    s_k, d_v = key_shape[-2], value_shape[-1]
    return 2 * b * h * s_q * s_k * (3 * d_qk + 2 * d_v)


def sdpa_flop_formulas(torch) -> dict:
    """FlopCounterMode ``custom_mapping`` entries for the SDPA kernels this PyTorch has no formula for."""
    from torch.utils.flop_counter import flop_registry

    mapping = {}
    for names, formula in ((SDPA_FORWARD, sdpa_forward_flops), (SDPA_BACKWARD, sdpa_backward_flops)):
        for name in names:
            packet = getattr(torch.ops.aten, name, None)
            if packet is not None and packet not in flop_registry:
                mapping[packet] = formula
    return mapping


def op_recorder(torch, custom_formulas: dict):
    """A dispatch mode that lists the forward pass's kernels as the timing model's kinds."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry, shape_wrapper

    formulas = {**flop_registry, **{k: shape_wrapper(v) for k, v in custom_formulas.items()}}

    class OpRecorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[dict] = []
            self.calls = 0
            self.model_input = None  # a product reading it computes no input gradient

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            packet = func._overloadpacket
            name = packet.__name__
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            result = out[0] if isinstance(out, (tuple, list)) else out
            view = getattr(func, "is_view", False) or not isinstance(result, torch.Tensor) or result._base is not None
            if view or not tensors:
                return out  # views and metadata: no kernel
            self.calls += 1
            if name in MATMUL_OPS and packet in formulas:
                flops = int(formulas[packet](*args, **kwargs, out_val=out))
                conv = name == "convolution"
                first = any(t is self.model_input or t._base is self.model_input for t in tensors)
                self.ops.append(
                    {
                        "kind": MATMUL_OPS[name],
                        "flops": flops,
                        "weights": int(tensors[1].numel()) if conv else 0,
                        "first": first,
                        "pointwise": conv and tuple(tensors[1].shape[-2:]) == (1, 1),
                    }
                )
            elif name in ELEMENTWISE_OPS:
                kind = ELEMENTWISE_OPS[name]
                elems = tensors[0].numel() if kind in POOLING else result.numel()
                self.ops.append({"kind": kind, "elements": int(elems)})
            return out

    return OpRecorder()


def main() -> int:
    spec = json.loads(sys.argv[1])
    path, factory_name = spec["file"], spec["factory"]
    try:
        namespace = runpy.run_path(path)
    except SyntaxError as exc:
        return fail(f"{path}, line {exc.lineno}: syntax error: {exc.msg}")
    except FileNotFoundError:
        return fail(f"{path} does not exist")
    except Exception as exc:
        return fail(f"{path} failed while loading: {user_frame(exc, path)}")
    factory = namespace.get(factory_name)
    if not callable(factory):
        return fail(f"{path} defines no function {factory_name!r}")

    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.utils.flop_counter import FlopCounterMode

    optimizers = {
        "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
        "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        "adam": torch.optim.Adam,
        "adamw": torch.optim.AdamW,
        "adagrad": torch.optim.Adagrad,
        "rmsprop": torch.optim.RMSprop,
    }
    batch, shape = int(spec["batch"]), [int(d) for d in spec["input_shape"]]
    # a PyTorch built with CUDA fakes CUDA tensors (no GPU needed); a CPU-only build traces on the
    # CPU, as does a retry after a CUDA trace that crashed
    device = spec.get("device") or ("cuda" if torch.backends.cuda.is_built() else "cpu")
    with FakeTensorMode():
        try:
            model = factory()
        except Exception as exc:
            return fail(f"{factory_name}() raised {user_frame(exc, path)}")
        if not isinstance(model, torch.nn.Module):
            return fail(f"{factory_name}() returned {type(model).__name__}, not a torch.nn.Module")
        try:
            model = model.to(device)
        except RuntimeError:
            device = "cpu"
        params = sum(p.numel() for p in model.parameters())
        param_sizes = [p.numel() for p in model.parameters() if p.requires_grad]
        opt = optimizers[spec.get("optimizer", "adam")](model.parameters())
        tracker = MemTracker()
        tracker.track_external(model, opt)
        flops = 0
        sdpa_formulas = sdpa_flop_formulas(torch)
        try:
            with tracker:
                for step in range(2):
                    if spec.get("input_dtype") == "int64":
                        x = torch.zeros([batch, *shape], dtype=torch.long, device=device)
                    else:
                        x = torch.randn([batch, *shape], device=device)
                    recorder = op_recorder(torch, sdpa_formulas)
                    recorder.model_input = x
                    with FlopCounterMode(display=False, custom_mapping=sdpa_formulas) as counter, recorder:
                        out = model(x)
                    flops = counter.get_total_flops()
                    logits = out.reshape(-1, out.shape[-1])
                    target = torch.zeros(logits.shape[0], dtype=torch.long, device=device)
                    loss = torch.nn.functional.cross_entropy(logits, target)
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                    if step == 0:
                        tracker.reset_mod_stats()
        except Exception as exc:
            return fail(f"a training step of {factory_name}() failed: {user_frame(exc, path)}")
        peak = next(iter(tracker.get_tracker_snapshot("peak").values()))
        categories = {str(k).rsplit(".", 1)[-1].lower(): int(v) for k, v in peak.items()}
        total = categories.pop("total")
        output_shape = list(out.shape[1:])
        # FLOPs of each child of the model (FlopCounterMode names modules Root.child.grandchild)
        children = {name: type(child).__name__ for name, child in model.named_children()}
        layers = [
            {
                "name": name.split(".", 1)[1],
                "type": children.get(name.split(".", 1)[1], ""),
                "flops_per_sample": f / batch,
            }
            for name, counts in counter.get_flop_counts().items()
            if name.count(".") == 1 and (f := sum(counts.values()))
        ]
    print(
        json.dumps(
            {
                "parameters": int(params),
                "forward_flops_per_sample": flops / batch,
                "peak_bytes": total,
                "peak_by_category": categories,
                "device": device,
                "layers": layers,
                # per sample: matrix FLOPs of each product, elements of each elementwise kernel
                "ops": [
                    {k: (v / batch if k in ("flops", "elements") else v) for k, v in op.items()} for op in recorder.ops
                ],
                "op_calls": recorder.calls,
                "param_sizes": param_sizes,  # elements of each trainable tensor
                "batch": batch,
                "output_shape": output_shape,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
