"""Writing a file so that it is either complete or not there: through a temporary file in the same
folder, checked, then renamed over the target. A failure leaves the old file as it was and says
why in one line."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from core.errors import OutputError


def pdf_path(path: Path) -> Path:
    """The PDF a chosen name means: the name itself with a .pdf suffix, else the name with .pdf added (a
    chosen "report.v2" writes report.v2.pdf, not report.pdf; its CSV is written beside it)."""
    return path if path.suffix.lower() == ".pdf" else path.with_name(path.name + ".pdf")


def check_target(path: Path) -> None:
    """Refuse a target that cannot be written whole: a folder, a device or other non-regular file,
    a read-only file, a missing folder, a name the file system refuses (too long)."""
    try:
        _check_target(path)
    except OSError as exc:  # stat itself failed: a name past 255 bytes, a loop of links
        raise OutputError(
            f"{path.name[:60]}{'…' if len(path.name) > 60 else ''} cannot be written: {_reason(exc)}"
        ) from None


def _check_target(path: Path) -> None:
    if path.is_dir():
        raise OutputError(f"{path} is a folder; give a file name")
    if path.exists():
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise OutputError(f"{path} is not a regular file; give a file name in a folder")
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            raise OutputError(f"{path} is read-only; it was left as it is")
    if not path.parent.is_dir():
        raise OutputError(f"{path} cannot be written: the folder {path.parent} does not exist")


def write_atomically(path: Path, write: Callable[[Path], None], verify: Callable[[Path], None] | None = None) -> None:
    """Call ``write(tmp)`` for a temporary file beside ``path``, ``verify(tmp)`` (raising OutputError
    with the reason when the file is incomplete), then rename it over ``path``. A link is written through:
    the file it points to is replaced, the link kept (renaming over the link replaced the link itself; run
    as root, ``--pdf /dev/stdout`` replaced the system's /dev/stdout with a PDF)."""
    path = Path(os.path.realpath(path))
    check_target(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{path} cannot be written: {_reason(exc)}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        if verify is not None:
            verify(tmp)
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"{path} cannot be written: {_reason(exc)}; it was left as it was") from None
    except OutputError as exc:
        raise OutputError(f"{path} cannot be written: {exc}; it was left as it was") from None
    finally:
        tmp.unlink(missing_ok=True)


def _mode_for(path: Path) -> int:
    """The file's own permissions when it exists, else what a new file gets under the umask."""
    if path.exists():
        return stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied (is the folder or the disk read-only?)"
    return exc.strerror or str(exc)
