"""``convokit``: a ConvoKit corpus folder (``utterances.jsonl``, ``speakers.json``,
``conversations.json``, ``corpus.json``, ``index.json``) that ``convokit.Corpus(filename=...)``
loads, written directly so exporting needs no ConvoKit (and no PyTorch).

- Speakers: a participant of one conversation, id ``{conversation_id}/{participant_id}``
  (CaSiNo's ``mturk_agent_1`` is a different person in every dialogue), unless the dataset
  says its participant ids name the same person everywhere
  (:attr:`~convbank.datasets.Presentation.global_speakers`: PEC's Reddit authors keep their
  names). Speaker meta: the participant's fields (role, persona), its meta and, for
  conversation-scoped ids, ``participant_id``.
- Utterances: id ``{conversation_id}/{turn_index}``, each replying to the turn before;
  ``timestamp`` the turn's position in its conversation (none of the datasets times its
  messages, and ConvoKit orders utterances by timestamp); meta the turn's other fields
  (``turn_index``, ``kind``), its meta and its ``annotations`` (each its fields that are set).
- Conversations: meta ``dataset``, ``config``, ``split``, the conversation's other fields
  (``source_index``) and its meta. Corpus meta: the dataset's card.

Every field list is derived from the model (:mod:`convbank.model.schema`): a field added
to a Struct is exported with no edit here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from convbank.export._core import Selection
from convbank.export._format import Format
from convbank.model import schema

__all__ = ["FORMAT", "write_convokit"]

_encode = msgspec.json.Encoder().encode


def _type_name(value: Any) -> str:
    return f"<class '{type(value).__name__}'>"


def _index(index: dict[str, set[str]], meta: dict[str, Any]) -> None:
    for key, value in meta.items():
        index.setdefault(key, set()).add(_type_name(value))


def _meta_fields(table: str, *skip: str) -> tuple[str, ...]:
    """A table's fields that become ConvoKit meta keys: all but those ConvoKit has its own
    place for and the JSON ones (whose keys are spread into the meta)."""
    model = schema.SCHEMA
    columns = model.fields[table] if table != "conversations" else model.columns["conversations"]
    own = [c.name for c in columns if not c.json and c.name not in (*skip, *schema.COMPUTED)]
    if table == "conversations":
        own = [*schema.PARTITION_COLUMNS, *own]
    return tuple(own)


def _fields_of(item: Any, fields: tuple[str, ...], meta: dict[str, Any]) -> dict[str, Any]:
    return {**{f: getattr(item, f) for f in fields}, **meta}


def _annotation(a: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """An annotation in an utterance's meta: its fields but the turn's index, those not set
    (an offset of a whole-turn label) left out, and its meta if it has any."""
    out = {f: v for f in fields if (v := getattr(a, f)) is not None}
    if a.meta:
        out["meta"] = a.meta
    return out


def _folder(selection: Selection) -> list[str]:
    return [f"{selection.dataset}_convokit"]


class _Writer:
    """The speakers, conversations and type indexes of an export, gathered as its utterances
    are written."""

    def __init__(self, scoped: bool) -> None:
        self.scoped = scoped
        self.indexes: dict[str, dict[str, set[str]]] = {"utterances": {}, "speakers": {}, "conversations": {}}
        self.speakers: dict[str, dict[str, Any]] = {}
        self.conversations: dict[str, dict[str, Any]] = {}
        self.fields = {
            "speakers": _meta_fields("participants", "participant_id"),
            "conversations": _meta_fields("conversations", schema.KEY),
            "utterances": _meta_fields("turns", "participant_id", "text"),
            "annotations": _meta_fields("annotations", "turn_index"),
        }

    def speaker_id(self, cid: str, pid: str) -> str:
        return f"{cid}/{pid}" if self.scoped else pid

    def utterances(self, conv: Any) -> Iterator[bytes]:
        """Gather a conversation's speakers and meta; yield its utterances' lines."""
        cid = conv.conversation_id
        for p in conv.participants:
            meta = _fields_of(p, self.fields["speakers"], p.meta)
            if self.scoped:
                meta = {"participant_id": p.participant_id, **meta}
            self.speakers[self.speaker_id(cid, p.participant_id)] = {"meta": meta, "vectors": []}
            _index(self.indexes["speakers"], meta)
        cmeta = _fields_of(conv, self.fields["conversations"], conv.meta)
        self.conversations[cid] = {"meta": cmeta, "vectors": []}
        _index(self.indexes["conversations"], cmeta)
        for t in conv.turns:
            umeta = _fields_of(t, self.fields["utterances"], t.meta)
            umeta["annotations"] = [
                _annotation(a, self.fields["annotations"]) for a in conv.annotations_of(t.turn_index)
            ]
            _index(self.indexes["utterances"], umeta)
            yield (
                _encode(
                    {
                        "id": f"{cid}/{t.turn_index}",
                        "conversation_id": cid,
                        "text": t.text,
                        "speaker": self.speaker_id(cid, t.participant_id),
                        "meta": umeta,
                        "reply_to": f"{cid}/{t.turn_index - 1}" if t.turn_index else None,
                        "timestamp": t.turn_index,
                        "vectors": [],
                    }
                )
                + b"\n"
            )


def write_convokit(selection: Selection, directory: Path) -> list[Path]:
    """Write the corpus folder ``{dataset}_convokit/`` and return it."""
    folder = directory / _folder(selection)[0]
    folder.mkdir()
    gathered = _Writer(scoped=not selection.corpus.dataset.presentation.global_speakers)
    with (folder / "utterances.jsonl").open("wb") as f:
        for conv in selection:
            f.writelines(gathered.utterances(conv))
    _write_rest(selection, folder, gathered)
    return [folder]


def _write_rest(selection: Selection, folder: Path, gathered: _Writer) -> None:
    """``speakers.json``, ``conversations.json``, ``corpus.json`` (the dataset's card) and
    ``index.json`` (the meta keys' types)."""
    indexes, speakers, conversations = gathered.indexes, gathered.speakers, gathered.conversations
    ds = selection.corpus.dataset
    corpus_meta = {
        "name": ds.name,
        "title": ds.title,
        "description": ds.description,
        "license": ds.license,
        "citation": ds.citation,
        "homepage": ds.homepage,
        "version": ds.version,
        "exported_by": "convbank",
    }
    files: Iterable[tuple[str, Any]] = (
        ("speakers.json", speakers),
        ("conversations.json", conversations),
        ("corpus.json", corpus_meta),
        (
            "index.json",
            {
                "utterances-index": {k: sorted(v) for k, v in indexes["utterances"].items()},
                "speakers-index": {k: sorted(v) for k, v in indexes["speakers"].items()},
                "conversations-index": {k: sorted(v) for k, v in indexes["conversations"].items()},
                "overall-index": {k: [_type_name(v)] for k, v in corpus_meta.items()},
                "version": 1,
                "vectors": [],
            },
        ),
    )
    for name, data in files:
        (folder / name).write_bytes(_encode(data))


FORMAT = Format(
    order=30,
    name="convokit",
    summary="a ConvoKit corpus folder (DIR/<dataset>_convokit)",
    writes="`DIR/<dataset>_convokit/`: utterances with `reply_to` chains and all turn meta and "
    "annotations, speakers, conversations, corpus meta",
    read_with="`convokit.Corpus(filename=...)`",
    writer=write_convokit,
    plan=_folder,
)
"""The ``convokit`` format: written without ConvoKit, so it needs no extra."""
