"""Three kinds of CNN kernel that run below the bandwidth the model once priced them at, against the kernels
of real profiles: MaxPool2d's forward and backward, cuDNN's NCHW ↔ NHWC transposes around half-precision
and TF32 convolutions, and cuDNN's NCHW batch norm in fp16/fp32 where it runs a block a channel. Priced by
core/estimate/gpu_memory.py (maxpool_s, cudnn_batchnorm_s) and gpu_kernels.py (nchw_transpose_s). No GPU
needed.

Fit and held out by lease: the pools' and the transposes' rates are fitted on the 23 suite steps a lent
H100 profiled (tests/fixtures/gpu/h100-profiles-2026-11-26d.jsonl) and held out on the 15 a lent H200
profiled (h200-profiles-2026-11-26e.jsonl) and on ResNet-50 fp16 b256's H100 and H200 profiles in NCHW
and channels_last (tests/fixtures/profiles/); the batch norm's two rates, which only the H200's profiles
show at few channels, are fitted on those with at most one block an SM and held out on the rest and
on ResNet-50's NCHW profiles.

    python3 benchmarks/cnn_kernels.py          # each price against each profile
    python3 benchmarks/cnn_kernels.py --fit    # refit the constants on the fit profiles
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fitting import fit_constant, print_kernel_tables  # noqa: E402
from benchmarks.profile_cases import RECORDED, as_profile, recorded  # noqa: E402
from core.estimate import gpu_kernels as gk  # noqa: E402
from core.estimate import gpu_memory as gm  # noqa: E402
from core.estimate.op_work import forward_work  # noqa: E402
from core.hardware.catalogue import find_device, load_catalogue  # noqa: E402
from core.spec.workload import parse_workload  # noqa: E402

H200_PROFILES = ROOT / "tests/fixtures/gpu/h200-profiles-2026-11-26e.jsonl"
RESNET50 = ROOT / "tests/fixtures/profiles"
DEVICES = {"NVIDIA H200": "H200 SXM", "NVIDIA H100 80GB HBM3": "H100 SXM"}

# part: (its kernels, the lease it is fitted on)
KERNELS = {
    "maxpool forward": (r"max_pool_forward", "H100"),
    "maxpool backward NCHW": (r"max_pool_backward_nchw", "H100"),
    "maxpool backward NHWC": (r"max_pool_backward_nhwc", "H100"),
    "transposes": (r"nchwToNhwc|nhwcToNchw", "H100"),
    "batch norm forward": (r"cudnn::bn_fw_tr_1C11_kernel_NCHW", "H100 H200"),
    "batch norm backward": (r"cudnn::bn_bw_1C11_kernel_new", "H100 H200"),
}
# kernels shorter than this a step are their launches' and the host's, not their rate's: not fitted on
FIT_FLOOR_S = 50e-6
# part: (the module, its constant, the grid fitted over)
CONSTANTS = {
    "maxpool forward": (gm, "MAXPOOL_FORWARD_PER_CLOCK", [0.01 * i for i in range(10, 300)]),
    "maxpool backward NCHW": (gm, "MAXPOOL_BACKWARD_PER_CLOCK:contiguous", [0.005 * i for i in range(20, 300)]),
    "maxpool backward NHWC": (gm, "MAXPOOL_BACKWARD_PER_CLOCK:channels_last", [0.01 * i for i in range(10, 300)]),
    "transposes": (gk, "NCHW_TRANSPOSE_ELEMENTS_PER_CLOCK", [0.01 * i for i in range(10, 300)]),
    "batch norm forward": (gm, "CUDNN_BN_FORWARD_PER_CLOCK", [0.01 * i for i in range(10, 300)]),
    "batch norm backward": (gm, "CUDNN_BN_BACKWARD_PER_CLOCK", [0.01 * i for i in range(10, 300)]),
}


def profiles() -> list[dict[str, Any]]:
    """Each profile: its lease (H100, H200), label, GPU, workload, batch, precision, layout, kernels."""
    out = []
    for path, lease in ((RECORDED, "H100"), (H200_PROFILES, "H200")):
        out += [as_profile(d, DEVICES[d["profile"]["device"]], lease=lease) for d in recorded(path)]
    for gpu in ("h100", "h200"):
        for suffix, layout in (("", "contiguous"), ("-cl", "channels_last")):
            p = json.loads((RESNET50 / f"{gpu}-resnet50-fp16{suffix}.profile.json").read_text(encoding="utf-8"))
            out.append(
                {
                    "lease": "ResNet-50",
                    "label": f"{gpu.upper()} ResNet-50 fp16 b{p['batch_size']} {layout}",
                    "gpu": DEVICES[p["device"]],
                    "workload": {"model": {"preset": "resnet-50"}},
                    "batch": int(p["batch_size"]),
                    "precision": "fp16_mixed",
                    "layout": layout,
                    "kernels": p["kernels"],
                    "steps": p["steps"],
                }
            )
    return out


def measured_s(p: dict[str, Any], part: str) -> float:
    pattern = re.compile(KERNELS[part][0])
    return sum(float(k["total_us"]) for k in p["kernels"] if pattern.search(str(k["name"]))) / p["steps"] * 1e-6


def _clocks(gpu: Any) -> float:
    return gpu.sms * gpu.clock


def priced_s(p: dict[str, Any], part: str) -> float:
    """The model's seconds a step for ``part``'s kernels of profile ``p``."""
    gpu = gk.figures(find_device(p["gpu"], tuple(load_catalogue())))
    ops = forward_work(parse_workload(p["workload"]).analysis)[0]
    b = p["batch"]
    if part.startswith("maxpool"):
        elems = sum(o.in_elems for o in ops if o.name == "maxpool2d") * b
        if part == "maxpool forward":
            return elems / (gm.MAXPOOL_FORWARD_PER_CLOCK * _clocks(gpu))
        return elems / (gm.MAXPOOL_BACKWARD_PER_CLOCK[p["layout"]] * _clocks(gpu))
    if part == "transposes":
        precision = gk.cudnn_precision(p["precision"], gpu, bool(p["workload"].get("training", {}).get("cudnn_tf32")))
        paying = gk.nchw_transposes(precision, gpu, p["layout"])
        convs = [o for o in ops if o.rate == "conv" and (paying == "all" or (paying and not o.pointwise))]
        nbytes = 2 if precision in ("fp16_mixed", "bf16_mixed") else 4
        return sum(float(gk.nchw_transpose_s((o.in_elems + o.out_elems) * b, o.pointwise, nbytes, gpu)) for o in convs)
    rate = gm.CUDNN_BN_FORWARD_PER_CLOCK if part == "batch norm forward" else gm.CUDNN_BN_BACKWARD_PER_CLOCK
    norms = [(o.out_elems / o.norm_width * b, o.norm_width) for o in ops if o.name == "batchnorm2d" and o.norm_width]
    return sum(
        float(gm.block_a_channel_s(rows, channels, 1 / rate, gpu))
        for rows, channels in norms
        if rows > gm.CUDNN_BN_SINGLE_READ_ROWS
    )


def one_block_an_sm(p: dict[str, Any]) -> bool:
    """Whether every batch norm of ``p`` has at most one channel an SM."""
    ops = forward_work(parse_workload(p["workload"]).analysis)[0]
    sms = gk.figures(find_device(p["gpu"], tuple(load_catalogue()))).sms
    return all(o.norm_width <= sms for o in ops if o.name == "batchnorm2d")


def rows(part: str) -> list[dict[str, Any]]:
    """The profiles with kernels of ``part``, each with its role and its measured and priced seconds."""
    out = []
    for p in profiles():
        measured = measured_s(p, part)
        if measured <= 0:
            continue
        fit = p["lease"] in KERNELS[part][1].split() and measured >= FIT_FLOOR_S
        if part.startswith("batch norm"):  # more channels than SMs share them, and bandwidth: not fitted on
            fit = fit and one_block_an_sm(p)
        out.append(
            {**p, "role": "fit" if fit else "held out", "measured_s": measured, "predicted_s": priced_s(p, part)}
        )
    return out


def _set(module: Any, name: str, value: float) -> None:
    attr, _, key = name.partition(":")
    if key:
        getattr(module, attr)[key] = value
    else:
        setattr(module, attr, value)


def _get(module: Any, name: str) -> float:
    attr, _, key = name.partition(":")
    return float(getattr(module, attr)[key] if key else getattr(module, attr))


def fit(part: str) -> float:
    module, name, grid = CONSTANTS[part]
    fitting = [r for r in rows(part) if r["role"] == "fit"]
    return fit_constant(
        grid,
        fitting,
        lambda r: priced_s(r, part),
        lambda: _get(module, name),
        lambda value: _set(module, name, value),
    )


def main() -> int:
    def fitted(part: str) -> str:
        module, name, _ = CONSTANTS[part]
        return f"{name}: fitted {fit(part):g} (the model holds {_get(module, name):g})"

    print_kernel_tables(KERNELS, rows, fitted if "--fit" in sys.argv else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
