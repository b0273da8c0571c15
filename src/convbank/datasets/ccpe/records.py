"""CCPE-M's vocabularies: its speakers, annotation types and entity types (what every
module of the package shares; :mod:`convbank.datasets.ccpe.dataset` imports the others)."""

from __future__ import annotations

__all__ = ["ANNOTATION_TYPES", "ENTITY_TYPES", "SPEAKERS"]

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
