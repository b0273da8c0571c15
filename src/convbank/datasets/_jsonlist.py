"""A dataset whose every split is one JSON list of records in one file (CaSiNo, CCPE-M, the
ConvAI2 rounds): the reading, layout measuring and byte-exact writing they share."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from convbank.datasets._base import Dataset, SourceFile, SourcePaths
from convbank.datasets._json import decode_json, no_records
from convbank.datasets._layout import LAYOUT_KEY, Encoder, Frame, compact, frame_of, measure, write_framed
from convbank.model import Part

__all__ = ["JsonListDataset"]

_KEPT = 64
"""Layouts measured by :meth:`JsonListDataset.read` kept for :meth:`~JsonListDataset.file_meta`."""


class JsonListDataset(Dataset):
    """A :class:`Dataset` whose split is one published JSON list of ``raw_type`` records.

    A subclass names the file of a split (:meth:`source_name`), the publisher's record
    encoding (:meth:`encoder`, Python's default ``json.dumps`` unless said otherwise) and the
    frame a source export falls back to when a split's layout was not measured
    (:meth:`default_frame`); :meth:`check_records` adds checks the types cannot express.
    """

    format_name: ClassVar[str]
    """The format's name in error messages (``"not the CaSiNo format as published"``)."""

    @abstractmethod
    def source_name(self, part: Part) -> str:
        """The published name of a stored split's file."""

    @abstractmethod
    def default_frame(self, config: str) -> Frame:
        """The text around and between a config's records when no layout was measured."""

    def encoder(self, config: str) -> Encoder:
        """How the publisher encodes one record of a config."""
        return compact

    def check_records(self, path: Path, records: list[Any]) -> None:
        """Raise a one-line :class:`~convbank.errors.FormatError` for what decoding into the
        types lets through; nothing by default."""

    def files_for(self, part: Part) -> list[SourceFile]:
        """The split's one file."""
        self.parts(*part)  # checks both names
        return [self.file(self.source_name(part))]

    def read(self, paths: SourcePaths, part: Part) -> Iterator[Any]:
        """Decode the split's file into typed records. Its layout is measured from the same
        bytes and records while they are at hand (what :meth:`file_meta` then returns
        without reading and decoding the file a second time: CaSiNo's build spent 0.11 s
        of 0.45 s doing so, measured here)."""
        path = paths[self.source_name(part)]
        data = path.read_bytes()
        records = self.records(paths, part, data)
        layouts = self._layouts()
        layouts[_identity(path, part)] = self._measure(data, records, part)
        while len(layouts) > _KEPT:  # read without a build (read_raw): the oldest go
            del layouts[next(iter(layouts))]
        yield from records

    def _layouts(self) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The layouts :meth:`read` measured that :meth:`file_meta` has not taken yet."""
        found: dict[tuple[Any, ...], dict[str, Any]] = self.__dict__.setdefault("_measured", {})
        return found

    def _measure(self, data: bytes, records: list[Any], part: Part) -> dict[str, Any]:
        builtins = (msgspec.to_builtins(r) for r in records)
        return measure(data.decode("utf-8"), builtins, self.encoder(part.config), [])

    def records(self, paths: SourcePaths, part: Part, data: bytes | None = None) -> list[Any]:
        """The split's records, decoded from its file (or from its bytes, ``data``)."""
        path = paths[self.source_name(part)]
        records: list[Any] = decode_json(path, list[self.raw_type], self.format_name, data)  # type: ignore[name-defined]
        if not records:
            raise no_records(path, self.format_name)
        self.check_records(path, records)
        return records

    def file_meta(self, paths: SourcePaths, part: Part) -> dict[str, Any]:
        """The file's measured layout (the records' frame), for a byte-exact source export:
        the one :meth:`read` measured of the same file (unchanged since: the same inode,
        size and time of change), else measured now."""
        path = paths[self.source_name(part)]
        layout = self._layouts().pop(_identity(path, part), None)
        if layout is None:
            data = path.read_bytes()
            layout = self._measure(data, self.records(paths, part, data), part)
        return {LAYOUT_KEY: layout}

    def write_source(
        self,
        records: Iterable[Any],
        part: Part,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write the split's file under its published name, in the publisher's layout (byte
        for byte when the split's layout was measured at build)."""
        frame = frame_of(file_meta.get(LAYOUT_KEY), self.default_frame(part.config))
        builtins = (msgspec.to_builtins(r) for r in records)
        return write_framed(directory / self.source_name(part), builtins, self.encoder(part.config), frame)


def _identity(path: Path, part: Part) -> tuple[Any, ...]:
    """A source file as :meth:`JsonListDataset.read` saw it: the same path, inode, size and
    time of change mean the same bytes (a verified source is a private copy, never rewritten)."""
    st = path.stat()
    return (str(path), st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns, part)
