"""CCPE-M: Coached Conversational Preference Elicitation about movies (Radlinski et al., 2019):
card, files, reader, mapper (both ways) and source writer."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from convbank.datasets import ConfigSpec, JsonListDataset, SourceFile
from convbank.datasets._layout import Encoder, Frame, spaced
from convbank.datasets.ccpe.present import CcpePresentation
from convbank.datasets.ccpe.records import CcpeConversation, Segment
from convbank.model import Annotation, Conversation, Part, Participant, Turn

_CITATION = """@inproceedings{radlinski2019ccpe,
  title = {Coached Conversational Preference Elicitation: A Case Study in Understanding Movie Preferences},
  author = {Radlinski, Filip and Balog, Krisztian and Byrne, Bill and Krishnamoorthi, Karthik},
  booktitle = {Proceedings of the Annual SIGdial Meeting on Discourse and Dialogue},
  year = {2019}
}"""

FILE = "data.json"

FRAME = Frame(prefix="[\n", separator=", ", suffix="\n]\n")
"""The layout of the one real excerpt (a list holding one conversation); the separator is
the style's own ``}, {`` (no real file with two conversations was available)."""


class Ccpe(JsonListDataset):
    """CCPE-M: 502 dialogues in which an assistant elicits a user's movie preferences."""

    name = "ccpe"
    title = "CCPE-M: Coached Conversational Preference Elicitation (Movies)"
    description = (
        "502 English dialogues, collected Wizard-of-Oz style, in which an assistant elicits "
        "a user's movie preferences; user utterances carry span annotations of entity "
        "names, preferences, descriptions and other statements with their entity types."
    )
    license = "CC-BY-SA-4.0"
    citation = _CITATION
    homepage = "https://github.com/google-research-datasets/ccpe"
    version = "1.0.0"
    files = (
        SourceFile(
            name=FILE,
            url="https://storage.googleapis.com/dialog-data-corpus/CCPE-M-2019/data.json",
            sha256="4ff051ea7ea60cf0f480c911c7e2cfed56434e2e2c9ea8965ac5e26365773f0a",
            size=5_191_959,  # with the sha256, from Hugging Face's dataset_infos.json
        ),
    )
    configs = (
        ConfigSpec(
            name="default",
            description="All 502 conversations (no official split).",
            splits={"train": 502},
        ),
    )
    raw_type = CcpeConversation
    presentation_class = CcpePresentation

    format_name = "CCPE-M"

    def source_name(self, part: Part) -> str:
        """The one ``data.json``."""
        return FILE

    def default_frame(self, config: str) -> Frame:
        """The real excerpt's frame."""
        return FRAME

    def encoder(self, config: str) -> Encoder:
        """The publisher's pretty style."""
        return spaced

    def conversation_id(self, record: CcpeConversation, part: Part, index: int) -> str:
        """The ``conversationId``."""
        return record.conversationId

    def to_conversation(self, record: CcpeConversation, part: Part, index: int) -> Conversation:
        """One annotation row per (segment, segment annotation), layer ``preference``."""
        turns = []
        annotations = []
        for i, utt in enumerate(record.utterances):
            meta: dict[str, Any] = {}
            if utt.index != i:
                meta["index"] = utt.index
            if utt.segments is not UNSET:
                meta["segments"] = len(utt.segments)
                bare = []
                for s, seg in enumerate(utt.segments):
                    if not seg.annotations:
                        bare.append({"segment": s, **_segment_fields(seg)})
                    for ann in seg.annotations:
                        ameta: dict[str, Any] = {"segment": s, "text": seg.text}
                        if ann.entityType is not UNSET:
                            ameta["entityType"] = ann.entityType
                        annotations.append(
                            Annotation(
                                turn_index=i,
                                layer="preference",
                                label=ann.annotationType,
                                start_char=seg.startIndex,
                                end_char=seg.endIndex,
                                meta=ameta,
                            )
                        )
                if bare:
                    meta["unannotated_segments"] = bare
            turns.append(Turn(turn_index=i, participant_id=utt.speaker, text=utt.text, meta=meta))
        return Conversation(
            dataset=self.name,
            config=part.config,
            split=part.split,
            conversation_id=record.conversationId,
            source_index=index,
            participants=[
                Participant(participant_id="USER", role="user"),
                Participant(participant_id="ASSISTANT", role="assistant"),
            ],
            turns=turns,
            annotations=annotations,
        )

    def from_conversation(self, conversation: Conversation) -> CcpeConversation:
        """Rebuild the published conversation, segments regrouped in order."""
        utterances = []
        for turn in conversation.turns:
            utt: dict[str, Any] = {
                "index": turn.meta.get("index", turn.turn_index),
                "speaker": turn.participant_id,
                "text": turn.text,
            }
            if "segments" in turn.meta:
                segments: list[dict[str, Any]] = [{} for _ in range(turn.meta["segments"])]
                for bare in turn.meta.get("unannotated_segments", ()):
                    segments[bare["segment"]] = {k: v for k, v in bare.items() if k != "segment"} | {
                        "annotations": []
                    }
                for ann in conversation.annotations_of(turn.turn_index, "preference"):
                    seg = segments[ann.meta["segment"]]
                    if not seg:
                        seg.update(
                            startIndex=ann.start_char,
                            endIndex=ann.end_char,
                            text=ann.meta["text"],
                            annotations=[],
                        )
                    entry = {"annotationType": ann.label}
                    if "entityType" in ann.meta:
                        entry["entityType"] = ann.meta["entityType"]
                    seg["annotations"].append(entry)
                utt["segments"] = segments
            utterances.append(utt)
        return msgspec.convert(
            {"conversationId": conversation.conversation_id, "utterances": utterances},
            CcpeConversation,
        )


def _segment_fields(seg: Segment) -> dict[str, Any]:
    return {"startIndex": seg.startIndex, "endIndex": seg.endIndex, "text": seg.text}
