"""CSV rows and JSON as convbank writes them, one writer of each for every command.

:class:`CsvRows` is the one CSV writer (``export --format csv``, ``query --format csv``, the
viewer's CSV download): RFC 4180 quoting of every field holding a comma, a quote, a line
feed *or a bare carriage return* (Python's :mod:`csv` leaves a bare CR unquoted when the line
ends in ``\\n``, so a spreadsheet splits the row there), and, where asked, the formula guard
against CSV injection. :func:`json_bytes` is the one JSON encoder for what is printed
(``query --format json/ndjson``, ``stats --json``, ``raw``, the viewer's ``?format=json``):
the C1 controls, the bidi controls and the line separators U+2028/U+2029 written as
``\\uXXXX`` escapes, the same JSON.
"""

from __future__ import annotations

import base64
import codecs
import csv
import decimal
import math
import re
from collections.abc import Callable, Iterable
from typing import IO, Any

import msgspec

from convbank._controls import BIDI_CONTROLS, LINE_SEPARATORS
from convbank._wording import article

__all__ = [
    "BIDI_CONTROLS",
    "CsvRows",
    "base64_of_bytes",
    "bidi_closed",
    "content_json",
    "foreign_encoding",
    "json_bytes",
    "json_line",
    "link_url",
    "spreadsheet_safe",
    "terminal_safe",
    "utf8_text",
]


_ESCAPED = re.compile(
    b"|".join(
        [
            rb"\xc2[\x80-\x9f]",
            *(re.escape(chr(c).encode("utf-8")) for c in (*BIDI_CONTROLS, *LINE_SEPARATORS)),
        ]
    )
)
"""C1 controls (U+0080-U+009F), the bidi controls and the line separators, as UTF-8 (no
other character's bytes contain these sequences)."""


def terminal_safe(data: bytes) -> bytes:
    """UTF-8 JSON with the C1 controls (U+0080-U+009F), the bidi controls and U+2028/U+2029
    written as ``\\u`` escapes: the same JSON, that no terminal obeys and no line splitter
    cuts.

    Example: ``terminal_safe('"\\u202e"'.encode()) == b'"\\\\u202e"'``."""
    return _ESCAPED.sub(lambda m: b"\\u%04x" % ord(m.group().decode("utf-8")), data)


_LINE_ENDS = re.compile(rb"\xe2\x80[\xa8\xa9]|\xc2\x85")
"""U+2028, U+2029 and U+0085 (NEL) as UTF-8: where Python's ``str.splitlines()`` (and some
JavaScript tools) end a line, though JSON allows them raw in a string."""


def json_line(data: bytes) -> bytes:
    """One line of a JSON-lines file: UTF-8 JSON ``data`` with U+2028, U+2029 and U+0085
    written as ``\\u`` escapes (the same JSON, read back exactly) and a final newline, so that
    a line is a line for every reader; what each JSON-lines writer of convbank writes (the
    exports, predictions, an import's rejects, a source export).

    Example: ``json_line('"a\\u2028b\\x85"'.encode()) == b'"a\\\\u2028b\\\\u0085"\\n'``."""
    if b"\xe2\x80" in data or b"\xc2\x85" in data:
        data = _LINE_ENDS.sub(lambda m: b"\\u%04x" % ord(m.group().decode("utf-8")), data)
    return data + b"\n"


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: each lone surrogate (a name the system gave that is not
    UTF-8, ``"\\udcff"`` for the byte ``0xff``) as U+FFFD, the replacement character. For text
    convbank keeps and reads back (a saved run's name).

    Example: ``utf8_text(os.fsdecode(b"p\\xff.jsonl")) == "p\\ufffd.jsonl"``."""
    return _SURROGATE.sub("\ufffd", text)


def _other(value: Any) -> Any:
    """What msgspec does not write itself: a subclass of ``datetime`` (pandas' ``Timestamp``,
    which pyarrow gives for a ``TIMESTAMP_NS``) as its ISO text, nanoseconds and all."""
    import datetime

    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


_json = msgspec.json.Encoder(decimal_format="number", enc_hook=_other)
"""DuckDB's HUGEINT sums and DECIMALs are numbers, as they are in SQL."""


def json_bytes(data: Any) -> bytes:
    """``data`` as compact JSON, :func:`terminal_safe`. A string holding a lone surrogate (a
    file name that is not UTF-8, as Python decodes it: ``b"\\xff"`` as ``"\\udcff"``) is written
    as JSON escapes, ``"\\udcff"``, as Python's :mod:`json` writes it and reads it back, and
    so is all the text of that document (``\\u00e9``): the same JSON, never an error.

    Example: ``json_bytes({"x": 1}) == b'{"x":1}'``;
    ``json_bytes(["\\udcff", "é"]) == b'["\\\\udcff","\\\\u00e9"]'``."""
    try:
        return terminal_safe(_json.encode(data))
    except UnicodeEncodeError:  # UTF-8 cannot hold a lone surrogate; a JSON escape can
        import json

        plain = _finite(msgspec.to_builtins(data, builtin_types=(decimal.Decimal,), enc_hook=_other))
        return json.dumps(plain, separators=(",", ":"), default=_number).encode("ascii")


def content_json(content: Any) -> str:
    """A chat message's content as one text, the one way every view writes it (the ``role:
    content`` lines a tokenizer reads, the ``chat`` column of ``to_hf``): a text as it is,
    typed parts (or anything but a text) as their :func:`json_bytes` text, never Python's repr;
    a null content (or none) the empty text its turn holds, never the word ``null``.

    Example: ``content_json([{"type": "text", "text": "a\u2028"}])
    == '[{"type":"text","text":"a\\u2028"}]'``."""
    if content is None:
        return ""
    return content if isinstance(content, str) else json_bytes(content).decode()


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities null, as :mod:`msgspec` writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def _number(value: Any) -> Any:
    """A DECIMAL as :mod:`json` can write it: an int where it is whole, else a float."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def base64_of_bytes(value: Any) -> Any:
    """A CSV cell of bytes (a BLOB) as base64 text, as every JSON writer writes it (so that a
    cell never reads ``b'\\xff'``, Python's notation); other values as they are.

    Example: ``base64_of_bytes(b"\\xff\\x00a") == "/wBh"``; ``base64_of_bytes(3) == 3``."""
    return base64.b64encode(value).decode("ascii") if isinstance(value, (bytes, bytearray)) else value


_FORMULA_START = (
    *("=", "+", "-", "@", "\t", "\r"),
    *("\uff1d", "\uff0b", "\uff0d", "\uff20"),  # full-width = + - @, which CJK spreadsheets take as them
    *("\ufe66", "\ufe62", "\ufe63", "\ufe6b"),  # their small forms
)


def spreadsheet_safe(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text that starts like a formula (``= + - @``,
    tab, CR, and the full-width and small forms of ``= + - @``, U+FF1D...) gets a leading
    single quote, as OWASP recommends against CSV injection.

    Example: ``spreadsheet_safe("=1+1") == "'=1+1"``; numbers stay numbers."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


class _Lines:
    """The file a :mod:`csv` writer writes to: each row arrives whole, ending in ``\\r\\n``
    (so that the writer quotes both CR and LF), and leaves ending in the line end asked for."""

    __slots__ = ("write",)

    def __init__(self, f: IO[str], end: str) -> None:
        put = f.write
        self.write: Callable[[str], object] = put if end == "\r\n" else (lambda row: put(row[:-2] + end))


class CsvRows:
    """The CSV writer of every command: ``writerow``/``writerows`` as :mod:`csv`'s, fields
    holding ``,`` ``"`` CR or LF quoted whatever the line end (``\\n``, or ``\\r\\n`` as RFC 4180
    says), and with ``formulas=False`` text cells :func:`spreadsheet_safe`.

    Example::

        rows = CsvRows(sys.stdout)
        rows.writerow(["x"])
        rows.writerow(["a\\r=1+1"])  # x\\n"a\\r=1+1"\\n: one row
    """

    def __init__(self, f: IO[str], *, line_end: str = "\n", formulas: bool = True) -> None:
        if line_end not in ("\n", "\r\n"):
            raise ValueError(f"line_end is '\\n' or '\\r\\n', not {line_end!r}")
        self._writer = csv.writer(_Lines(f, line_end), lineterminator="\r\n")
        self._guard = not formulas

    def writerow(self, row: Iterable[Any]) -> None:
        """Write one row."""
        self._writer.writerow([spreadsheet_safe(v) for v in row] if self._guard else row)

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        """Write rows, one after the other."""
        if self._guard:
            rows = ([spreadsheet_safe(v) for v in row] for row in rows)
        self._writer.writerows(rows)


_LINKABLE = re.compile(r"https?://[^\x00-\x20\x7f-\x9f]+", re.IGNORECASE)


def link_url(url: object) -> str | None:
    """``url`` if a page may link to it: an ``http`` or ``https`` address holding no space or
    control character (a browser drops tabs and line feeds inside ``java\tscript:``), else
    None, and the page shows it as text. A dataset's card is data (an import's
    ``--homepage``, a plugin's card): a ``javascript:`` or ``data:`` homepage is never a link
    of the viewer or of a report, which promise no scripts.

    >>> link_url("https://github.com/kushalchawla/CaSiNo"), link_url("javascript:alert(1)")
    ('https://github.com/kushalchawla/CaSiNo', None)
    >>> link_url(" JaVa\tScRiPt:alert(1)"), link_url("HTTP://example.org/a b"), link_url(None)
    (None, None, None)
    """
    return url if isinstance(url, str) and _LINKABLE.fullmatch(url) else None


_OPENS_EMBEDDING = frozenset("\u202a\u202b\u202d\u202e")  # LRE RLE LRO RLO, closed by PDF
_OPENS_ISOLATE = frozenset("\u2066\u2067\u2068")  # LRI RLI FSI, closed by PDI


def bidi_closed(value: Any) -> Any:
    """``value`` (a text) with the bidi embeddings, overrides and isolates it leaves open
    closed at its end, so that in a page they end with it and never reorder what follows
    (a title's U+202E turning the rest of its line around); other values as they are. What
    every HTML template renders through (jinja's ``finalize``). Example:
    ``bidi_closed("a\\u202eb") == "a\\u202eb\\u202c"``."""
    if not isinstance(value, str) or not (_OPENS_EMBEDDING | _OPENS_ISOLATE).intersection(value):
        return value
    open_: list[str] = []
    for c in value:
        if c in _OPENS_EMBEDDING:
            open_.append("\u202c")
        elif c in _OPENS_ISOLATE:
            open_.append("\u2069")
        elif c == "\u202c" and open_ and open_[-1] == "\u202c":
            open_.pop()
        elif c == "\u2069" and "\u2069" in open_:  # closes its isolate and what opened inside it
            while open_.pop() != "\u2069":
                pass
    closers = "".join(reversed(open_))
    return value + closers if closers else value


_FOREIGN_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
"""The byte-order marks of the encodings that are not UTF-8 (UTF-32's first: its
little-endian mark starts as UTF-16's does), each with the encoding's name."""


def foreign_encoding(start: bytes) -> str | None:
    """Why text whose first bytes are ``start`` (four are enough) is not UTF-8, or None: a
    UTF-16 or UTF-32 byte-order mark, or UTF-16 or UTF-32 text without one (NULs where text
    holds none): the line that refuses such a file, what to do in it.

    >>> foreign_encoding(b"\\xff\\xfe{\\x00")
    'expected UTF-8 text, found a UTF-16 byte-order mark (FF FE); save it as UTF-8 (iconv -f UTF-16 -t UTF-8)'
    >>> foreign_encoding(b'{"a"') is None
    True
    """
    for mark, encoding in _FOREIGN_MARKS:
        if start.startswith(mark):
            found = f"{article(encoding)} byte-order mark ({mark.hex(' ').upper()})"
            break
    else:
        unmarked = _unmarked(start)
        if unmarked is None:
            return None
        encoding, found = unmarked, f"{unmarked} text without a byte-order mark (NULs between its characters)"
    return f"expected UTF-8 text, found {found}; save it as UTF-8 (iconv -f {encoding} -t UTF-8)"


def _unmarked(start: bytes) -> str | None:
    """The encoding, byte order named (``UTF-16LE``), where four bytes are one ASCII
    character of UTF-32 (``7B 00 00 00``) or two of UTF-16 (``7B 00 22 00``), else None."""
    if len(start) < 4 or start.count(0) not in (2, 3):
        return None
    if start.count(0) == 3:
        return "UTF-32LE" if start[0] else "UTF-32BE" if start[3] else None
    return "UTF-16LE" if start[1::2] == b"\0\0" else "UTF-16BE" if start[0::2] == b"\0\0" else None
