"""The parts of reading a ConvoKit corpus folder (:func:`convbank.export.convokit.read_convokit`):
its files checked, its utterances gathered per conversation and each conversation built, for
any corpus ConvoKit dumped and for convbank's own ``convokit`` export, whose encoding is
inverted exactly.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from convbank.export._format import ReadOptions, Rejected
from convbank.export._read import json_lines, lines_in, raw_lines, rejected, whole_json
from convbank.model import Conversation, Turn

__all__ = [
    "FILES",
    "IDS",
    "ConvoKitCorpus",
    "bad_entry",
    "build_conversation",
    "folder_of",
    "json_file",
    "speaker_id",
    "utterances_of",
]


FILES = ("utterances.jsonl", "speakers.json", "conversations.json", "corpus.json", "index.json")

IDS = "convbank_ids"
"""The key of a conversation (beside its ``meta``) in convbank's export that says whose its
utterance ids are: ``"chain"``, convbank's ``{conversation_id}/{index}``, or ``"kept"``, those
of the ConvoKit corpus it was read from."""


def speaker_id(cid: str, participant_id: str) -> str:
    """A participant's speaker id where speakers are scoped to their conversation:
    ``{conversation_id}/{participant_id}``, a ``%`` and a ``/`` in the conversation's id
    written ``%25`` and ``%2F``, so that its first ``/`` ends the id and no two participants
    share one (``a/b`` with ``c``, ``a`` with ``b/c``); :func:`_conversation_of` reads it back.

    >>> speaker_id("a/b", "c"), speaker_id("a", "b/c")
    ('a%2Fb/c', 'a/b/c')
    """
    return f"{cid.replace('%', '%25').replace('/', '%2F')}/{participant_id}"


def _conversation_of(written: str) -> str:
    """The conversation id a scoped speaker id was written with (:func:`speaker_id`).

    >>> _conversation_of("a%2Fb%25")
    'a/b%'
    """
    return re.sub("%(25|2F)", lambda m: "%" if m.group(1) == "25" else "/", written)


def folder_of(paths: Sequence[Path]) -> Path | None:
    """The corpus folder: the one path given, or the folder of the files given."""
    folders = {p.parent if p.is_file() else p for p in paths}
    return folders.pop() if len(folders) == 1 else None


def json_file(path: Path) -> dict[str, Any] | Rejected:
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


def bad_entry(folder: Path, speakers: dict[str, Any], conversations: dict[str, Any]) -> Rejected | None:
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


class ConvoKitCorpus:
    """A ConvoKit corpus's speakers and conversations, and whether convbank exported it (its
    encoding is then inverted exactly)."""

    def __init__(self, folder: Path, speakers: dict[str, Any], conversations: dict[str, Any], ours: bool):
        self.folder, self.speakers, self.conversations, self.ours = folder, speakers, conversations, ours
        self.scoped: dict[str, list[str]] = {}
        """Per conversation, the ids of its speakers written ``{conversation_id}/{participant_id}``."""
        for sid, entry in speakers.items():
            pid = _meta_of(entry).get("participant_id")
            if ours and isinstance(pid, str) and sid.endswith(f"/{pid}"):
                self.scoped.setdefault(_conversation_of(sid[: -len(pid) - 1]), []).append(sid)

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


def _turn(
    c: ConvoKitCorpus, u: dict[str, Any], index: int, ids: dict[str, Any], *, own: bool
) -> tuple[dict[str, Any], list[Any]]:
    """A turn (and its annotations) from an utterance; ``index`` its place in the file's
    order within its conversation, ``ids`` the participant id of each speaker; where ``own``
    (:func:`_own_numbering`), the utterance's id and timestamp kept in its meta."""
    meta = _meta_of(u)
    marks = meta.pop("annotations", []) if c.ours else []
    kind = meta.pop("kind", "message") if c.ours else "message"
    if c.ours:
        meta.pop("turn_index", None)
    if own:
        meta["utterance_id"] = u["id"]
        if u.get("timestamp") is not None:
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


def build_conversation(
    c: ConvoKitCorpus,
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
            for k in ("timestamp", "reply_to", "utterance_id")
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
    own = _own_numbering(c, cid, rows)
    built = [_turn(c, u, i, ids, own=own) for i, (_, u) in enumerate(rows)]
    data.update(
        participants=people, turns=[t for t, _ in built], annotations=[a for _, n in built for a in n]
    )
    try:
        conv = msgspec.convert(data, Conversation)
    except msgspec.ValidationError as exc:
        where = f"line {rows[0][0]}" if len(rows) == 1 else f"lines {rows[0][0]}-{rows[-1][0]}"
        return rejected(path, where, f"expected ConvoKit utterances of conversation {cid!r} ({exc})")
    return _parents(path, cid, rows, conv.turns, chained=not own) or conv


def _own_numbering(c: ConvoKitCorpus, cid: str, rows: list[tuple[int, dict[str, Any]]]) -> bool:
    """Whether a conversation's utterances keep ids, a reply tree and timestamps of their own:
    any ConvoKit corpus's, and convbank's export of one, which says so (:data:`IDS` ``kept``),
    whatever its ids look like; one it marks as its chain (or an older export, unmarked) where
    its ids or timestamps are not the chain's ``{conversation_id}/{index}`` and ``index``. So
    they are written back as read."""
    entry = c.conversations.get(cid)
    if not c.ours or (isinstance(entry, dict) and entry.get(IDS) == "kept"):
        return True
    return any(u["id"] != f"{cid}/{i}" or u.get("timestamp") != i for i, (_, u) in enumerate(rows))


def _own(u: dict[str, Any], key: str) -> Any:
    """An utterance's own ``timestamp``, ``reply_to`` (``reply-to`` in older corpora) or id
    (for meta ``utterance_id``)."""
    if key == "utterance_id":
        return u.get("id")
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


def utterances_of(path: Path) -> Iterator[tuple[str, list[tuple[int, dict[str, Any]]]] | Rejected]:
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
