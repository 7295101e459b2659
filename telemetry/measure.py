"""Measure a workload's training step on this machine's GPU (resources/workers/measure.py, in the
Python with PyTorch, in a child process with a time limit and a cancel), then scale it to the
candidates with core/estimate/profile_scale.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import TrainRigError
from core.estimate.profile_read import StepProfile, parse_trainrig_profile
from core.estimate.profile_scale import ScaleResult, scale_profile
from core.hardware.catalogue import DeviceSpec, match_detected_gpu
from core.paths import resource_path
from core.spec.workload import Workload

WORKER = "workers/measure.py"
WARMUP_STEPS = 3
PROFILED_STEPS = 5


class MeasureCancelled(TrainRigError):
    """The user cancelled the measurement; nothing was measured."""


def measure_spec(workload: Workload, device: str = "cuda", base_dir: Path | None = None) -> dict[str, Any]:
    """The worker's request for ``workload``: its layer list (or its PyTorch code, when the user
    agreed to run it: ``base_dir`` given), batch per device, optimizer and precision."""
    model = workload.model
    trace = model.get("trace") if isinstance(model.get("trace"), Mapping) else None
    if "layers" in model:
        doc: dict[str, Any] = {"input_shape": list(model["input_shape"]), "layers": list(model["layers"])}
    elif trace and base_dir is not None:
        file_part, factory = str(trace["file"]).rsplit(":", 1)
        doc = {
            "input_shape": list(model["input_shape"]),
            "torch": {"file": str((base_dir / file_part).resolve()), "factory": factory},
        }
    elif trace:
        raise TrainRigError(
            f"{workload.name}: this model is PyTorch code ({trace.get('file')}); TrainRig runs it only when you agreed "
            "to (`measure --trust-code`, or import it on the wizard's model page)"
        )
    else:
        raise TrainRigError(
            f"{workload.name}: a published summary without layers cannot be run; measure-and-scale needs a layer "
            "list, a preset or PyTorch code"
        )
    if model.get("input_dtype"):
        doc["input_dtype"] = model["input_dtype"]
    return {
        "model": doc,
        "batch_size": workload.training.batch_size,
        "optimizer": workload.training.optimizer,
        "precision": workload.training.precision,
        "cudnn_tf32": workload.training.cudnn_tf32,  # in fp32: cuDNN's convolutions and RNNs on TF32 or not
        "cudnn_benchmark": workload.training.cudnn_benchmark,  # cuDNN's algorithm search, as sized
        "memory_format": workload.training.memory_format,  # channels_last: images and weights NHWC
        "attention": workload.training.large.attention,  # eager/math: torchbridge builds that attention
        "device": device,
        "warmup": WARMUP_STEPS,
        "steps": PROFILED_STEPS,
    }


@dataclass
class MeasureJob:
    """One run of the worker; ``cancel()`` from another thread stops it (SIGINT, then kill)."""

    python: str
    spec: Mapping[str, Any]
    timeout_s: float = 600.0
    on_progress: Callable[[int, int], None] | None = None
    _proc: subprocess.Popen[str] | None = None
    _cancelled: bool = False

    def cancel(self) -> None:
        self._cancelled = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGINT)  # PyTorch stops between kernels; kill if it has not in 3 s
            except OSError:
                pass
            threading.Timer(3.0, lambda: proc.poll() is None and proc.kill()).start()

    def run(self) -> dict[str, Any]:
        """The worker's profile; TrainRigError with its reason when it fails, MeasureCancelled."""
        try:
            self._proc = subprocess.Popen(
                [self.python, str(resource_path(WORKER))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=os.name != "nt",
            )
        except OSError:
            raise TrainRigError(f"measuring needs a Python with PyTorch; {self.python} cannot be started") from None
        proc = self._proc
        assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(self.spec))
        proc.stdin.close()
        tail: list[str] = []
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else ""), daemon=True)
        reader.start()
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(self.timeout_s, stop)
        timer.start()
        try:
            for line in proc.stderr:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "progress" and self.on_progress:
                    self.on_progress(int(parts[1]), int(parts[2]))
                elif line.strip():
                    tail = [*tail[-4:], line.strip()]
            proc.wait()
            reader.join(5)
        except BaseException:  # interrupted (Ctrl-C, SIGTERM): the worker, in its own session, stops too
            proc.kill()
            raise
        finally:
            timer.cancel()
        if self._cancelled:
            raise MeasureCancelled("the measurement was cancelled")
        if timed_out.is_set():
            raise TrainRigError(f"measuring did not finish within {self.timeout_s:g} s")
        text = "".join(out).strip()
        try:
            result: dict[str, Any] = json.loads(text.splitlines()[-1])
        except (ValueError, IndexError):
            last = tail[-1] if tail else f"no output (exit status {proc.returncode})"
            if "No module named 'torch'" in "\n".join(tail):
                last = f"PyTorch is not installed in {self.python}"
            raise TrainRigError(f"measuring failed: {last}") from None
        if "error" in result:
            raise TrainRigError(str(result["error"]))
        return result


def measured_source(profile: StepProfile, catalogue: Sequence[DeviceSpec]) -> DeviceSpec:
    """The catalogue entry of the GPU the profile was measured on (its datasheet figures)."""
    match = match_detected_gpu(profile.device_name, None, catalogue)
    if match is None:
        raise TrainRigError(
            f"the measured GPU {profile.device_name!r} is not in the catalogue: its datasheet peaks and bandwidth are "
            "needed to scale from it (add it as your own device)"
        )
    return match


def measure_and_scale(
    python: str,
    workload: Workload,
    candidates: Sequence[DeviceSpec],
    catalogue: Sequence[DeviceSpec],
    *,
    device: str = "cuda",
    on_progress: Callable[[int, int], None] | None = None,
    job: MeasureJob | None = None,
    base_dir: Path | None = None,
) -> tuple[dict[str, Any], ScaleResult | None]:
    """Measure ``workload`` here and scale it to ``candidates``: the raw profile and the scaling
    (None for a CPU profile, which only exercises the pipeline)."""
    spec = measure_spec(workload, device, base_dir)
    job = job or MeasureJob(python, spec, on_progress=on_progress)
    job.spec = spec
    raw = job.run()
    profile = parse_trainrig_profile(raw, "the measurement")
    if profile.device_type != "cuda":
        return raw, None
    return raw, scale_profile(profile, measured_source(profile, catalogue), candidates)


def default_python() -> str:
    return os.environ.get("TRAINRIG_PYTHON") or sys.executable
