"""ConvAI2's raw records as published, and its participants as convbank names them: the
human is ``participant1``, the bot ``participant2`` (what every module of the package
shares)."""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from convbank.datasets import Int64, Strict

__all__ = ["BOT", "HUMAN", "Dialog", "Message", "ParticipantId"]

HUMAN, BOT = "participant1", "participant2"


class Message(Strict):
    """One message; ``evaluation_score`` is the human's thumbs on a bot message (the rounds'
    files; null throughout data_tolokers), ``sender_class`` "Human"/"Bot"."""

    id: Int64
    sender: str
    text: str
    evaluation_score: Int64 | UnsetType | None = UNSET
    sender_class: str | UnsetType = UNSET


class ParticipantId(Strict):
    """``{"class": "User"|"Bot", "user_id": ...}``."""

    class_: str = msgspec.field(name="class")
    user_id: str


class Dialog(Strict, kw_only=True):
    """One dialogue as published. The fields are in the order of both layouts: the rounds'
    files (tolokers, intermediate, volunteers) have no ``dialog_id`` and carry times and
    participant ids; summer_wild has a hex ``dialog_id`` and neither."""

    dialog_id: str | UnsetType = UNSET
    dialog: list[Message]
    start_time: str | UnsetType = UNSET
    end_time: str | UnsetType = UNSET
    bot_profile: list[str]
    user_profile: list[str]
    eval_score: Int64 | None
    profile_match: Int64 | Literal[""]
    participant1_id: ParticipantId | UnsetType = UNSET
    participant2_id: ParticipantId | UnsetType = UNSET
