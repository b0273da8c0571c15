"""What Python prints of a conversation or a view is text a terminal shows as it is: a control
character a researcher's data or names hold is its escape, never sent to the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import convbank
from convbank.examples import mix


def test_a_conversation_and_a_view_print_control_characters_as_escapes(tmp_path: Path) -> None:
    """Before: ``print(conversation)`` wrote a speaker's ``user\\x1b[2J`` raw (the screen
    cleared), in its participant line and each of its turns, and a mixture's name holding a
    newline broke its repr in two (3 of 3 places); the text was already escaped."""
    record = {
        "id": "c",
        "messages": [{"role": "user\x1b[2J", "content": "x\x07"}, {"role": "assistant", "content": "y"}],
    }
    (path := tmp_path / "in.jsonl").write_text(json.dumps(record) + "\n")
    convbank.import_conversations(path, name="mine")
    conv = convbank.load("mine")["c"]
    assert str(conv).splitlines()[1:] == [
        "  user\\x1b[2J (user\\x1b[2J)",
        "  assistant (assistant)",
        "  #0 user\\x1b[2J: x\\x07",
        "  #1 assistant: y",
    ]
    view = convbank.load("mine").examples("chat")
    assert repr(mix([view], names=["a\nb\x1b[31m"])) == (
        "<Mixture of a\\nb\\x1b[31m 1.00 (first_exhausted, seed 0, epoch 0): 1 example>"
    )
