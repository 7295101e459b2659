"""Published PyTorch matmul measurements per GPU (resources/published/matmul_ceilings.json): the
share of its datasheet peak each card's large matrix products reach, against the reference card the
GPU kernel model's efficiencies were set on (the H100 SXM). core/estimate/gpu_kernels.py scales its
efficiencies by these factors (docs/accuracy.md, "Published matmul rates per GPU").

* A precision's figure of a card is used where at least ``MIN_SUBMISSIONS`` contributors measured
  it: one submission may come from a card held at a lower power limit or a busy shared host.
* A GeForce card of compute capability 8.0 or later without figures of its own takes its class's:
  the median share of the catalogue's GeForce cards that have them.
"""

from __future__ import annotations

import json
import statistics
from functools import lru_cache
from typing import Any

from core.hardware.catalogue import DeviceSpec, load_catalogue
from core.paths import resource_path

MIN_SUBMISSIONS = 2
# how the sizing's efficiency line begins where published matmul figures set a GPU's rates
PUBLISHED_NOTE = "its matrix products at the share of the datasheet peak published PyTorch matmul measurements show"
SHARE_LABELS = (("bf16", "BF16"), ("fp16", "FP16"), ("tf32", "TF32"), ("fp32", "FP32"))
# name, FP32, TF32, FP16/BF16 peaks, compute capability, a GeForce card of compute capability 8.0+
Peaks = tuple[str, float, float | None, float | None, str, bool]


@lru_cache(maxsize=1)
def _ceilings() -> dict[str, Any]:
    return dict(json.loads(resource_path("published/matmul_ceilings.json").read_text(encoding="utf-8")))


def _capability(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _peaks(d: DeviceSpec) -> Peaks:
    capability = str(d.extra.get("compute_capability") or "0")
    return (d.name, d.fp32_flops, d.tf32_flops, d.half_flops, capability, d.geforce and _capability(capability) >= 8.0)


def _shares(p: Peaks) -> dict[str, float]:
    """The median published square-matmul rate of the GPU per precision over its datasheet peak,
    where at least MIN_SUBMISSIONS contributors measured that precision: "fp32" (CUDA cores),
    "fp16", "bf16" (where it runs natively: compute capability 8.0 and later), "tf32"."""
    name, fp32, tf32, half, capability, _ = p
    entries = _ceilings()["devices"].get(name) or []

    def share(key: str, peak: float | None) -> dict[str, float]:
        values = [float(e[key]) for e in entries if e.get(key)]
        return {key: statistics.median(values) * 1e12 / peak} if len(values) >= MIN_SUBMISSIONS and peak else {}

    tensor = half if half and half > fp32 else None
    return {
        **share("fp32", fp32),
        **share("fp16", tensor),
        **(share("bf16", tensor) if _capability(capability) >= 8.0 else {}),
        **share("tf32", tf32),
    }


def reference_name() -> str:
    return str(_ceilings()["reference"])


@lru_cache(maxsize=1)
def _reference_shares() -> dict[str, float]:
    ref = next((d for d in load_catalogue() if d.name == reference_name()), None)
    return _shares(_peaks(ref)) if ref is not None else {}


@lru_cache(maxsize=1)
def _geforce_class() -> tuple[dict[str, float], tuple[str, ...]]:
    """The median share of their datasheet peaks, per precision, of the catalogue's GeForce cards
    (compute capability 8.0 and later) with published figures, and their names."""
    per_key: dict[str, list[float]] = {}
    names = []
    for d in load_catalogue():
        peaks = _peaks(d)
        shares = _shares(peaks) if peaks[5] else {}
        if shares:
            names.append(d.name.replace("NVIDIA ", ""))
        for k, v in shares.items():
            per_key.setdefault(k, []).append(v)
    return {k: statistics.median(v) for k, v in per_key.items()}, tuple(names)


@lru_cache(maxsize=128)
def _factors(p: Peaks) -> tuple[dict[str, float], str]:
    ref = _reference_shares()
    if not ref or p[0] == reference_name():
        return {}, ""
    shares = _shares(p)
    borrowed = []
    if p[5]:  # a GeForce card: its class's shares where its own are not published
        for k, v in _geforce_class()[0].items():
            if k not in shares and (k != "tf32" or p[2]) and (k not in ("fp16", "bf16") or p[3]):
                shares[k] = v
                borrowed.append(k)
    used = [(k, label) for k, label in SHARE_LABELS if k in shares and k in ref]
    if not used:
        return {}, ""
    mine = ", ".join(f"{label} {shares[k]:.0%}" for k, label in used if k not in borrowed)
    parts = [f"this GPU's: {mine}"] if mine else []
    if borrowed and any(k in borrowed for k, _ in used):
        cls = ", ".join(f"{label} {shares[k]:.0%}" for k, label in used if k in borrowed)
        parts.append(f"as GeForce cards reach ({', '.join(_geforce_class()[1])}): {cls}")
    theirs = ", ".join(f"{label} {ref[k]:.0%}" for k, label in used)
    note = (
        PUBLISHED_NOTE + f" ({'; '.join(parts)}; the {reference_name()}'s, on which the kernel model was set: "
        f"{theirs}; torch-performance-test-data, two or more contributors per figure)"
    )
    return {k: shares[k] / ref[k] for k, _ in used}, note


def matmul_factors(device: DeviceSpec) -> dict[str, float]:
    """How many times the reference card's share of its peak ``device``'s large matrix products reach,
    per precision ("fp32", "fp16", "bf16", "tf32"), where published; empty for the reference card
    and a card without figures."""
    return dict(_factors(_peaks(device))[0])


def published_note(device: DeviceSpec) -> str:
    """Which published figures set ``device``'s matrix rates, in words; "" where none do."""
    return _factors(_peaks(device))[1]


def clear_caches() -> None:
    """Forget the computed factors (a test that changes MIN_SUBMISSIONS)."""
    for f in (_factors, _geforce_class, _reference_shares):
        f.cache_clear()
