"""The storage experiment's image codec against Qt's image readers and writers: PNG and TIFF files
it writes are read pixel for pixel by Qt (a decoder it shares no code with), and PNGs Qt writes,
with its own row filters, are read pixel for pixel by the codec; a damaged file is refused."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QImage

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "resources" / "workers"))
import image_codec

RNG = np.random.default_rng(7)


def _qt_pixels(img: QImage, channels: int) -> np.ndarray:
    fmt = QImage.Format.Format_RGB888 if channels == 3 else QImage.Format.Format_Grayscale8
    img = img.convertToFormat(fmt)
    rows = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine())
    a = rows[:, : img.width() * channels].copy()  # a view would outlive the converted image
    return a.reshape(img.height(), img.width(), 3) if channels == 3 else a


@pytest.mark.parametrize("fmt", ["png", "tiff"])
@pytest.mark.parametrize("shape", [(5, 7), (6, 4, 3), (64, 48, 3)])
def test_qt_reads_the_codecs_files_pixel_for_pixel(qapp, fmt: str, shape: tuple[int, ...]) -> None:
    a = RNG.integers(0, 256, shape, dtype=np.uint8)
    data = image_codec.encode(fmt, a)
    assert np.array_equal(image_codec.decode(fmt, data), a)
    img = QImage.fromData(data, fmt.upper())
    assert not img.isNull() and (img.width(), img.height()) == (shape[1], shape[0])
    assert np.array_equal(_qt_pixels(img, 3 if len(shape) == 3 else 1), a)


def test_the_codec_reads_pngs_qt_writes_with_row_filters(qapp) -> None:
    y, x = np.mgrid[0:40, 0:50]
    a = np.stack([(x * 5) % 256, (y * 6) % 256, ((x + y) * 3) % 256], -1).astype(np.uint8)
    img = QImage(a.tobytes(), 50, 40, 150, QImage.Format.Format_RGB888)
    out = QByteArray()
    buf = QBuffer(out)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    assert img.save(buf, "PNG")
    assert np.array_equal(image_codec.decode_png(bytes(out)), a)


def test_a_damaged_png_or_tiff_is_refused_with_the_reason() -> None:
    data = bytearray(image_codec.encode_png(RNG.integers(0, 256, (8, 8), dtype=np.uint8)))
    data[45] ^= 0xFF  # inside the IDAT chunk's data (the signature, IHDR and its header end at 41)
    with pytest.raises(image_codec.ImageError, match="IDAT chunk is damaged"):
        image_codec.decode_png(bytes(data))
    tiff = image_codec.encode_tiff(RNG.integers(0, 256, (8, 8, 3), dtype=np.uint8))
    with pytest.raises(image_codec.ImageError, match="cut short"):
        image_codec.decode_tiff(tiff[:100])
