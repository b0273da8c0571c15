"""``parlai``: ParlAI's text format, as its ParlAIDialogTeacher reads it.

One line per example, tab-separated ``field:value`` pairs; each episode ends with
``episode_done:True``. The side we speak for (as in ``chat``) gives the ``labels``; the
other side's preceding turns are the ``text``. The first example's text starts with what
that side privately knew (:meth:`~convbank.datasets.Presentation.parlai_context`: by default one
``your persona: ...`` line per persona sentence, as the ConvAI2 and PersonaChat tasks present
it). Tabs, newlines and ``|`` in text and in the ``id`` field are escaped as ParlAI's
``msg_to_str`` does (``\\t``, ``\\n``, ``__PIPE__``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from convbank import catalog
from convbank.export._core import Selection, per_part, write_lines
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._read import LongLine, head, holds_value, lines, rejected, suffixed
from convbank.export.chat import chat_record, content_text
from convbank.model import Conversation, Participant, Turn

__all__ = ["FORMAT", "SUFFIX", "episode_lines", "read_parlai", "write_parlai"]

SUFFIX = ".parlai.txt"
"""How each part's file is named: ``{dataset}_{config}_{split}.parlai.txt``."""


def _escape(text: str) -> str:
    return text.replace("\t", "\\t").replace("\n", "\\n").replace("|", "__PIPE__")


def episode_lines(
    conv: Conversation, as_participant: str | None = None, context: Mapping[str, Any] | None = None
) -> list[str]:
    """The lines of one episode: an example per turn of the chosen side. ParlAI needs labels in
    every example, so turns after that side's last one are left out, and a conversation in
    which it never speaks (one of no participants included) gives no episode (no lines)."""
    if not conv.participants and as_participant is None:
        return []
    record = chat_record(conv, as_participant, context)
    messages = record["messages"]
    meta = record["metadata"]
    pending: list[str] = catalog.get(conv.dataset).presentation.parlai_context(
        conv, meta["as"], context or {}
    )
    examples: list[tuple[str, str]] = []
    if messages and messages[0]["role"] == "system":  # what the side knew: parlai_context says it
        messages = messages[1:]
    for m in messages:  # a content of typed parts is its text parts; null, empty
        content = content_text(m["content"]) or ""
        if m["role"] == "assistant":
            examples.append(("\n".join(pending), content))
            pending = []
        else:
            pending.append(content)
    lines = []
    for i, (text, label) in enumerate(examples):
        where = _escape(f"{conv.dataset}/{meta['conversation_id']}")
        line = f"text:{_escape(text)}\tlabels:{_escape(label)}\tid:{where}"
        lines.append(line + ("\tepisode_done:True" if i == len(examples) - 1 else ""))
    return lines


def write_parlai(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}_{config}_{split}.parlai.txt``, one episode per conversation, seen from
    ``selection.as_participant``."""

    def lines(conv: Conversation) -> list[bytes]:
        episode = episode_lines(conv, selection.as_participant, selection.corpus.context(conv))
        return [(line + "\n").encode() for line in episode]

    return write_lines(selection, directory, SUFFIX, lines)


def _unescape(text: str) -> str:
    """A value as ParlAI's ``str_to_msg`` reads it back."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("__PIPE__", "|")


_CONTEXT = ("your persona:", "partner's persona:")
"""The lines that open an episode's first text with what a side knew, not what was said."""


def _fields(line: str) -> dict[str, str] | str:
    """A line's ``key:value`` fields (a value may hold colons), or what is wrong with it: a
    field given twice is refused, as a JSON record's key given twice is, where ParlAI's reader
    keeps the last value alone."""
    out: dict[str, str] = {}
    for field in line.split("\t"):
        if not field:
            continue
        key, colon, value = field.partition(":")
        if not colon or not key:
            return f"expected tab-separated key:value fields, not {field[:60]!r}"
        if key in out:
            said = f"the field {key[:60]!r} is given twice; a reader would keep the last alone"
            return f"expected each field of a line once ({said})"
        out[key] = value
    if "text" not in out and "labels" not in out and "eval_labels" not in out:
        return "expected a text: or labels: field (ParlAI's tab-separated key:value fields)"
    return out


class _Episode:
    """The turns of one episode as its examples arrive: the text side (``user``) then the
    labels side (``assistant``); the first text's persona lines are the assistant's persona."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.persona: dict[str, list[str]] = {"assistant": [], "user": []}
        self.id: str | None = None
        self.first = 0

    def add(self, fields: dict[str, str]) -> None:
        text = _unescape(fields.pop("text", ""))
        if not self.turns and text:
            kept: list[str] = []
            for line in text.split("\n"):
                side = (
                    "assistant"
                    if line.startswith(_CONTEXT[0])
                    else "user"
                    if line.startswith(_CONTEXT[1])
                    else None
                )
                if side is None or kept:
                    kept.append(line)
                else:
                    self.persona[side].append(line.split(":", 1)[1].strip())
            text = "\n".join(kept)
        given = fields.pop("id", None)
        self.id = self.id or (None if given is None else _unescape(given))
        if text:
            self.turns.append(Turn(turn_index=len(self.turns), participant_id="user", text=text))
        label = fields.pop("labels", None) or fields.pop("eval_labels", None)
        fields.pop("episode_done", None)
        if label is not None:
            first, *others = label.split("|")
            meta: dict[str, Any] = {k: _unescape(v) for k, v in fields.items()}
            if others:
                meta["labels"] = [_unescape(x) for x in (first, *others)]
            self.turns.append(
                Turn(turn_index=len(self.turns), participant_id="assistant", text=_unescape(first), meta=meta)
            )

    def conversation(self, number: int, seen: set[str], options: ReadOptions) -> Conversation:
        cid = (self.id or "").partition("/")[2] or str(number)
        cid = str(number) if cid in seen else cid
        seen.add(cid)
        people = [
            Participant(participant_id=p, role=p, persona=self.persona[p]) for p in ("user", "assistant")
        ]
        return Conversation(
            dataset=options.dataset,
            config=options.config,
            split=options.split,
            conversation_id=cid,
            source_index=number,
            participants=people,
            turns=self.turns,
        )


_DONE = b"episode_done:"
"""The field that ends an episode: of any value but an empty one (``True``, ``true``, even
``False``), as ParlAI's ``str_to_msg`` reads it (``bool`` of the text)."""


def _left_out(ends: bool) -> str:
    """What a rejected line takes with it: its episode, to this line or the next that ends one."""
    if ends:
        return "; the episode it ends is left out with it"
    return "; its episode, to the next line that ends one (an episode_done of any value), is left out with it"


def read_parlai(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The episodes of ParlAI text files, one conversation each (of participants ``user``,
    the text side, and ``assistant``, the labels side); an episode ends at an
    ``episode_done`` of any value but an empty one, as ParlAI reads it (or at its file's
    end). Its id is the ``id`` field's part after the first ``/`` (convbank writes
    ``dataset/conversation_id``), else its number; extra
    fields are the labels turn's meta; alternatives in ``labels`` (``a|b``) its meta
    ``labels``::

        read_parlai([Path("train.txt")], ReadOptions(dataset="mytask", split="train"))
    """
    number, seen = 0, set[str]()
    for path in paths:
        episode, broken = _Episode(), False
        for item in lines(path, _DONE):
            if isinstance(item, Rejected):  # a line too long to hold
                ends = isinstance(item, LongLine) and item.held
                yield replace(item, takes=_left_out(ends))
                if ends:  # it held episode_done:True: the next line starts an episode
                    number, episode, broken = number + 1, _Episode(), False
                else:
                    broken = True
                continue
            line_number, raw = item
            try:
                fields = _fields(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                fields = f"expected UTF-8 text ({exc})"
            # ParlAI's str_to_msg: a line's last episode_done field, true unless empty
            if isinstance(fields, dict):
                done = bool(fields.get("episode_done"))
            else:
                done = holds_value(b"\t" + raw, _DONE)
            if isinstance(fields, str):
                yield replace(rejected(path, f"line {line_number}", fields, raw), takes=_left_out(done))
                broken = True  # the rest of its episode goes with it
            elif not broken:
                episode.add(fields)
            if done:
                if not broken:
                    yield episode.conversation(number, seen, options)
                number, episode, broken = number + 1, _Episode(), False
        if episode.turns and not broken:
            yield episode.conversation(number, seen, options)
            number += 1


def _sniff_parlai(paths: Sequence[Path]) -> bool:
    """Text files whose first line starts ``text:`` (or ``labels:``) with tab-separated fields."""
    if not suffixed(paths, ".txt", ".parlai"):
        return False
    first = head(paths[0]).split(b"\n", 1)[0]
    return first.startswith((b"text:", b"labels:")) and (b"\t" in first or b"episode_done" in first)


FORMAT = Format(
    order=40,
    name="parlai",
    summary="ParlAI text files",
    writes="`<dataset>_<config>_<split>.parlai.txt`, ParlAI text format, personas as `your persona:` lines",
    read_with="ParlAI's `ParlAIDialogTeacher`",
    writer=write_parlai,
    plan=per_part(SUFFIX),
    sided=True,
    reader=read_parlai,
    loses="one side's view: speakers' ids (sides `user` and `assistant`; the opening lines but "
    "`your persona:` ones come back as the first `user` turn), the other side's "
    "consecutive turns (joined by a newline) and empty ones, turns after our side's last, a "
    "conversation our side never speaks in, kinds, meta, annotations, `source_index`; a literal "
    "`\\n` or `\\t` in text comes back as a newline or tab, and `__PIPE__` as `|` (as ParlAI reads it)",
    sniff=_sniff_parlai,
)
"""The ``parlai`` format."""
