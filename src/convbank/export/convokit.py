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

Every field list is derived from the model: a field added to a Struct is exported as is.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from convbank.export._core import Selection
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._read import head, json_lines, lines_in, raw_lines, rejected, whole_json
from convbank.model import Conversation, Turn, schema

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


_FILES = ("utterances.jsonl", "speakers.json", "conversations.json", "corpus.json", "index.json")


def _folder_of(paths: Sequence[Path]) -> Path | None:
    """The corpus folder: the one path given, or the folder of the files given."""
    folders = {p.parent if p.is_file() else p for p in paths}
    return folders.pop() if len(folders) == 1 else None


def _json_file(path: Path) -> dict[str, Any] | Rejected:
    """One of the corpus's JSON objects (``{}`` where the file is absent)."""
    if not path.exists():
        return {}
    value, problem = whole_json(path)
    if problem is not None or not isinstance(value, dict):
        return Rejected(path, "file", problem or f"expected a JSON object, not {type(value).__name__}")
    return value


def _is_meta(meta: Any) -> bool:
    """Whether ``meta`` is what ConvoKit keeps as meta: an object, or nothing."""
    return meta is None or isinstance(meta, dict)


def _kind(value: Any) -> str:
    """``a list``, ``a string``, ``int``: what a JSON value is, for a message."""
    names: dict[type, str] = {list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def _bad_entry(folder: Path, speakers: dict[str, Any], conversations: dict[str, Any]) -> Rejected | None:
    """The first speaker or conversation that is not an object with an object ``meta`` (or
    none), rejected, so that its meta is never dropped without a word."""
    for name, entries in (("speakers.json", speakers), ("conversations.json", conversations)):
        for key, entry in entries.items():
            if not isinstance(entry, dict) or not _is_meta(entry.get("meta")):
                what = _kind(entry.get("meta")) if isinstance(entry, dict) else _kind(entry)
                expected = f"expected {key!r} an object whose 'meta' is an object, not {what}"
                return Rejected(folder / name, "file", expected)
    return None


def _meta_of(entry: Any) -> dict[str, Any]:
    meta = entry.get("meta") if isinstance(entry, dict) else None
    return dict(meta) if isinstance(meta, dict) else {}


class _Corpus:
    """A ConvoKit corpus's speakers and conversations, and whether convbank exported it (its
    encoding is then inverted exactly)."""

    def __init__(self, folder: Path, speakers: dict[str, Any], conversations: dict[str, Any], ours: bool):
        self.folder, self.speakers, self.conversations, self.ours = folder, speakers, conversations, ours
        self.scoped: dict[str, list[str]] = {}
        """Per conversation, the ids of its speakers written ``{conversation_id}/{participant_id}``."""
        for sid, entry in speakers.items():
            pid = _meta_of(entry).get("participant_id")
            if ours and isinstance(pid, str) and sid.endswith(f"/{pid}"):
                self.scoped.setdefault(sid[: -len(pid) - 1], []).append(sid)

    def participant(self, sid: str) -> dict[str, Any]:
        """A speaker as a participant: its ``{conversation_id}/{participant_id}`` id and
        the role and persona convbank spread into its meta taken back."""
        meta = _meta_of(self.speakers.get(sid))
        if not self.ours:
            return {"participant_id": sid, "role": "speaker", "meta": meta}
        pid = meta.pop("participant_id", sid)
        return {
            "participant_id": pid,
            "role": meta.pop("role", "speaker"),
            "persona": meta.pop("persona", []),
            "meta": meta,
        }

    def conversation(self, cid: str, number: int, options: ReadOptions) -> dict[str, Any]:
        """A conversation's fields, its meta and (for convbank's export) where it was."""
        meta = _meta_of(self.conversations.get(cid))
        where = {"config": options.config, "split": options.split, "source_index": number}
        if self.ours:
            meta.pop("dataset", None)
            where.update({k: meta.pop(k) for k in ("config", "split", "source_index") if k in meta})
        return {"dataset": options.dataset, "conversation_id": cid, "meta": meta, **where}


def _turn(c: _Corpus, u: dict[str, Any], index: int, ids: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """A turn (and its annotations) from an utterance; ``index`` its place in the file's
    order within its conversation, ``ids`` the participant id of each speaker."""
    meta = _meta_of(u)
    marks = meta.pop("annotations", []) if c.ours else []
    kind = meta.pop("kind", "message") if c.ours else "message"
    if c.ours:
        meta.pop("turn_index", None)
    elif u.get("timestamp") is not None:
        meta["timestamp"] = u["timestamp"]
    speaker = ids[str(u.get("speaker", u.get("user")))]
    turn = {"turn_index": index, "participant_id": speaker, "text": u["text"], "kind": kind, "meta": meta}
    notes = [{**m, "turn_index": index} if isinstance(m, dict) else m for m in marks]
    return turn, notes


def _parents(
    path: Path, cid: str, rows: list[tuple[int, dict[str, Any]]], turns: list[Turn], *, chained: bool
) -> Rejected | None:
    """Each turn's parent as meta ``reply_to`` (the parent's turn index; a root has none),
    so a tree stays a tree; where ``chained`` (convbank's export, whose every turn replies
    to the one before) only a parent that is not the turn before. A reply-to that points
    outside the conversation is rejected."""
    at = {u["id"]: i for i, (_, u) in enumerate(rows)}
    for i, ((number, u), turn) in enumerate(zip(rows, turns, strict=True)):
        parent = u.get("reply_to", u.get("reply-to"))
        if parent is not None and parent not in at:
            expected = f"expected a reply-to inside conversation {cid!r}, not {parent!r}"
            return rejected(path, f"line {number}", expected, u)
        index = at[parent] if parent is not None else None
        if (index is not None and not chained) or (chained and index != (i - 1 if i else None)):
            turn.meta["reply_to"] = index
    return None


def _build(
    c: _Corpus,
    path: Path,
    cid: str,
    rows: list[tuple[int, dict[str, Any]]],
    *,
    number: int,
    options: ReadOptions,
) -> Conversation | Rejected:
    """One conversation of the corpus from its utterances (lines ``rows`` of ``path``); an
    exact duplicate of an utterance left out, another utterance with its id rejected."""
    first: dict[str, dict[str, Any]] = {}
    for line, u in rows:
        if not _is_meta(u.get("meta")):  # never dropped: ConvoKit's meta is an object
            return rejected(path, f"line {line}", f"expected an object 'meta', not {_kind(u['meta'])}", u)
        if first.setdefault(u["id"], u) != u:
            return rejected(
                path, f"line {line}", f"expected utterance id {u['id']!r} used once in {cid!r}", u
            )
        taken = [
            k
            for k in ("timestamp", "reply_to")
            if not c.ours and k in (u.get("meta") or {}) and _own(u, k) is not None
        ]
        if taken:  # the turn's meta holds the utterance's own field there: never one over the other
            why = f"expected a meta without {taken[0]!r}, where the turn keeps the utterance's own {taken[0]}"
            return rejected(path, f"line {line}", why, u)
    rows = [(line, u) for line, u in rows if first[u["id"]] is u]
    data = c.conversation(cid, number, options)
    speakers = [*c.scoped.get(cid, ()), *(u.get("speaker", u.get("user")) for _, u in rows)]
    people = [c.participant(s) for s in dict.fromkeys(speakers)]
    ids = {s: p["participant_id"] for s, p in zip(dict.fromkeys(speakers), people, strict=True)}
    built = [_turn(c, u, i, ids) for i, (_, u) in enumerate(rows)]
    data.update(
        participants=people, turns=[t for t, _ in built], annotations=[a for _, n in built for a in n]
    )
    try:
        conv = msgspec.convert(data, Conversation)
    except msgspec.ValidationError as exc:
        where = f"line {rows[0][0]}" if len(rows) == 1 else f"lines {rows[0][0]}-{rows[-1][0]}"
        return rejected(path, where, f"expected ConvoKit utterances of conversation {cid!r} ({exc})")
    return _parents(path, cid, rows, conv.turns, chained=c.ours) or conv


def _own(u: dict[str, Any], key: str) -> Any:
    """An utterance's own ``timestamp`` or ``reply_to`` (``reply-to`` in older corpora)."""
    return u.get(key, u.get("reply-to")) if key == "reply_to" else u.get(key)


class _Root(msgspec.Struct):
    """The one field of an utterance that says which conversation it belongs to."""

    conversation_id: Any = None
    root: Any = None


_root = msgspec.json.Decoder(_Root).decode


Run = tuple[int, int, int]
"""Lines of one conversation together in a file: the first's number, and the byte range."""


def _scattered(path: Path) -> list[list[Run]] | None:
    """Where each conversation's lines are (its runs of lines, conversations in the order they
    first appear; lines that name none first) if some conversation's lines are not together,
    as in corpora dumped in time order; None if each is one run of lines, read as it streams.
    Reads only each line's ``conversation_id``, and keeps one entry a run."""
    runs: dict[str | None, list[Run]] = {None: []}
    last: str | None = None
    first = start = offset = 0
    scattered = False
    with path.open("rb") as f:
        for number, (raw, whole) in enumerate(raw_lines(f), 1):
            try:
                if not whole:  # too long to hold: rejected where it is read
                    raise msgspec.DecodeError
                key = _root(raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw)
                cid = key.conversation_id if key.conversation_id is not None else key.root
            except (msgspec.DecodeError, RecursionError):  # read again as JSON, and rejected there
                if whole and not raw.strip():  # a blank line: part of the run it is in
                    offset = f.tell()
                    continue
                cid = None
            cid = cid if isinstance(cid, str) else None
            if first == 0 or cid != last:
                if first:
                    runs[last].append((first, start, offset))
                scattered = scattered or (cid is not None and cid in runs)
                runs.setdefault(cid, [])
                first, start, last = number, offset, cid
            offset = f.tell()
    if first:
        runs[last].append((first, start, offset))
    return list(runs.values()) if scattered else None


def _gathered(path: Path, groups: list[list[Run]]) -> Iterator[tuple[int, Any] | Rejected]:
    """The JSON values of ``path``'s lines, each conversation's together (:func:`_scattered`)."""
    return json_lines(path, lines_in(path, (run for group in groups for run in group)))


def _utterances(path: Path) -> Iterator[tuple[str, list[tuple[int, dict[str, Any]]]] | Rejected]:
    """The utterances of each conversation, checked for the fields ConvoKit requires; a
    conversation's lines streamed where they are together, else gathered (:func:`_scattered`)."""
    run: list[tuple[int, dict[str, Any]]] = []
    cid: str | None = None
    groups = _scattered(path)
    for item in json_lines(path) if groups is None else _gathered(path, groups):
        if isinstance(item, Rejected):
            yield item
            continue
        number, u = item
        conv = u.get("conversation_id", u.get("root")) if isinstance(u, dict) else None
        need = ("id", "text") if isinstance(u, dict) else ()
        missing = [k for k in need if not isinstance(u.get(k), str)]
        if (
            not isinstance(u, dict)
            or missing
            or not isinstance(conv, str)
            or not isinstance(u.get("speaker", u.get("user")), str)
        ):
            what = (
                f"a string {missing[0]!r}"
                if missing
                else "an utterance object with string id, speaker, conversation_id and text"
            )
            yield rejected(path, f"line {number}", f"expected {what}", u)
            continue
        if conv != cid:
            if cid is not None:
                yield cid, run
            cid, run = conv, []
        run.append((number, u))
    if cid is not None:
        yield cid, run


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
    folder = _folder_of(paths)
    if folder is None or not (folder / "utterances.jsonl").is_file():
        where = folder or (paths[0] if paths else Path("."))
        yield Rejected(where, "file", "expected a ConvoKit corpus folder holding utterances.jsonl")
        return
    loaded = [_json_file(folder / n) for n in _FILES[1:4]]
    for bad in (x for x in loaded if isinstance(x, Rejected)):
        yield bad
        return
    speakers, conversations, corpus = (x for x in loaded if isinstance(x, dict))
    bad_entry = _bad_entry(folder, speakers, conversations)
    if bad_entry is not None:
        yield bad_entry
        return
    c = _Corpus(folder, speakers, conversations, ours=corpus.get("exported_by") == "convbank")
    path = folder / "utterances.jsonl"
    for number, item in enumerate(_utterances(path)):
        if isinstance(item, Rejected):
            yield item
            continue
        conv = _build(c, path, *item, number=number, options=options)
        if not c.ours and corpus and isinstance(conv, Conversation):
            conv.meta = {**conv.meta, "corpus": corpus}
        yield conv


def _sniff_convokit(paths: Sequence[Path]) -> bool:
    """A folder holding ``utterances.jsonl`` whose first line has ConvoKit's keys."""
    folder = _folder_of(paths)
    if folder is None:
        return False
    first = head(folder / "utterances.jsonl").split(b"\n", 1)[0]
    return b'"id"' in first and (b'"speaker"' in first or b'"user"' in first)


FORMAT = Format(
    order=30,
    name="convokit",
    summary="a ConvoKit corpus folder (DIR/<dataset>_convokit)",
    writes="`DIR/<dataset>_convokit/`: utterances with `reply_to` chains and all turn meta and "
    "annotations, speakers, conversations, corpus meta",
    read_with="`convokit.Corpus(filename=...)`",
    writer=write_convokit,
    plan=_folder,
    reader=read_convokit,
    together=True,
    loses="nothing of what convbank exported, but where a dataset's speaker ids name one person "
    "everywhere (`global_speakers`) a speaker's role, persona and meta are one for the whole corpus "
    "(the last conversation's); of any ConvoKit corpus: vectors, speakers' roles (each is "
    "`speaker`), and, written back, utterance ids (`<conversation>/<position>`), speaker ids "
    "(`<conversation>/<speaker>`) and the reply tree (a chain; each reply's parent and "
    "timestamp stay in its meta)",
    sniff=_sniff_convokit,
)
"""The ``convokit`` format: written without ConvoKit, so it needs no extra."""
