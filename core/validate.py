"""Small typed readers for JSON values that raise WorkloadError with the key path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.errors import WorkloadError


def require_mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise WorkloadError(path, f"must be an object, got {_kind(value)}")
    return value


def reject_unknown(obj: Mapping[str, Any], allowed: Iterable[str], path: str) -> None:
    allowed_set = set(allowed)
    for key in obj:
        if key not in allowed_set:
            choices = ", ".join(sorted(allowed_set))
            raise WorkloadError(_join(path, str(key)), f"unknown key (allowed: {choices})")


def get_int(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    *,
    default: int | None = None,
    minimum: int = 1,
    maximum: int = 10**9,
) -> int:
    """Read an integer in [minimum, maximum]; ``default`` None means the key is required."""
    p = _join(path, key)
    if key not in obj:
        if default is None:
            raise WorkloadError(p, "is required")
        return default
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise WorkloadError(p, f"must be an integer, got {_kind(value)}")
    if value < minimum:
        word = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise WorkloadError(p, f"must be {word}, got {_shown(value)}")
    if value > maximum:
        raise WorkloadError(p, f"{_shown(value)} is out of range (at most {maximum:,})")
    return value


def _shown(value: int) -> str:
    """An integer as a message shows it: its digits, or for one of over 15 digits its magnitude (1e308 read as
    an integer printed 309 digits)."""
    return str(value) if abs(value) < 10**15 else f"{value:.3g}"


def get_float(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    *,
    default: float | None = None,
    minimum: float = 0.0,
    maximum: float = 1e18,
    exclusive_min: bool = False,
    exclusive_max: bool = False,
) -> float:
    p = _join(path, key)
    if key not in obj:
        if default is None:
            raise WorkloadError(p, "is required")
        return default
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkloadError(p, f"must be a number, got {_kind(value)}")
    v = float(value)
    if v != v or v in (float("inf"), float("-inf")):
        raise WorkloadError(p, "must be a finite number")
    low_bad = v <= minimum if exclusive_min else v < minimum
    high_bad = v >= maximum if exclusive_max else v > maximum
    if low_bad or high_bad:
        lo = "(" if exclusive_min else "["
        hi = ")" if exclusive_max else "]"
        raise WorkloadError(p, f"must be in {lo}{minimum:g}, {maximum:g}{hi}, got {v:g}")
    return v


def get_bool(obj: Mapping[str, Any], key: str, path: str, *, default: bool) -> bool:
    if key not in obj:
        return default
    value = obj[key]
    if not isinstance(value, bool):
        raise WorkloadError(_join(path, key), f"must be true or false, got {_kind(value)}")
    return value


def get_choice(obj: Mapping[str, Any], key: str, path: str, choices: Iterable[str], *, default: str | None) -> str:
    p = _join(path, key)
    options = list(choices)
    if key not in obj:
        if default is None:
            raise WorkloadError(p, f"is required (one of: {', '.join(options)})")
        return default
    value = obj[key]
    if not isinstance(value, str) or value.lower() not in options:
        raise WorkloadError(p, f"must be one of: {', '.join(options)}; got {value!r}")
    return value.lower()


def get_str(obj: Mapping[str, Any], key: str, path: str, *, default: str | None = None) -> str:
    p = _join(path, key)
    if key not in obj:
        if default is None:
            raise WorkloadError(p, "is required")
        return default
    value = obj[key]
    if not isinstance(value, str) or not value.strip():
        raise WorkloadError(p, f"must be a non-empty string, got {_kind(value)}")
    return value.strip()


def get_shape(obj: Mapping[str, Any], key: str, path: str) -> tuple[int, ...]:
    p = _join(path, key)
    if key not in obj:
        raise WorkloadError(p, "is required (a list of positive integers, e.g. [75] or [3, 224, 224])")
    value = obj[key]
    if not isinstance(value, list) or not value:
        raise WorkloadError(p, "must be a non-empty list of positive integers")
    if len(value) > 4:
        raise WorkloadError(p, f"has {len(value)} dimensions; at most 4 are supported")
    dims = []
    for i, d in enumerate(value):
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise WorkloadError(f"{p}[{i}]", f"must be a positive integer, got {d!r}")
        if d > 10**8:
            raise WorkloadError(f"{p}[{i}]", f"{d} is out of range (at most 100,000,000)")
        dims.append(d)
    return tuple(dims)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# Limits of a JSON document a user gives (a workload, a device list): far above any real one (the
# Llama-8B preset is 2 KB and 6 levels deep), low enough that a hostile file is refused at once.
MAX_DOCUMENT_BYTES = 16 * 2**20
MAX_JSON_DEPTH = 64


class _Object(dict):  # type: ignore[type-arg]
    """A JSON object that remembers the keys it had twice."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return obj


def load_json_document(text: str, name: str) -> Any:
    """Parse a user's JSON document with the limits above. Refused, with the key path: a file over
    MAX_DOCUMENT_BYTES, nesting deeper than MAX_JSON_DEPTH, a key given twice (JSON would silently
    keep the last), a string that is not valid Unicode (a lone UTF-16 surrogate such as \\ud800)."""
    import json

    if len(text) > MAX_DOCUMENT_BYTES:
        raise WorkloadError("", f"{name} is {len(text) / 2**20:.0f} MiB; TrainRig reads files up to 16 MiB")
    try:
        doc = json.loads(text, object_pairs_hook=_pairs)
    except RecursionError:
        raise WorkloadError("", f"{name} is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise WorkloadError(
            "", f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except ValueError as exc:  # Python's own limits: an integer of over 4,300 digits
        raise WorkloadError("", f"{name} holds a number TrainRig cannot read: {exc}") from None
    _check_tree(doc, name)
    return doc  # its objects are dicts (a subclass that also names duplicate keys)


class NotAFile(ValueError):
    """A path that is no regular file, or one over the size a reader takes."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: NotAFile for a device or a pipe
    (/dev/zero never ends and filled the memory; a FIFO waited for a writer) and for a file over ``limit``
    (read as far as ``limit`` + 1 bytes, whatever size it reports: /proc files report 0); OSError as
    opening or reading raises it."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO opens at once, to be refused
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotAFile("is a folder" if stat.S_ISDIR(mode) else "is not a regular file (a device, a pipe or a socket)")
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise NotAFile(f"is over {limit / 2**20:,.0f} MiB, the most TrainRig reads of it")
    return data


def read_json_file(path: Path, what: str) -> Any:
    """A user's JSON file (``what``: "workload file", "device file"), read as UTF-8 (with or without the
    byte-order mark Windows editors write) with the limits of load_json_document; the size is checked
    before the file is read."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise WorkloadError("", f"{path.name} is {size / 2**20:.0f} MiB; TrainRig reads files up to 16 MiB")
        text = read_bounded(path, MAX_DOCUMENT_BYTES).decode("utf-8-sig")
    except FileNotFoundError:
        raise WorkloadError("", f"{what} {str(path)!r} does not exist") from None
    except NotAFile as exc:
        raise WorkloadError("", f"{what} {str(path)!r} {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError("", f"{what} {str(path)!r} cannot be read: {exc}") from None
    return load_json_document(text, path.name)


def _check_tree(doc: Any, name: str) -> None:
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise WorkloadError(path, f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, dict):
            if isinstance(value, _Object) and value.duplicates:
                raise WorkloadError(_join(path, value.duplicates[0]), "is given twice; keep one")
            for key, item in value.items():
                _check_text(key, _join(path, key))
                stack.append((item, _join(path, key), depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))


def _check_text(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WorkloadError(path, "contains an invalid character (a lone UTF-16 surrogate such as \\ud800)") from None
