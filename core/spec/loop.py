"""How the user's training loop feeds and watches the device (workload ``training.loop``,
docs/workload.md); core/estimate/host.py prices it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import WorkloadError
from core.validate import get_bool, get_choice, get_int, reject_unknown, require_mapping

LOOP_STYLES = ("device_tensors", "dataloader", "dataloader_files")
LOOP_STYLE_TEXT = {
    "device_tensors": "tensors already on the device (no DataLoader)",
    "dataloader": "a DataLoader over in-memory data",
    "dataloader_files": "a DataLoader that reads and decodes files",
}
# DataLoader workers a script that decodes files typically sets (pytorch/examples imagenet: --workers 4)
DEFAULT_FILE_WORKERS = 4


@dataclass(frozen=True)
class LoopSpec:
    """How the user's training loop feeds and watches the device (workload ``training.loop``)."""

    style: str = "dataloader"
    workers: int = 0  # DataLoader worker processes (num_workers)
    pin_memory: bool = False  # pin_memory=True and .to(device, non_blocking=True)
    sync_every: int = 1  # steps between synchronisations (loss.item(), metrics); 0: none
    log_every: int = 0  # steps between log lines; 0: none

    def describe(self) -> str:
        parts = [LOOP_STYLE_TEXT[self.style]]
        if self.style != "device_tensors":
            parts.append(f"{self.workers} worker(s)" if self.workers else "no worker processes")
            parts.append("pinned memory" if self.pin_memory else "pageable memory")
        parts.append(f"a synchronisation every {self.sync_every} step(s)" if self.sync_every else "no synchronisation")
        if self.log_every:
            parts.append(f"a log line every {self.log_every} step(s)")
        return ", ".join(parts)


DEFAULT_LOOP = LoopSpec()


MAX_WORKERS = 1024


def parse_loop(value: Any) -> LoopSpec:
    """``training.loop``: a style name, or {"style", "workers", "pin_memory", "sync_every",
    "log_every"} (docs/workload.md)."""
    path = "training.loop"
    doc = {"style": value} if isinstance(value, str) else require_mapping(value, path)
    reject_unknown(doc, {"style", "workers", "pin_memory", "sync_every", "log_every"}, path)
    style = get_choice(doc, "style", path, LOOP_STYLES, default="dataloader")
    default_workers = DEFAULT_FILE_WORKERS if style == "dataloader_files" else 0
    workers = get_int(doc, "workers", path, default=default_workers, minimum=0, maximum=MAX_WORKERS)
    if style == "device_tensors" and workers:
        raise WorkloadError(f"{path}.workers", "tensors already on the device use no DataLoader workers: leave it out")
    return LoopSpec(
        style=style,
        workers=workers,
        pin_memory=get_bool(doc, "pin_memory", path, default=False),
        sync_every=get_int(doc, "sync_every", path, default=1, minimum=0, maximum=10**6),
        log_every=get_int(doc, "log_every", path, default=0, minimum=0, maximum=10**6),
    )


IMAGE_FORMATS = ("jpeg", "png", "tiff")


def loop_for(loop: LoopSpec | None, data_format: str) -> LoopSpec:
    """The loop the sizing assumes: the workload's, else a DataLoader that decodes files for stored
    images (with DEFAULT_FILE_WORKERS workers and pinned memory, as pytorch/examples imagenet/main.py
    sets them), else a DataLoader over in-memory data with no worker
    processes and ``loss.item()`` each step (PyTorch's tutorials: "Training a Classifier" sums
    ``loss.item()`` every step; the quickstart's DataLoader has no workers)."""
    if loop is not None:
        return loop
    if data_format in IMAGE_FORMATS:  # as PyTorch's ImageNet example: 4 workers, pinned memory
        return LoopSpec(style="dataloader_files", workers=DEFAULT_FILE_WORKERS, pin_memory=True)
    return LoopSpec()
