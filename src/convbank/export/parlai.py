"""``parlai``: ParlAI's text format, as its ParlAIDialogTeacher reads it.

One line per example, tab-separated ``field:value`` pairs; each episode ends with
``episode_done:True``. The side we speak for (as in ``chat``) gives the ``labels``; the
other side's preceding turns are the ``text``. The first example's text starts with what
that side privately knew (:meth:`~convbank.datasets.Presentation.parlai_context`: by default one
``your persona: ...`` line per persona sentence, as the ConvAI2 and PersonaChat tasks present
it). Tabs, newlines and ``|`` in text are escaped as ParlAI's ``msg_to_str`` does (``\\t``,
``\\n``, ``__PIPE__``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from convbank import catalog
from convbank.export._core import Selection, per_part, write_lines
from convbank.export._format import Format
from convbank.export.chat import chat_record
from convbank.model import Conversation

__all__ = ["FORMAT", "SUFFIX", "episode_lines", "write_parlai"]

SUFFIX = ".parlai.txt"
"""How each part's file is named: ``{dataset}_{config}_{split}.parlai.txt``."""


def _escape(text: str) -> str:
    return text.replace("\t", "\\t").replace("\n", "\\n").replace("|", "__PIPE__")


def episode_lines(
    conv: Conversation, as_participant: str | None = None, context: Mapping[str, Any] | None = None
) -> list[str]:
    """The lines of one episode: an example per turn of the chosen side. ParlAI needs labels in
    every example, so turns after that side's last one are left out, and a conversation in
    which it never speaks gives no episode (no lines)."""
    record = chat_record(conv, as_participant, context)
    messages = record["messages"]
    meta = record["metadata"]
    pending: list[str] = catalog.get(conv.dataset).presentation.parlai_context(
        conv, meta["as"], context or {}
    )
    examples: list[tuple[str, str]] = []
    for m in messages[1:]:
        if m["role"] == "assistant":
            examples.append(("\n".join(pending), m["content"]))
            pending = []
        else:
            pending.append(m["content"])
    lines = []
    for i, (text, label) in enumerate(examples):
        line = f"text:{_escape(text)}\tlabels:{_escape(label)}\tid:{conv.dataset}/{meta['conversation_id']}"
        lines.append(line + ("\tepisode_done:True" if i == len(examples) - 1 else ""))
    return lines


def write_parlai(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}_{config}_{split}.parlai.txt``, one episode per conversation, seen from
    ``selection.as_participant``."""

    def lines(conv: Conversation) -> list[bytes]:
        episode = episode_lines(conv, selection.as_participant, selection.corpus.context(conv))
        return [(line + "\n").encode() for line in episode]

    return write_lines(selection, directory, SUFFIX, lines)


FORMAT = Format(
    order=40,
    name="parlai",
    summary="ParlAI text files",
    writes="`<dataset>_<config>_<split>.parlai.txt`, ParlAI text format, personas as `your persona:` lines",
    read_with="ParlAI's `ParlAIDialogTeacher`",
    writer=write_parlai,
    plan=per_part(SUFFIX),
    sided=True,
)
"""The ``parlai`` format."""
