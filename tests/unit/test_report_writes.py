"""A report is written whole or not at all: no "wrote" when nothing was written, the old file
untouched, one line that says why (the CSV; the PDF's cases are in tests/gui/test_report_pdf.py)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from core.errors import OutputError
from core.storage.files import write_atomically

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = str(ROOT / "examples/seed-mlp.json")


def _read_only(tmp_path: Path) -> Path:
    p = tmp_path / "old.csv"
    p.write_text("the old report")
    p.chmod(0o444)
    return p


@pytest.mark.parametrize(
    ("target", "says"),
    [
        (lambda tmp: tmp, "is a folder; give a file name"),
        (lambda tmp: tmp / "no" / "r.csv", "cannot be written: the folder {tmp}/no does not exist"),
        (_read_only, "is read-only; it was left as it is"),
        (lambda tmp: Path("/dev/full"), "/dev/full is not a regular file"),
        # a name past the file system's 255 bytes: stat itself failed with a traceback
        (lambda tmp: tmp / ("é" * 200 + ".csv"), "cannot be written: File name too long"),
    ],
)
def test_an_unwritable_csv_is_refused_before_sizing_in_one_line(cli, tmp_path: Path, target, says) -> None:
    tmp_path = tmp_path / "out"  # the test's database lives beside it
    tmp_path.mkdir()
    path = target(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    code, out, err = cli("report", WORKLOAD, "-c", "4090", "--csv", str(path))
    assert code == 2 and out == "" and "wrote" not in err
    assert len(err.strip().splitlines()) == 1 and says.format(tmp=tmp_path) in err
    assert sorted(tmp_path.rglob("*")) == before
    if os.path.isfile(path) and path.parent == tmp_path:  # (os.path: False for a name too long to stat)
        assert path.read_text() == "the old report"


def test_a_full_disk_leaves_the_old_csv_and_no_partial_file(cli, tmp_path: Path, monkeypatch) -> None:
    tmp_path = tmp_path / "out"  # the test\'s database lives beside it
    tmp_path.mkdir()
    path = tmp_path / "r.csv"
    path.write_text("the old report")
    real = Path.write_text

    def full_disk(self: Path, *args, **kwargs):
        if self.name.endswith(".part"):
            real(self, "sec", encoding="utf-8")  # some bytes landed before the disk filled
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    code, out, err = cli("report", WORKLOAD, "-c", "4090", "--csv", str(path))
    assert code == 2 and out == ""
    assert err.strip() == f"trainrig report: {path} cannot be written: the disk is full; it was left as it was"
    assert path.read_text() == "the old report" and [p.name for p in tmp_path.iterdir()] == ["r.csv"]


def test_a_written_csv_replaces_the_old_one_with_its_permissions(cli, tmp_path: Path) -> None:
    tmp_path = tmp_path / "out"  # the test\'s database lives beside it
    tmp_path.mkdir()
    path = tmp_path / "r.csv"
    path.write_text("the old report")
    path.chmod(0o640)
    code, out, _ = cli("report", WORKLOAD, "-c", "4090", "--csv", str(path))
    assert code == 0 and out.strip() == f"wrote {path}"
    assert path.read_text(encoding="utf-8-sig").startswith("section,item,specification")
    assert oct(path.stat().st_mode & 0o777) == "0o640" and [p.name for p in tmp_path.iterdir()] == ["r.csv"]


def test_an_incomplete_file_is_never_renamed_into_place(tmp_path: Path) -> None:
    path = tmp_path / "r.pdf"
    path.write_bytes(b"%PDF old %%EOF")

    def verify(tmp: Path) -> None:
        raise OutputError("it came out incomplete (is the disk full?)")

    with pytest.raises(
        OutputError, match=r"r.pdf cannot be written: it came out incomplete \(is the disk full\?\); it"
    ):
        write_atomically(path, lambda tmp: tmp.write_bytes(b"%PDF-1.4 cut short"), verify)
    assert path.read_bytes() == b"%PDF old %%EOF" and [p.name for p in tmp_path.iterdir()] == ["r.pdf"]


def test_a_link_is_written_through_and_kept(cli, tmp_path: Path) -> None:
    """Renaming the new report over the path replaced a link with a file (the shared report it pointed to
    unchanged); as root, --pdf /dev/stdout replaced the system's /dev/stdout with a PDF."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "shared.csv").write_text("the old report")
    (out / "mine.csv").symlink_to("shared.csv")
    code, _, err = cli("report", WORKLOAD, "-c", "4090", "--csv", str(out / "mine.csv"))
    assert code == 0, err
    assert (out / "mine.csv").is_symlink() and os.readlink(out / "mine.csv") == "shared.csv"
    written = (out / "shared.csv").read_text(encoding="utf-8-sig")
    assert "bill of materials,Accelerator,NVIDIA GeForce RTX 4090 × 1" in written
    assert sorted(p.name for p in out.iterdir()) == ["mine.csv", "shared.csv"]  # no part file left
