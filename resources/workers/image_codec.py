"""PNG and TIFF images of 8-bit samples, written and read with NumPy and the standard library (the
storage experiment's image files: Panaite & Leba read their data set as image files, so reading
one costs its decoding, not only its bytes); JPEG through Pillow where it is installed.

Used by the trainer (this folder, run in the PyTorch environment) and by the app that writes the
data set (telemetry.storage_ab loads this file by its path), so it imports neither.

- PNG: greyscale or RGB (colour types 0 and 2), bit depth 8, one zlib stream over the scanlines.
  Written with filter type 0; read with all five filter types (any such PNG reads).
- TIFF: baseline, little-endian, uncompressed, one strip, 8 bits per sample, 1 or 3 samples per
  pixel (PhotometricInterpretation 1 or 2).
- JPEG: Pillow's encoder and decoder (quality 90); ``jpeg_available()`` says whether it is there.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

FORMATS = ("png", "tiff", "jpeg")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class ImageError(ValueError):
    """An image this codec cannot write or read, with the reason."""


def _layout(a: np.ndarray) -> tuple[int, int, int]:
    if a.dtype != np.uint8 or a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (1, 3)):
        raise ImageError(f"images are H×W or H×W×3 arrays of uint8, not {a.dtype} {a.shape}")
    h, w = a.shape[:2]
    return h, w, 1 if a.ndim == 2 else a.shape[2]


# --- PNG ------------------------------------------------------------------------------------------
def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(a: np.ndarray, level: int = 6) -> bytes:
    h, w, c = _layout(a)
    rows = np.ascontiguousarray(a).reshape(h, w * c)
    raw = np.hstack([np.zeros((h, 1), np.uint8), rows]).tobytes()  # filter type 0 before each row
    header = struct.pack(">IIBBBBB", w, h, 8, 0 if c == 1 else 2, 0, 0, 0)
    return PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, level)) + _chunk(b"IEND", b"")


def decode_png(data: bytes) -> np.ndarray:
    if not data.startswith(PNG_SIGNATURE):
        raise ImageError("not a PNG file (its signature is missing)")
    pos, idat, header = len(PNG_SIGNATURE), [], None
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length] or b"\0\0\0\0")
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ImageError(f"the PNG's {kind.decode('latin-1')} chunk is damaged (its CRC does not match)")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        raise ImageError("the PNG has no IHDR chunk")
    w, h, depth, colour, _compression, _filter, interlace = header
    if depth != 8 or colour not in (0, 2) or interlace:
        raise ImageError(
            f"PNGs of bit depth 8, greyscale or RGB, not interlaced are read; this is {depth}-bit type {colour}"
        )
    c = 1 if colour == 0 else 3
    try:
        raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    except zlib.error as exc:
        raise ImageError(f"the PNG's image data is damaged: {exc}") from None
    stride = w * c
    if raw.size != h * (stride + 1):
        raise ImageError(f"the PNG's image data holds {raw.size} bytes, not the {h * (stride + 1)} of {w}×{h}")
    rows = raw.reshape(h, stride + 1)
    out = np.empty((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 0xFF
        elif kind in (1, 3, 4):  # these depend on the pixel to the left: byte by byte
            cur = np.zeros(stride, np.int32)
            for x in range(stride):
                left = cur[x - c] if x >= c else 0
                up, up_left = prev[x], prev[x - c] if x >= c else 0
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + up) // 2
                else:
                    p = left + up - up_left
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                    pred = left if pa <= pb and pa <= pc else up if pb <= pc else up_left
                cur[x] = (line[x] + pred) & 0xFF
        else:
            raise ImageError(f"the PNG's row {y} has an unknown filter type {kind}")
        out[y] = cur
        prev = cur
    return out.reshape(h, w) if c == 1 else out.reshape(h, w, c)


# --- TIFF -----------------------------------------------------------------------------------------
def encode_tiff(a: np.ndarray) -> bytes:
    h, w, c = _layout(a)
    pixels = np.ascontiguousarray(a).tobytes()
    bits_at = 8  # the 8-bit-per-sample triple (RGB) lives after the header, before the pixels
    data_at = bits_at + (6 if c == 3 else 0)
    entries = [  # tag, type (3 SHORT, 4 LONG), count, value or offset
        (256, 4, 1, w),  # ImageWidth
        (257, 4, 1, h),  # ImageLength
        (258, 3, c, 8 if c == 1 else bits_at),  # BitsPerSample
        (259, 3, 1, 1),  # Compression: none
        (262, 3, 1, 1 if c == 1 else 2),  # PhotometricInterpretation: black is zero, or RGB
        (273, 4, 1, data_at),  # StripOffsets
        (277, 3, 1, c),  # SamplesPerPixel
        (278, 4, 1, h),  # RowsPerStrip
        (279, 4, 1, len(pixels)),  # StripByteCounts
    ]
    ifd_at = data_at + len(pixels)
    ifd_at += ifd_at % 2  # an IFD starts on a word boundary
    head = b"II*\x00" + struct.pack("<I", ifd_at)
    extra = struct.pack("<HHH", 8, 8, 8) if c == 3 else b""
    body = head + extra + pixels + b"\x00" * (ifd_at - data_at - len(pixels))
    ifd = struct.pack("<H", len(entries))
    for tag, typ, count, value in entries:
        packed = struct.pack("<HH", value, 0) if typ == 3 and count == 1 else struct.pack("<I", value)
        ifd += struct.pack("<HHI", tag, typ, count) + packed
    return body + ifd + struct.pack("<I", 0)


def decode_tiff(data: bytes) -> np.ndarray:
    if data[:4] != b"II*\x00":
        raise ImageError("not a little-endian TIFF file")
    (ifd,) = struct.unpack("<I", data[4:8])
    if ifd + 2 > len(data):
        raise ImageError("the TIFF is cut short (its directory is past its end)")
    (n,) = struct.unpack("<H", data[ifd : ifd + 2])
    tags: dict[int, int] = {}
    for i in range(n):
        tag, typ, _count, value = struct.unpack("<HHII", data[ifd + 2 + 12 * i : ifd + 14 + 12 * i])
        tags[tag] = value & 0xFFFF if typ == 3 else value
    w, h, c = tags.get(256), tags.get(257), tags.get(277, 1)
    if not w or not h or tags.get(259, 1) != 1 or c not in (1, 3):
        raise ImageError("uncompressed TIFFs of 1 or 3 samples per pixel are read; this is another kind")
    start, size = tags.get(273, 0), w * h * c
    if tags.get(279, size) != size or start + size > len(data):
        raise ImageError("the TIFF's pixels are not one whole strip of 8-bit samples")
    a = np.frombuffer(data, np.uint8, size, start)
    return a.reshape(h, w) if c == 1 else a.reshape(h, w, c)


# --- JPEG (Pillow) --------------------------------------------------------------------------------
def jpeg_available() -> bool:
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def encode_jpeg(a: np.ndarray, quality: int = 90) -> bytes:
    import io

    from PIL import Image

    _layout(a)
    buf = io.BytesIO()
    Image.fromarray(a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a).save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def decode_jpeg(data: bytes) -> np.ndarray:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im)


def encode(fmt: str, a: np.ndarray) -> bytes:
    return {"png": encode_png, "tiff": encode_tiff, "jpeg": encode_jpeg}[fmt](a)


def decode(fmt: str, data: bytes) -> Any:
    return {"png": decode_png, "tiff": decode_tiff, "jpeg": decode_jpeg}[fmt](data)
