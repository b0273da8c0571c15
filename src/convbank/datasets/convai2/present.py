"""How ConvAI2 is presented: seen from the bot, with its profile; the Hugging Face loader's
features (nulls where the loader used -1); ratings in statistics, cross-tabs and the viewer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from convbank.datasets import CrossTab, Distribution, MetaField, Presentation, meta_distribution
from convbank.datasets.convai2.records import BOT
from convbank.model import Conversation

if TYPE_CHECKING:
    import datasets

    from convbank.datasets import Check
    from convbank.tasks import Task


__all__ = ["ConvAI2Presentation"]

"""The human evaluator and the bot."""

_LIKERT = ("1", "2", "3", "4", "5")

SCORE_BY_PROFILE_MATCH = CrossTab(
    "Dialogue rating by persona recognition (ConvAI2)",
    "Do humans rate a dialogue higher when they recognised the bot's persona?",
    ("config", "profile_match", "dialogues", "mean eval_score", "mean turns"),
    """
    SELECT config, coalesce(nullif(meta->>'profile_match', ''), 'not answered') AS profile_match,
           count(*), avg((meta->>'eval_score')::INT), avg(num_turns)
    FROM conversations WHERE dataset = 'convai2' AND meta->>'eval_score' IS NOT NULL
    GROUP BY ALL ORDER BY ALL
    """,
)
"""Rated dialogues: eval_score by whether the human recognised the bot's persona."""

SCORE_BY_BOT = CrossTab(
    "Rating per bot (ConvAI2)",
    "Which bots did humans rate highest, and do dialogue ratings agree with per-message thumbs?",
    ("bot", "rated dialogues", "mean eval_score", "thumbs-up rate"),
    """
    WITH bots AS (SELECT config, split, conversation_id, meta->>'user_id' AS bot FROM participants
                  WHERE dataset = 'convai2' AND participant_id = 'participant2'),
    thumbs AS (SELECT config, split, conversation_id,
                      avg((meta->>'evaluation_score')::INT) AS up FROM turns
               WHERE dataset = 'convai2' AND meta->>'evaluation_score' IS NOT NULL GROUP BY ALL)
    SELECT coalesce(bot, '?') AS bot, count(*) AS n, avg((c.meta->>'eval_score')::INT), avg(up)
    FROM conversations c JOIN bots USING (config, split, conversation_id)
    LEFT JOIN thumbs USING (config, split, conversation_id)
    WHERE c.dataset = 'convai2' AND c.meta->>'eval_score' IS NOT NULL
    GROUP BY ALL ORDER BY 3 DESC
    """,
)
"""Rated dialogues per bot: count, mean eval_score and thumbs-up rate."""


class ConvAI2Presentation(Presentation):
    """The presentation hooks of :class:`convbank.datasets.convai2.ConvAI2` (the chat system
    message and the ParlAI context are the defaults: the profile as a persona)."""

    def chat_side(self, conversation: Conversation) -> str:
        """The bot, ``participant2``."""
        return BOT

    def chat_outcome(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """The human's rating and persona guess, as :meth:`targets` gives them (None where
        the publisher left ``""``: one type a field, so the ``chat`` view makes a table)."""
        return self.targets(conversation, me)

    target_names: ClassVar[tuple[str, ...]] = ("eval_score", "profile_match")

    def targets(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """The human's rating of the dialogue (1-5; None where not rated) and whether they
        recognised the bot's persona (1, 0, or None where the publisher left it empty), for
        either side."""
        return {k: _blank(conversation.meta.get(k)) for k in self.target_names}

    def hf_features(self) -> datasets.Features:
        """The Hugging Face loader's features, profiles as lists of sentences, with the
        per-message score, the times and the participant ids as extra columns."""
        from datasets import Features, List, Sequence, Value

        s, i32 = Value("string"), Value("int32")
        ident = {"class": s, "user_id": s}
        return Features(
            {
                "id": s,
                "dialog_id": s,
                "dialog": List(
                    {"id": i32, "sender": s, "text": s, "sender_class": s, "evaluation_score": i32}
                ),
                "bot_profile": Sequence(s),
                "user_profile": Sequence(s),
                "eval_score": i32,
                "profile_match": i32,
                "start_time": s,
                "end_time": s,
                "participant1_id": ident,
                "participant2_id": ident,
            }
        )

    def hf_record(self, conversation: Conversation) -> dict[str, Any]:
        """The raw dialogue with ``id``; absent keys and an empty ``profile_match`` null."""
        raw = super().hf_record(conversation)
        raw["id"] = conversation.conversation_id
        raw.setdefault("dialog_id", None)
        if raw["profile_match"] == "":
            raw["profile_match"] = None
        for m in raw["dialog"]:
            m.setdefault("sender_class", None)
            m.setdefault("evaluation_score", None)
        for key in ("start_time", "end_time", "participant1_id", "participant2_id"):
            raw.setdefault(key, None)
        return raw

    distributions: ClassVar[tuple[Distribution, ...]] = (
        meta_distribution("eval_score", "conversations", "meta->>'eval_score'", order=_LIKERT),
        meta_distribution("profile_match", "conversations", "meta->>'profile_match'", order=("0", "1", "")),
        meta_distribution(
            "message_thumbs", "turns", "meta->>'evaluation_score'", f"participant_id = '{BOT}'"
        ),
    )
    crosstabs: ClassVar[tuple[CrossTab, ...]] = (SCORE_BY_PROFILE_MATCH, SCORE_BY_BOT)

    viewer_filters: ClassVar[dict[str, MetaField]] = {
        "eval_score": MetaField("conversations", "$.eval_score"),
        "profile_match": MetaField("conversations", "$.profile_match"),
    }
    sql_examples: ClassVar[tuple[tuple[str, str], ...]] = (
        (
            "ConvAI2 rating by bot",
            "SELECT p.meta->>'user_id' AS bot, count(*) AS n, avg((c.meta->>'eval_score')::INT) AS mean_score "
            "FROM conversations c JOIN participants p USING (dataset, config, split, conversation_id) "
            "WHERE c.dataset = 'convai2' AND p.participant_id = 'participant2' "
            "AND c.meta->>'eval_score' IS NOT NULL GROUP BY ALL ORDER BY mean_score DESC",
        ),
    )

    # ------------------------------------------------------------------ validation and tasks

    def checks(self) -> Sequence[Check]:
        """Message ids, ratings, sender classes and silent sides."""
        from convbank.datasets.convai2.checks import CHECKS

        return CHECKS

    def tasks(self) -> Sequence[Task]:
        """``convai2-quality``."""
        from convbank.datasets.convai2.tasks import ConvAI2Quality

        return (ConvAI2Quality(),)


def _blank(value: Any) -> Any:
    """None for the empty string the publisher wrote where there is no value."""
    return None if value == "" else value
