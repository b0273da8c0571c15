"""CaSiNo's raw records as published, and what its rules say: the deal moves, the ten
strategies, the items and their points."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType, field

from convbank.datasets import Int64, Strict
from convbank.model import Turn

ACTIONS = ("Submit-Deal", "Accept-Deal", "Reject-Deal", "Walk-Away")
"""Chat-log texts that are deal moves, not messages."""

STRATEGIES = (
    "small-talk",
    "self-need",
    "other-need",
    "no-need",
    "elicit-pref",
    "uv-part",
    "vouch-fair",
    "showing-empathy",
    "promote-coordination",
    "non-strategic",
)
"""The ten strategy labels of the annotated dialogues."""

Item = Literal["Water", "Firewood", "Food"]
Level = Literal["High", "Medium", "Low"]
Agent = Literal["mturk_agent_1", "mturk_agent_2"]

ITEMS = ("Food", "Water", "Firewood")
PRIORITY_POINTS = {"High": 5, "Medium": 4, "Low": 3}
AGENTS: tuple[Agent, Agent] = ("mturk_agent_1", "mturk_agent_2")


Items = dict[Item, str]
"""Counts of each item, as strings "0" to "3"; a map, because the publisher's key order
varies from deal to deal (all six orders occur) and the bytes keep it."""


class TaskData(Strict):
    """``{}`` for messages; the deal, or ``{"data": "accept_deal"}`` etc. for actions."""

    issue2youget: Items | UnsetType = UNSET
    issue2theyget: Items | UnsetType = UNSET
    data: str | UnsetType = UNSET


class ChatLog(Strict):
    """One chat-log entry: a message or a deal move."""

    text: str
    task_data: TaskData
    id: str


class ByPriority(Strict):
    """A value per priority level."""

    High: str
    Medium: str
    Low: str


class Outcomes(Strict):
    """Post-negotiation outcomes of one participant."""

    points_scored: Int64
    satisfaction: str
    opponent_likeness: str


class Demographics(Strict):
    """Demographics of one participant."""

    age: Int64
    gender: str
    ethnicity: str
    education: str


class BigFive(Strict):
    """Big-five personality scores."""

    extraversion: float
    agreeableness: float
    conscientiousness: float
    emotional_stability: float = field(name="emotional-stability")
    openness_to_experiences: float = field(name="openness-to-experiences")


class Personality(Strict):
    """Social value orientation and big-five scores."""

    svo: str
    big_five: BigFive = field(name="big-five")


class ParticipantInfo(Strict):
    """What one negotiator brought and how it went."""

    value2issue: dict[Level, Item]
    """The item of each priority level; a map, as its key order varies in the source."""
    value2reason: ByPriority
    outcomes: Outcomes
    demographics: Demographics
    personality: Personality


class Dialogue(Strict):
    """One CaSiNo dialogue as published."""

    dialogue_id: Int64
    chat_logs: list[ChatLog]
    participant_info: dict[Agent, ParticipantInfo]
    """The two negotiators; a map, as either can come first in the source."""
    annotations: list[tuple[str, str]]
    """``[]`` when unannotated, else ``[text, "label,label"]`` per message in order."""


def count(value: object) -> int | None:
    """A deal's count of an item as a number (the source writes ``"0"`` to ``"3"``); None
    when it is not one (the build keeps such a value as it is, and validation reports it).

    Example: ``count("2") == 2``, ``count("x") is None``."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def points(priorities: Mapping[str, str], deal: Mapping[str, str]) -> int | None:
    """Points a negotiator scores: 5, 4, 3 per item of High, Medium, Low priority; None
    when a count of the deal is not a number."""
    value = {item: PRIORITY_POINTS[level] for level, item in priorities.items()}
    total = 0
    for item, raw in deal.items():
        n = count(raw)
        if n is None or item not in value:
            return None
        total += value[item] * n
    return total


class Deal(msgspec.Struct, frozen=True):
    """A submitted deal, as its turn's meta holds it: the proposer's items and the other
    side's (counts as the strings "0" to "3", in the publisher's key order)."""

    move: str
    proposer: str
    proposer_gets: dict[str, str]
    other_gets: dict[str, str]


def deal_of(turn: Turn) -> Deal | None:
    """The deal a ``Submit-Deal`` turn carries (None for any other turn): the one place that
    reads a deal out of the unified model."""
    task = turn.meta.get("task_data", {})
    if turn.kind != "action" or "issue2youget" not in task:
        return None
    return Deal(
        turn.text, turn.participant_id, dict(task["issue2youget"]), dict(task.get("issue2theyget", {}))
    )
