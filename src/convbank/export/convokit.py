"""``convokit``: a ConvoKit corpus folder (``utterances.jsonl``, ``speakers.json``,
``conversations.json``, ``corpus.json``, ``index.json``) that ``convokit.Corpus(filename=...)``
loads, written directly so exporting needs no ConvoKit (and no PyTorch).

- Speakers: a participant of one conversation, id ``{conversation_id}/{participant_id}``
  (CaSiNo's ``mturk_agent_1`` is a different person in every dialogue; a ``%`` or ``/`` in
  the conversation's id written ``%25``, ``%2F``, so that no two share one), unless the dataset
  says its participant ids name the same person everywhere
  (:attr:`~convbank.datasets.Presentation.global_speakers`: PEC's Reddit authors keep their
  names). Speaker meta: the participant's fields (role, persona), its meta and, for
  conversation-scoped ids, ``participant_id``.
- Utterances: id ``{conversation_id}/{turn_index}``, each replying to the turn before;
  ``timestamp`` the turn's position in its conversation (none of the datasets times its
  messages, and ConvoKit orders utterances by timestamp); meta the turn's other fields
  (``turn_index``, ``kind``), its meta and its ``annotations`` (each its fields that are set).
  A conversation read from a ConvoKit corpus is written back with that corpus's utterance
  ids, reply tree, timestamps and speaker ids (kept in its turns' meta ``utterance_id``,
  ``reply_to`` and ``timestamp``), so a corpus imported and exported keeps its own.
- Conversations: meta ``dataset``, ``config``, ``split``, the conversation's other fields
  (``source_index``) and its meta; beside its meta, ``convbank_ids``: ``"chain"`` where its
  utterance ids are convbank's chain, ``"kept"`` where they are those of the ConvoKit corpus
  it was read from, so that reading the export back never takes one for the other (an
  export without it, older, is read as a chain where its ids and timestamps are one).
  Corpus meta: the dataset's card and ``exported_by: convbank``.

Every field list is derived from the model: a field added to a Struct is exported as is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from convbank._textio import json_line
from convbank.export._convokit_read import (
    FILES,
    IDS,
    ConvoKitCorpus,
    bad_entry,
    build_conversation,
    folder_of,
    json_file,
    speaker_id,
    utterances_of,
)
from convbank.export._core import Selection
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._read import head
from convbank.model import Conversation, schema

__all__ = ["FORMAT", "read_convokit", "write_convokit"]

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

    def __init__(self, scoped: bool, conversations: Iterable[str] = ()) -> None:
        self.scoped = scoped
        self.chains = set(conversations)
        """The ids of the export's conversations: a kept id of the form ``{one of them}/{n}``
        could be another's chain id (:meth:`own_ids`)."""
        self.indexes: dict[str, dict[str, set[str]]] = {"utterances": {}, "speakers": {}, "conversations": {}}
        self.speakers: dict[str, dict[str, Any]] = {}
        self.conversations: dict[str, dict[str, Any]] = {}
        self.fields = {
            "speakers": _meta_fields("participants", "participant_id"),
            "conversations": _meta_fields("conversations", schema.KEY),
            "utterances": _meta_fields("turns", "participant_id", "text"),
            "annotations": _meta_fields("annotations", "turn_index"),
        }

        self.taken: set[str] = set()
        """The utterance ids written that a conversation read from ConvoKit kept (:meth:`own_ids`)."""

    def own_ids(self, conv: Any) -> dict[int, str] | None:
        """Per turn index, the ConvoKit utterance id a conversation read from a ConvoKit
        corpus kept (turn meta ``utterance_id``), where every turn has one, none repeats, none
        was written before and none is of the form of another conversation's chain id; else None
        (the ids are then ``{conversation_id}/{index}``, the kept ones staying in meta)."""
        ids = {t.turn_index: t.meta.get("utterance_id") for t in conv.turns}
        kept = [i for i in ids.values() if isinstance(i, str)]
        if not kept or len(kept) != len(ids) or len(set(kept)) != len(kept) or self.taken.intersection(kept):
            return None
        if any(self._anothers_chain(i, conv.conversation_id) for i in kept):  # one id an utterance
            return None
        self.taken.update(kept)
        return ids

    def _anothers_chain(self, uid: str, own: str) -> bool:
        """Whether ``uid`` is of the form of a chain id, ``{conversation_id}/{n}``, of one of
        the export's conversations but ``own`` (whose chain is not written where it keeps its ids)."""
        cid, slash, index = uid.rpartition("/")
        return bool(slash) and index.isdigit() and cid != own and cid in self.chains

    def utterances(self, conv: Any) -> Iterator[bytes]:
        """Gather a conversation's speakers and meta; yield its utterances' lines: a chain
        of ``{conversation_id}/{index}`` ids, or the ids, reply tree and timestamps of the
        ConvoKit corpus it was read from (its speakers then named as there)."""
        cid, ids = conv.conversation_id, self.own_ids(conv)
        scoped = self.scoped and ids is None
        for p in conv.participants:
            meta = _fields_of(p, self.fields["speakers"], p.meta)
            if scoped:
                meta = {"participant_id": p.participant_id, **meta}
            self.speakers[speaker_id(cid, p.participant_id) if scoped else p.participant_id] = {
                "meta": meta,
                "vectors": [],
            }
            _index(self.indexes["speakers"], meta)
        cmeta = _fields_of(conv, self.fields["conversations"], conv.meta)
        self.conversations[cid] = {"meta": cmeta, "vectors": [], IDS: "chain" if ids is None else "kept"}
        _index(self.indexes["conversations"], cmeta)
        for t in conv.turns:
            own = dict(t.meta)
            uid, reply, stamp = _place(own, ids, t.turn_index, cid)
            umeta = _fields_of(t, self.fields["utterances"], own)
            umeta["annotations"] = [
                _annotation(a, self.fields["annotations"]) for a in conv.annotations_of(t.turn_index)
            ]
            _index(self.indexes["utterances"], umeta)
            utterance = {
                "id": uid,
                "conversation_id": cid,
                "text": t.text,
                "speaker": speaker_id(cid, t.participant_id) if scoped else t.participant_id,
                "meta": umeta,
                "reply_to": reply,
                "timestamp": stamp,
                "vectors": [],
            }
            yield json_line(_encode(utterance))


def _place(meta: dict[str, Any], ids: dict[int, str] | None, index: int, cid: str) -> tuple[str, Any, Any]:
    """A turn's utterance id, reply-to and timestamp: convbank's chain (``ids`` None), or
    those the ConvoKit corpus it was read from gave it, taken out of its ``meta`` (a parent
    that is no turn of its conversation stays there, and the turn is a root)."""
    if ids is None:
        return f"{cid}/{index}", f"{cid}/{index - 1}" if index else None, index
    uid = meta.pop("utterance_id")
    parent = meta.pop("reply_to", None)
    reply = ids.get(parent) if isinstance(parent, int) and not isinstance(parent, bool) else None
    if parent is not None and reply is None:
        meta["reply_to"] = parent
    return uid, reply, meta.pop("timestamp", None)


def write_convokit(selection: Selection, directory: Path) -> list[Path]:
    """Write the corpus folder ``{dataset}_convokit/`` and return it."""
    folder = directory / _folder(selection)[0]
    folder.mkdir()
    gathered = _Writer(
        scoped=not selection.corpus.dataset.presentation.global_speakers,
        conversations=selection.corpus.conversation_ids(),
    )
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


def read_convokit(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of a ConvoKit corpus folder (``paths``: the folder, or its files),
    in the order of ``utterances.jsonl``; speakers, conversation and corpus meta kept (the
    corpus meta in each conversation's meta ``corpus`` unless convbank exported it), each
    turn's parent in its meta ``reply_to`` (its turn index), its timestamp in meta
    ``timestamp``. ``speakers.json``, ``conversations.json`` and ``corpus.json`` are read
    whole; utterances one conversation at a time (streamed where each conversation's lines
    are together, else gathered by their offsets, as ConvoKit's time-ordered dumps need)::

        for conv in read_convokit([Path("movie-corpus")], ReadOptions(dataset="movies")): ...
    """
    folder = folder_of(paths)
    if folder is None or not (folder / "utterances.jsonl").is_file():
        where = folder or (paths[0] if paths else Path("."))
        yield Rejected(where, "file", "expected a ConvoKit corpus folder holding utterances.jsonl")
        return
    loaded = [json_file(folder / n) for n in FILES[1:4]]
    for bad in (x for x in loaded if isinstance(x, Rejected)):
        yield bad
        return
    speakers, conversations, corpus = (x for x in loaded if isinstance(x, dict))
    wrong = bad_entry(folder, speakers, conversations)
    if wrong is not None:
        yield wrong
        return
    c = ConvoKitCorpus(folder, speakers, conversations, ours=corpus.get("exported_by") == "convbank")
    path = folder / "utterances.jsonl"
    for number, item in enumerate(utterances_of(path)):
        if isinstance(item, Rejected):
            yield item
            continue
        conv = build_conversation(c, path, *item, number=number, options=options)
        if not c.ours and corpus and isinstance(conv, Conversation):
            conv.meta = {**conv.meta, "corpus": corpus}
        yield conv


def _sniff_convokit(paths: Sequence[Path]) -> bool:
    """A folder holding ``utterances.jsonl`` whose first line has ConvoKit's keys."""
    folder = folder_of(paths)
    if folder is None:
        return False
    first = head(folder / "utterances.jsonl").split(b"\n", 1)[0]
    return b'"id"' in first and (b'"speaker"' in first or b'"user"' in first)


FORMAT = Format(
    order=30,
    name="convokit",
    summary="a ConvoKit corpus folder (DIR/<dataset>_convokit)",
    writes="`DIR/<dataset>_convokit/`: utterances with `reply_to` chains (an imported ConvoKit "
    "corpus's own ids and reply tree) and all turn meta and annotations, speakers, conversations, "
    "corpus meta",
    read_with="`convokit.Corpus(filename=...)`",
    writer=write_convokit,
    plan=_folder,
    reader=read_convokit,
    together=True,
    loses="nothing of what convbank exported, but where a dataset's speaker ids name one person "
    "everywhere (`global_speakers`) a speaker's role, persona and meta are one for the whole corpus "
    "(the last conversation's); of any ConvoKit corpus: vectors, speakers' roles (each is "
    "`speaker`), and as ConvoKit reads it, a conversation of no utterances and a speaker who never "
    "speaks (their meta); its utterance ids, reply tree and timestamps are kept in each turn's meta "
    "(`utterance_id`, `reply_to`, `timestamp`) and written back as they were, with its speaker ids",
    sniff=_sniff_convokit,
)
"""The ``convokit`` format: written without ConvoKit, so it needs no extra."""
