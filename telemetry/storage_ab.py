"""The storage experiment (Panaite & Leba 2024): the same data set, one file per sample, written to
a folder the user picks and to a RAM disk, the page cache evicted, then trained from each: epoch
time, the rate training consumed the files at, and the share of the time the steps waited for data,
side by side with what the sizing assumes for each storage tier."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TrainRigError
from core.estimate.timing import STORAGE_READ_BPS
from core.spec.workload import Workload

FORMATS = ("raw", "npy")
DISK_TIERS = {"nvme": "nvme", "ssd": "sata_ssd", "hdd": "hdd"}


@dataclass(frozen=True)
class WrittenSet:
    folder: Path
    files: list[Path]
    bytes: int


def write_dataset(folder: Path, workload: Workload, samples: int, fmt: str, seed: int = 0) -> WrittenSet:
    """``samples`` training samples plus a 20 % held-out set of the model's input shape, one file
    each (float32, "raw" values or "npy" arrays), with index.json; Gaussian blobs per class, as the
    trainer's synthetic set."""
    if fmt not in FORMATS:
        raise TrainRigError(
            f"the storage experiment writes {' or '.join(FORMATS)} files; {fmt!r} images need an image encoder "
            "TrainRig does not ship"
        )
    shape = [int(v) for v in workload.analysis.input_shape]
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
            else:
                (sub / name).write_bytes(x.tobytes())
            names.append(name)
            total += (sub / name).stat().st_size
        index = {"format": fmt, "shape": shape, "labels": [int(v) for v in labels], "files": names, "train": samples}
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
        "files": len(written.files),
        "bytes": written.bytes,
        "epoch_s": epoch,
        "consumed_bps": read / epoch if epoch and math.isfinite(epoch) else None,
        "data_wait_share": metrics.get("data_wait_share"),
        "predicted_read_s": predicted_read_s(read, tier),
        "page_cache": eviction,
    }
