"""CaSiNo: campsite negotiation dialogues (Chawla et al., NAACL 2021)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType, field

from convbank.datasets._base import (
    ConfigSpec,
    Dataset,
    SourceFile,
    SourcePaths,
    Strict,
    decode_json,
    write_json,
)
from convbank.errors import FormatError
from convbank.model import Annotation, Conversation, Participant, Turn
from convbank.model.types import TurnKind

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

ITEMS = ("Food", "Water", "Firewood")
PRIORITY_POINTS = {"High": 5, "Medium": 4, "Low": 3}
AGENTS = ("mturk_agent_1", "mturk_agent_2")


class Items(Strict):
    """Counts of each item, as strings "0" to "3"."""

    Water: str
    Firewood: str
    Food: str


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

    points_scored: int
    satisfaction: str
    opponent_likeness: str


class Demographics(Strict):
    """Demographics of one participant."""

    age: int
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

    value2issue: ByPriority
    value2reason: ByPriority
    outcomes: Outcomes
    demographics: Demographics
    personality: Personality


class Participants(Strict):
    """The two negotiators."""

    mturk_agent_1: ParticipantInfo
    mturk_agent_2: ParticipantInfo


class Dialogue(Strict):
    """One CaSiNo dialogue as published."""

    dialogue_id: int
    chat_logs: list[ChatLog]
    participant_info: Participants
    annotations: list[tuple[str, str]]
    """``[]`` when unannotated, else ``[text, "label,label"]`` per message in order."""


_CITATION = """@inproceedings{chawla2021casino,
  title = {CaSiNo: A Corpus of Campsite Negotiation Dialogues for Automatic Negotiation Systems},
  author = {Chawla, Kushal and Ramirez, Jaysa and Clever, Rene and Lucas, Gale and May, Jonathan and Gratch, Jonathan},
  booktitle = {Proceedings of the 2021 Conference of the North American Chapter of the Association for Computational Linguistics: Human Language Technologies},
  year = {2021},
  pages = {3167--3185}
}"""

_BASE = "https://raw.githubusercontent.com/kushalchawla/CaSiNo/main/data/split/"


def points(priorities: Mapping[str, str], deal: Mapping[str, str]) -> int:
    """Points a negotiator scores: 5, 4, 3 per item of High, Medium, Low priority."""
    value = {item: PRIORITY_POINTS[level] for level, item in priorities.items()}
    return sum(value[item] * int(count) for item, count in deal.items())


class Casino(Dataset):
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

    def files_for(self, config: str, split: str) -> list[SourceFile]:
        """The split's file ``casino_{split}.json``."""
        self.splits(config, split)
        return [self.file(f"casino_{split}.json")]

    def read(self, paths: SourcePaths, config: str, split: str) -> Iterator[Dialogue]:
        """Decode ``casino_{split}.json`` into typed dialogues."""
        (source,) = self.files_for(config, split)
        yield from decode_json(paths[source.name], list[Dialogue], "CaSiNo")

    def conversation_id(self, record: Dialogue, config: str, split: str, index: int) -> str:
        """The ``dialogue_id``, as a string."""
        return str(record.dialogue_id)

    def to_conversation(self, record: Dialogue, config: str, split: str, index: int) -> Conversation:
        """Negotiators become participants, chat logs turns, strategy labels annotations."""
        cid = self.conversation_id(record, config, split, index)
        participants = []
        for agent in AGENTS:
            info: ParticipantInfo = getattr(record.participant_info, agent)
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
        return Conversation(
            dataset=self.name,
            config=config,
            split=split,
            conversation_id=cid,
            source_index=index,
            participants=participants,
            turns=turns,
            annotations=annotations,
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
                    "message; expected annotations in utterance order with the message text"
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
            participant_info=Participants(**info),
            annotations=annotations,
        )

    def write_source(
        self,
        records: Iterable[Dialogue],
        config: str,
        split: str,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write ``casino_{split}.json``."""
        return write_json(directory / f"casino_{split}.json", list(records))
