"""Standard streams the command was started without (``convbank stats >&-``): Python leaves
``sys.stdout`` or ``sys.stderr`` as ``None`` when its descriptor is closed, and the first
``print``, ``isatty()`` or ``sys.stdout.buffer`` of a command was an ``AttributeError``
traceback. Each missing one is given a stand-in: standard output one whose first write is
the command's one-line error (exit 1), where a full disk's is; standard error one that takes
what is said and drops it (the exit code still tells).

Example: ``stand_in_for_closed_streams()`` first in the script's ``main()``.
"""

from __future__ import annotations

import io
import os
import sys

from convbank.errors import ConvbankError

__all__ = ["ClosedOutputError", "stand_in_for_closed_streams"]


class ClosedOutputError(ConvbankError):
    """The command has something to print and standard output is closed (exit 1)."""


class _Closed(io.RawIOBase):
    """Standard output that was closed: it may be asked about, never written to. Its first
    write raises; later ones (the interpreter's last flush of what is still buffered) drop
    their bytes, so that the error is said once."""

    def __init__(self) -> None:
        super().__init__()
        self.said = False

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        if self.said:
            return len(memoryview(data))  # type: ignore[arg-type]
        self.said = True
        raise ClosedOutputError(
            "standard output is closed (the command was started with 1>&-); "
            "give it a file or /dev/null to write to"
        )


def stand_in_for_closed_streams() -> None:
    """Give a closed ``sys.stdout`` the stand-in that says so on its first write, and a closed
    ``sys.stderr`` one that writes to ``os.devnull``."""
    if sys.stdout is None:
        # buffered as a file is: what is printed fails where a full disk's would, at a flush
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Closed()), encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the process's, for its life)
