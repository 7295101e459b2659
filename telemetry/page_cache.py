"""Evicting files from the page cache between the storage experiment's runs, so that each run reads
from its storage tier and not from RAM: posix_fadvise(POSIX_FADV_DONTNEED) on every file, after
fsync (the kernel drops clean pages only). Where that cannot be done, the result says so and what it
means for the figures."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Eviction:
    files: int = 0
    evicted: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # file: why it could not be evicted
    note: str = ""  # when nothing could be evicted: why, and what it means

    @property
    def complete(self) -> bool:
        return self.files > 0 and self.evicted == self.files

    def describe(self) -> str:
        if self.note:
            return self.note
        if self.complete:
            return f"page cache evicted for all {self.files:,} files (posix_fadvise DONTNEED)"
        first = next(iter(self.failures.items()), ("", ""))
        return (
            f"page cache evicted for {self.evicted:,} of {self.files:,} files; the rest may be read from RAM, "
            f"so the tier reads faster than it is (e.g. {Path(first[0]).name}: {first[1]})"
        )


def evict(paths: Iterable[Path]) -> Eviction:
    """Drop ``paths`` from the page cache; never raises for a file it cannot evict."""
    paths = list(paths)
    out = Eviction(files=len(paths))
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        out.note = (
            "this system has no posix_fadvise: the page cache could not be evicted, so a tier's second read may "
            "come from RAM and its read rate is overstated (on Linux this is done for you)"
        )
        return out
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            out.failures[str(path)] = exc.strerror or str(exc)
            continue
        try:
            os.fsync(fd)  # written pages must reach the disk before they can be dropped
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            out.evicted += 1
        except OSError as exc:
            out.failures[str(path)] = exc.strerror or str(exc)
        finally:
            os.close(fd)
    return out
