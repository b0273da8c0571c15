"""``chat``: JSONL for fine-tuning chat models, one conversation seen from one participant.

Each line is ``{"messages": [{"role", "content"}...], "metadata": {...}}``. The participant
we see from speaks as ``assistant``, everyone else as ``user``; the system message carries
what that participant privately knew (CaSiNo priorities and reasons, the PEC persona, the
ConvAI2 profile, the Curiosity facts shown, the CCPE-M elicitation goal). CaSiNo deal moves
become ``[Submit-Deal] {"i_get": {...}, "you_get": {...}}`` from the speaker's side.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from convbank.datasets.casino import ITEMS, PRIORITY_POINTS
from convbank.errors import ExportError
from convbank.export._core import Selection, write_lines
from convbank.model import Conversation, Turn

__all__ = ["DEFAULT_SIDE", "chat_record", "write_chat"]

DEFAULT_SIDE = {
    "casino": "mturk_agent_1",
    "ccpe": "ASSISTANT",
    "curiosity": "assistant",
    "pec": None,  # the responder
    "convai2": "participant2",
}
"""The participant seen from when ``--as`` is not given (PEC: the responder)."""

_encode = msgspec.json.Encoder().encode


def _side(conv: Conversation, as_participant: str | None) -> str:
    if as_participant is None:
        default = DEFAULT_SIDE.get(conv.dataset)
        if default is None:
            return next(p.participant_id for p in conv.participants if p.role == "responder")
        return default
    if all(p.participant_id != as_participant for p in conv.participants):
        known = ", ".join(p.participant_id for p in conv.participants)
        raise ExportError(
            f"{conv.dataset} conversation {conv.conversation_id} has no participant "
            f"{as_participant!r} (--as); its participants: {known}"
        )
    return as_participant


# ---------------------------------------------------------------------- system messages
def _casino_system(conv: Conversation, me: str, facts: dict[int, str]) -> str:
    info = conv.participant(me).meta
    lines = [
        "You are at a campsite and negotiate with your neighbour how to split 3 packages each of "
        "food, water and firewood. Each package of your High, Medium and Low priority item is worth "
        f"{PRIORITY_POINTS['High']}, {PRIORITY_POINTS['Medium']} and {PRIORITY_POINTS['Low']} points "
        "to you; walking away gives both sides 5 points.",
        "Your priorities and reasons:",
    ]
    for level in ("High", "Medium", "Low"):
        lines.append(f"- {level}: {info['value2issue'][level]} ({info['value2reason'][level]})")
    lines.append(
        'Make a deal with [Submit-Deal] {"i_get": {...}, "you_get": {...}}; answer one with '
        "[Accept-Deal] or [Reject-Deal]; end without a deal with [Walk-Away]."
    )
    return "\n".join(lines)


def _ccpe_system(conv: Conversation, me: str, facts: dict[int, str]) -> str:
    if me == "ASSISTANT":
        return (
            "You are eliciting the user's movie preferences: ask which genres, movies and people "
            "they like or dislike and why, follow up on what they say, and do not recommend movies."
        )
    return "You are telling an assistant about your own movie preferences, likes and dislikes."


def _curiosity_system(conv: Conversation, me: str, facts: dict[int, str]) -> str:
    meta = conv.meta
    if me == "user":
        known = ", ".join(meta.get("known_entities", [])) or "none"
        return (
            f"You are a curious user learning about {meta.get('focus_entity')}. "
            f"Places you already know: {known}."
        )
    shown: dict[int, None] = {}
    for t in conv.turns:
        for f in t.meta.get("facts", ()):
            shown.setdefault(f["fid"])
    lines = [
        f"You teach a curious user about {meta.get('focus_entity')}, covering "
        f"{meta.get('first_aspect')} and {meta.get('second_aspect')}. Facts you can use:"
    ]
    lines += [f"- [{fid}] {facts[fid]}" if fid in facts else f"- [{fid}]" for fid in shown]
    return "\n".join(lines)


def _persona_system(conv: Conversation, me: str, facts: dict[int, str]) -> str:
    persona = conv.participant(me).persona
    if not persona:
        return "You take part in an online conversation. Your persona is not known."
    return "Your persona:\n" + "\n".join(f"- {s}" for s in persona)


SYSTEM: dict[str, Callable[[Conversation, str, dict[int, str]], str]] = {
    "casino": _casino_system,
    "ccpe": _ccpe_system,
    "curiosity": _curiosity_system,
    "pec": _persona_system,
    "convai2": _persona_system,
}


# ---------------------------------------------------------------------- turns and outcomes
def _content(turn: Turn) -> str:
    if turn.kind != "action":
        return turn.text
    deal = turn.meta.get("task_data", {})
    if "issue2youget" in deal:
        sides = {
            "i_get": {i: int(deal["issue2youget"][i]) for i in ITEMS},
            "you_get": {i: int(deal["issue2theyget"][i]) for i in ITEMS},
        }
        return f"[{turn.text}] {_encode(sides).decode()}"
    return f"[{turn.text}]"


def _outcome(conv: Conversation, me: str) -> dict[str, Any]:
    if conv.dataset == "casino":
        return {p.participant_id: p.meta["outcomes"] for p in conv.participants}
    if conv.dataset == "convai2":
        return {k: conv.meta.get(k) for k in ("eval_score", "profile_match")}
    if conv.dataset == "curiosity":
        return {k: v for k, v in conv.meta.items() if k.endswith("_rating")}
    return {}


def chat_record(
    conv: Conversation, as_participant: str | None = None, facts: dict[int, str] | None = None
) -> dict[str, Any]:
    """One conversation as a chat-format record seen from ``as_participant``."""
    me = _side(conv, as_participant)
    messages = [{"role": "system", "content": SYSTEM[conv.dataset](conv, me, facts or {})}]
    messages += [
        {"role": "assistant" if t.participant_id == me else "user", "content": _content(t)}
        for t in conv.turns
    ]
    return {
        "messages": messages,
        "metadata": {
            "dataset": conv.dataset,
            "config": conv.config,
            "split": conv.split,
            "conversation_id": conv.conversation_id,
            "as": me,
            "role": conv.participant(me).role,
            "outcome": _outcome(conv, me),
        },
    }


def write_chat(selection: Selection, directory: Path, as_participant: str | None = None) -> list[Path]:
    """``{dataset}_{config}_{split}.chat.jsonl``, one record per conversation."""

    def lines(conv: Conversation) -> list[bytes]:
        return [_encode(chat_record(conv, as_participant, selection.corpus.fact_texts(conv))) + b"\n"]

    return write_lines(selection, directory, ".chat.jsonl", lines)
