"""The storage experiment: the page cache evicted file by file (and said when it cannot be), the data
set written one file per sample, the storage tier of a folder, and a run from a folder and a RAM disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from core.errors import TrainRigError
from core.spec.workload import parse_workload
from telemetry import page_cache
from telemetry.storage_ab import tier_of, write_dataset
from tests.conftest import TINY_CNN, TINY_MLP

TINY = TINY_MLP
ROOT = Path(__file__).resolve().parents[2]


def test_every_file_is_evicted_after_its_pages_reach_the_disk(tmp_path: Path, monkeypatch) -> None:
    files = [tmp_path / f"{i}.raw" for i in range(3)]
    for f in files:
        f.write_bytes(b"x" * 100)
    calls: list[tuple[int, int]] = []
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, off, n, advice: calls.append((off, n, advice)), raising=False)
    result = page_cache.evict([*files, tmp_path / "missing.raw"])
    assert result.files == 4 and result.evicted == 3 and len(synced) == 3
    assert calls == [(0, 0, os.POSIX_FADV_DONTNEED)] * 3
    assert "missing.raw" in result.describe() and "may be read from RAM" in result.describe()


def test_a_failing_advice_and_a_system_without_it_are_said(tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "a.raw"
    f.write_bytes(b"x")

    def refuse(*_args) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", refuse, raising=False)
    assert page_cache.evict([f]).failures == {str(f): "Invalid argument"}
    monkeypatch.delattr(os, "posix_fadvise", raising=False)
    result = page_cache.evict([f])
    assert result.evicted == 0 and "has no posix_fadvise" in result.describe()


def test_the_data_set_is_one_file_per_sample_with_its_index(tmp_path: Path) -> None:
    written = write_dataset(tmp_path, parse_workload(TINY), 40, "npy")
    index = json.loads((written.folder / "index.json").read_text(encoding="utf-8"))
    assert index["shape"] == [8] and index["train"] == 40 and len(index["files"]) == 50 == len(written.files)
    assert all(0 <= y < 3 for y in index["labels"])
    assert written.bytes == sum(f.stat().st_size for f in written.files)
    raw = write_dataset(tmp_path, parse_workload(TINY), 40, "raw")
    assert raw.files[0].stat().st_size == 8 * 4  # float32 values, nothing else
    with pytest.raises(TrainRigError, match="png files hold images: the model's input must be H×W or C×H×W"):
        write_dataset(tmp_path, parse_workload(TINY), 40, "png")  # a flat input of 8 values
    with pytest.raises(TrainRigError, match="writes raw, npy, png, tiff, jpeg files, not 'gif'"):
        write_dataset(tmp_path, parse_workload(TINY), 40, "gif")
    assert not list(tmp_path.glob("trainrig-storage-png*"))  # refused before anything was written


def test_images_are_written_as_png_and_tiff_and_read_back_as_the_trainer_reads_them(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import sys

    sys.path.insert(0, str(ROOT / "resources" / "workers"))
    from train_data import read_sample

    workload = parse_workload(TINY_CNN)
    for fmt, size in (("png", None), ("tiff", 3 * 8 * 8 + 8 + 6)):
        written = write_dataset(tmp_path, workload, 20, fmt)
        index = json.loads((written.folder / "index.json").read_text(encoding="utf-8"))
        assert index["shape"] == [3, 8, 8] and index["image_scale"] == 32.0
        head = written.files[0].read_bytes()[:8]
        assert head.startswith(b"\x89PNG\r\n\x1a\n" if fmt == "png" else b"II*\x00")
        if size:  # uncompressed: the pixels, the header and the bits per sample, then the directory
            assert written.files[0].stat().st_size == size + 2 + 9 * 12 + 4
        x = read_sample(torch, str(written.files[0]), fmt, [3, 8, 8])
        assert x.shape == (3, 8, 8) and x.dtype == torch.float32
        # the same sample as the float set holds it, to the 8-bit step (1/32) once quantised
        floats = write_dataset(tmp_path, workload, 20, "npy")
        ref = torch.from_numpy(np.load(floats.files[0]))
        inside = ref.abs() < 3.9  # values past ±4 are clipped to the image's 0…255
        assert torch.allclose(x[inside], ref[inside], atol=1 / 64 + 1e-6)


def test_jpeg_needs_pillow_and_says_so_before_anything_is_written(tmp_path: Path, monkeypatch) -> None:
    from telemetry import storage_ab

    codec = storage_ab.image_codec()
    monkeypatch.setattr(codec, "jpeg_available", lambda: False)
    monkeypatch.setattr(storage_ab, "image_codec", lambda: codec)
    with pytest.raises(TrainRigError, match="JPEG files need Pillow, which is not installed: pip install pillow"):
        write_dataset(tmp_path, parse_workload(TINY_CNN), 20, "jpeg")
    assert not list(tmp_path.iterdir())


def test_a_folder_gets_the_tier_of_the_deepest_mount_it_is_under() -> None:
    inventory = {
        "disks": [
            {"type": "nvme", "mount_points": ["/"]},
            {"type": "hdd", "mount_points": ["/data"]},
        ],
        "ramdisks": [{"kind": "tmpfs", "mount_point": "/dev/shm"}],
    }
    assert tier_of(Path("/data/sets"), inventory) == "hdd"
    assert tier_of(Path("/dev/shm/x"), inventory) == "ramdisk"
    assert tier_of(Path("/home/me"), inventory) == "nvme"
    assert tier_of(Path("/database"), inventory) == "nvme"  # /data is not a prefix of /database
    assert tier_of(Path("/x"), {"disks": [{"type": "virtual", "mount_points": ["/"]}]}) is None


@pytest.mark.skipif(os.name != "posix", reason="page cache eviction and /dev/shm as on Linux")
@pytest.mark.parametrize("fmt", ["npy", "png"])
def test_a_run_from_a_folder_and_from_a_ram_disk(cli, write_json, tmp_path: Path, _isolated_db, fmt: str) -> None:
    ram = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path / "ram"
    ram.mkdir(exist_ok=True)
    folder = tmp_path / "disk"
    folder.mkdir()
    code, out, err = cli(
        "experiment",
        str(write_json(TINY if fmt == "npy" else TINY_CNN)),
        "--data-format",
        fmt,
        "--storage",
        str(folder),
        "--ramdisk",
        str(ram),
        "--samples",
        "200",
        "--epochs",
        "1",
        "--loader-workers",
        "0",
        "--json",
    )
    assert code == 0, out + err
    rows = json.loads(out[out.index("{") :])["rows"]
    assert [r["location"] for r in rows] == ["your folder", "RAM disk"]
    for r in rows:
        assert r["files"] == 250 and r["epoch_s"] > 0 and 0 <= r["data_wait_share"] < 1
        assert r["format"] == fmt and r["bytes_per_file"] > 0
    assert not any(p.name.startswith("trainrig-storage") for p in folder.iterdir())  # cleaned up
