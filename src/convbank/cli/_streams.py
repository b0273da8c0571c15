"""Standard streams the command was started without (``convbank stats >&-``, ``convbank
query - <&-``): Python leaves ``sys.stdout``, ``sys.stdin`` or ``sys.stderr`` as ``None``
when its descriptor is closed, and the first ``print``, ``isatty()`` or ``.buffer`` of a
command was an ``AttributeError`` traceback. Each missing one is given a stand-in: standard
output one whose first write is the command's one-line error (exit 1), where a full disk's
is; standard input one whose first read is (exit 2, as input that cannot be read); standard
error one that takes what is said and drops it (the exit code still tells).

Example: ``stand_in_for_closed_streams()`` first in the script's ``main()``.
"""

from __future__ import annotations

import io
import os
import sys

from convbank.errors import ConvbankError

__all__ = ["ClosedInputError", "ClosedOutputError", "stand_in_for_closed_streams"]


class ClosedOutputError(ConvbankError):
    """The command has something to print and standard output is closed (exit 1)."""


class ClosedInputError(ConvbankError):
    """The command reads standard input and it is closed (exit 2, input that cannot be read)."""

    exit_code = 2


class _Closed(io.RawIOBase):
    """A standard stream that was closed: it may be asked about, never read or written. Its
    first read or write raises ``error``; later writes (the interpreter's last flush of what
    is still buffered) drop their bytes, so that the error is said once."""

    def __init__(self, error: ConvbankError, *, reads: bool) -> None:
        super().__init__()
        self.error: ConvbankError | None = error
        self.reads = reads

    def readable(self) -> bool:
        return self.reads

    def writable(self) -> bool:
        return not self.reads

    def readinto(self, buffer: object) -> int:
        self._say()
        return 0

    def write(self, data: object) -> int:
        self._say()
        return len(memoryview(data))  # type: ignore[arg-type]

    def _say(self) -> None:
        error, self.error = self.error, None
        if error is not None:
            raise error


def stand_in_for_closed_streams() -> None:
    """Give a closed ``sys.stdout`` or ``sys.stdin`` the stand-in that says so where it is
    first used, and a closed ``sys.stderr`` one that writes to ``os.devnull``."""
    if sys.stdout is None:
        out = ClosedOutputError(
            "standard output is closed (the command was started with 1>&-); "
            "give it a file or /dev/null to write to"
        )
        # buffered as a file is: what is printed fails where a full disk's would, at a flush
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Closed(out, reads=False)), encoding="utf-8")
    if sys.stdin is None:
        given = ClosedInputError(
            "standard input is closed (the command was started with 0<&-); "
            "give the input as an argument, a file, or through a pipe"
        )
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Closed(given, reads=True)), encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the process's, for its life)
