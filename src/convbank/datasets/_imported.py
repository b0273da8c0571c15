"""A corpus of the researcher's own, imported into the bank (``convbank import``): a dataset
like the catalogued ones, whose card, files and parts are recorded in the bank itself.

An import writes :class:`ImportEntry` into the bank's manifest beside the dataset's tables,
in the same generation (so the record and the data it describes change together, or not at
all). :class:`ImportedDataset` is the :class:`~convbank.datasets.Dataset` that entry stands
for: its raw record is where each conversation came from (:class:`ImportedRecord`), its
conversations are stored as read, and :class:`ImportedPresentation` presents them from what
they hold (chat roles kept as roles, the checks any corpus must pass).

This module reads no files: the import (:mod:`convbank.imports`) reads them with a format's
reader, and the catalog finds an imported dataset through the bank
(:func:`convbank.store._imported.imported`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from convbank._keys import beside
from convbank._textio import json_line
from convbank._wording import counted
from convbank.datasets._base import ConfigSpec, Dataset, SourceFile, SourcePaths
from convbank.datasets._checks import Check, CheckList, Problem
from convbank.datasets._present import Context, Presentation
from convbank.errors import ExportError
from convbank.model import Conversation, Part

if TYPE_CHECKING:
    import datasets as hf_datasets

    from convbank.errors import CorpusImportError

__all__ = [
    "CHAT_ROLES",
    "IMPORTED_CHECKS",
    "NAME",
    "ImportEntry",
    "ImportedDataset",
    "ImportedPresentation",
    "ImportedRecord",
    "InputFile",
]

NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
"""What an imported dataset may be named: it becomes a table name (``<name>_raw``) and a
partition folder, so lower-case letters, digits and ``_``, starting with a letter."""

CHAT_ROLES = ("system", "user", "assistant", "tool")
"""The roles of the chat convention; a corpus whose speakers all hold one is exported as
chat with each message's own role."""


class InputFile(msgspec.Struct, frozen=True, kw_only=True):
    """One file an import read: where it was, its size and the sha256 of the bytes read."""

    path: str
    """The absolute path given to the import."""
    sha256: str
    bytes: int
    split: str | None = None
    """The split it was imported into, where the import named one for it (``train=PATH``)."""


class ImportEntry(msgspec.Struct, kw_only=True):
    """What the bank records of an imported dataset: its card, the format and files it was
    read from, the options it was read with and what that format cannot carry."""

    format: str
    inputs: list[InputFile]
    title: str = ""
    description: str = ""
    license: str = "unknown"
    citation: str = ""
    homepage: str = ""
    config: str | None = None
    """The config every conversation was put in (``--config``), None where each kept its own."""
    split: str | None = None
    """The split every conversation was put in (``--split``), None where each kept its own."""
    mapping: dict[str, str] = {}
    """The ``table`` format's ``--map``."""
    imported_at: str = ""
    convbank_version: str = ""
    loses: str = ""
    """What a corpus read from this format lacks (the format's own statement)."""
    duplicates: int = 0
    """Exact duplicates of a record read before, left out."""
    rejected: int = 0
    """Records ``--skip-bad`` left out (written to the rejects file)."""


class ImportedRecord(msgspec.Struct, kw_only=True):
    """The raw record of an imported conversation: the file it came from (its name) and its
    place among that file's conversations (from 0)."""

    file: str
    """The name of the file the conversation was read from."""
    position: int
    """Its place among that file's conversations, from 0."""


# ---------------------------------------------------------------------- checks
IMPORTED_CHECKS = CheckList("imported")
"""What every imported corpus is checked for beyond the generic checks (``validate``)."""


@IMPORTED_CHECKS.check("imported.not_empty")
def not_empty(conv: Conversation) -> Iterator[Problem]:
    """A conversation has at least one turn."""
    if not conv.turns:
        yield "error", "the conversation has no turns"


@IMPORTED_CHECKS.check("imported.reply_to")
def reply_to(conv: Conversation) -> Iterator[Problem] | None:
    """A turn's parent (meta ``reply_to``, a turn index) is an earlier turn of its conversation."""
    parents = [(t.turn_index, t.meta["reply_to"]) for t in conv.turns if "reply_to" in t.meta]
    if not parents:
        return None
    return (
        ("error", f"turn {i} replies to {p!r}, not an earlier turn of this conversation")
        for i, p in parents
        if not (isinstance(p, int) and not isinstance(p, bool) and 0 <= p < i)
    )


@IMPORTED_CHECKS.check("imported.alternation")
def alternation(conv: Conversation) -> Iterator[Problem] | None:
    """In a chat between a user and an assistant, they take turns (system and tool messages
    aside): two user or two assistant messages in a row are reported as a warning."""
    roles = {p.participant_id: p.role for p in conv.participants}
    if not {"user", "assistant"} <= set(roles.values()) or not set(roles.values()) <= set(CHAT_ROLES):
        return None
    spoken = [(t.turn_index, roles.get(t.participant_id)) for t in conv.turns]
    said = [(i, r) for i, r in spoken if r in ("user", "assistant")]
    return (
        ("warning", f"turns {a} and {b} are both {r}'s: user and assistant do not alternate")
        for (a, r), (b, s) in pairwise(said)
        if r == s
    )


@IMPORTED_CHECKS.check("imported.repeated_turns")
def repeated_turns(conv: Conversation) -> Iterator[Problem]:
    """No turn repeats the one before it word for word, by the same speaker (a copy-paste or
    a logging fault; reported as a warning)."""
    for before, turn in pairwise(conv.turns):
        if turn.participant_id == before.participant_id and turn.text == before.text and turn.text:
            yield "warning", f"turn {turn.turn_index} repeats turn {before.turn_index} word for word"


# ---------------------------------------------------------------------- presentation
class ImportedPresentation(Presentation):
    """How an imported corpus is presented: from what its conversations hold. A corpus
    imported from ``chat``, or whose speakers all hold chat roles (``system``, ``user``,
    ``assistant``, ``tool``: one imported from ``sharegpt``, or convbank's ``jsonl`` of
    either), is exported as chat with each message's role, name, tool calls and content
    parts as they were; any other corpus as every dataset is (seen from
    its last participant). A Hugging Face export holds each conversation whole (``hf_record``)."""

    def read_from(self, fmt: str) -> bool:
        """Whether the corpus was imported from files of format ``fmt`` (``chat``,
        ``sharegpt``): an export to that format writes its conversations back as read, whatever
        roles or speakers they hold (``developer``, ``function``, a ShareGPT ``from`` of ``user``).

        >>> entry = ImportEntry(format="chat", inputs=[])
        >>> ImportedDataset("mine", entry, {}).presentation.read_from("chat")
        True
        """
        entry = getattr(self.dataset, "entry", None)
        return isinstance(entry, ImportEntry) and entry.format == fmt

    def _chat_roles(self, conversation: Conversation) -> bool:
        return bool(conversation.participants) and (
            self.read_from("chat") or all(p.role in CHAT_ROLES for p in conversation.participants)
        )

    def chat_side(self, conversation: Conversation) -> str:
        """The assistant, where one speaks; else the last participant listed."""
        for p in conversation.participants:
            if p.role == "assistant":
                return p.participant_id
        return super().chat_side(conversation)

    def chat_messages(self, conversation: Conversation, me: str, context: Context) -> list[dict[str, Any]]:
        """Chat roles kept as they were imported (every message a turn, the system message
        included); otherwise the generic view, ``me`` as ``assistant``."""
        if not self._chat_roles(conversation) or me != self.chat_side(conversation):
            return super().chat_messages(conversation, me, context)
        roles = {p.participant_id: p.role for p in conversation.participants}
        return [message(roles[t.participant_id], t.text, t.meta) for t in conversation.turns]

    def hf_features(self) -> hf_datasets.Features:
        """Each conversation whole: its id, its messages as ``{role, content}`` and the
        unified conversation as JSON (read back exactly)."""
        from datasets import Features, Value

        return Features(
            {
                "conversation_id": Value("string"),
                "messages": [{"role": Value("string"), "content": Value("string")}],
                "conversation": Value("string"),
            }
        )

    def hf_record(self, conversation: Conversation) -> dict[str, Any]:
        """One row of :meth:`hf_features`."""
        roles = {p.participant_id: p.role for p in conversation.participants}
        return {
            "conversation_id": conversation.conversation_id,
            "messages": [
                {"role": roles.get(t.participant_id, ""), "content": t.text} for t in conversation.turns
            ],
            "conversation": msgspec.json.encode(conversation).decode(),
        }

    def hf_raw(self, row: dict[str, Any]) -> Any | None:
        """The conversation again from its ``conversation`` column."""
        return msgspec.json.decode(row["conversation"], type=Conversation)

    def checks(self) -> Sequence[Check]:
        """:data:`IMPORTED_CHECKS`."""
        return IMPORTED_CHECKS


def message(role: str, text: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message from a turn imported from ``chat``: its role, its content (the typed
    parts it was given as, where meta ``content_parts`` keeps them), then its other message
    keys (meta ``message``: ``name``, ``tool_calls``, ``tool_call_id``...), in the order read.

    >>> message("user", "hi", {"message": {"name": "ann"}})
    {'role': 'user', 'content': 'hi', 'name': 'ann'}
    """
    content: Any = meta.get("content_parts", text)
    return beside({"role": role, "content": content}, meta.get("message", {}))


# ---------------------------------------------------------------------- the dataset
class ImportedDataset(Dataset):
    """An imported corpus as a dataset: the card the import was given, one config per config
    it holds, its splits with the conversations stored (nothing is published: counts are
    the bank's), the files it was read from. Made by the catalog from the bank's record:

    >>> entry = ImportEntry(format="chat", inputs=[InputFile(path="/data/a.jsonl", sha256="0" * 64, bytes=9)])
    >>> ds = ImportedDataset("mine", entry, {"default": {"train": 3}})
    >>> ds.parts(), ds.origin
    ([Part(config='default', split='train')], 'imported from chat: a.jsonl')
    """

    raw_type: ClassVar[type[msgspec.Struct]] = ImportedRecord
    presentation_class: ClassVar[type[Presentation]] = ImportedPresentation
    version = "imported"

    def __init__(self, name: str, entry: ImportEntry, parts: Mapping[str, Mapping[str, int]]) -> None:
        self.name = name  # type: ignore[misc]
        self.entry = entry
        self.title = entry.title or name  # type: ignore[misc]
        self.description = entry.description or f"Conversations imported from {entry.format} files."  # type: ignore[misc]
        self.license = entry.license  # type: ignore[misc]
        self.citation = entry.citation  # type: ignore[misc]
        self.homepage = entry.homepage  # type: ignore[misc]
        self.files = tuple(  # type: ignore[misc]
            SourceFile(name=Path(f.path).name, url=Path(f.path).as_uri(), sha256=f.sha256, size=f.bytes)
            for f in entry.inputs
        )
        self.configs = tuple(  # type: ignore[misc]
            ConfigSpec(
                name=config,
                description=f"imported from {entry.format}",
                splits=dict.fromkeys(splits),  # nothing published
            )
            for config, splits in parts.items()
        ) or (ConfigSpec(name="default", description=f"imported from {entry.format}", splits={}),)
        self.stored = {c: dict(s) for c, s in parts.items()}

    def __repr__(self) -> str:
        n = len(self.entry.inputs)
        return f"<ImportedDataset {self.name!r} from {self.entry.format}: {counted(n, 'file')}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ImportedDataset, (self.name, self.entry, self.stored))

    @property
    def origin(self) -> str:
        """Where it came from, for ``convbank list``: ``imported from chat: a.jsonl, b.jsonl``."""
        names = ", ".join(Path(f.path).name for f in self.entry.inputs[:3])
        more = f" and {len(self.entry.inputs) - 3} more" if len(self.entry.inputs) > 3 else ""
        return f"imported from {self.entry.format}: {names}{more}"

    def files_for(self, part: Part) -> list[SourceFile]:
        """Every file of the import (a file's split is the import's business)."""
        return list(self.files)

    def without_sources(self) -> CorpusImportError:
        """An imported corpus has no publisher's files: its conversations are the bank's, and
        importing again is how it is rebuilt."""
        from convbank.errors import CorpusImportError

        return CorpusImportError(
            f"{self.name} was imported from {self.entry.format} files (convbank import): it has no "
            f"publisher's files to fetch, build or read; its conversations are in the bank (convbank "
            f"raw {self.name}), and `convbank import FILE ... --name {self.name} --replace` imports "
            "them again",
            name=self.name,
        )

    def read(self, paths: SourcePaths, part: Part) -> Iterator[Any]:
        """An imported corpus is read by its import (:func:`convbank.imports.import_conversations`),
        not from source files: this says so."""
        raise self.without_sources()

    def conversation_id(self, record: Any, part: Part, index: int) -> str:
        """The conversation's own id (the import keeps the one its format gives, or makes a
        stable one from its content)."""
        return str(record.conversation_id)

    def to_conversation(self, record: Any, part: Part, index: int) -> Conversation:
        """An imported conversation is stored as read: the record is the conversation."""
        conv: Conversation = record
        return conv

    def from_conversation(self, conversation: Conversation) -> Any:
        """The conversation itself (what the ``source`` export writes)."""
        return conversation

    def write_source(
        self, records: Iterable[Any], part: Part, file_meta: Mapping[str, Any], directory: Path
    ) -> list[Path]:
        """``<config>_<split>.jsonl``: the conversations as convbank's ``jsonl`` format holds
        them (what ``convbank import`` reads back exactly). A file another part wrote (whose
        names run together: ``x_y``/``train``, ``x``/``y_train``) is never replaced: an
        :class:`~convbank.errors.ExportError`."""
        path = directory / f"{part.config}_{part.split}.jsonl"
        encode = msgspec.json.Encoder().encode
        try:
            f = path.open("xb")
        except FileExistsError:
            raise ExportError(
                f"the part {part.config}/{part.split} of {self.name} would be written to {path.name}, "
                "which another of its parts was (the config's and the split's names run together); "
                "export them one at a time (--config, --split)",
                format="source",
                path=path.name,
            ) from None
        with f:
            for conv in records:
                f.write(json_line(encode(conv.to_dict())))
        return [path]
