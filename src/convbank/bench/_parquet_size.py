"""What reading a Parquet file will cost, from the file's pages rather than its footer.

A Parquet footer says how large each row group is uncompressed, but nothing checks that it
says true: a file of 10 KB whose footer claims 100 bytes may hold a page that unpacks to
2 GiB. The reader allocates what each page's own header says (``uncompressed_page_size``),
so :func:`unpacked_bytes` walks the page headers of every column chunk (Thrift's compact
encoding, read here without a Thrift library) and sums those, and 8 bytes for each value a
page says it holds: the bytes reading will unpack, found before any page is unpacked. What
a batch read holds once its dictionaries' values are repeated as its rows take them
(Python's values of it do) is :func:`held_bytes`.
"""

from __future__ import annotations

from typing import Any, BinaryIO

__all__ = ["UnreadablePagesError", "held_bytes", "unpacked_bytes"]

_HEADER_MOST = 16 << 20
"""The longest page header read (what Arrow's reader allows by default)."""


_PER_VALUE = 8
"""The bytes a value of a page costs read at least, whatever its page holds of it (an offset,
an index): a page may say a billion nulls in a few bytes."""


class UnreadablePagesError(ValueError):
    """A column chunk whose page headers cannot be read (truncated, not Thrift)."""


class _Compact:
    """A reader of Thrift's compact encoding over ``data``, enough to skip any value and to
    take a struct's top-level 32-bit integers."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise UnreadablePagesError("a page header runs past its bytes")
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise UnreadablePagesError("a page header's number runs past 64 bits")

    def skip(self, kind: int, depth: int, in_list: bool = False) -> None:
        """Skip a value of the compact type ``kind`` (a boolean in a list takes a byte)."""
        if depth > 32:
            raise UnreadablePagesError("a page header nests more than 32 deep")
        if kind in (1, 2):
            self.pos += 1 if in_list else 0
        elif kind == 3:
            self.pos += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.pos += 8
        elif kind == 8:
            size = self.varint()  # read first: ``self.pos += self.varint()`` would drop its bytes
            self.pos += size
        elif kind in (9, 10):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(size):
                self.skip(head & 0x0F, depth + 1, in_list=True)
        elif kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1, in_list=True)
                self.skip(types & 0x0F, depth + 1, in_list=True)
        elif kind == 12:
            self.struct(depth + 1)
        else:
            raise UnreadablePagesError(f"a page header holds a value of unknown type {kind}")
        if self.pos > len(self.data):
            raise UnreadablePagesError("a page header runs past its bytes")

    def struct(self, depth: int = 0) -> dict[int, Any]:
        """Read a struct; its 32- and 64-bit integers and its structs (as theirs) by field id."""
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, kind = head >> 4, head & 0x0F
            if delta:
                last += delta
            else:
                raw = self.varint()
                last = (raw >> 1) ^ -(raw & 1)
            if kind in (5, 6):
                raw = self.varint()
                fields[last] = (raw >> 1) ^ -(raw & 1)
            elif kind == 12:
                fields[last] = self.struct(depth + 1)
            else:
                self.skip(kind, depth)


def _chunk_bytes(f: BinaryIO, start: int, length: int, per_value: int = _PER_VALUE) -> int:
    """The bytes the pages of one column chunk (``length`` bytes from ``start``) unpack to,
    ``per_value`` bytes at least for each value a page holds."""
    total, pos, end = 0, start, start + length
    while pos < end:
        reader, header = _header_at(f, pos, end - pos)
        unpacked, packed = header.get(2), header.get(3)
        if not isinstance(unpacked, int) or not isinstance(packed, int) or unpacked < 0 or packed < 0:
            raise UnreadablePagesError("a page header without its sizes")
        page: dict[int, Any] = next((header[k] for k in (5, 8, 7) if isinstance(header.get(k), dict)), {})
        values = page.get(1, 0)  # its values (nulls too), each an offset or an index at least
        total += unpacked + per_value * (values if isinstance(values, int) and values > 0 else 0)
        pos += reader.pos + packed
    return total


def _header_at(f: BinaryIO, pos: int, room: int) -> tuple[_Compact, dict[int, Any]]:
    """The page header at ``pos`` (and its reader, whose ``pos`` is its length): read 4 KiB
    first, then twice as much while it runs past them, up to :data:`_HEADER_MOST` or ``room``."""
    size = 4096
    while True:
        f.seek(pos)
        reader = _Compact(f.read(min(size, _HEADER_MOST, max(room, 0))))
        try:
            return reader, reader.struct()
        except UnreadablePagesError:
            if size >= min(_HEADER_MOST, room):
                raise
            size *= 2


def _value_bytes(column: Any) -> int:
    """What one value of a column (its ``ColumnSchema``) holds read at least: a fixed-length
    one its length (a dictionary's one value taken by every row is that many times it)."""
    if column.physical_type == "FIXED_LEN_BYTE_ARRAY":
        return max(_PER_VALUE, int(column.length or 0))
    return 12 if column.physical_type == "INT96" else _PER_VALUE


def unpacked_bytes(f: BinaryIO, metadata: Any) -> int:
    """The bytes every page of the Parquet file ``f`` (its ``pyarrow`` ``FileMetaData``)
    unpacks to, read from the pages' own headers; :class:`UnreadablePagesError` where one cannot
    be read."""
    total = 0
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            start = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
            if start is None or start < 0 or column.total_compressed_size < 0:
                raise UnreadablePagesError("a column chunk without its place in the file")
            per_value = _value_bytes(metadata.schema.column(c))
            total += _chunk_bytes(f, start, column.total_compressed_size, per_value)
    return total


def held_bytes(array: Any) -> int:
    """The bytes a pyarrow ``array`` holds with each dictionary's values repeated as its rows
    take them (a dictionary of one value of 2 MB taken by 9,000 rows holds 18 GB once its
    values are Python's), through lists, maps and structs; counted from the indices, never
    by repeating the values."""
    import pyarrow as pa

    kind = array.type
    if pa.types.is_dictionary(kind):
        return _dictionary_bytes(array)
    if pa.types.is_struct(kind):
        return sum(held_bytes(field) for field in array.flatten()) + len(array) // 8
    if isinstance(array, pa.MapArray):  # a list of key-item pairs, which flatten() does not take
        return int(array.offsets.nbytes) + held_bytes(array.keys) + held_bytes(array.items)
    if isinstance(array, (pa.ListArray, pa.LargeListArray)):
        return int(array.offsets.nbytes) + held_bytes(array.flatten())
    if isinstance(array, pa.FixedSizeListArray):
        return held_bytes(array.flatten())
    return int(array.nbytes)


def _dictionary_bytes(array: Any) -> int:
    """:func:`held_bytes` of a dictionary array: its indices, and the size of the value each
    takes (a text's or bytes' length; any other value counted as the whole dictionary)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = array.dictionary
    if not len(values):
        return int(array.indices.nbytes)
    if (
        pa.types.is_binary(values.type)
        or pa.types.is_string(values.type)
        or pa.types.is_large_binary(values.type)
        or pa.types.is_large_string(values.type)
    ):
        sizes = pc.binary_length(values).cast(pa.int64()).fill_null(0)
    else:
        sizes = pa.array([held_bytes(values)] * len(values), pa.int64())
    taken = pc.sum(pc.take(sizes, array.indices.fill_null(0))).as_py()
    return int(array.indices.nbytes) + int(taken or 0)
