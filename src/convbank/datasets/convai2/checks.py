"""ConvAI2: message ids, ratings and sender classes."""

from __future__ import annotations

from collections.abc import Iterator

from convbank.datasets import CheckList, Problem
from convbank.datasets.convai2.records import BOT, HUMAN
from convbank.model import Conversation

CHECKS = CheckList("convai2")

SENDER_CLASS = {HUMAN: ("Human", "User"), BOT: ("Bot", "Bot")}
"""Per participant: the messages' ``sender_class`` and the participant id's ``class``."""


@CHECKS.check("convai2.message_ids")
def message_ids(conv: Conversation) -> Iterator[Problem]:
    """Message ids run 0, 1, 2, ... (the turn index)."""
    for t in conv.turns:
        if "id" in t.meta:
            yield "error", f"turn {t.turn_index} has message id {t.meta['id']}"


@CHECKS.check("convai2.ratings")
def ratings(conv: Conversation) -> Iterator[Problem]:
    """eval_score is 1-5 or null, profile_match 0, 1 or "", thumbs 0/1 on bot messages only."""
    score, match = conv.meta.get("eval_score"), conv.meta.get("profile_match")
    if score is not None and (isinstance(score, bool) or score not in range(1, 6)):
        yield "error", f"eval_score is {score!r}, not 1-5 or null"
    if match not in (0, 1, "") or isinstance(match, bool):
        yield "error", f'profile_match is {match!r}, not 0, 1 or ""'
    for t in conv.turns:
        thumbs = t.meta.get("evaluation_score")
        if thumbs is None:
            continue
        if thumbs not in (0, 1) or isinstance(thumbs, bool):
            yield "error", f"turn {t.turn_index}: evaluation_score {thumbs!r}, not 0, 1 or null"
        elif t.participant_id != BOT:
            yield "error", f"turn {t.turn_index}: the human's own message has evaluation_score {thumbs}"


@CHECKS.check("convai2.rated_dialogues")
def rated_dialogues(conv: Conversation) -> Iterator[Problem] | None:
    """A dialogue with an eval_score has messages from both the human and the bot."""
    if conv.meta.get("eval_score") is None:
        return None
    spoke = {t.participant_id for t in conv.turns}
    return (
        ("warning", f"rated {conv.meta['eval_score']} although the {role} never spoke")
        for pid, role in ((HUMAN, "human"), (BOT, "bot"))
        if pid not in spoke
    )


@CHECKS.check("convai2.sender_class")
def sender_class(conv: Conversation) -> Iterator[Problem]:
    """sender_class (Human/Bot) agrees with the participant ids' class (User/Bot)."""
    for p in conv.participants:
        expected = SENDER_CLASS.get(p.participant_id)
        if expected is None:
            yield "error", f"unknown participant {p.participant_id!r}"
        elif "class" in p.meta and p.meta["class"] != expected[1]:
            yield "error", f"{p.participant_id} has class {p.meta['class']!r}, expected {expected[1]!r}"
    for t in conv.turns:
        expected = SENDER_CLASS.get(t.participant_id)
        got = t.meta.get("sender_class")
        if expected is not None and got is not None and got != expected[0]:
            yield (
                "error",
                f"turn {t.turn_index}: {t.participant_id} sends as {got!r}, expected {expected[0]!r}",
            )
