"""Half-precision convolutions in NCHW and channels_last on an NVIDIA GPU: forward and both gradients of
one layer under ``torch.autocast`` (bf16), cuDNN's algorithm search on, each layout timed — the layers of
the GPU suite's NCHW misses (random CNNs of 16–128 channels at batch 256, ResNet-18) and ResNet-50's, for
the price of cuDNN's NCHW layout transposes (gpu_kernels.NCHW_TRANSPOSE_ACCESSES, fitted on one
ResNet-50 pair). A lent H100's run is kept in tests/fixtures/gpu/h100-nchw-convs-2026-11-26c.jsonl.

    python3 benchmarks/nchw_convs.py --measure OUT.jsonl [--budget-s 60]   # on a CUDA GPU
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.gpu_suite import step_times_s

# (batch, in channels, out channels, side, kernel, stride, family)
SHAPES = [
    (256, 3, 32, 128, 5, 1, "random-2026-25"),
    (256, 32, 32, 64, 3, 1, "random-2026-25"),
    (256, 32, 16, 32, 3, 1, "random-2026-25"),
    (256, 16, 64, 16, 3, 1, "random-2026-25"),
    (256, 64, 128, 16, 3, 1, "random-2026-25"),
    (256, 3, 64, 64, 1, 1, "random-2026-22"),
    (256, 64, 32, 32, 5, 1, "random-2026-22"),
    (256, 32, 32, 16, 5, 1, "random-2026-22"),
    (256, 3, 64, 224, 7, 2, "resnet-18"),
    (256, 64, 64, 56, 3, 1, "resnet-18"),
    (256, 128, 128, 28, 3, 1, "resnet-18"),
    (256, 256, 256, 14, 3, 1, "resnet-18"),
    (256, 512, 512, 7, 3, 1, "resnet-18"),
    (64, 64, 256, 56, 1, 1, "resnet-50"),
    (64, 256, 64, 56, 1, 1, "resnet-50"),
    (64, 64, 64, 56, 3, 1, "resnet-50"),
    (64, 512, 128, 28, 1, 1, "resnet-50"),
    (64, 1024, 256, 14, 1, 1, "resnet-50"),
    (64, 256, 256, 14, 3, 1, "resnet-50"),
    (64, 2048, 512, 7, 1, 1, "resnet-50"),
]


def measure(path: Path, budget_s: float, device: str = "cuda") -> None:
    import torch

    dev = torch.device(device)
    torch.backends.cudnn.benchmark = True

    def timed(n: int, c: int, k: int, hw: int, kernel: int, stride: int, fmt: torch.memory_format) -> float:
        conv = torch.nn.Conv2d(c, k, kernel, stride=stride, padding=kernel // 2, bias=False).to(dev, memory_format=fmt)
        x = torch.randn(n, c, hw, hw, device=dev).to(memory_format=fmt).requires_grad_(True)

        def step() -> None:
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                y = conv(x)
            y.float().sum().backward()

        return statistics.median(step_times_s(torch, dev, step))

    started = time.monotonic()
    with path.open("w", encoding="utf-8") as sink:
        for n, c, k, hw, kernel, stride, family in SHAPES:
            if time.monotonic() - started > budget_s:
                break
            line = {"family": family, "n": n, "c": c, "k": k, "hw": hw, "kernel": kernel, "stride": stride}
            line["nchw_s"] = timed(n, c, k, hw, kernel, stride, torch.contiguous_format)
            line["channels_last_s"] = timed(n, c, k, hw, kernel, stride, torch.channels_last)
            sink.write(json.dumps(line) + "\n")
            sink.flush()


def main() -> int:
    if "--measure" not in sys.argv:
        print(__doc__)
        return 0
    budget = float(sys.argv[sys.argv.index("--budget-s") + 1]) if "--budget-s" in sys.argv else 60.0
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
    measure(Path(sys.argv[sys.argv.index("--measure") + 1]), budget, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
