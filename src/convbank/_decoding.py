"""A download's body decoded as its ``Content-Encoding`` says, each coding read to its end.

urllib3 decodes ``gzip`` and ``deflate`` without checking that the stream ends: a body cut
short inside its compressed stream (a transfer that was itself complete) decoded to what came
before the cut, and a file of no published size kept it and recorded its checksum. Here each
coding is a :class:`Stream` that yields its decoded bytes a bounded piece at a time (a
``gzip`` bomb never inflates in memory) and, at the body's end, :func:`finish` refuses a stream
that did not end. Only the codings asked for (:data:`ASKED`) are read: another is refused, never
taken as the file.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["ASKED", "EncodingError", "Stream", "decoded", "finish", "streams"]

ASKED = "gzip, deflate"
"""The ``Accept-Encoding`` a download sends: the codings :class:`Stream` reads."""

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_MOST_CODINGS = 5
_PIECE = 1 << 16


class EncodingError(Exception):
    """A body that is not what its ``Content-Encoding`` says, in one line."""


class Stream:
    """One coding's decoder: a ``gzip`` body of one or more members, or a ``deflate`` body
    (zlib-wrapped, or raw as some servers send it)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._obj = zlib.decompressobj(_WBITS[coding])
        self._trying: bytes | None = b"" if coding == "deflate" else None  # zlib's head, to retry raw

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The bytes ``data`` decodes to, in pieces of at most 64 KiB."""
        while data:
            if self._obj.eof:  # a gzip body's next member; nothing may follow a deflate stream
                if self.coding == "deflate":
                    raise EncodingError("the deflate body goes on after its stream ends")
                data = data.lstrip(b"\0")  # zeros padding a member, as Python's gzip reads them
                if not data:
                    return
                self._obj = zlib.decompressobj(_WBITS[self.coding])
            try:
                out = self._obj.decompress(data, _PIECE)
            except zlib.error as exc:
                if self._trying is None:
                    raise EncodingError(f"the {self.coding} body cannot be decoded ({exc})") from exc
                data, self._trying = self._trying + data, None  # a raw deflate stream
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            if self._trying is not None:
                self._trying = None if len(self._trying) + len(data) >= 2 else self._trying + data
            data = self._obj.unconsumed_tail or (self._obj.unused_data if self._obj.eof else b"")
            if out:
                yield out

    @property
    def ended(self) -> bool:
        """Whether the stream (its last member) has ended."""
        return self._obj.eof


def streams(header: str) -> list[Stream]:
    """The decoders of a ``Content-Encoding`` header, in the order to apply them (the last
    coding applied first); ``identity`` is none."""
    codings = [c.strip().lower() for c in header.split(",") if c.strip().lower() not in ("", "identity")]
    if len(codings) > _MOST_CODINGS:
        raise EncodingError(f"the body has {len(codings)} content codings, more than {_MOST_CODINGS}")
    for coding in codings:
        if coding not in _WBITS:
            raise EncodingError(f"the body is in the {coding!r} coding, not one asked for ({ASKED})")
    return [Stream(coding) for coding in reversed(codings)]


def decoded(chain: Sequence[Stream], data: bytes) -> Iterator[bytes]:
    """What ``data`` decodes to through ``chain``, a bounded piece at a time."""
    if not chain:
        if data:
            yield data
        return
    for piece in chain[0].feed(data):
        yield from decoded(chain[1:], piece)


def finish(chain: Sequence[Stream], got: int) -> None:
    """An :class:`EncodingError` where a coding's stream had not ended with the body."""
    for stream in chain:
        if not stream.ended:
            raise EncodingError(
                f"the {stream.coding} body ends before its stream does, after {got:,} decoded bytes"
            )
