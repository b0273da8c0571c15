"""The bank's record files: each conversation of a table file's split (or piece) as one
compressed JSON record, so that ``corpus[i]`` reads and decodes a few hundred bytes instead
of a compressed row group of four tables (:mod:`convbank.model.records` makes the records).

A record file is derived from the unified tables and pinned to their generation: the build
writes one beside each ``conversations`` file (the same split and piece, its rows in the
same order), moves it in with them and names it in the manifest (``records`` of the
config's entry) with its size, sha256, row count and the sha256 of its index, as every
table file is. Layout::

    records/dataset=<d>/config=<c>/split=<s>/part-<sha256[:16]>.records

    "CBREC001"                                   8 bytes
    entries                                      zstd frames, back to back: the records of
                                                 the conversations, in row order, then
                                                 those of the distinct participants
    index  header "CBRIDX02", conversations,     little-endian uint64s
           participants, dictionary length,
           ids length, row groups
           dictionary                            zstd dictionary trained on the first batch
                                                 (none for a small file)
           ids                                   one zstd frame: the conversation ids, in
                                                 row order, a JSON list
           made from                             sha256 of the Parquet footer of each
                                                 unified table's file of the same piece
                                                 (32 zero bytes: none), in table order
           row groups                            uint64 a row group of the conversations
                                                 file: its rows
           offsets                               uint64 a entry, and the end of the last
           digests                               sha256[:16] of each entry as stored
    tail   index length (uint64), "CBRECEND"

The ids, the footers the file was made from and the row groups let a reader get a
conversation by id without opening a table file (nor importing ``pyarrow.parquet``): the
footers' digests equal to the manifest's say that the record file was made from the tables
the manifest names now (:attr:`Index.made_from`). Files of the first layout
("CBRIDX01", without them) are still read; their readers open the table files.

What a reader serves was vouched for by the manifest: it checks the file's size, then the
index (read through the file it keeps open) against the manifest's sha256 of it, then each
entry it reads against the digest the index holds for it, before decompressing it. A byte
changed anywhere is an error naming the file, never an answer: in an entry (its digest
differs), in the index (its sha256 differs from the manifest's), in the tail (the index is
not found where it says). The file is read with ``pread`` through a descriptor opened once,
not memory-mapped: a file truncated under a reader is then a short read (an error), not a
``SIGBUS`` that kills the process, and a file renamed over it changes nothing it reads.
An entry once checked and decompressed is kept (:class:`Kept`, :data:`KEPT_BYTES` for all
of a reader's files) and served again from those bytes; a file's pooled entries are read in
one ``pread`` once reading them one by one has cost as much (:data:`READ_WORTH`), each still
checked against its digest when it is used.
"""

from __future__ import annotations

import itertools
import os
import struct
import sys
import tempfile
import threading
import weakref
from array import array
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from convbank._forksafe import renew_after_fork
from convbank._wording import counted
from convbank.model import UNIFIED_TABLES
from convbank.model.records import RecordCodec
from convbank.store._kept import KEPT_BYTES, Kept
from convbank.store.manifest import RECORDS

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KEPT_BYTES", "RECORDS", "Index", "Kept", "RecordFile", "RecordWriter", "read_index"]

MAGIC = b"CBREC001"
END = b"CBRECEND"
_HEADER = struct.Struct("<8sQQQ")
_INDEX_MAGIC = b"CBRIDX01"
_HEADER2 = struct.Struct("<8sQQQQQ")
_INDEX_MAGIC2 = b"CBRIDX02"
_TAIL = struct.Struct("<Q8s")
DIGEST = 16
"""Bytes of an entry's sha256 kept in the index."""

LEVEL = 3
"""zstd level of the entries (measured on PEC's records: level 3 with a dictionary, 11 µs a
record written and 2-5 µs read)."""

DICTIONARY = 32 * 1024
"""The largest dictionary trained (a twentieth of the first batch's records, when smaller):
CaSiNo's record files take 912 KiB with it, 945 KiB with 64 KiB and a tenth."""

SAMPLES = 1 << 20
"""The most bytes of records a dictionary is trained on: every k-th record of the first
batch, so that they are at most this many. Training takes time in proportion to its samples:
CaSiNo's train records (4.7 MiB) trained in 76 ms, 1.1 MiB of them in 23 ms, and its file is
1.5% larger for it (822 KB against 809 KB; measured here, zstd level 3)."""

POOLING = 0.8
"""A file keeps each distinct participant once when fewer than 80% of its first batch's
participants are distinct (PEC: a speaker's persona in every conversation it speaks in);
otherwise each record holds its own (CaSiNo, ConvAI2: a pooled participant costs an entry
of its own, and compresses worse alone)."""


def _zstd() -> Any:
    import zstandard  # imported when a record file is written or read, not with convbank

    return zstandard


def _little(values: array[int]) -> array[int]:
    """``values`` (8-byte integers) little-endian, as the index stores them."""
    if sys.byteorder == "little":
        return values
    swapped = array(values.typecode, values)
    swapped.byteswap()
    return swapped


class RecordWriter:
    """Writes one record file: :meth:`add` each stored batch's unified tables in order, then
    :meth:`finish`. Distinct participants are kept once (their records spooled to a temporary
    file beside it and appended at the end); memory holds a 16-byte digest a participant.
    What it keeps a conversation until the index is written is packed: its 8-byte offset and
    16-byte digest, and its id as JSON text (before: a Python int and str each; a build of
    200,000 conversations of a plugin peaked at 246 MB with them, 213 MB packed, measured here)."""

    def __init__(self, path: Path) -> None:
        import hashlib  # here, not at the top: the commands that only print never hash

        self._sha = hashlib.sha256
        self.path = path
        self._file: BinaryIO = path.open("wb")
        self._file.write(MAGIC)
        self._at = len(MAGIC)
        self._offsets = array("Q", [self._at])
        self._digests = bytearray()
        self._pool: dict[bytes, int] = {}
        self._spool: BinaryIO = tempfile.TemporaryFile(dir=path.parent)  # noqa: SIM115 (closed by finish)
        self._spooled = array("Q")
        self._pool_digests = bytearray()
        self._compress: Callable[[bytes], bytes] | None = None
        self._dictionary = b""
        self._pooling: bool | None = None
        self._ids: list[bytes] = []
        """The conversation ids of each batch as JSON text, its brackets left out."""
        self.id_range: list[str] = []
        """The least and greatest id written so far: :meth:`Index.id_range`, not read back."""
        self.rows = 0

    def add(self, tables: Mapping[str, pa.Table], *, dataset: str, config: str, split: str) -> None:
        """Append the records of one stored batch (its four unified tables)."""
        codec = RecordCodec.of()
        rows = codec.rows(tables, dataset=dataset, config=config, split=split)
        if self._pooling is None:  # decided on the first batch
            seen = [p for _, participants in rows for p in participants]
            self._pooling = len(set(seen)) < POOLING * len(seen)
        records, fresh = [], []
        pool = self._pool
        for conversation, participants in rows:
            if not self._pooling:
                records.append(codec.encode_whole(conversation, participants))
                continue
            positions = []
            for record in participants:
                key = self._sha(record).digest()[:DIGEST]
                at = pool.get(key)
                if at is None:
                    at = pool[key] = len(pool)
                    fresh.append(record)
                positions.append(at)
            records.append(codec.encode(conversation, positions))
        compress = self._compress or self._start([*records, *fresh])
        out = []
        for record in records:
            data = compress(record)
            out.append(data)
            self._digests += self._sha(data).digest()[:DIGEST]
            self._at += len(data)
            self._offsets.append(self._at)
        self._file.write(b"".join(out))
        for record in fresh:
            data = compress(record)
            self._spool.write(data)
            self._spooled.append(len(data))
            self._pool_digests += self._sha(data).digest()[:DIGEST]
        self.rows += len(records)
        batch = tables["conversations"].column("conversation_id").to_pylist()
        if batch:
            self._ids.append(msgspec.json.encode(batch)[1:-1])
            self.id_range = [min(batch + self.id_range[:1]), max(batch + self.id_range[1:])]

    def _start(self, samples: list[bytes]) -> Callable[[bytes], bytes]:
        """The compressor, with a dictionary trained on the first batch's records when they
        are enough to train one (deterministic: the same batch gives the same file)."""
        zstd = _zstd()
        total = sum(map(len, samples))
        size = min(DICTIONARY, total // 20)
        dictionary = None
        if len(samples) >= 16 and size >= 2048:
            # every k-th record: about SAMPLES bytes (16 records at least), the same ones each time
            every = max(1, min(-(-total // SAMPLES), len(samples) // 16))
            try:
                # k and d given: zstd trains once (23 ms on 1 MiB of CaSiNo's records) instead of
                # searching for them (3.8 s with threads=1); the same samples give the same dictionary
                dictionary = zstd.train_dictionary(size, samples[::every], k=1024, d=8, level=LEVEL)
            except zstd.ZstdError:  # too few or too alike to train on: no dictionary
                dictionary = None
        self._dictionary = dictionary.as_bytes() if dictionary is not None else b""
        options: dict[str, Any] = {"write_content_size": True, "write_checksum": False}
        if dictionary is not None:
            options.update(dict_data=dictionary, write_dict_id=False)
        self._compress = zstd.ZstdCompressor(level=LEVEL, **options).compress
        return self._compress

    def finish(self, made_from: Mapping[str, str | None], groups: list[int]) -> int:
        """Append the participants and the index; close the file (the caller syncs it).
        ``made_from``: the footer digest (hex) of the file of each unified table the records
        were made from (None: that table has no file); ``groups``: the rows of each row group
        of the conversations file (they hold as many rows as the file has records, but in a
        build that refuses repeated ids: it never publishes the file). Returns the number of
        conversations."""
        self._spool.seek(0)
        while block := self._spool.read(1 << 20):
            self._file.write(block)
        for size in self._spooled:
            self._at += size
            self._offsets.append(self._at)
        self._spool.close()
        import numpy as np

        text = bytearray(b"[")  # the ids' JSON made in one buffer, each batch's let go as it is added
        self._ids.reverse()
        while self._ids:
            text += self._ids.pop()
            text += b"," if self._ids else b""
        text += b"]"
        ids = _zstd().ZstdCompressor(level=LEVEL).compress(text)
        del text
        header = (_INDEX_MAGIC2, self.rows, len(self._spooled), len(self._dictionary), len(ids), len(groups))
        parts = [  # written one by one: the arrays as they are, not copied into one index
            _HEADER2.pack(*header),
            self._dictionary,
            ids,
            b"".join(bytes.fromhex(made_from.get(t) or "00" * 32) for t in UNIFIED_TABLES),
            np.asarray(groups, dtype="<u8").tobytes(),
            _little(self._offsets),
            self._digests,
            self._pool_digests,
        ]
        size = sum(memoryview(p).nbytes for p in parts)
        for part in parts:
            self._file.write(part)
        self._file.write(_TAIL.pack(size, END))
        self._file.close()
        return self.rows

    def abandon(self) -> None:
        """Close the files after a failure (the staging folder is removed with them)."""
        for f in (self._spool, self._file):
            with suppress(OSError):
                f.close()


class Index:
    """A record file's parsed index: where each entry is and its digest; for files of the
    second layout, the ids (compressed), the footers the records were made from and the row
    groups (``made_from`` and ``groups`` are None in files of the first)."""

    def __init__(self, data: bytes, end: int) -> None:
        second = data[:8] == _INDEX_MAGIC2
        header = _HEADER2 if second else _HEADER
        if data[:8] not in (_INDEX_MAGIC, _INDEX_MAGIC2) or len(data) < header.size:
            raise ValueError("not a record file's index")
        _, self.rows, self.pooled, size, *more = header.unpack_from(data)
        ids, groups = more if second else (0, 0)
        entries = self.rows + self.pooled
        at = header.size
        made = 32 * len(UNIFIED_TABLES) if second else 0
        need = at + size + ids + made + 8 * groups + 8 * (entries + 1) + DIGEST * entries
        if len(data) != need:
            raise ValueError(f"an index of {counted(len(data), 'byte')} where its counts need {need:,}")
        self.dictionary = data[at : at + size]
        at += size
        self.id_bytes = data[at : at + ids]
        at += ids
        self.made_from: dict[str, bytes] | None = None
        self.groups: list[int] | None = None
        if second:
            self.made_from = {t: data[at + 32 * i : at + 32 * (i + 1)] for i, t in enumerate(UNIFIED_TABLES)}
            at += made
            self.groups = list(struct.unpack_from(f"<{groups}Q", data, at))
            at += 8 * groups
        import numpy as np

        offsets = np.frombuffer(data, dtype="<u8", count=entries + 1, offset=at)
        if offsets[0] != len(MAGIC) or offsets[-1] != end or (entries and (np.diff(offsets) == 0).any()):
            raise ValueError("entries that do not fill the file")
        if entries and (offsets[1:] < offsets[:-1]).any():
            raise ValueError("entries out of order")
        # read in place where the machine is little-endian, as the file: lists of the offsets
        # of the 19 files of a PEC of 300,000 (22,000 each) took 19 ms to make under cProfile,
        # for the 11,000 that a cold read of 1,000 conversations uses (measured here)
        native = sys.byteorder == "little"
        self.offsets: Sequence[int] = (
            memoryview(data)[at : at + 8 * (entries + 1)].cast("Q") if native else offsets.tolist()
        )
        self.digests = data[at + 8 * (entries + 1) :]

    def ids(self) -> list[str]:
        """The conversation ids in row order ([] in a file of the first layout); a
        ``ValueError`` when they do not decode to as many strings as the file has rows."""
        if self.groups is None:
            return []
        try:
            found = msgspec.json.decode(_zstd().ZstdDecompressor().decompress(self.id_bytes), type=list[str])
        except Exception as exc:  # bytes the index's sha256 vouched for, that do not decode
            raise ValueError(str(exc)) from exc
        if len(found) != self.rows:
            raise ValueError(f"{counted(len(found), 'id')} for {counted(self.rows, 'record')}")
        return found

    def id_range(self) -> list[str]:
        """The least and the greatest id ([] for none, or a file of the first layout): what
        the manifest's record entry holds as ``id_range``."""
        ids = self.ids()
        return [min(ids), max(ids)] if ids else []


def read_index(f: BinaryIO) -> tuple[Index, str]:
    """A record file's index, parsed, and the sha256 of its bytes (the index and the tail),
    from an open file. A ``ValueError`` when the file does not end like a record file."""
    size = f.seek(0, os.SEEK_END)
    if size < len(MAGIC) + _TAIL.size + _HEADER.size:
        raise ValueError(f"{counted(size, 'byte')}, too short for a record file")
    f.seek(size - _TAIL.size)
    tail = f.read(_TAIL.size)
    length, end = _TAIL.unpack(tail)
    if end != END or length > size - len(MAGIC) - _TAIL.size:
        raise ValueError("not a record file (no index at its end)")
    f.seek(size - _TAIL.size - length)
    data = f.read(length)
    import hashlib

    digest = hashlib.sha256(data + tail).hexdigest()
    return Index(data, size - _TAIL.size - length), digest


POOL_READ = 32 * 2**20
"""The most bytes of pooled entries (PEC's speakers) a :class:`RecordFile` reads at once,
instead of one read a speaker (4.5 reads of a PEC conversation's 5.5)."""

READ_WORTH = 16 * 1024
"""The bytes one ``pread`` of a pooled entry is worth: the pool is read at once when the
entries read one by one would have cost as much as reading it (measured here: a PEC file's
pool of 782 KiB in 34 µs, one entry in 0.73 µs, 47 reads; a synthetic PEC of 30,000
conversations pools 0.8 MiB a file of 12,500), so a sparse reader of a bank of many files
reads no pool it barely uses."""


_FILES = itertools.count()
"""A number for each record file opened, its part of the keys in a shared :class:`Kept`."""


class RecordFile:
    """A record file open for reading, its index checked (by the caller, against the
    manifest): :meth:`conversation` serves a row, each entry read checked against its
    digest. Safe to share between threads (each has its own decompressor); after
    :meth:`close` the descriptor is closed once no reader holds the file.
    ``damage(problem)`` is the error to raise for a problem found while reading (it names
    the file). Entries once checked and decompressed are kept
    in ``kept`` (shared by the files of a reader; by default one of the file's own)."""

    def __init__(
        self, fd: int, index: Index, damage: Callable[[str], Exception], kept: Kept | None = None
    ) -> None:
        import hashlib

        self._sha = hashlib.sha256
        self._fd = fd
        weakref.finalize(self, os.close, fd)  # when nothing can read through it any more
        self.index = index
        self.rows = index.rows
        self._damage = damage
        self._local = threading.local()
        self._codec = RecordCodec.of()
        self.kept = kept if kept is not None else Kept()
        self._number = next(_FILES)
        self._lock = threading.Lock()
        renew_after_fork(self, _lock=threading.Lock)
        self._pooled: bytes | None = None
        self._pooled_reads = 0
        self._ids: list[str] | None = None
        self._id_rows: dict[str, int] | None = None

    def close(self) -> None:
        """Let the file go (idempotent): its descriptor is closed once no read uses it, when
        the last reference goes (at once where none is reading). Never while another thread
        reads through it: that read would fail on a closed descriptor, or read whatever file
        took its number, and say the bank is damaged (a corpus closed under its readers).
        So there is nothing to do here: the finalizer set at opening closes it."""

    def _decompressor(self) -> Any:
        found = getattr(self._local, "decompress", None)
        if found is None:
            zstd = _zstd()
            data = self.index.dictionary
            options = {"dict_data": zstd.ZstdCompressionDict(data)} if data else {}
            found = self._local.decompress = zstd.ZstdDecompressor(**options).decompress
        return found

    def entry(self, k: int) -> bytes:
        """Entry ``k``, read, checked against its digest and decompressed (or as it was
        the last time, while kept). One function, without helpers on its way: a PEC
        conversation reads 5.5 entries."""
        key = (self._number, k)
        kept = self.kept.get(key)
        if kept is not None:
            return kept
        offsets = self.index.offsets
        start = offsets[k]
        size = offsets[k + 1] - start
        pool = (self._pooled or self._pool()) if k >= self.rows else None
        if pool is not None:
            at = start - offsets[self.rows]
            data = pool[at : at + size]
        else:
            data = self._pread(size, start)
        if len(data) != size:
            raise self._damage(f"truncated (entry {k:,} is cut short)")
        at = k * DIGEST
        if self._sha(data).digest()[:DIGEST] != self.index.digests[at : at + DIGEST]:
            raise self._damage(f"corrupt (entry {k:,} differs from its digest in the index)")
        decompress = getattr(self._local, "decompress", None) or self._decompressor()
        try:
            found: bytes = decompress(data)
        except Exception as exc:  # a digest that matches bytes that do not decompress
            raise self._damage(f"unreadable (entry {k:,}: {exc})") from exc
        self.kept.put(key, found)
        return found

    def _pread(self, size: int, start: int) -> bytes:
        try:
            return os.pread(self._fd, size, start)
        except OSError as exc:
            raise self._damage(f"unreadable ({exc.strerror})") from exc

    def _pool(self) -> bytes | None:
        """The pooled entries' bytes, read at once when the reads of them one by one have
        cost as much (:data:`READ_WORTH`) and they are at most :data:`POOL_READ` (None until
        then: each is read alone)."""
        self._pooled_reads += 1
        offsets = self.index.offsets
        start, end = offsets[self.rows], offsets[-1]
        if self._pooled_reads * READ_WORTH < end - start or end - start > POOL_READ:
            return None
        with self._lock:
            if self._pooled is None:
                self._pooled = self._pread(end - start, start)
        return self._pooled

    def ids(self) -> list[str] | None:
        """The conversation ids in row order, decoded once (None in a file of the first
        layout, which has none)."""
        if self._ids is None and self.index.groups is not None:
            try:
                self._ids = self.index.ids()
            except ValueError as exc:
                raise self._damage(f"unreadable (its ids: {exc})") from exc
        return self._ids

    def id_rows(self) -> dict[str, int] | None:
        """``{conversation_id: row}`` of this file, made once (None as :meth:`ids`)."""
        if self._id_rows is None and (ids := self.ids()) is not None:
            self._id_rows = {cid: row for row, cid in enumerate(ids)}
        return self._id_rows

    def conversation(self, row: int) -> Any:
        """The :class:`~convbank.model.Conversation` at row ``row`` (a new object each time)."""
        if not 0 <= row < self.rows:
            raise IndexError(f"row {row} of a record file of {self.rows:,}")
        codec = self._codec
        try:
            conversation, pooled = codec.decode(self.entry(row))
            if pooled is None:
                return conversation
            base = self.rows
            participants = [codec.participant(self.entry(base + p)) for p in pooled]
        except (ValueError, IndexError) as exc:  # msgspec's errors are ValueErrors
            raise self._damage(f"unreadable (row {row:,}: {exc})") from exc
        return codec.attach(conversation, participants)
