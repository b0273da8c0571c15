"""PEC's raw records (an example: context, response, the speakers' personas) and the
constants of its text format."""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from msgspec import UNSET, Struct, UnsetType

from convbank._lazy import lazy
from convbank.datasets import Strict

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")


SEPARATOR = "---+---"
END = "*" * 20
END_LINE = re.compile(rb"^[ \t]*\*{20}[ \t]*\r?$", re.MULTILINE)
DOMAINS = ("happy", "offmychest")
ARCHIVE = "hf_pec.zip"
PERSONA_BATCH = 20_000
"""Persona blocks per batch of the ``pec_personas`` table (memory stays flat)."""


@cache
def persona_schema() -> pa.Schema:
    """The Arrow schema of the ``pec_personas`` table."""
    return pa.schema(
        [
            pa.field("position", pa.int64(), nullable=False),
            pa.field("speaker", pa.string()),
            pa.field("persona", pa.list_(pa.string()), nullable=False),
            pa.field("source", pa.string()),
        ]
    )


class Utterance(Struct, forbid_unknown_fields=True):
    """A line ``speaker ---+--- text``; continuation lines are joined to ``text`` with newlines."""

    speaker: str
    text: str


class SpeakerPersona(Struct, forbid_unknown_fields=True):
    """A speaker's persona sentences from ``persona.txt``."""

    speaker: str
    persona: list[str]


class Example(Strict):
    """One example: the context utterances, then the response; personas of every speaker
    of the example that ``persona.txt`` has, in order of first appearance.

    Speakers and texts are stripped and blank lines skipped, as the publisher's loader
    reads them; ``source`` keeps the example's lines exactly (blank lines before it, odd
    spacing around the separator, the closing line) when writing speakers and texts the
    publisher's way would not give them back."""

    context: list[Utterance]
    response: Utterance
    personas: list[SpeakerPersona]
    source: str | UnsetType = UNSET
