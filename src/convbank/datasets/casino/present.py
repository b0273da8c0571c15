"""How CaSiNo is presented: deals from the speaker's side in the chat export, priorities and
reasons as private context, the Hugging Face loader's features, outcomes and strategy
statistics, deals as tables in the viewer and as one line in the terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from convbank.datasets import (
    ActionTable,
    Context,
    CrossTab,
    Distribution,
    MetaField,
    Presentation,
    TerminalTurn,
    ViewerTurn,
    meta_distribution,
    system_lines,
)
from convbank.datasets.casino.records import AGENTS, ITEMS, PRIORITY_POINTS, count, deal_of
from convbank.model import Conversation, Turn

if TYPE_CHECKING:
    import datasets
    import pyarrow as pa

    from convbank.datasets import Check
    from convbank.tasks import Task


__all__ = ["LIKENESS", "SATISFACTION", "CasinoPresentation"]

SATISFACTION = (
    "Extremely dissatisfied",
    "Slightly dissatisfied",
    "Undecided",
    "Slightly satisfied",
    "Extremely satisfied",
)
LIKENESS = ("Extremely dislike", "Slightly dislike", "Undecided", "Slightly like", "Extremely like")

_encode = msgspec.json.Encoder().encode


def _likert(column: str, scale: tuple[str, ...]) -> str:
    cases = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(scale, 1))
    return f"CASE {column} {cases} END"


STRATEGY_OUTCOMES = CrossTab(
    "Strategy use against outcomes (CaSiNo, annotated dialogues)",
    "Do negotiators who use a strategy score more points, end more satisfied, and are they "
    "liked more by their opponent? Satisfaction and liking on a 1-5 scale.",
    (
        "strategy",
        "users",
        "non-users",
        "points (users)",
        "points (others)",
        "satisfaction (users)",
        "satisfaction (others)",
        "liked (users)",
        "liked (others)",
    ),
    f"""
    WITH annotated AS (SELECT DISTINCT config, split, conversation_id FROM annotations
                       WHERE dataset = 'casino' AND layer = 'strategy'),
    people AS (
        SELECT p.config, p.split, p.conversation_id, p.participant_id,
               (p.meta->>'$.outcomes.points_scored')::INT AS points,
               {_likert("p.meta->>'$.outcomes.satisfaction'", SATISFACTION)} AS satisfaction,
               {_likert("o.meta->>'$.outcomes.opponent_likeness'", LIKENESS)} AS liked_by_opponent
        FROM participants p JOIN annotated USING (config, split, conversation_id)
        JOIN participants o ON o.dataset = p.dataset AND o.config = p.config AND o.split = p.split
             AND o.conversation_id = p.conversation_id AND o.participant_id <> p.participant_id
        WHERE p.dataset = 'casino'),
    used AS (
        SELECT DISTINCT a.config, a.split, a.conversation_id, t.participant_id, a.label
        FROM annotations a JOIN turns t USING (dataset, config, split, conversation_id, turn_index)
        WHERE a.dataset = 'casino' AND a.layer = 'strategy'),
    labels AS (SELECT DISTINCT label FROM used)
    SELECT l.label, count(u.label) AS users, count(*) - count(u.label) AS others,
           avg(points) FILTER (u.label IS NOT NULL), avg(points) FILTER (u.label IS NULL),
           avg(satisfaction) FILTER (u.label IS NOT NULL), avg(satisfaction) FILTER (u.label IS NULL),
           avg(liked_by_opponent) FILTER (u.label IS NOT NULL),
           avg(liked_by_opponent) FILTER (u.label IS NULL)
    FROM labels l CROSS JOIN people p
    LEFT JOIN used u ON u.config = p.config AND u.split = p.split
         AND u.conversation_id = p.conversation_id AND u.participant_id = p.participant_id
         AND u.label = l.label
    GROUP BY l.label ORDER BY users DESC
    """,
)
"""Per strategy: negotiators of the annotated dialogues who used it at least once against
those who did not, by points, satisfaction and the opponent's liking of them."""


class CasinoPresentation(Presentation):
    """The presentation hooks of :class:`convbank.datasets.casino.Casino`."""

    # ------------------------------------------------------------------ chat and ParlAI
    def chat_side(self, conversation: Conversation) -> str:
        """The first negotiator, ``mturk_agent_1``."""
        return AGENTS[0]

    def chat_system(self, conversation: Conversation, me: str, context: Context) -> str:
        """The rules of the negotiation, then the negotiator's priorities and reasons."""
        info = conversation.participant(me).meta
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

    def chat_content(self, turn: Turn) -> str:
        """A deal as ``[Submit-Deal] {"i_get": {...}, "you_get": {...}}`` from the speaker's side."""
        deal = deal_of(turn)
        if deal is None:
            return super().chat_content(turn)
        sides = {
            "i_get": {i: _number(deal.proposer_gets.get(i)) for i in ITEMS},
            "you_get": {i: _number(deal.other_gets.get(i)) for i in ITEMS},
        }
        return f"[{deal.move}] {_encode(sides).decode()}"

    def chat_outcome(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """Both negotiators' outcomes (points, satisfaction, opponent likeness)."""
        return {p.participant_id: p.meta["outcomes"] for p in conversation.participants}

    target_names: ClassVar[tuple[str, ...]] = ("points_scored", "satisfaction", "opponent_likeness")

    def targets(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """The negotiator's points (an integer), satisfaction and liking of the opponent (the
        post-survey's answers: "Extremely satisfied" ... "Extremely dissatisfied")."""
        outcomes = conversation.participant(me).meta.get("outcomes", {})
        return {k: outcomes.get(k) for k in self.target_names}

    def parlai_context(self, conversation: Conversation, me: str, context: Context) -> list[str]:
        """The chat system message's lines."""
        return system_lines(self.chat_system(conversation, me, context))

    # ------------------------------------------------------------------ Hugging Face
    def hf_features(self) -> datasets.Features:
        """The Hugging Face loader's features, with ``dialogue_id``."""
        from datasets import Features, List, Value

        s, i32 = Value("string"), Value("int32")
        items = {"Firewood": s, "Water": s, "Food": s}
        levels = {"Low": s, "Medium": s, "High": s}
        big_five = (
            "extraversion",
            "agreeableness",
            "conscientiousness",
            "emotional-stability",
            "openness-to-experiences",
        )
        agent = {
            "value2issue": levels,
            "value2reason": levels,
            "outcomes": {"points_scored": i32, "satisfaction": s, "opponent_likeness": s},
            "demographics": {"age": i32, "gender": s, "ethnicity": s, "education": s},
            "personality": {"svo": s, "big-five": {k: Value("float32") for k in big_five}},
        }
        return Features(
            {
                "chat_logs": List(
                    {
                        "text": s,
                        "task_data": {"data": s, "issue2youget": items, "issue2theyget": items},
                        "id": s,
                    }
                ),
                "participant_info": {"mturk_agent_1": agent, "mturk_agent_2": agent},
                "annotations": List(List(s)),
                "dialogue_id": i32,
            }
        )

    def hf_record(self, conversation: Conversation) -> dict[str, Any]:
        """The raw dialogue with every ``task_data`` key present and annotation pairs as lists."""
        raw = super().hf_record(conversation)
        for log in raw["chat_logs"]:
            log["task_data"] = {k: log["task_data"].get(k) for k in ("data", "issue2youget", "issue2theyget")}
        raw["annotations"] = [list(pair) for pair in raw["annotations"]]
        return raw

    # ------------------------------------------------------------------ statistics
    distributions: ClassVar[tuple[Distribution, ...]] = (
        meta_distribution(
            "satisfaction", "participants", "meta->>'$.outcomes.satisfaction'", order=SATISFACTION
        ),
        meta_distribution(
            "opponent_likeness", "participants", "meta->>'$.outcomes.opponent_likeness'", order=LIKENESS
        ),
        meta_distribution(
            "points_scored", "participants", "(meta->>'$.outcomes.points_scored')::INT", numeric=True
        ),
        meta_distribution("deal_moves", "turns", "text", "kind = 'action'"),
    )
    crosstabs: ClassVar[tuple[CrossTab, ...]] = (STRATEGY_OUTCOMES,)

    # ------------------------------------------------------------------ viewer and terminal
    viewer_filters: ClassVar[dict[str, MetaField]] = {
        "satisfaction": MetaField("participants", "$.outcomes.satisfaction"),
        "opponent_likeness": MetaField("participants", "$.outcomes.opponent_likeness"),
        "points_scored": MetaField("participants", "$.outcomes.points_scored"),
    }
    viewer_hidden_meta: ClassVar[frozenset[str]] = frozenset({"task_data", "strategy_slots"})
    terminal_hidden_meta: ClassVar[frozenset[str]] = frozenset({"task_data", "strategy_slots"})
    sql_examples: ClassVar[tuple[tuple[str, str], ...]] = (
        (
            "CaSiNo strategy labels",
            "SELECT label, count(*) AS n FROM annotations WHERE dataset = 'casino' "
            "GROUP BY label ORDER BY n DESC",
        ),
    )

    def meta_views(self) -> Mapping[str, Mapping[str, str]]:
        """``deal_counts``: a deal's counts as integers beside the strings "0" to "3" the
        publisher wrote (``meta.task_data.issue2youget.Food`` stays ``"3"``)."""
        sides = ", ".join(
            f"'{side}': {{"
            + ", ".join(f"'{item}': TRY_CAST(meta.task_data.{side}.{item} AS INTEGER)" for item in ITEMS)
            + "}"
            for side in ("issue2youget", "issue2theyget")
        )
        return {
            "turns": {
                "deal_counts": f"CASE WHEN meta.task_data.issue2youget IS NULL THEN NULL ELSE {{{sides}}} END"
            }
        }

    def meta_view_types(self) -> Mapping[str, Mapping[str, pa.DataType]]:
        """``deal_counts``: a struct of each side's counts, an ``int32`` an item."""
        import pyarrow as pa

        side = pa.struct([pa.field(item, pa.int32()) for item in ITEMS])
        return {"turns": {"deal_counts": pa.struct([("issue2youget", side), ("issue2theyget", side)])}}

    def viewer_turn(self, turn: Turn, context: Context) -> ViewerTurn:
        """A deal as a table: what the proposer gets, what the other side gets."""
        deal = deal_of(turn)
        if deal is None:
            return ViewerTurn()
        columns = tuple(deal.proposer_gets)
        return ViewerTurn(
            action=ActionTable(
                deal.move,
                columns,
                (
                    (f"{deal.proposer} gets", tuple(deal.proposer_gets[c] for c in columns)),
                    ("the other gets", tuple(deal.other_gets.get(c, "") for c in columns)),
                ),
            )
        )

    def terminal_turn(self, turn: Turn, context: Context) -> TerminalTurn:
        """A deal on one line: what the proposer gets, what the other side gets."""
        deal = deal_of(turn)
        if deal is None:
            return super().terminal_turn(turn, context)
        you = ", ".join(f"{v} {k}" for k, v in deal.proposer_gets.items())
        they = ", ".join(f"{v} {k}" for k, v in deal.other_gets.items())
        return TerminalTurn(action=f"[{deal.move}] proposer gets {you}; the other side gets {they}")

    # ------------------------------------------------------------------ validation and tasks

    def checks(self) -> Sequence[Check]:
        """Points, deals, deal moves, walk-aways and strategy labels."""
        from convbank.datasets.casino.checks import CHECKS

        return CHECKS

    def tasks(self) -> Sequence[Task]:
        """``casino-strategy``."""
        from convbank.datasets.casino.tasks import CasinoStrategy

        return (CasinoStrategy(),)


def _number(raw: str | None) -> int | str | None:
    """A count as a number for the chat format, kept as it is where it is not one."""
    n = count(raw)
    return raw if n is None else n
