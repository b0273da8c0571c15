"""Where the command line writes: rich consoles for stdout and stderr, JSON lines, cells."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import click
import msgspec
from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from convbank._controls import _KEEP_LINES, one_line, visible
from convbank._lazy import lazy
from convbank._textio import json_bytes
from convbank._wording import counted
from convbank.model.schema import JSON_FIELD
from convbank.store._values import python_values

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")


__all__ = [
    "MAX_CELL",
    "cell",
    "echo_json",
    "err",
    "json_keys",
    "json_value",
    "one_line",
    "one_line_error",
    "out",
    "plural",
    "rows_of",
    "say",
    "visible",
]

MAX_CELL = 60
"""Characters of a cell the table view shows (csv and json show all)."""


class _Environ(Mapping[str, str]):
    """The environment as the consoles read it: ``COLUMNS`` and ``LINES`` only where they are
    a positive number of characters (before: ``COLUMNS=0``, which a terminal of no size and
    some CI runners set, made rich's width 0: `list`, `stats`, `show` and `validate` printed
    nothing at all, not even their errors, exit status as usual)."""

    def __getitem__(self, key: str) -> str:
        value = os.environ[key]
        if key in ("COLUMNS", "LINES") and not (value.isdigit() and int(value) > 0):
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return (key for key in os.environ if key in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


_ENVIRON = _Environ()

FITTED = sys.stdout.isatty() or "COLUMNS" in _ENVIRON
"""Whether stdout's tables fit a width: a terminal's, or the one ``COLUMNS`` gives a pipe or
a file (``COLUMNS=100 convbank list > f``, a notebook's ``!convbank list``)."""


def echo_json(data: Any) -> None:
    """Write ``data`` as one line of JSON on stdout (C1 and bidi controls as ``\\u`` escapes:
    :func:`convbank._textio.json_bytes`)."""
    stream = out.file  # sys.stdout, or where ``bench`` keeps the real stdout for its result
    stream.buffer.write(json_bytes(data) + b"\n")  # type: ignore[attr-defined]
    stream.flush()


plural = counted
"""``1 split``, ``2 splits``, ``1,030 conversations``: :func:`convbank._wording.counted`."""


class _Console(Console):
    """A rich console that prints every character of text as :func:`visible` does, whatever
    printed it (a table's cell, a title, a ``Text``): a dataset's title holding an escape or
    a run's name holding a bidi override is shown as ``\\x1b``, ``\\u202e``, never sent to
    the terminal. Control segments (a progress bar's cursor moves) and styles pass as they are."""

    def render_str(self, text: str, **options: Any) -> Text:
        # A string (a table's cell, a title) is escaped before it is measured, so that a
        # table fits what is shown; render() catches what comes as Text.
        return super().render_str(visible(text), **options)

    def render(self, renderable: Any, options: Any = None) -> Iterator[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable() or segment.text == "\n":
                yield segment
            else:
                yield segment._replace(text=segment.text.translate(_KEEP_LINES))

    def on_broken_pipe(self) -> None:
        """A pipe closed under the console (``convbank import ... | head -1``) is what it is
        to every other write of the command line: a ``BrokenPipeError``, which ends the
        command with exit 0 (rich's own ends it with exit 1, so the exit code of a command
        whose reader left early was a race). Nothing more is written to it."""
        self.quiet = True
        try:
            fd = self.file.fileno()
        except (AttributeError, OSError, ValueError):  # not a file of the system's (a test's)
            fd = -1
        if fd >= 0:  # what is still buffered for it goes nowhere, not to a closed pipe at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


out = _Console(
    width=None if FITTED else 1 << 16, markup=False, emoji=False, soft_wrap=True, _environ=_ENVIRON
)
"""stdout: a terminal's width there, or ``$COLUMNS`` (tables cut long cells); otherwise a
pipe or a file gets each table at its own width, one line a row. No markup and no emoji
codes: text is printed as it is (data such as ``[/b]`` or ``:smile:`` stays data); styles
come from ``Text`` and ``style=``. A line of text is never wrapped (``soft_wrap``): a path,
an id or a command printed for copying stays one line whatever the width (pass
``soft_wrap=False`` for prose that may wrap on a terminal); tables still fit the width."""
err = _Console(stderr=True, markup=False, emoji=False, soft_wrap=True, _environ=_ENVIRON)
"""stderr: messages, never wrapped (a pipe's 80 columns would break a saved run's path);
the progress bars of a terminal."""


def say(line: str) -> None:
    """Write ``line`` on stderr as one line (:func:`one_line`): what every error, warning
    and note of the command line is printed with. Example: ``say(f"warning: {path} skipped")``."""
    import click

    click.echo(one_line(line), err=True)


def json_keys(names: list[str]) -> list[str]:
    """The keys of a query's rows as JSON objects: its column names, a repeated one suffixed
    as DuckDB names it when the result is selected from (``a``, ``a_1``, ``a_2``), so that
    no column's value is lost to another of its name. Example:
    ``json_keys(["a", "a", "a_1"]) == ["a", "a_1", "a_1_1"]``."""
    keys: list[str] = []
    taken: set[str] = set()
    for name in names:
        key, n = name, 0
        while key in taken:
            n += 1
            key = f"{name}_{n}"
        taken.add(key)
        keys.append(key)
    return keys


def json_value(text: str) -> Any:
    """The value of a JSON column's ``text``: decoded as JSON, numbers beyond a double's
    range (``1e400``) kept exact (:class:`decimal.Decimal`, written ``1E+400``), and
    DuckDB's ``NaN`` and ``Infinity`` (``to_json('inf'::DOUBLE)``), which JSON cannot hold,
    as null, as a ``DOUBLE`` column's are; text no JSON reader takes stays text, and so does
    a value nested deeper than Python's readers go (``[[[...1...]]]`` of 1,000 levels).
    Example: ``json_value("[1e400]") == [decimal.Decimal("1E+400")]``."""
    try:
        return msgspec.json.decode(text)
    except RecursionError:  # nested deeper than a decoder (or, after it, the encoder) goes
        return text
    except msgspec.MsgspecError:
        import decimal
        import json

        try:
            return json.loads(text, parse_float=decimal.Decimal, parse_constant=lambda _: None)
        except (ValueError, RecursionError):
            return text


def rows_of(table: pa.Table | pa.RecordBatch, keys: list[str] | None = None) -> list[dict[str, Any]]:
    """The rows of a query result as objects keyed by ``keys`` (default :func:`json_keys` of
    its columns), with its JSON columns decoded (:func:`json_value`)."""
    names = table.schema.names
    keys = json_keys(names) if keys is None else keys
    columns = []
    for f, column in zip(table.schema, table.columns, strict=True):
        values = python_values(column)
        if (f.metadata or {}).get(b"convbank.type") == JSON_FIELD[b"convbank.type"]:
            values = [_decoded(v) for v in values]
        columns.append(values)
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        return json_value(value)
    if isinstance(value, list):
        return [json_value(v) if isinstance(v, str) else v for v in value]
    return value


def cell(value: Any) -> str:
    """A value as table or CSV text: empty for null, JSON for lists and objects."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json_bytes(value).decode()
    return str(value)


def one_line_error(exc: click.ClickException) -> click.ClickException:
    """``exc`` as one line (:func:`one_line`): click.File's message names a path as it is, a
    newline in it breaking click's ``Error:`` line, and a missing option of choices puts each
    choice on a line of its own.

    >>> one_line_error(click.ClickException("no file 'a\\nb'")).format_message()
    "no file 'a\\\\nb'"
    """
    said = exc.format_message()
    if isinstance(exc, click.MissingParameter):  # click puts each choice on a line of its own
        said = " ".join(said.split())  # its own words only: never a path or a value given
    text = one_line(said)
    if text == exc.format_message():
        return exc
    if isinstance(exc, click.UsageError):  # exit 2, the usage shown above it
        return click.UsageError(text, exc.ctx)
    return click.ClickException(text)  # exit 1, as click.FileError
