"""Recording values with their source, or an explicit unknown with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Record:
    """A nested dict of values plus flat ``sources`` and ``unknown`` maps keyed by dotted path."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self.unknown: dict[str, str] = {}

    def set(self, path: str, value: Any, source: str) -> Any:
        self._put(path, value)
        self.sources[path] = source
        return value

    def miss(self, path: str, reason: str) -> None:
        self._put(path, None)
        self.unknown[path] = reason

    def value_or_miss(self, path: str, value: Any, source: str, reason: str) -> Any:
        if value is None:
            self.miss(path, reason)
        else:
            self.set(path, value, source)
        return value

    def merge(self, other: Record) -> None:
        """Take over another record's top-level values, sources and unknowns."""
        self.data.update(other.data)
        self.sources.update(other.sources)
        self.unknown.update(other.unknown)

    def _put(self, path: str, value: Any) -> None:
        node = self.data
        keys = path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' → [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


def parse_size(text: str) -> int | None:
    """'32K' → 32768, '1024K', '36M' (sysfs cache sizes)."""
    text = text.strip().upper()
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}
    try:
        if text and text[-1] in mult:
            return int(text[:-1]) * mult[text[-1]]
        return int(text)
    except ValueError:
        return None
