"""Models given as PyTorch code (``{"torch": "file.py:factory"}``): traced in a child process of
the Python with PyTorch, under FakeTensorMode (no real memory, no GPU), with a time limit.

The trace's parameters, forward FLOPs and training-step peak memory become a summary model the
sizing engine uses like a published one; the workload records that it was traced. TrainRig runs
the user's code only in that child process, never in the app.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core.errors import WorkloadError
from core.paths import resource_path
from core.validate import get_choice, get_shape, reject_unknown
from core.vocabulary import INPUT_DTYPES, OPTIMIZER_STATES, PRECISION_BYTES

WORKER = "workers/trace.py"


def trace_torch_model(
    model: Mapping[str, Any],
    training: Mapping[str, Any],
    base_dir: Path,
    python: str | None = None,
    timeout_s: float = 120,
) -> dict[str, Any]:
    """Trace ``model`` (the workload's ``model`` object) and return a summary model for the engine."""
    reject_unknown(model, {"torch", "input_shape", "input_dtype"}, "model")
    ref = model["torch"]
    if not isinstance(ref, str) or ":" not in ref:
        raise WorkloadError("model.torch", f"must be 'path/to/file.py:factory', got {ref!r}")
    file_part, factory = ref.rsplit(":", 1)
    path = (base_dir / file_part).resolve()
    shape = get_shape(model, "input_shape", "model")
    dtype = get_choice(model, "input_dtype", "model", INPUT_DTYPES, default="float32")
    batch = int(training.get("batch_size", 32))
    optimizer = str(training.get("optimizer", "adam"))
    spec = {
        "file": str(path),
        "factory": factory,
        "input_shape": list(shape),
        "input_dtype": dtype,
        "batch": batch,
        "optimizer": optimizer if optimizer in OPTIMIZER_STATES else "adam",
    }
    result, why = _run_trace(python, spec, ref, timeout_s)
    if result is None:  # the worker died without an answer (a CUDA build without a usable GPU can)
        result, why = _run_trace(python, {**spec, "device": "cpu"}, ref, timeout_s)
    if result is None:
        raise WorkloadError("model.torch", f"tracing {ref} failed: {why}")
    if "error" in result:
        raise WorkloadError("model.torch", result["error"])
    return summary_from_trace(result, shape, dtype, ref, training)


def _run_trace(
    python: str | None, spec: Mapping[str, Any], ref: str, timeout_s: float
) -> tuple[dict[str, Any] | None, str]:
    """The worker's answer (None when it died without one) and the last line it wrote to stderr."""
    try:
        proc = subprocess.run(
            [python or sys.executable, str(resource_path(WORKER)), json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise WorkloadError(
            "model.torch",
            f"tracing {ref} did not finish within {timeout_s:g} s (does the factory or the forward pass loop?)",
        ) from None
    except FileNotFoundError:
        raise WorkloadError("model.torch", "tracing needs a Python with PyTorch") from None
    why = (proc.stderr.strip().splitlines() or [f"no output (exit status {proc.returncode})"])[-1]
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), why
    except (ValueError, IndexError):
        return None, why


def summary_from_trace(
    trace: Mapping[str, Any], shape: tuple[int, ...], dtype: str, ref: str, training: Mapping[str, Any]
) -> dict[str, Any]:
    """Activation bytes per sample chosen so the engine's summary memory equals the traced peak at
    the traced batch (weights, gradients and optimizer state are the engine's own figures)."""
    p, b = int(trace["parameters"]), int(trace["batch"])
    precision = str(training.get("precision", "fp32"))
    pb, gb, ab, ob = PRECISION_BYTES.get(precision, PRECISION_BYTES["fp32"])
    states = OPTIMIZER_STATES.get(str(training.get("optimizer", "adam")), 2)
    fixed = p * (pb + gb + states * ob)
    data = b * (int(__import__("math").prod(shape)) * INPUT_DTYPES[dtype] + 8)
    per_sample = max(0, (int(trace["peak_bytes"]) - fixed - data) // b) * 4 // ab
    outputs = int(trace["output_shape"][-1]) if trace.get("output_shape") else 1
    return {
        "input_shape": list(shape),
        "input_dtype": dtype,
        "summary": {
            "parameters": p,
            "activation_bytes_per_sample": per_sample,
            "forward_flops_per_sample": float(trace["forward_flops_per_sample"]),
            "outputs": outputs,
        },
        "source": f"traced from {ref} under FakeTensorMode: {p:,} parameters, peak {trace['peak_bytes']:,} bytes "
        f"at batch {b}",
        "trace": {
            "file": ref,
            "device": str(trace.get("device", "cpu")),
            "batch": b,
            "optimizer": str(training.get("optimizer", "adam")),
            "peak_bytes": int(trace["peak_bytes"]),
            "peak_by_category": {str(k): int(v) for k, v in (trace.get("peak_by_category") or {}).items()},
            "layers": [
                {
                    "name": str(x["name"]),
                    "type": str(x.get("type", "")),
                    "flops_per_sample": float(x["flops_per_sample"]),
                }
                for x in trace.get("layers") or []
            ],
            "ops": list(trace.get("ops") or []),
            "op_calls": int(trace.get("op_calls", 0)),
            "param_sizes": [int(n) for n in trace.get("param_sizes") or []],
        },
    }


def resolve_torch_models(
    doc: Any,
    base_dir: Path,
    python: str | None = None,
    *,
    trust_code: bool = False,
    ask: Callable[[str], bool] | None = None,
) -> Any:
    """The workload document with a ``{"torch": ...}`` model replaced by its traced summary
    (anything else, even a document that is not an object, is returned as it is for the parser).

    Tracing runs the file's code, so it runs only when the user asked for it: ``trust_code`` (the
    command line's ``--trust-code``), or ``ask(question)`` answering yes for a file inside the
    workload's folder. A file outside that folder needs ``trust_code``. The rest of the workload is
    validated before any code runs."""
    if not isinstance(doc, Mapping):
        return doc
    model = doc.get("model")
    if isinstance(model, Mapping) and "torch" in model:
        training = doc.get("training", {})
        _validate_around_the_model(doc, model)
        _check_trust(model, base_dir, trust_code, ask)
        doc = {
            **doc,
            "model": trace_torch_model(model, training if isinstance(training, Mapping) else {}, base_dir, python),
        }
    return doc


def _validate_around_the_model(doc: Mapping[str, Any], model: Mapping[str, Any]) -> None:
    """Parse the workload with a stand-in for the traced model, so a bad batch, precision or data
    field is refused by its key path before the user's code runs."""
    from core.spec.workload import parse_workload

    reject_unknown(model, {"torch", "input_shape", "input_dtype"}, "model")
    stand_in = {
        "input_shape": get_shape(model, "input_shape", "model"),
        "input_dtype": get_choice(model, "input_dtype", "model", INPUT_DTYPES, default="float32"),
        # as many outputs as data.outputs may name: the traced model's own are checked against it after tracing
        "summary": {"parameters": 1, "activation_bytes_per_sample": 0, "forward_flops_per_sample": 1, "outputs": 10**9},
    }
    parse_workload({**doc, "model": stand_in})


def _check_trust(model: Mapping[str, Any], base_dir: Path, trust_code: bool, ask: Callable[[str], bool] | None) -> None:
    ref = model.get("torch")
    if not isinstance(ref, str) or ":" not in ref:
        raise WorkloadError("model.torch", f"must be 'path/to/file.py:factory', got {ref!r}")
    path = (base_dir / ref.rsplit(":", 1)[0]).resolve()
    if not path.is_file():  # before asking to run it: the question was asked of a file that is not there
        raise WorkloadError("model.torch", f"{path} does not exist" if not path.exists() else f"{path} is not a file")
    if trust_code:
        return
    if not path.is_relative_to(base_dir.resolve()):
        raise WorkloadError(
            "model.torch",
            f"{path} is outside the workload's folder; TrainRig runs such code only with --trust-code",
        )
    question = f"Tracing the model runs the Python code in {path}. Run it?"
    if ask is None or not ask(question):
        raise WorkloadError(
            "model.torch",
            f"tracing runs the Python code in {path}; TrainRig runs it only when asked: add --trust-code",
        )
