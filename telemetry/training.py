"""The app's side of the trainer (resources/workers/train.py): what to send it for a workload,
what the sizing predicted for it, and a Run that starts it in the PyTorch environment.

The worker never imports the app: it receives the resolved layer list (a preset already
expanded by the core's workload parser) as JSON on stdin.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.advice.recommendation import Recommendation
from core.errors import TrainRigError
from core.estimate.sizing import CandidateResult
from core.hardware.candidates import THIS_MACHINE
from core.paths import resource_path
from core.spec.workload import MAX_EPOCHS, MAX_SAMPLES, Workload, parse_workload
from core.storage.store import Store
from telemetry.candidates import recommend_here
from telemetry.runs import Run
from telemetry.sampler import DEFAULT_RATE_HZ

WORKER = "workers/train.py"
SUPPORTED_LAYERS = frozenset(
    "linear conv2d batchnorm1d batchnorm2d layernorm softmax relu leaky_relu tanh sigmoid gelu silu elu "
    "dropout dropout2d maxpool2d avgpool2d adaptive_avgpool2d flatten identity".split()
)


def trainer_spec(
    workload: Workload,
    *,
    epochs: int | None = None,
    samples: int | None = None,
    device: str = "cpu",
    csv: str | None = None,
    seed: int = 0,
    base_dir: Path | None = None,
) -> dict[str, Any]:
    """The trainer's input for ``workload``: its layer list, classes (the outputs), batch,
    optimizer, precision; ``samples`` training samples (default: the workload's) of a synthetic
    set, or the CSV. A model given as PyTorch code (traced: ``model.trace.file``) is built by the
    trainer from that file, found beside the workload in ``base_dir``; only pass ``base_dir`` when
    the user agreed to run that code. TrainRigError when the trainer cannot train this model."""
    model = workload.model
    trace = model.get("trace") if isinstance(model.get("trace"), dict) else None
    if "layers" not in model and trace and base_dir is None:
        raise TrainRigError(
            f"{workload.name}: this model is PyTorch code ({trace.get('file')}); TrainRig trains it only when you "
            "agreed to run that code: import it on the wizard's model page (Import PyTorch model…), or use "
            "`run --trust-code`"
        )
    if "layers" not in model and not trace:
        raise TrainRigError(
            f"{workload.name}: the trainer trains layer lists, presets and PyTorch code; this model is a "
            "published summary without layers"
        )
    unknown = sorted({str(layer.get("type", "")).lower() for layer in model.get("layers", [])} - SUPPORTED_LAYERS)
    if unknown:
        raise TrainRigError(
            f"{workload.name}: the trainer does not support the layer type(s) {', '.join(unknown)} "
            f"(it knows {', '.join(sorted(SUPPORTED_LAYERS))})"
        )
    if list(workload.analysis.output_shape) != [workload.data.outputs]:
        raise TrainRigError(
            f"{workload.name}: the trainer trains classifiers; the model's output "
            f"{list(workload.analysis.output_shape)} is not one score per class"
        )
    n = samples if samples is not None else workload.data.samples
    if not 2 <= n <= MAX_SAMPLES:
        raise TrainRigError(f"a run needs 2 to {MAX_SAMPLES:,} training samples, not {n:,}")
    e = epochs if epochs is not None else workload.training.epochs
    if not 1 <= e <= MAX_EPOCHS:
        raise TrainRigError(f"a run needs 1 to {MAX_EPOCHS:,} epochs, not {e:,}")
    return {
        "model": _model_for_trainer(model, trace, base_dir),
        "classes": workload.data.outputs,
        "samples": n,
        "batch_size": workload.training.batch_size,
        "epochs": e,
        "optimizer": workload.training.optimizer,
        "learning_rate": workload.training.learning_rate,
        "precision": workload.training.precision,
        "cudnn_tf32": workload.training.cudnn_tf32,  # in fp32 on a GPU: cuDNN's TF32 as sized
        "cudnn_benchmark": workload.training.cudnn_benchmark,  # cuDNN's algorithm search, as sized
        "memory_format": workload.training.memory_format,  # channels_last: images and weights NHWC, as sized
        "device": device,
        "seed": seed,
        "csv": csv,
        "holdout": 0.2,
    }


def prediction_for(candidate: CandidateResult) -> dict[str, Any]:
    """What the sizing of ``candidate`` predicts that a run measures: the step time and the
    tensor peak of a training step (what torch.cuda.max_memory_allocated reports)."""
    return {
        "device": candidate.device.name,
        "step_s": candidate.step.step_s,
        "peak_memory_bytes": candidate.memory.tensor_peak,
        "memory_total_bytes": candidate.memory.total,
        "steps_per_epoch": candidate.steps_per_epoch,
        "batch_size": candidate.memory.batch_per_device,
        "run_scale": candidate.step.run_scale,  # the correction from earlier runs this prediction includes
    }


def this_machine_prediction(rec: Recommendation | None) -> dict[str, Any] | None:
    """The prediction of the sizing's "this machine" candidate, if it has one."""
    if rec is None:
        return None
    here = [c for c in rec.result.candidates if c.device.is_this_machine]
    return {**prediction_for(here[0]), "model_key": rec.result.workload.model_key} if here else None


def size_here(document: Any, store: Store | None) -> tuple[Workload, dict[str, Any] | None]:
    """Parse ``document`` and size it on this machine (with its calibration, as `size` does):
    the workload and the prediction a run will be compared with."""
    workload = parse_workload(document)
    rec, *_ = recommend_here(workload, [THIS_MACHINE], store)
    return workload, this_machine_prediction(rec)


def training_run(
    python: str,
    spec: dict[str, Any],
    *,
    store: Store | None,
    name: str,
    workload_document: Any = None,
    prediction: dict[str, Any] | None = None,
    rate_hz: float = DEFAULT_RATE_HZ,
    worker: Sequence[str] | None = None,
    launch: Launch | None = None,
    **kwargs: Any,
) -> Run:
    """A Run of the trainer in ``python`` (not started); with ``launch``, several processes under
    torchrun with DistributedDataParallel (the global batch split over them)."""
    argv = list(worker) if worker is not None else [python, str(resource_path(WORKER))]
    stdin: str | None = json.dumps(spec)
    if launch is not None and launch.processes > 1:
        argv = [python, "-m", "torch.distributed.run", *launch.arguments(), *argv[1:]]
        kwargs["env"] = {**os.environ, **(kwargs.get("env") or {}), "TRAINRIG_SPEC": stdin}
        stdin = None
    return Run(
        argv,
        store=store,
        kind="trained",
        name=name,
        workload={"document": workload_document, "trainer": spec, **({"launch": launch.__dict__} if launch else {})},
        device=spec["device"],
        prediction=prediction,
        stdin_text=stdin,
        rate_hz=rate_hz,
        **kwargs,
    )


@dataclass(frozen=True)
class Launch:
    """How torchrun starts the trainer: processes on this machine, machines, and where they meet."""

    nproc_per_node: int = 1
    nnodes: int = 1
    rdzv_endpoint: str | None = None  # host:port of the first machine, for several machines

    @property
    def processes(self) -> int:
        return self.nproc_per_node * self.nnodes

    def arguments(self) -> list[str]:
        if self.nnodes == 1:
            if self.rdzv_endpoint:  # it was passed over without a word
                raise TrainRigError("--rdzv-endpoint is where several machines meet: give --nnodes 2 or more with it")
            return ["--standalone", f"--nproc-per-node={self.nproc_per_node}"]
        if not self.rdzv_endpoint:
            raise TrainRigError("several machines need --rdzv-endpoint HOST:PORT (the first machine's)")
        return [
            f"--nproc-per-node={self.nproc_per_node}",
            f"--nnodes={self.nnodes}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={self.rdzv_endpoint}",
        ]


def _model_for_trainer(model: Any, trace: Any, base_dir: Path | None) -> dict[str, Any]:
    if "layers" in model:
        return {"input_shape": list(model["input_shape"]), "layers": list(model["layers"])}
    file_part, factory = str(trace["file"]).rsplit(":", 1)
    path = ((base_dir or Path()) / file_part).resolve()
    return {"input_shape": list(model["input_shape"]), "torch": {"file": str(path), "factory": factory}}
