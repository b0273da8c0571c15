"""A conversation that breaks the unified model (a turn's index out of order, a speaker who
is no participant, one listed twice, an annotation of no turn) is a bad record of its file,
named, nothing imported; ``--skip-bad`` imports the others. Before: convbank's own ``jsonl``
imported each of them, exit 0, for ``validate`` to report as errors afterwards, and ``export
--format chat`` of a turn by a speaker who is no participant was a ``KeyError: 'ghost'``
traceback (7 of 7 variants imported). An empty conversation id is one of them (before: imported
from a table, convbank's jsonl and ConvoKit, 3 of 3, and ``validate`` found no error)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import convbank
from convbank.errors import CorpusImportError

GOOD: dict[str, Any] = {
    "dataset": "mine",
    "config": "default",
    "split": "train",
    "conversation_id": "c",
    "source_index": 0,
    "participants": [{"participant_id": "u", "role": "user"}, {"participant_id": "a", "role": "assistant"}],
    "turns": [{"turn_index": 0, "participant_id": "u", "text": "hi"}, {"turn_index": 1, "participant_id": "a", "text": "yo"}],
}  # fmt: skip


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        *steps, last = path.split(".")
        target: Any = record
        for step in steps:
            target = target[int(step)] if step.isdigit() else target[step]
        target[int(last) if last.isdigit() else last] = value

    return change


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_set("turns.1.turn_index", 0), "turn at position 1 has turn_index 0"),
        (_set("turns.0.turn_index", -1), "turn at position 0 has turn_index -1"),
        (_set("turns.0.participant_id", "ghost"), "turn 0: speaker 'ghost' is not a participant"),
        (_set("participants.1.participant_id", "u"), "participants listed twice: ['u']"),
        (_set("annotations", [{"turn_index": 9, "layer": "x", "label": "y"}]), "x annotation 'y' refers to turn 9, which does not exist"),
        (_set("conversation_id", ""), "the conversation id is empty"),  # before: imported, `show mine ''` (pass 21's D)
    ],
)  # fmt: skip
def test_a_conversation_that_breaks_the_model_is_a_bad_record(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], problem: str
) -> None:
    bad = copy.deepcopy(GOOD)
    change(bad)
    path = tmp_path / "mine.jsonl"
    path.write_text(
        json.dumps(bad) + "\n" + json.dumps({**GOOD, "conversation_id": "ok"}) + "\n", encoding="utf-8"
    )
    with pytest.raises(CorpusImportError) as caught:
        convbank.import_conversations(path, name="mine", format="jsonl")
    assert str(caught.value) == (
        f"{path}, conversation {bad['conversation_id']!r}: expected a unified conversation ({problem}) "
        "(nothing was imported; --skip-bad imports the rest)"
    )
    report = convbank.import_conversations(path, name="mine", format="jsonl", skip_bad=tmp_path / "bad.jsonl")
    assert (report.conversations, convbank.load("mine").conversation_ids()) == (1, ["ok"])
