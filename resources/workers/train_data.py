"""The trainer's data: the user's CSV, a deterministic synthetic set, and the macro F1 it reports."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from typing import Any

from worker_common import WorkerError


def read_csv(path: str, features: int, classes: int) -> tuple[list[list[float]], list[int], list[str]]:
    """Rows of ``features`` numbers and a label (column "label", else the last column); labels are
    integers 0…classes−1 or names (sorted into class numbers). WorkerError names row and reason."""
    try:
        fh = open(path, newline="", encoding="utf-8-sig")  # closed by the with below
    except OSError as exc:
        raise WorkerError(f"the CSV {path} cannot be read: {exc.strerror or exc}") from None
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise WorkerError(f"the CSV {path} is empty") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise WorkerError(f"the CSV {path}, row 1: {exc}") from None
        names = [h.strip() for h in header]
        label_at = names.index("label") if "label" in names else len(names) - 1
        if len(names) - 1 != features:
            raise WorkerError(
                f"the CSV {path} has {len(names) - 1} feature columns besides the label "
                f"{names[label_at]!r}; the model's input needs {features}"
            )
        xs: list[list[float]] = []
        raw: list[str] = []
        row_no = 1
        try:
            for row_no, row in enumerate(reader, start=2):
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) != len(names):
                    raise WorkerError(f"the CSV {path}, row {row_no}: {len(row)} fields, the header has {len(names)}")
                x: list[float] = []
                for j, cell in enumerate(row):
                    if j == label_at:
                        continue
                    try:
                        v = float(cell)
                    except ValueError:
                        raise WorkerError(
                            f"the CSV {path}, row {row_no}, column {names[j]!r}: {cell!r} is not a number"
                        ) from None
                    if not math.isfinite(v):
                        raise WorkerError(f"the CSV {path}, row {row_no}, column {names[j]!r}: {cell!r} is not finite")
                    x.append(v)
                label = row[label_at].strip()
                if not label:
                    raise WorkerError(f"the CSV {path}, row {row_no}: the label is empty")
                xs.append(x)
                raw.append(label)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise WorkerError(f"the CSV {path}, row {row_no}: {exc}") from None
    if len(xs) < 2:
        raise WorkerError(f"the CSV {path} has {len(xs)} data rows; training needs at least 2")
    if all(r.lstrip("-").isdigit() for r in raw):
        ys = [int(r) for r in raw]
        bad = next((i for i, y in enumerate(ys) if not 0 <= y < classes), None)
        if bad is not None:
            raise WorkerError(f"the CSV {path}: label {ys[bad]} is outside 0…{classes - 1} (the model has {classes})")
        return xs, ys, [str(c) for c in range(classes)]
    names_sorted = sorted(set(raw))
    if len(names_sorted) > classes:
        raise WorkerError(f"the CSV {path} has {len(names_sorted)} different labels; the model outputs {classes}")
    index = {n: i for i, n in enumerate(names_sorted)}
    return xs, [index[r] for r in raw], names_sorted


def class_weights(classes: int) -> list[float]:
    """Imbalanced class frequencies ∝ 1/(k+1), like the unequal classes of Finocchiaro's set."""
    w = [1.0 / (k + 1) for k in range(classes)]
    total = sum(w)
    return [x / total for x in w]


def synthetic(torch: Any, shape: Sequence[int], classes: int, n: int, seed: int) -> tuple[Any, Any]:
    """``n`` samples of ``shape``: a unit Gaussian blob per class around centres drawn with σ = 0.3
    per element (for 75 features about 3.7 σ apart: classes overlap, accuracy well below 100 %),
    labels drawn with the imbalanced frequencies; the same seed gives the same set."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn((classes, *shape), generator=g) * 0.3
    y = torch.multinomial(torch.tensor(class_weights(classes)), n, replacement=True, generator=g)
    x = centres[y] + torch.randn((n, *shape), generator=g)
    return x, y


def macro_f1(pred: Sequence[int], true: Sequence[int], classes: int) -> float:
    """The unweighted mean of the per-class F1 over the classes present in ``true`` or ``pred``."""
    f1s = []
    for c in range(classes):
        tp = sum(1 for p, t in zip(pred, true, strict=True) if p == c and t == c)
        fp = sum(1 for p, t in zip(pred, true, strict=True) if p == c and t != c)
        fn = sum(1 for p, t in zip(pred, true, strict=True) if p != c and t == c)
        if tp + fp + fn == 0:
            continue
        f1s.append(2 * tp / (2 * tp + fp + fn))
    return sum(f1s) / len(f1s) if f1s else 0.0


def read_index(folder: str) -> dict[str, Any]:
    """A data set written as one file per sample (TrainRig's storage experiment): index.json names
    the files, their format ("raw": float32 values; "npy": NumPy arrays), shape, labels, and how
    many of the first files are training samples."""
    import json
    import os

    try:
        with open(os.path.join(folder, "index.json"), encoding="utf-8") as fh:
            index = json.load(fh)
    except (OSError, ValueError) as exc:
        raise WorkerError(f"the data set in {folder} has no readable index.json: {exc}") from None
    fmt = index.get("format")
    if fmt not in ("raw", "npy", *IMAGE_FORMATS):
        raise WorkerError(
            f"the data set in {folder} is {fmt!r}; the trainer reads raw, npy, {', '.join(IMAGE_FORMATS)} files"
        )
    if fmt == "jpeg" and not _codec().jpeg_available():
        raise WorkerError("the data set is JPEG files and this Python has no Pillow to decode them: pip install pillow")
    return index


IMAGE_FORMATS = ("png", "tiff", "jpeg")


def _codec() -> Any:
    """image_codec.py, beside this file (it needs NumPy: imported only for image files)."""
    import image_codec

    return image_codec


def read_sample(
    torch: Any, path: str, fmt: str, shape: Sequence[int], scale: float = 32.0, offset: float = 128.0
) -> Any:
    """One sample's tensor of ``shape``: float32 values, or an 8-bit image decoded and mapped back
    as (byte − offset) / scale, channels first."""
    with open(path, "rb") as fh:
        data = fh.read()
    if fmt in IMAGE_FORMATS:
        codec = _codec()
        try:
            img = codec.decode(fmt, data)
        except (codec.ImageError, OSError) as exc:
            raise WorkerError(f"{path}: {exc}") from None
        x = torch.from_numpy(img.copy()).to(torch.float32).sub_(offset).div_(scale)
        if x.dim() == 3:
            x = x.permute(2, 0, 1)  # H×W×C as C×H×W
        return x.reshape(tuple(shape))
    if fmt == "npy":  # NumPy's format 1.0: magic, version, header length, header, then the values
        header_len = int.from_bytes(data[8:10], "little")
        data = data[10 + header_len :]
    return torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(tuple(shape))


def file_data(torch: Any, folder: str, input_shape: Sequence[int], classes: int) -> tuple[Any, Any, Any, int]:
    """The training set as a Dataset that reads each sample's file when asked, the held-out set in
    memory, and the bytes one epoch reads."""
    import os

    index = read_index(folder)
    if list(index["shape"]) != list(input_shape):
        raise WorkerError(f"the data set's samples are {index['shape']}; the model takes {list(input_shape)}")
    files, labels, n_train = index["files"], index["labels"], int(index["train"])
    if max(labels) >= classes:
        raise WorkerError(f"the data set has label {max(labels)}; the model has {classes} classes")
    paths = [os.path.join(folder, f) for f in files]

    class Files(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return n_train

        def __getitem__(self, i: int) -> Any:
            return read_sample(torch, paths[i], fmt, input_shape, *scaling), labels[i]

    fmt = index["format"]
    scaling = (float(index.get("image_scale", 32.0)), float(index.get("image_offset", 128.0)))
    x_test = torch.stack([read_sample(torch, p, fmt, input_shape, *scaling) for p in paths[n_train:]])
    y_test = torch.tensor(labels[n_train:])
    epoch_bytes = sum(os.path.getsize(p) for p in paths[:n_train])
    return Files(), x_test, y_test, epoch_bytes
