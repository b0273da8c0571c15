"""CCPE-M: preference spans and their vocabularies."""

from __future__ import annotations

from collections.abc import Iterator

from convbank.datasets import CheckList, Problem
from convbank.datasets.ccpe.records import ANNOTATION_TYPES, ENTITY_TYPES, SPEAKERS
from convbank.model import Conversation

CHECKS = CheckList("ccpe")


@CHECKS.check("ccpe.spans")
def spans(conv: Conversation) -> Iterator[Problem]:
    """Every preference annotation is a span with its quoted text (offsets: see ``spans``)."""
    for a in conv.annotations:
        if a.start_char is None or a.end_char is None or "text" not in a.meta:
            yield "error", f"turn {a.turn_index}: {a.label} annotation has no span or no quoted text"
        elif a.start_char >= a.end_char:
            yield "error", f"turn {a.turn_index}: {a.label} span [{a.start_char}, {a.end_char}) is empty"


@CHECKS.check("ccpe.vocabulary")
def vocabulary(conv: Conversation) -> Iterator[Problem]:
    """Speakers, annotation types and entity types come from the known vocabularies."""
    for t in conv.turns:
        if t.participant_id not in SPEAKERS:
            yield "error", f"turn {t.turn_index}: unknown speaker {t.participant_id!r}"
    for a in conv.annotations:
        if a.layer != "preference" or a.label not in ANNOTATION_TYPES:
            yield "error", f"turn {a.turn_index}: unknown annotationType {a.label!r} in layer {a.layer!r}"
        entity = a.meta.get("entityType")
        if entity is not None and entity not in ENTITY_TYPES:
            yield "error", f"turn {a.turn_index}: unknown entityType {entity!r}"
