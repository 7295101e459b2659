"""The host of this machine's GPU, measured: the speed of its CPU's core at a GPU's host work.

Hosts differ more than their CPUs' ratings say: the same seed-MLP step (batch 512, Adam, fp32), all
host work, took 1.69 ms on the shared fit set's H100 host, 2.36 ms on another H100 host (2026-11-22),
1.62 ms on a lent H200's and 1.10 ms on a lent H100's (2026-11-26); the host-bound steps of each
lease moved with it (docs/accuracy.md, "CUDA: a lent NVIDIA H100, … and the host of a lent GPU"). The
rating of a CPU by its clock
and core generation (resources/host_cpus.json) cannot see this: virtual machines report "Intel(R)
Xeon(R) Processor" and no clock.

So `calibrate` times the host probe (resources/host_probe.json) on each CUDA GPU of this machine, and
this module solves for the host speed at which the engine's own step for the same workload on the
first of them equals the measured step. The speed then scales every host cost of this machine's GPU
(the reference's per operator, per step, per cuDNN call: core/estimate/host.py; and the host's launch
chain of a recurrent layer's time steps, gpu_rnn.rnn_op_s), in place of the speed from its CPU
bench's cost per call (a CPU tensor's call, which leaves out CUDA's launch path).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from core.hardware.catalogue import DeviceSpec
from core.paths import resource_path

# A measured speed outside these bounds is not this machine's host at rest (a suspended or swapping
# machine, a broken timer, a probe the GPU itself paced): refused with a message, never stored.
SPEED_LIMITS = (0.25, 4.0)
SPEED_KEY = "gpu_host_speed"  # where calibrate stores it, under the calibration's "host"


@lru_cache(maxsize=1)
def probe_spec() -> dict[str, Any]:
    """resources/host_probe.json: the probe's network, batch, optimizer, precision and step counts."""
    return dict(json.loads(resource_path("host_probe.json").read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def probe_workload() -> Any:
    """The probe as a workload, measured as the worker runs it: random tensors made on the GPU, one
    synchronisation every step."""
    from core.spec.workload import parse_workload

    spec = probe_spec()
    batch = int(spec["batch_size"])
    return parse_workload(
        {
            "model": spec["model"],
            "data": {"samples": batch * 10},
            "training": {
                "batch_size": batch,
                "epochs": 1,
                "optimizer": spec["optimizer"],
                "precision": spec["precision"],
                "loop": "device_tensors",
            },
        }
    )


def predicted_probe_s(device: DeviceSpec, speed: float) -> tuple[float, str]:
    """The engine's step for the probe on ``device`` with its host at ``speed`` × the reference, and
    what bounds it."""
    from core.estimate.sizing import size_candidate

    step = size_candidate(probe_workload(), device, 1, calibrated={"host": {SPEED_KEY: speed}}).step
    return step.step_s, step.bound


def probe_speed(measured_s: float, device: DeviceSpec) -> tuple[float | None, str]:
    """The host speed at which the engine's probe step on ``device`` takes ``measured_s``, and a
    sentence saying so; None and the reason where the measurement cannot be a host's speed."""
    if not (isinstance(measured_s, (int, float)) and math.isfinite(measured_s) and measured_s > 0):
        return None, f"the host probe's step time {measured_s!r} is not a time"
    reference_s, bound = predicted_probe_s(device, 1.0)
    if bound != "framework overhead":
        return None, f"the host probe is not host-bound on {device.name} ({bound}): its step says nothing of the host"
    speed = reference_s / measured_s
    for _ in range(6):  # the step is the host's plus the device's short waits: a few fixed-point turns
        if not SPEED_LIMITS[0] <= speed <= SPEED_LIMITS[1]:
            break
        step_s, _ = predicted_probe_s(device, speed)
        speed *= step_s / measured_s
    if not SPEED_LIMITS[0] <= speed <= SPEED_LIMITS[1]:
        return None, (
            f"the host probe's step ({measured_s * 1e3:.2f} ms on {device.name}) gives a host {speed:.2f}× the "
            f"reference's, outside {SPEED_LIMITS[0]}–{SPEED_LIMITS[1]}×: refused, not used "
            "(a busy or suspended machine?)"
        )
    return speed, (
        f"this machine's GPU host, measured by calibrate: the host probe's step took {measured_s * 1e3:.2f} ms on its "
        f"{device.name} against {reference_s * 1e3:.2f} ms on the reference host ({speed:.2f}× the reference's speed)"
    )


def gpu_host_speed(measured: Mapping[str, Any] | None) -> float | None:
    """The measured GPU host speed a calibration's host figures hold, where it is a plausible one."""
    try:
        speed = float((measured or {})[SPEED_KEY])
    except (KeyError, TypeError, ValueError):
        return None
    return speed if math.isfinite(speed) and SPEED_LIMITS[0] <= speed <= SPEED_LIMITS[1] else None
