"""CaSiNo: campsite negotiation dialogues (Chawla et al., NAACL 2021): card, files, reader,
mapper (both ways) and source writer."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from convbank._wording import counted
from convbank.datasets import ConfigSpec, SourceFile
from convbank.datasets._jsonlist import JsonListDataset
from convbank.datasets._layout import Frame
from convbank.datasets.casino.present import CasinoPresentation
from convbank.datasets.casino.records import (
    ACTIONS,
    AGENTS,
    ChatLog,
    Dialogue,
    ParticipantInfo,
    TaskData,
)
from convbank.errors import FormatError
from convbank.model import Annotation, Conversation, Part, Participant, Turn
from convbank.model.types import TurnKind

__all__ = ["FRAME", "Casino"]

_CITATION = """@inproceedings{chawla2021casino,
  title = {CaSiNo: A Corpus of Campsite Negotiation Dialogues for Automatic Negotiation Systems},
  author = {Chawla, Kushal and Ramirez, Jaysa and Clever, Rene and Lucas, Gale and May, Jonathan and Gratch, Jonathan},
  booktitle = {Proceedings of the 2021 Conference of the North American Chapter of the Association for Computational Linguistics: Human Language Technologies},
  year = {2021},
  pages = {3167--3185}
}"""

_BASE = "https://raw.githubusercontent.com/kushalchawla/CaSiNo/main/data/split/"


FRAME = Frame(prefix="[", separator=", ", suffix="]")
"""The publisher's layout: Python's ``json.dumps`` defaults, no final newline."""


def _check_complete(path: Path, dialogues: list[Dialogue]) -> None:
    """Every map has all its keys (msgspec checks the keys a map has, not the missing ones)."""
    for i, d in enumerate(dialogues):
        maps: list[tuple[str, Mapping[Any, Any], int]] = [("participant_info", d.participant_info, 2)]
        for agent, info in d.participant_info.items():
            maps.append((f"participant_info.{agent}.value2issue", info.value2issue, 3))
        for n, log in enumerate(d.chat_logs):
            for key in ("issue2youget", "issue2theyget"):
                deal = getattr(log.task_data, key)
                if deal is not UNSET:
                    maps.append((f"chat_logs[{n}].task_data.{key}", deal, 3))
        for where, value, size in maps:
            if len(value) != size:
                raise FormatError(
                    f"{path}: at $[{i}].{where}: expected {counted(size, 'key')}, got {', '.join(value) or 'none'}; "
                    "not the CaSiNo format as published — re-fetch the file or check that it is the right one",
                    path=path,
                    json_path=f"$[{i}].{where}",
                )


class Casino(JsonListDataset):
    """CaSiNo: 1,030 negotiation dialogues over food, water and firewood for a camping trip."""

    name = "casino"
    title = "CaSiNo: Campsite Negotiation Dialogues"
    description = (
        "1,030 negotiation dialogues between two crowd workers who split packages of food, "
        "water and firewood for a camping trip, with their priorities and reasons, outcomes "
        "(points, satisfaction, opponent likeness), demographics and personality; 396 dialogues "
        "carry utterance-level negotiation strategy labels."
    )
    license = "CC-BY-4.0"
    citation = _CITATION
    homepage = "https://github.com/kushalchawla/CaSiNo"
    version = "1.0.0"
    files = (
        SourceFile(
            name="casino_train.json",
            url=_BASE + "casino_train.json",
            sha256="6b953d153fc8c78f27e911c1439b93b9b3519357e3ba825091b2e567845ba3a7",
            size=3763692,
        ),
        SourceFile(
            name="casino_valid.json",
            url=_BASE + "casino_valid.json",
            sha256="91f2d1f09accedf98667ac081fd5083752738390734e991601b036643da077e0",
            size=112116,
        ),
        SourceFile(
            name="casino_test.json",
            url=_BASE + "casino_test.json",
            sha256="bf6da2d7c105396300d85a65819c04d99304ac9abb8a590ba342fd0c86b4dd12",
            size=424211,
        ),
    )
    configs = (
        ConfigSpec(
            name="default",
            description="The official train/valid/test split.",
            splits={"train": 900, "valid": 30, "test": 100},
        ),
    )
    raw_type = Dialogue
    presentation_class = CasinoPresentation

    format_name = "CaSiNo"

    def source_name(self, part: Part) -> str:
        """``casino_{split}.json``."""
        return f"casino_{part.split}.json"

    def default_frame(self, config: str) -> Frame:
        """Python's ``json.dumps`` defaults, no final newline."""
        return FRAME

    def check_records(self, path: Path, records: list[Dialogue]) -> None:
        """Every map has all its keys."""
        _check_complete(path, records)

    def conversation_id(self, record: Dialogue, part: Part, index: int) -> str:
        """The ``dialogue_id``, as a string."""
        return str(record.dialogue_id)

    def to_conversation(self, record: Dialogue, part: Part, index: int) -> Conversation:
        """Negotiators become participants, chat logs turns, strategy labels annotations."""
        cid = self.conversation_id(record, part, index)
        participants = []
        for agent in AGENTS:
            info = record.participant_info[agent]
            reasons = info.value2reason
            participants.append(
                Participant(
                    participant_id=agent,
                    role="negotiator",
                    persona=[reasons.High, reasons.Medium, reasons.Low],
                    meta=msgspec.to_builtins(info),
                )
            )
        turns = []
        for i, log in enumerate(record.chat_logs):
            meta: dict[str, Any] = {}
            task_data = msgspec.to_builtins(log.task_data)
            if task_data:
                meta["task_data"] = task_data
            kind: TurnKind = "action" if log.text in ACTIONS and task_data else "message"
            turns.append(Turn(turn_index=i, participant_id=log.id, text=log.text, kind=kind, meta=meta))
        annotations = self._align(record, turns, cid)
        order = list(record.participant_info)
        return Conversation(
            dataset=self.name,
            config=part.config,
            split=part.split,
            conversation_id=cid,
            source_index=index,
            participants=participants,
            turns=turns,
            annotations=annotations,
            meta={} if order == list(AGENTS) else {"participant_info_order": order},
        )

    @staticmethod
    def _align(record: Dialogue, turns: list[Turn], cid: str) -> list[Annotation]:
        """Attach each ``[text, labels]`` pair to its message, matching by text in order.

        Three dialogues have one annotation fewer than messages, so position alone is wrong.
        """
        annotations: list[Annotation] = []
        position = 0
        for n, (text, labels) in enumerate(record.annotations):
            while position < len(turns) and (
                turns[position].kind != "message" or turns[position].text != text
            ):
                position += 1
            if position == len(turns):
                raise FormatError(
                    f"casino dialogue {cid}: annotation {n} ({text[:40]!r}) matches no later "
                    "message; expected annotations in utterance order with the message text",
                    record=cid,
                )
            slots = labels.split(",")
            turns[position].meta["strategy_slots"] = len(slots)
            annotations.extend(
                Annotation(turn_index=position, layer="strategy", label=label, meta={"slot": s})
                for s, label in enumerate(slots)
                if label
            )
            position += 1
        return annotations

    def from_conversation(self, conversation: Conversation) -> Dialogue:
        """Rebuild the published dialogue."""
        info = {p.participant_id: msgspec.convert(p.meta, ParticipantInfo) for p in conversation.participants}
        order = conversation.meta.get("participant_info_order", AGENTS)
        chat_logs = [
            ChatLog(
                text=t.text,
                task_data=msgspec.convert(t.meta.get("task_data", {}), TaskData),
                id=t.participant_id,
            )
            for t in conversation.turns
        ]
        annotations: list[tuple[str, str]] = []
        for turn in conversation.turns:
            slots = turn.meta.get("strategy_slots")
            if slots is None:
                continue
            labels = [""] * slots
            for ann in conversation.annotations_of(turn.turn_index, "strategy"):
                labels[ann.meta["slot"]] = ann.label
            annotations.append((turn.text, ",".join(labels)))
        return Dialogue(
            dialogue_id=int(conversation.conversation_id),
            chat_logs=chat_logs,
            participant_info={agent: info[agent] for agent in order},
            annotations=annotations,
        )
