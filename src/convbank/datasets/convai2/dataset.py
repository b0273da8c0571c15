"""ConvAI2 wild evaluation: human-bot dialogues rated by the humans (DeepPavlov, 2018): card,
files, reader, mapper (both ways) and source writer."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from convbank.datasets import ConfigSpec, JsonListDataset, SourceFile
from convbank.datasets._layout import (
    Encoder,
    Frame,
    compact,
    indented,
)
from convbank.datasets.convai2.present import ConvAI2Presentation
from convbank.datasets.convai2.records import BOT, HUMAN, Dialog
from convbank.model import Conversation, Part, Participant, Turn

_CITATION = """@inproceedings{dinan2020second,
  title = {The Second Conversational Intelligence Challenge (ConvAI2)},
  author = {Dinan, Emily and Logacheva, Varvara and Malykh, Valentin and Miller, Alexander and Shuster, Kurt and Urbanek, Jack and Kiela, Douwe and Szlam, Arthur and Serban, Iulian and Lowe, Ryan and Prabhumoye, Shrimai and Black, Alan W and Rudnicky, Alexander and Williams, Jason and Pineau, Joelle and Burtsev, Mikhail and Weston, Jason},
  booktitle = {The NeurIPS '18 Competition},
  year = {2020},
  pages = {187--208}
}"""

_BASE = "https://raw.githubusercontent.com/DeepPavlov/convai/master/2018/data/"

_FILES = {
    "summer_wild": "summer_wild_evaluation_dialogs.json",
    "tolokers": "data_tolokers.json",
    "intermediate": "data_intermediate.json",
    "volunteers": "data_volunteers.json",
}

ROUND_FRAME = Frame(prefix="[", separator=", ", suffix="]")
"""The rounds' files: Python's ``json.dumps`` defaults, no final newline."""
SUMMER_FRAME = Frame(prefix="[", separator=",\n    ", suffix="]")
"""summer_wild: ``json.dumps(indent=4)`` records inside ``[{`` ... ``}]``, as in the real
excerpt (whether the full file opens with ``[{`` or ``[\n    {`` is not known)."""


class ConvAI2(JsonListDataset):
    """ConvAI2 wild evaluation: persona chats between humans and competition bots, with ratings."""

    name = "convai2"
    title = "ConvAI2 Wild Evaluation Dialogues"
    description = (
        "Dialogues between human evaluators and the bots of the ConvAI2 competition "
        "(PersonaChat task): both sides' personas, the human's 1-5 rating of the dialogue "
        "(eval_score), whether the human guessed the bot's persona (profile_match) and "
        "per-message thumbs on bot messages. One config per published file."
    )
    license = "Apache-2.0"
    citation = _CITATION
    homepage = "https://github.com/DeepPavlov/convai/tree/master/2018"
    version = "2018.1"
    files = (
        SourceFile(
            name=_FILES["summer_wild"],
            url=_BASE + _FILES["summer_wild"],
            sha256="c96f53c63d36360236aaa0590f4f9f2ab62eb544126c17aeb9f839b3781135d1",
            size=6_636_788,  # with the sha256, from Hugging Face's dataset_infos.json
        ),
        SourceFile(name=_FILES["tolokers"], url=_BASE + _FILES["tolokers"], sha256=None),
        SourceFile(
            name=_FILES["intermediate"],
            url=_BASE + _FILES["intermediate"],
            sha256="314d68e2de72cf1c96517b958a75cae6de77509d72268792142de2ed8f052cb8",
            size=739213,
        ),
        SourceFile(
            name=_FILES["volunteers"],
            url=_BASE + _FILES["volunteers"],
            sha256="eb6e11a125fa22ffe7eb35ba3356cad3f395db51bd523ea2bdea2a91da6886a2",
            size=2579025,
        ),
    )
    configs = (
        ConfigSpec(
            name="summer_wild",
            description="All wild-evaluation dialogues of the summer hackathon (3,495).",
            splits={"train": 3495},
        ),
        ConfigSpec(
            name="tolokers",
            description="Round with paid Yandex.Toloka workers (3,127).",
            splits={"train": 3127},
        ),
        ConfigSpec(
            name="intermediate",
            description="Intermediate round (291).",
            splits={"train": 291},
        ),
        ConfigSpec(
            name="volunteers",
            description="Final round with volunteers (1,111).",
            splits={"train": 1111},
        ),
    )
    raw_type = Dialog
    presentation_class = ConvAI2Presentation

    format_name = "ConvAI2 wild evaluation"

    def source_name(self, part: Part) -> str:
        """The config's one file."""
        return _FILES[part.config]

    def default_frame(self, config: str) -> Frame:
        """summer_wild's frame, or the rounds'."""
        return SUMMER_FRAME if config == "summer_wild" else ROUND_FRAME

    def encoder(self, config: str) -> Encoder:
        """``json.dumps(indent=4)`` for summer_wild, the defaults for the rounds."""
        return indented(4, 1) if config == "summer_wild" else compact

    def conversation_id(self, record: Dialog, part: Part, index: int) -> str:
        """``dialog_id`` where published, else ``{config}-{position:05d}``."""
        if isinstance(record.dialog_id, str):
            return record.dialog_id
        return f"{part.config}-{index:05d}"

    def raw_row(self, record: Dialog) -> dict[str, Any]:
        """The record as a raw-table row; ``profile_match`` ``""`` is stored as null."""
        row = super().raw_row(record)
        if row["profile_match"] == "":
            row["profile_match"] = None
        return row

    def to_conversation(self, record: Dialog, part: Part, index: int) -> Conversation:
        """The human is ``participant1``, the bot ``participant2``; ratings go to meta."""
        cid = self.conversation_id(record, part, index)
        meta: dict[str, Any] = {
            "eval_score": record.eval_score,
            "profile_match": record.profile_match,
        }
        for key in ("dialog_id", "start_time", "end_time"):
            value = getattr(record, key)
            if value is not UNSET:
                meta[key] = value
        participants = []
        for pid, role, persona, ident in (
            (HUMAN, "human", record.user_profile, record.participant1_id),
            (BOT, "bot", record.bot_profile, record.participant2_id),
        ):
            pmeta = msgspec.to_builtins(ident) if ident is not UNSET else {}
            participants.append(Participant(participant_id=pid, role=role, persona=list(persona), meta=pmeta))
        turns = []
        for i, m in enumerate(record.dialog):
            tmeta: dict[str, Any] = msgspec.to_builtins(m)
            del tmeta["sender"], tmeta["text"]
            if tmeta["id"] == i:
                del tmeta["id"]
            turns.append(Turn(turn_index=i, participant_id=m.sender, text=m.text, meta=tmeta))
        return Conversation(
            dataset=self.name,
            config=part.config,
            split=part.split,
            conversation_id=cid,
            source_index=index,
            participants=participants,
            turns=turns,
            meta=meta,
        )

    def from_conversation(self, conversation: Conversation) -> Dialog:
        """Rebuild the published dialogue."""
        meta = conversation.meta
        human = conversation.participant(HUMAN)
        bot = conversation.participant(BOT)
        fields: dict[str, Any] = {
            "dialog": [
                {"id": t.turn_index, "sender": t.participant_id, "text": t.text, **t.meta}
                for t in conversation.turns
            ],
            "bot_profile": bot.persona,
            "user_profile": human.persona,
            "eval_score": meta["eval_score"],
            "profile_match": meta["profile_match"],
            **{k: meta[k] for k in ("dialog_id", "start_time", "end_time") if k in meta},
        }
        if human.meta:
            fields["participant1_id"] = human.meta
        if bot.meta:
            fields["participant2_id"] = bot.meta
        return msgspec.convert(fields, Dialog)
