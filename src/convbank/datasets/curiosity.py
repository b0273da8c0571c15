"""Curiosity: information-seeking dialogues about geography, grounded in Wikipedia facts
(Rodriguez et al., EMNLP 2020)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
from msgspec import UNSET, UnsetType

from convbank.datasets._base import (
    ConfigSpec,
    Dataset,
    SourceFile,
    SourcePaths,
    Strict,
    decode_json,
    write_json,
)
from convbank.errors import FormatError
from convbank.model import Annotation, Conversation, Participant, Turn

DIALOG_ACTS = (
    "request_topic",
    "request_aspect",
    "request_followup",
    "request_other",
    "inform_response",
    "inform_related",
    "inform_unrelated",
    "feedback_positive",
    "feedback_negative",
    "feedback_ask",
    "offer_topic",
    "offer_aspect",
    "offer_followup",
    "offer_other",
    "offer_accept",
    "offer_decline",
    "social",
    "other",
)
"""The dialog-act vocabulary of the Curiosity paper."""

FACT_SOURCES = ("section", "known", "random")
FACT_DB = "wiki_sql.sqlite.db"


class Fact(Strict):
    """A fact shown to the assistant; ``fid`` is ``fact.id`` in the fact database."""

    fid: int
    used: bool
    source: str | UnsetType = UNSET
    """Missing on some early facts."""


class Message(Strict):
    """One message; ``dialog_acts`` is a list, ``[]`` or null."""

    message: str
    liked: bool
    sender: str
    facts: list[Fact]
    message_id: str
    dialog_acts: list[str] | None


class Dialog(Strict):
    """One dialogue as published."""

    messages: list[Message]
    known_entities: list[str]
    focus_entity: str
    dialog_id: int
    inferred_steps: bool
    created_time: int
    aspects: list[str]
    first_aspect: str
    second_aspect: str
    shuffle_facts: bool
    related_entities: list[str]
    tag: str
    user_id: int
    assistant_id: int
    is_annotated: bool
    user_dialog_rating: int | None
    user_other_agent_rating: int | None
    assistant_dialog_rating: int | None
    assistant_other_agent_rating: int | None
    reported: bool
    annotated: bool


_CITATION = """@inproceedings{rodriguez2020curiosity,
  title = {Information Seeking in the Spirit of Learning: a Dataset for Conversational Curiosity},
  author = {Rodriguez, Pedro and Crook, Paul and Moon, Seungwhan and Wang, Zhiguang},
  booktitle = {Empirical Methods in Natural Language Processing},
  year = {2020}
}"""

_BASE = "https://obj.umiacs.umd.edu/curiosity/"
_SPLIT_FILES = {
    "train": (
        "curiosity_dialogs.train.json",
        "afe5bb0db8406663a316cd02cd25f33214725aaf1e25137cac3a13c6b1b4e70b",
    ),
    "val": ("curiosity_dialogs.val.json", "4371152e4c783db3fd7366cee6aac0537fa786180a19d48f1ec052181678214f"),
    "test": (
        "curiosity_dialogs.test.json",
        "61dda16362474488c110a4a7d40da1fd7c6fd3c62dddbedea5e3e1fa590e416d",
    ),
    "test_zero": (
        "curiosity_dialogs.test_zero.json",
        "71f9645727393371ba278311fd2bba70a7e469dbafe5afbea90a2ffd7658ee0c",
    ),
}
_MOVED_TO_PARTICIPANTS = ("messages", "dialog_id", "user_id", "assistant_id")

FACT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("page", pa.string()),
        pa.field("section_idx", pa.int64()),
        pa.field("section_title", pa.string()),
        pa.field("paragraph_idx", pa.int64()),
        pa.field("text", pa.string()),
        pa.field("pageviews", pa.int64()),
    ]
)


class Curiosity(Dataset):
    """Curiosity: 14,048 dialogues in which an assistant teaches a curious user about geography."""

    name = "curiosity"
    title = "Curiosity: Information Seeking Dialogues with Facts"
    description = (
        "Dialogues in which a user learns about a geographic entity from an assistant who "
        "sees Wikipedia facts: the user's known entities, message-level dialog acts, the "
        "facts shown and used, the user's likes of assistant messages and both sides' ratings."
    )
    license = "CC-BY-NC-4.0"
    citation = _CITATION
    homepage = "https://github.com/facebookresearch/curiosity"
    version = "1.0.0"
    files = (
        *(SourceFile(name=name, url=_BASE + name, sha256=sha) for name, sha in _SPLIT_FILES.values()),
        SourceFile(name=FACT_DB, url=_BASE + FACT_DB, sha256=None),
    )
    configs = (
        ConfigSpec(
            name="default",
            description="The official splits; test_zero holds entities unseen in training.",
            splits={"train": 10287, "val": 1287, "test": 1287, "test_zero": 1187},
        ),
    )
    optional_files = (FACT_DB,)
    raw_type = Dialog

    def files_for(self, config: str, split: str) -> list[SourceFile]:
        """The split's ``curiosity_dialogs.{split}.json``."""
        self.splits(config, split)
        return [self.file(_SPLIT_FILES[split][0])]

    @staticmethod
    def _top(path: Path) -> dict[str, msgspec.Raw]:
        """The file's top-level keys, values left unparsed."""
        top: dict[str, msgspec.Raw] = decode_json(path, dict[str, msgspec.Raw], "Curiosity")
        if "dialogs" not in top:
            raise FormatError(
                f"{path}: at $: no 'dialogs' key; expected the Curiosity format "
                '{"dialogs": [...]} — re-fetch the file'
            )
        return top

    def read(self, paths: SourcePaths, config: str, split: str) -> Iterator[Dialog]:
        """Decode the split's file into typed dialogues."""
        (source,) = self.files_for(config, split)
        path = paths[source.name]
        try:
            yield from msgspec.json.decode(self._top(path)["dialogs"], type=list[Dialog])
        except msgspec.ValidationError as exc:
            what, _, where = str(exc).partition(" - at `$")
            detail = f"at $.dialogs{where.rstrip('`')}: {what[0].lower()}{what[1:]}" if where else str(exc)
            raise FormatError(
                f"{path}: {detail}; not the Curiosity format as published — "
                "re-fetch the file or check that it is the right one"
            ) from exc

    def file_meta(self, paths: SourcePaths, config: str, split: str) -> dict[str, Any]:
        """The file-level keys beside ``dialogs``."""
        (source,) = self.files_for(config, split)
        top = self._top(paths[source.name])
        return {k: msgspec.json.decode(v) for k, v in top.items() if k != "dialogs"}

    def conversation_id(self, record: Dialog, config: str, split: str, index: int) -> str:
        """The ``dialog_id``, as a string."""
        return str(record.dialog_id)

    def to_conversation(self, record: Dialog, config: str, split: str, index: int) -> Conversation:
        """Dialog acts become annotations; likes, facts and message ids turn meta."""
        meta = msgspec.to_builtins(record)
        for key in _MOVED_TO_PARTICIPANTS:
            del meta[key]
        turns = []
        annotations: list[Annotation] = []
        for i, m in enumerate(record.messages):
            tmeta: dict[str, Any] = {
                "liked": m.liked,
                "facts": msgspec.to_builtins(m.facts),
                "message_id": m.message_id,
            }
            if m.dialog_acts is None:
                tmeta["dialog_acts"] = None
            else:
                annotations.extend(
                    Annotation(turn_index=i, layer="dialog_act", label=act) for act in m.dialog_acts
                )
            turns.append(Turn(turn_index=i, participant_id=m.sender, text=m.message, meta=tmeta))
        return Conversation(
            dataset=self.name,
            config=config,
            split=split,
            conversation_id=str(record.dialog_id),
            source_index=index,
            participants=[
                Participant(participant_id="user", role="user", meta={"user_id": record.user_id}),
                Participant(
                    participant_id="assistant",
                    role="assistant",
                    meta={"assistant_id": record.assistant_id},
                ),
            ],
            turns=turns,
            annotations=annotations,
            meta=meta,
        )

    def from_conversation(self, conversation: Conversation) -> Dialog:
        """Rebuild the published dialogue."""
        messages = []
        for t in conversation.turns:
            acts: list[str] | None = [
                a.label for a in conversation.annotations_of(t.turn_index, "dialog_act")
            ]
            if "dialog_acts" in t.meta:
                acts = None
            messages.append(
                {
                    "message": t.text,
                    "liked": t.meta["liked"],
                    "sender": t.participant_id,
                    "facts": t.meta["facts"],
                    "message_id": t.meta["message_id"],
                    "dialog_acts": acts,
                }
            )
        return msgspec.convert(
            {
                **conversation.meta,
                "messages": messages,
                "dialog_id": int(conversation.conversation_id),
                "user_id": conversation.participant("user").meta["user_id"],
                "assistant_id": conversation.participant("assistant").meta["assistant_id"],
            },
            Dialog,
        )

    def extra_tables(self, paths: SourcePaths) -> Iterator[tuple[str, pa.Table]]:
        """The fact database as table ``curiosity_facts``, when ``wiki_sql.sqlite.db`` is present."""
        path = paths.get(FACT_DB)
        if path is None:
            return
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                rows = db.execute(
                    "SELECT id, page, section_idx, section_title, paragraph_idx, text, pageviews "
                    "FROM fact ORDER BY id"
                ).fetchall()
        except sqlite3.Error as exc:
            raise FormatError(
                f"{path}: not a readable Curiosity fact database ({exc}); expected SQLite with a "
                "table fact(id, page, section_idx, section_title, paragraph_idx, text, pageviews)"
            ) from exc
        columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in FACT_SCHEMA]
        yield (
            "curiosity_facts",
            pa.Table.from_arrays(
                [pa.array(col, type=f.type) for col, f in zip(columns, FACT_SCHEMA, strict=True)],
                schema=FACT_SCHEMA,
            ),
        )

    def write_source(
        self,
        records: Iterable[Dialog],
        config: str,
        split: str,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write ``curiosity_dialogs.{split}.json`` with its file-level keys."""
        return write_json(directory / _SPLIT_FILES[split][0], {"dialogs": list(records), **file_meta})
