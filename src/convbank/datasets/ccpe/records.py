"""CCPE-M's raw records as published and its vocabularies: its speakers, annotation types and
entity types (what every module of the package shares; :mod:`convbank.datasets.ccpe.dataset`
imports the others)."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from convbank.datasets import Int64, Strict

__all__ = [
    "ANNOTATION_TYPES",
    "ENTITY_TYPES",
    "SPEAKERS",
    "CcpeConversation",
    "Segment",
    "SegmentAnnotation",
    "Utterance",
]

SPEAKERS = ("USER", "ASSISTANT")
ANNOTATION_TYPES = (
    "ENTITY_NAME",
    "ENTITY_PREFERENCE",
    "ENTITY_DESCRIPTION",
    "ENTITY_OTHER",
)
ENTITY_TYPES = (
    "MOVIE_GENRE_OR_CATEGORY",
    "MOVIE_OR_SERIES",
    "PERSON",
    "SOMETHING_ELSE",
)


class SegmentAnnotation(Strict):
    """What a segment is: ``annotationType`` and the ``entityType`` it is about."""

    annotationType: str
    entityType: str | UnsetType = UNSET


class Segment(Strict):
    """A span ``[startIndex, endIndex)`` of an utterance with its text and annotations."""

    startIndex: Int64
    endIndex: Int64
    text: str
    annotations: list[SegmentAnnotation]


class Utterance(Strict):
    """One utterance; unannotated ones have no ``segments`` key."""

    index: Int64
    speaker: str
    text: str
    segments: list[Segment] | UnsetType = UNSET


class CcpeConversation(Strict):
    """One conversation as published."""

    conversationId: str
    utterances: list[Utterance]
