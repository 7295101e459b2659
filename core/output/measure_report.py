"""Measure-and-scale results as text and as a JSON-ready dict (the `measure` command, the wizard)."""

from __future__ import annotations

from typing import Any

from core.estimate.profile_read import KERNEL_CLASSES, StepProfile
from core.estimate.profile_scale import ScaledPrediction, ScaleResult
from core.hardware.catalogue import DeviceSpec
from core.units import fmt_seconds

CLASS_LABELS = {
    "gemm": "matrix products",
    "conv": "convolutions",
    "attention": "attention",
    "sm_bound": "per-SM-clock kernels",
    "norm": "norms",
    "softmax_loss": "softmax and loss",
    "reduction": "reductions",
    "elementwise": "elementwise",
    "optimizer": "optimizer",
    "copy": "device copies",
    "transfer": "host↔device copies",
    "other": "other kernels",
}


def _ms(seconds: float | None) -> str:
    return "unknown" if seconds is None else fmt_seconds(seconds)


def profile_summary(p: StepProfile) -> str:
    """One paragraph: where and how the step was measured, and its kernel time by class."""
    versions = ", ".join(
        x
        for x in (
            f"PyTorch {p.torch_version}" if p.torch_version else "",
            f"CUDA {p.cuda_version}" if p.cuda_version else "",
        )
        if x
    )
    head = (
        f"Measured on {p.device_name} ({p.device_type}), {p.precision}, {p.steps} profiled steps"
        + (f", {versions}" if versions else "")
        + f": step {_ms(p.wall_s)} (device busy {_ms(p.device_s)}, host issuing {_ms(p.host_s)})"
    )
    kinds = p.by_kind()
    calls: dict[str, float] = {}
    for k in p.kernels:
        calls[k.kind] = calls.get(k.kind, 0.0) + k.calls
    parts = [
        f"{CLASS_LABELS.get(kind, kind)} {_ms(t)} ({calls[kind]:,.0f} calls)"
        for kind, t in sorted(kinds.items(), key=lambda kv: -kv[1])
    ]
    return head + "\n  time by class of kernel: " + "; ".join(parts)


def _by_scaling(pred: ScaledPrediction) -> dict[str, float]:
    out = {"compute": 0.0, "memory": 0.0, "clock": 0.0, "latency": 0.0}
    for c in pred.by_class:
        out[KERNEL_CLASSES[c.kind]] += c.predicted_s
    return out


def scale_to_text(r: ScaleResult) -> str:
    lines = [profile_summary(r.profile), ""]
    wall = r.profile.wall_s or r.measured.step_s
    lines.append("Predicted step per candidate (each kernel scaled from the measured one):")
    lines.append(
        f"  {'candidate':34} {'step':>10} {'× measured':>10} {'device':>10} {'compute':>10} {'memory':>10} "
        f"{'SM clock':>10} {'other':>10}  bound"
    )
    for p in [r.measured, *r.predictions]:
        parts = _by_scaling(p)
        name = p.device + (" (measured here)" if p is r.measured else "")
        lines.append(
            f"  {name[:34]:34} {fmt_seconds(p.step_s):>10} {p.step_s / wall:>10.2f} {fmt_seconds(p.device_s):>10} "
            f"{fmt_seconds(parts['compute']):>10} {fmt_seconds(parts['memory']):>10} "
            f"{fmt_seconds(parts['clock']):>10} {fmt_seconds(parts['latency']):>10}"
            f"  {p.bound}"
        )
    for refusal in r.refused:
        lines.append(f"  {refusal.device[:34]:34} cannot be scaled to: {refusal.reason}")
    lines.extend(f"  {', '.join(devices)}: {note}" for note, devices in _notes_by_device(r).items())
    lines.append("")
    lines.append(
        "compute = GEMM, convolution and attention kernels × the ratio of the datasheet peaks (by waves over the "
        "SMs); memory = elementwise, norms, loss, optimizer and copies × the ratio of the bandwidths; SM clock = "
        "per-channel batch norm, layout transposes and max pooling × the ratio of SMs × clock (by waves); "
        "other × the clock ratio; every call keeps a 2.5 µs launch floor. "
        "Step = max(host, device) + the measured gap."
    )
    lines.extend(f"Note: {n}" for n in r.notes)
    return "\n".join(lines)


def scale_to_dict(r: ScaleResult) -> dict[str, Any]:
    p = r.profile

    def pred(x: ScaledPrediction) -> dict[str, Any]:
        return {
            "device": x.device,
            "step_s": x.step_s,
            "device_s": x.device_s,
            "host_s": x.host_s,
            "gap_s": x.gap_s,
            "bound": x.bound,
            "by_class": [
                {
                    "class": c.kind,
                    "calls": c.calls,
                    "measured_s": c.measured_s,
                    "predicted_s": c.predicted_s,
                    "rule": c.rule,
                }
                for c in x.by_class
            ],
            "notes": list(x.notes),
        }

    return {
        "measured": {
            "device": p.device_name,
            "catalogue_device": r.source.name,
            "precision": p.precision,
            "steps": p.steps,
            "step_s": p.wall_s,
            "device_s": p.device_s,
            "host_s": p.host_s,
            "torch": p.torch_version,
            "cuda": p.cuda_version,
            "source": p.source,
            "about": p.about,
            "kernels": [{"name": k.name, "class": k.kind, "calls": k.calls, "time_s": k.total_s} for k in p.kernels],
        },
        "this_gpu": pred(r.measured),
        "predictions": [pred(x) for x in r.predictions],
        "cannot_scale": [{"device": x.device, "reason": x.reason} for x in r.refused],
        "notes": list(r.notes),
    }


def _scaled_for(r: ScaleResult, device: DeviceSpec) -> ScaledPrediction | None:
    """The prediction for ``device``: by name, or for "this machine" its catalogue model."""
    names = {device.name, device.catalogue_match or ""}
    if r.source.name in names:
        return r.measured
    return next((p for p in r.predictions if p.device in names), None)


def measured_cell(
    r: ScaleResult | None, device: DeviceSpec, count: int, model_step_s: float
) -> tuple[str, str, float | None]:
    """What the candidate table shows for a device × count: text ("● 41.3 ms"), tooltip, step or None."""
    if r is None:
        return "", "Not measured: press 'Measure on this GPU' (needs an NVIDIA GPU on this machine)", None
    refused = next((x for x in r.refused if x.device in (device.name, device.catalogue_match)), None)
    if refused is not None:
        return "", f"Measure-and-scale cannot predict {device.name}: {refused.reason}", None
    pred = _scaled_for(r, device)
    if pred is None:
        return "", f"{device.name} was not among the devices the measurement was scaled to", None
    if count != 1:
        return "", f"The measurement ran on one GPU; × {count} devices uses the model", None
    parts = ", ".join(
        f"{CLASS_LABELS.get(c.kind, c.kind)} ×{c.predicted_s / c.measured_s:.2f}"
        for c in pred.by_class[:4]
        if c.measured_s
    )
    tip = (
        f"Measured on {r.profile.device_name}: {_ms(r.profile.wall_s)} per step; scaled kernel by kernel to "
        f"{device.name}: {fmt_seconds(pred.step_s)} ({pred.bound}-bound; {parts}). The model predicts "
        f"{fmt_seconds(model_step_s)} ({pred.step_s / model_step_s - 1:+.0%} from the measurement). The host time is "
        "this machine's." + "".join(f" Note: {n}." for n in pred.notes)
    )
    return f"● {fmt_seconds(pred.step_s)}", tip, pred.step_s


def _notes_by_device(r: ScaleResult) -> dict[str, list[str]]:
    """Each note of the scaled predictions once, with the candidates it concerns."""
    out: dict[str, list[str]] = {}
    for x in r.predictions:
        for note in x.notes:
            out.setdefault(note, []).append(x.device)
    return out


def report_notes(r: ScaleResult) -> tuple[str, ...]:
    """Lines for the purchasing report: which candidates used the measured-and-scaled step."""
    p = r.profile
    head = (
        f"Measured on this GPU: {p.device_name}, {p.precision}, {_ms(p.wall_s)} per step "
        f"({p.steps} profiled steps{', PyTorch ' + p.torch_version if p.torch_version else ''}). "
        "Each kernel was scaled to the candidates below (compute-bound by the ratio of the datasheet peaks, "
        "memory-bound by the ratio of the bandwidths, per-SM-clock kernels by the SMs × clock); the host time is "
        "this machine's."
    )
    lines = [head]
    lines += [
        f"Measured and scaled: {x.device}: {fmt_seconds(x.step_s)} per step ({x.bound}-bound)." for x in r.predictions
    ]
    lines += [f"Note on {', '.join(devices)}: {note}." for note, devices in _notes_by_device(r).items()]
    lines += [f"Not scaled (the model's figure is used): {x.device}: {x.reason}." for x in r.refused]
    return tuple(lines)
