"""Curiosity: likes, facts, dialog acts, turn taking and ratings."""

from __future__ import annotations

from collections.abc import Iterator

from convbank._wording import article
from convbank.datasets import CheckList, Problem
from convbank.datasets.curiosity.records import DIALOG_ACTS, RATINGS
from convbank.model import Conversation

CHECKS = CheckList("curiosity")


def _role(conv: Conversation, participant_id: str) -> str | None:
    return next((p.role for p in conv.participants if p.participant_id == participant_id), None)


@CHECKS.check("curiosity.likes")
def likes(conv: Conversation) -> Iterator[Problem]:
    """Only assistant messages are liked."""
    for t in conv.turns:
        if t.meta.get("liked") and _role(conv, t.participant_id) != "assistant":
            yield "error", f"turn {t.turn_index}: {article(t.participant_id)} message is liked"


@CHECKS.check("curiosity.facts")
def facts(conv: Conversation) -> Iterator[Problem]:
    """Facts are shown to the assistant only, each once per turn, and used ones among them."""
    for t in conv.turns:
        shown = t.meta.get("facts", [])
        if not shown:
            continue
        if _role(conv, t.participant_id) != "assistant":
            yield "error", f"turn {t.turn_index}: {len(shown)} facts on {article(t.participant_id)} message"
        fids = [f["fid"] for f in shown]
        twice = sorted({fid for fid in fids if fids.count(fid) > 1})
        if twice:
            yield "error", f"turn {t.turn_index}: facts shown twice: {twice}"
        bad = [f for f in shown if not isinstance(f.get("used"), bool)]
        if bad:
            yield "error", f"turn {t.turn_index}: fact {bad[0]['fid']} has used={bad[0].get('used')!r}"


@CHECKS.check("curiosity.dialog_acts")
def dialog_acts(conv: Conversation) -> Iterator[Problem]:
    """Dialog acts come from the known vocabulary."""
    for a in conv.annotations:
        if a.layer != "dialog_act" or a.label not in DIALOG_ACTS:
            yield "error", f"turn {a.turn_index}: unknown {a.layer} {a.label!r}"


@CHECKS.check("curiosity.alternation")
def alternation(conv: Conversation) -> Iterator[Problem]:
    """The user opens and user and assistant alternate."""
    if conv.turns and _role(conv, conv.turns[0].participant_id) != "user":
        yield "error", f"the first message is by {conv.turns[0].participant_id}, not the user"
    for prev, turn in zip(conv.turns, conv.turns[1:], strict=False):
        if prev.participant_id == turn.participant_id:
            yield "error", f"turns {prev.turn_index} and {turn.turn_index} are both by {turn.participant_id}"


@CHECKS.check("curiosity.ratings")
def ratings(conv: Conversation) -> Iterator[Problem]:
    """Ratings are 1 to 5 or null."""
    for key in RATINGS:
        value = conv.meta.get(key)
        if value is not None and value not in range(1, 6):
            yield "error", f"{key} is {value!r}, not 1-5 or null"
