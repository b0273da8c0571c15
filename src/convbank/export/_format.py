"""What a format is: a :class:`Format` names itself, the extra it needs, what it carries (its row
of the table in ``docs/guide/exports.md``), whether it is seen from one side
(``--as``), the paths it will write (checked before the work), its writer and, for importing
a corpus kept in that format, its reader.

Each format's module declares its :class:`Format` beside its writer (``convbank.export.chat``
declares ``FORMAT``; ``convbank.export.tables`` declares ``JSONL``, ``PARQUET`` and ``CSV``;
a format written per part plans its files with :func:`convbank.export._core.per_part`);
:mod:`convbank.export._registry` collects them, and another package adds its own through the
entry-point group ``convbank.formats``. This module imports nothing heavy: the command line
reads every format's name and help from it without pyarrow.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from convbank.export._core import Selection
    from convbank.model import Conversation

__all__ = ["Format", "Plan", "ReadOptions", "Reader", "Rejected", "Sniffer", "Writer"]

_NAME = re.compile(r"[a-z][a-z0-9_-]*")


class Writer(Protocol):
    """Writes a selection's conversations into a folder (a staging folder, moved into place
    once complete) and returns the paths it wrote there: files, or folders written whole.
    A format seen from one side reads the participant from ``selection.as_participant``."""

    def __call__(self, selection: Selection, directory: Path, /) -> list[Path]:
        """Write ``selection`` into ``directory``; return what was written."""


class Plan(Protocol):
    """The paths, relative to the output folder, that a writer will write for a selection:
    known before the work, so that an export that would replace another's files stops
    before it starts (:func:`convbank.export._place.check_targets`)."""

    def __call__(self, selection: Selection, /) -> list[str]:
        """The relative paths the export of ``selection`` will write."""


@dataclass(frozen=True, kw_only=True)
class ReadOptions:
    """What an import asks of a reader: the dataset, config and split the conversations it
    reads belong to, and, for formats whose columns are named by the user (``table``), the
    mapping of convbank's names to the file's (``{"conversation_id": "dialog", "text":
    "utterance"}``, from ``--map conversation_id=dialog,text=utterance``)."""

    dataset: str
    config: str = "default"
    split: str = "train"
    mapping: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rejected:
    """A record a reader could not turn into a conversation: the file, where in it (``line
    12``, ``row 4``, ``utterances.jsonl line 3``), what was expected, and the record's own
    text (cut to a few KiB). The import stops at the first one, or with ``--skip-bad`` writes
    each to its rejects file and goes on, its reason followed by ``takes``: what the reader
    leaves out with it as it goes on (ParlAI: the rest of its episode)."""

    path: Path
    where: str
    expected: str
    record: str = ""
    takes: str = ""

    def line(self) -> str:
        """The one-line error: ``data.jsonl, line 3: expected a "messages" list``."""
        return f"{self.path.name}, {self.where}: {self.expected}"


class Reader(Protocol):
    """Reads files kept in a format (what its writer wrote, or a corpus published in it) as
    conversations of the unified model, in file order, with ``dataset``, ``config`` and
    ``split`` taken from ``options``; a record it cannot read is yielded as a
    :class:`Rejected` (never raised), so that one bad line costs only its conversation where
    the user asks for that. Readers stream: they hold one conversation (or one batch of
    rows) at a time, never the whole file."""

    def __call__(self, paths: Sequence[Path], options: ReadOptions, /) -> Iterator[Conversation | Rejected]:
        """The conversations (and rejected records) the files at ``paths`` hold."""


class Sniffer(Protocol):
    """Whether files look like this format, judged from their first bytes (a few KiB) or
    their names: how an import without ``--format`` picks one."""

    def __call__(self, paths: Sequence[Path], /) -> bool:
        """True where ``paths`` hold this format."""


@dataclass(frozen=True, kw_only=True)
class Format:
    """One export format: everything convbank knows of it, declared once.

    - ``name``: what ``--format`` takes (lower case: letters, digits, ``-`` and ``_``);
    - ``summary``: its clause in ``convbank export --help``;
    - ``writes`` and ``read_with``: its row of the exports guide's table (Markdown);
    - ``extra`` and ``requires``: the pip extra it needs (``convbank[hf]``) and the module
      that extra installs (``datasets``), None when it needs none;
    - ``sided``: seen from one participant (``--as``), as ``chat`` and ``parlai`` are;
    - ``no_where``: why it takes no ``--where``, where it takes none (``source``: it
      "rebuilds whole files");
    - ``writer`` and ``plan``: what it writes, and the paths it will write (None: named by
      what it writes, checked once written, as ``source``'s publishers' names are); a format
      convbank only reads (``table``, ``sharegpt``) has no writer, and ``export`` does not
      offer it;
    - ``order``: where the command line lists it among convbank's own formats (then by name;
      100 unless said);
    - ``reader`` and ``sniff``: how a corpus kept in this format is read back
      (``convbank import``), and how its files are recognised without ``--format``; None
      where convbank reads none;
    - ``loses``: what a corpus read back from this format lacks of what the bank held
      (its row of the import guide's table: Markdown; ``nothing`` where it is exact);
    - ``together``: its files are one corpus read together (``parquet``'s four tables, a
      ConvoKit corpus's files), not each a corpus of its own, as an import reads them.

    A plugin declares one in its package and names it in its entry points::

        [convbank.formats]
        tsv = my_package.tsv:FORMAT
    """

    name: str
    summary: str
    writes: str
    read_with: str
    writer: Writer | None = None
    plan: Plan | None = None
    extra: str | None = None
    requires: str | None = None
    sided: bool = False
    no_where: str | None = None
    reader: Reader | None = None
    sniff: Sniffer | None = None
    loses: str | None = None
    together: bool = False
    order: int = 100

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(
                f"a format's name is lower-case letters, digits, '-' and '_', starting with a letter; "
                f"not {self.name!r}"
            )
        if self.writer is None and self.reader is None:
            raise ValueError(f"format {self.name!r} has neither a writer nor a reader")
        if (self.extra is None) != (self.requires is None):
            raise ValueError(
                f"format {self.name!r} names an extra and the module it installs together, or neither "
                f"(extra={self.extra!r}, requires={self.requires!r})"
            )

    def available(self) -> bool:
        """Whether what the format needs is installed (its ``requires`` module, if any).

        >>> from convbank.export import formats
        >>> formats.get("jsonl").available()
        True
        """
        return self.requires is None or importlib.util.find_spec(self.requires) is not None
