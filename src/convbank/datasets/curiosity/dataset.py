"""Curiosity: information-seeking dialogues about geography, grounded in Wikipedia facts
(Rodriguez et al., EMNLP 2020): card, files, reader, mapper (both ways), source writer and
the fact database as a side table."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from convbank._lazy import lazy
from convbank.datasets import (
    ConfigSpec,
    Dataset,
    SourceFile,
    SourcePaths,
    decode_json,
    no_records,
)
from convbank.datasets._layout import LAYOUT_KEY, Frame, compact, frame_of, measure, write_framed
from convbank.datasets.curiosity.present import CuriosityPresentation
from convbank.datasets.curiosity.records import FACT_DB, FACTS_TABLE, TOP_KEYS, Dialog, fact_schema
from convbank.errors import FormatError
from convbank.model import Annotation, Conversation, Part, Participant, Turn

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")


__all__ = ["Curiosity"]

_CITATION = """@inproceedings{rodriguez2020curiosity,
  title = {Information Seeking in the Spirit of Learning: a Dataset for Conversational Curiosity},
  author = {Rodriguez, Pedro and Crook, Paul and Moon, Seungwhan and Wang, Zhiguang},
  booktitle = {Empirical Methods in Natural Language Processing},
  year = {2020}
}"""

_BASE = "https://obj.umiacs.umd.edu/curiosity/"
_SPLIT_SIZES = {  # with the sha256, from the Git LFS pointers and Hugging Face's dataset_infos.json
    "curiosity_dialogs.train.json": 66_851_161,
    "curiosity_dialogs.val.json": 8_772_171,
    "curiosity_dialogs.test.json": 8_771_731,
    "curiosity_dialogs.test_zero.json": 7_774_102,
}
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
        *(
            SourceFile(name=name, url=_BASE + name, sha256=sha, size=_SPLIT_SIZES[name])
            for name, sha in _SPLIT_FILES.values()
        ),
        # sha256 and size from the Git LFS pointer of dialog_data/wiki_sql.sqlite.db in
        # facebookresearch/curiosity (the publishers' own record of the file)
        SourceFile(
            name=FACT_DB,
            url=_BASE + FACT_DB,
            sha256="3d598e6b546ea340d2f4632f221c63a70bc3f4baa7fec371cacc5b604e31dba5",
            size=365_248_512,
        ),
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
    presentation_class = CuriosityPresentation

    def files_for(self, part: Part) -> list[SourceFile]:
        """The split's ``curiosity_dialogs.{split}.json``."""
        self.parts(*part)  # checks both names
        return [self.file(_SPLIT_FILES[part.split][0])]

    @staticmethod
    def _top(path: Path, data: bytes | None = None) -> dict[str, msgspec.Raw]:
        """The file's top-level keys, values left unparsed."""
        top: dict[str, msgspec.Raw] = decode_json(path, dict[str, msgspec.Raw], "Curiosity", data)
        if "dialogs" not in top:
            raise FormatError(
                f"{path}: at $: no 'dialogs' key; expected the Curiosity format "
                '{"dialogs": [...]} — re-fetch the file',
                path=path,
                json_path="$",
            )
        return top

    def read(self, paths: SourcePaths, part: Part) -> Iterator[Dialog]:
        """Decode the split's file into typed dialogues."""
        (source,) = self.files_for(part)
        yield from self._dialogs(paths[source.name], self._top(paths[source.name]))

    @staticmethod
    def _dialogs(path: Path, top: dict[str, msgspec.Raw]) -> list[Dialog]:
        try:
            dialogs = msgspec.json.decode(top["dialogs"], type=list[Dialog])
        except msgspec.ValidationError as exc:
            what, _, where = str(exc).partition(" - at `$")
            at = f"$.dialogs{where.rstrip('`')}" if where else None
            detail = f"at {at}: {what[0].lower()}{what[1:]}" if at else str(exc)
            raise FormatError(
                f"{path}: {detail}; not the Curiosity format as published — "
                "re-fetch the file or check that it is the right one",
                path=path,
                json_path=at,
            ) from exc
        if not dialogs:
            raise no_records(path, "Curiosity")
        return dialogs

    def file_meta(self, paths: SourcePaths, part: Part) -> dict[str, Any]:
        """The file-level keys beside ``dialogs``, their order (``_keys``) and the file's
        measured layout (``_layout``), for a byte-exact source export."""
        (source,) = self.files_for(part)
        path = paths[source.name]
        data = path.read_bytes()
        top = self._top(path, data)
        meta: dict[str, Any] = {k: msgspec.json.decode(v) for k, v in top.items() if k != "dialogs"}
        empty = {k: [] if k == "dialogs" else meta[k] for k in top}
        records = (msgspec.to_builtins(d) for d in self._dialogs(path, top))
        return {
            **meta,
            "_keys": list(top),
            LAYOUT_KEY: measure(data.decode("utf-8"), records, compact, empty),
        }

    def conversation_id(self, record: Dialog, part: Part, index: int) -> str:
        """The ``dialog_id``, as a string."""
        return str(record.dialog_id)

    def to_conversation(self, record: Dialog, part: Part, index: int) -> Conversation:
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
            config=part.config,
            split=part.split,
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

    side_tables = (FACTS_TABLE,)

    def extra_tables(self, paths: SourcePaths, config: str) -> Iterator[tuple[str, pa.Table]]:
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
                "table fact(id, page, section_idx, section_title, paragraph_idx, text, pageviews)",
                path=path,
            ) from exc
        _check_fact_types(path, rows)
        columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in fact_schema()]
        yield (
            FACTS_TABLE,
            pa.Table.from_arrays(
                [pa.array(col, type=f.type) for col, f in zip(columns, fact_schema(), strict=True)],
                schema=fact_schema(),
            ),
        )

    def write_source(
        self,
        records: Iterable[Dialog],
        part: Part,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write ``curiosity_dialogs.{split}.json`` with its file-level keys, in the publisher's
        layout (byte for byte when the split's layout was measured at build)."""
        frame = frame_of(file_meta.get(LAYOUT_KEY), _default_frame(file_meta))
        return write_framed(
            directory / _SPLIT_FILES[part.split][0], (msgspec.to_builtins(r) for r in records), compact, frame
        )


def _default_frame(file_meta: Mapping[str, Any]) -> Frame:
    """Python's ``json.dumps`` of the top-level object with a final newline, ``dialogs``
    where the file had it (first, in the publisher's files)."""
    meta = {k: v for k, v in file_meta.items() if not k.startswith("_")}
    order = file_meta.get("_keys") or [k for k in TOP_KEYS if k in meta or k == "dialogs"] + sorted(
        set(meta) - set(TOP_KEYS)
    )
    at = order.index("dialogs")
    before = "".join(f"{json.dumps(k)}: {json.dumps(meta[k])}, " for k in order[:at])
    after = "".join(f", {json.dumps(k)}: {json.dumps(meta[k])}" for k in order[at + 1 :])
    return Frame(prefix="{" + before + '"dialogs": [', separator=", ", suffix="]" + after + "}\n")


def _columns_of(kind: str) -> dict[str, int]:
    """The fact table's integer (``kind="integer"``) or text columns, by position."""
    test = pa.types.is_integer if kind == "integer" else pa.types.is_string
    return {f.name: i for i, f in enumerate(fact_schema()) if test(f.type)}


def _check_fact_types(path: Path, rows: list[Any]) -> None:
    """Every value of the fact table has its column's type (SQLite stores any value in any
    column); the first that does not is a one-line error naming the fact and the column."""
    for row in rows:
        for name, i in _columns_of("integer").items():
            value = row[i]
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise FormatError(
                    f"{path}: table fact, row id={row[0]!r}: column {name} holds {value!r}; expected an "
                    "integer — not the Curiosity fact database as published, re-fetch wiki_sql.sqlite.db",
                    path=path,
                    record=row[0],
                )
        for name, i in _columns_of("text").items():
            value = row[i]
            if value is not None and not isinstance(value, str):
                raise FormatError(
                    f"{path}: table fact, row id={row[0]!r}: column {name} holds {value!r}; expected text — "
                    "not the Curiosity fact database as published, re-fetch wiki_sql.sqlite.db",
                    path=path,
                    record=row[0],
                )
