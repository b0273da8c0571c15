"""Files: atomic writes (a temporary file in the same folder, flushed, then renamed) and
their sha256."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_text", "sha256_file"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or the new file, never half."""
    atomic_write(path, text.encode("utf-8"))


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file (the standard library's ``hashlib.file_digest``)."""
    import hashlib  # OpenSSL's bindings: not loaded by the commands that only print

    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
