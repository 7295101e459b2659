"""The storage experiment (Panaite & Leba 2024): the same data set, one file per sample, written to
a folder the user picks and to a RAM disk, the page cache evicted, then trained from each: epoch
time, the rate training consumed the files at, and the share of the time the steps waited for data,
side by side with what the sizing assumes for each storage tier. The files are float32 arrays or
8-bit images (PNG, TIFF, JPEG), as the paper's data set was: reading an image costs its decoding."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from core.errors import TrainRigError
from core.estimate.timing import STORAGE_READ_BPS
from core.paths import worker_module
from core.spec.workload import Workload

ARRAY_FORMATS = ("raw", "npy")
IMAGE_FORMATS = ("png", "tiff", "jpeg")
FORMATS = ARRAY_FORMATS + IMAGE_FORMATS
DISK_TIERS = {"nvme": "nvme", "ssd": "sata_ssd", "hdd": "hdd"}
# a sample's float values as 8-bit image samples: value × 32 + 128, clipped (the synthetic classes'
# values lie within ±4 of 0); the trainer reads them back as (byte − 128) / 32
IMAGE_SCALE, IMAGE_OFFSET = 32.0, 128.0


def image_codec() -> ModuleType:
    """The trainer's image codec (resources/workers/image_codec.py), loaded by its path: the worker
    and the app write and read the same bytes."""
    return worker_module("image_codec")


def check_format(fmt: str, shape: list[int]) -> None:
    """Refuse a format this data set cannot be written in, before anything runs."""
    if fmt not in FORMATS:
        raise TrainRigError(f"the storage experiment writes {', '.join(FORMATS)} files, not {fmt!r}")
    if fmt not in IMAGE_FORMATS:
        return
    if not (len(shape) == 2 or (len(shape) == 3 and shape[0] in (1, 3))):
        raise TrainRigError(
            f"{fmt} files hold images: the model's input must be H×W or C×H×W with 1 or 3 channels, not "
            f"{'×'.join(map(str, shape))} (use --data-format npy or raw)"
        )
    if fmt == "jpeg" and not image_codec().jpeg_available():
        raise TrainRigError("JPEG files need Pillow, which is not installed: pip install pillow (or use png or tiff)")


def _to_image(x: np.ndarray) -> np.ndarray:
    """A C×H×W (or H×W) float sample as an H×W or H×W×3 uint8 image."""
    q = np.clip(np.rint(x * IMAGE_SCALE + IMAGE_OFFSET), 0, 255).astype(np.uint8)
    if q.ndim == 3:
        q = q[0] if q.shape[0] == 1 else np.moveaxis(q, 0, -1)
    return np.ascontiguousarray(q)


@dataclass(frozen=True)
class WrittenSet:
    folder: Path
    files: list[Path]
    bytes: int


def write_dataset(folder: Path, workload: Workload, samples: int, fmt: str, seed: int = 0) -> WrittenSet:
    """``samples`` training samples plus a 20 % held-out set of the model's input shape, one file
    each (float32 "raw" values, "npy" arrays, or 8-bit "png", "tiff" or "jpeg" images), with
    index.json; Gaussian blobs per class, as the trainer's synthetic set."""
    shape = [int(v) for v in workload.analysis.input_shape]
    check_format(fmt, shape)
    codec = image_codec() if fmt in IMAGE_FORMATS else None
    classes = int(workload.data.outputs)
    test = max(1, round(samples * 0.25))
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, *shape)).astype(np.float32) * 0.3
    labels = rng.integers(0, classes, samples + test)
    sub = folder / f"trainrig-storage-{fmt}-{samples}"
    try:
        sub.mkdir(parents=True, exist_ok=True)
        names, total = [], 0
        for i, y in enumerate(labels):
            x = centres[y] + rng.standard_normal(shape).astype(np.float32)
            name = f"{i:07d}.{fmt}"
            if fmt == "npy":
                np.save(sub / name, x)
            elif codec is not None:
                (sub / name).write_bytes(codec.encode(fmt, _to_image(x)))
            else:
                (sub / name).write_bytes(x.tobytes())
            names.append(name)
            total += (sub / name).stat().st_size
        index = {"format": fmt, "shape": shape, "labels": [int(v) for v in labels], "files": names, "train": samples}
        if codec is not None:
            index["image_scale"], index["image_offset"] = IMAGE_SCALE, IMAGE_OFFSET
        (sub / "index.json").write_text(json.dumps(index), encoding="utf-8")
    except OSError as exc:
        raise TrainRigError(f"the data set cannot be written to {folder}: {exc.strerror or exc}") from None
    return WrittenSet(sub, [sub / n for n in names], total)


def tier_of(folder: Path, inventory: dict[str, Any]) -> str | None:
    """The storage tier a folder is on, as the sizing names tiers (nvme, sata_ssd, hdd, ramdisk), from
    the inventory's disks and RAM disks; None when it cannot be told (a virtual disk, a network share)."""
    path = str(folder.resolve())

    def under(mount: str) -> int:
        return len(mount) if path == mount or path.startswith(mount.rstrip("/") + "/") else -1

    best, tier = -1, None
    for r in inventory.get("ramdisks") or []:
        if r.get("kind") == "tmpfs" and under(str(r.get("mount_point", ""))) > best:
            best, tier = under(str(r["mount_point"])), "ramdisk"
    for d in inventory.get("disks") or []:
        for mp in d.get("mount_points") or []:
            if under(str(mp)) > best:
                best, tier = under(str(mp)), DISK_TIERS.get(str(d.get("type")))
    return tier


def predicted_read_s(epoch_bytes: int, tier: str | None) -> float | None:
    return epoch_bytes / STORAGE_READ_BPS[tier] if tier in STORAGE_READ_BPS else None


def summary_row(name: str, written: WrittenSet, tier: str | None, eviction: str, metrics: dict[str, Any]) -> dict:
    epochs = metrics.get("epoch_s") or []
    epoch = sorted(epochs)[len(epochs) // 2] if epochs else math.nan
    read = metrics.get("read_bytes_per_epoch") or 0
    return {
        "location": name,
        "folder": str(written.folder),
        "tier": tier or "unknown",
        "format": written.files[0].suffix.lstrip(".") if written.files else None,
        "files": len(written.files),
        "bytes": written.bytes,
        "bytes_per_file": written.bytes / len(written.files) if written.files else None,
        "epoch_s": epoch,
        "consumed_bps": read / epoch if epoch and math.isfinite(epoch) else None,
        "data_wait_share": metrics.get("data_wait_share"),
        "predicted_read_s": predicted_read_s(read, tier),
        "page_cache": eviction,
    }
