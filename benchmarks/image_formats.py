"""What a storage-experiment file costs to write and to read back, per format, for one sample of
the given shape (default 3×64×64): bytes on disk, encoding and decoding time (median of --repeat),
as the trainer's reader does it (TIFF and raw: a copy; PNG: a zlib inflate; npy: a header parse).

Run: python benchmarks/image_formats.py [--shape 3,64,64] [--repeat 300]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "resources" / "workers"))
import image_codec  # noqa: E402


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="3,64,64")
    ap.add_argument("--repeat", type=int, default=300)
    args = ap.parse_args()
    shape = tuple(int(v) for v in args.shape.split(","))
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) + rng.standard_normal(shape) * 0.3).astype(np.float32)
    img = np.clip(np.rint(x * 32 + 128), 0, 255).astype(np.uint8)
    img = img[0] if img.shape[0] == 1 else np.ascontiguousarray(np.moveaxis(img, 0, -1))

    def npy_bytes() -> bytes:
        buf = io.BytesIO()
        np.save(buf, x)
        return buf.getvalue()

    def npy_read(data: bytes) -> np.ndarray:
        n = int.from_bytes(data[8:10], "little")
        return np.frombuffer(data[10 + n :], np.float32)

    rows = [
        ("raw", lambda: x.tobytes(), lambda d: np.frombuffer(d, np.float32)),
        ("npy", npy_bytes, npy_read),
        ("png", lambda: image_codec.encode_png(img), image_codec.decode_png),
        ("tiff", lambda: image_codec.encode_tiff(img), image_codec.decode_tiff),
    ]
    if image_codec.jpeg_available():
        rows.append(("jpeg", lambda: image_codec.encode_jpeg(img), image_codec.decode_jpeg))
    print(f"one sample of {'×'.join(map(str, shape))}, median of {args.repeat}")
    print(f"{'format':<6} {'bytes':>8} {'write':>10} {'read':>10}")
    for name, enc, dec in rows:
        data = enc()
        w = timed(enc, args.repeat)
        r = timed(lambda d=data, f=dec: f(d), args.repeat)
        print(f"{name:<6} {len(data):>8,} {w * 1e6:>8.1f} µs {r * 1e6:>8.1f} µs")
    if not image_codec.jpeg_available():
        print("jpeg: not measured (Pillow is not installed)")


if __name__ == "__main__":
    main()
