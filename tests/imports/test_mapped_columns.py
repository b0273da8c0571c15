"""What ``--map`` names: one column for each name, and a record format's speaker never empty."""

from __future__ import annotations

from pathlib import Path

import pytest

import convbank
from convbank.errors import CorpusImportError
from convbank.imports import import_conversations
from convbank.store import Bank


def test_two_mapped_names_of_one_column_are_refused_naming_both(tmp_path: Path) -> None:
    """Before: ``--map conversation_id=x,turn=x`` was refused as ``expected a number in 'x'``
    (its texts read as turns), and ``speaker=text`` imported each turn's text as its speaker
    (2 of 2 tables). Now the mapping is refused, naming the names and the column."""
    path = tmp_path / "t.csv"
    path.write_text("x,participant_id,text\nc1,a,hi\nc1,b,yo\n")
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(path, name="mine", mapping={"conversation_id": "x", "turn": "x"})
    assert str(caught.value) == (
        f"{path}, file: expected a column for each --map name; conversation_id and turn name one, 'x'"
        " (nothing was imported; --skip-bad imports the rest)"
    )
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(path, name="mine", mapping={"conversation_id": "x", "speaker": "text"})
    assert str(caught.value) == (
        f"{path}, file: expected a column for each --map name; speaker and text name one, 'text'"
        " (nothing was imported; --skip-bad imports the rest)"
    )
    assert "mine" not in Bank().manifest().datasets


def test_a_mapped_column_is_not_also_read_as_the_default_turn(tmp_path: Path) -> None:
    """``--map text=turn_index`` takes that column for the text: no turn is read from it."""
    path = tmp_path / "t.csv"
    path.write_text("conversation_id,participant_id,turn_index\nc1,a,hi\nc1,b,yo\n")
    import_conversations(path, name="mine", mapping={"text": "turn_index"})
    assert [t.text for t in convbank.load("mine")["c1"].turns] == ["hi", "yo"]


def test_an_empty_sharegpt_from_is_said_to_be_empty(tmp_path: Path) -> None:
    """Before: ``"from": ""`` was ``expected message 1 to be an object with a "from" string``,
    though it was one (2 of 2 files). Now it says the speaker is empty and what one is."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"conversations": [{"from": "human", "value": "hi"}, {"from": "", "value": "yo"}]}\n')
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(path, name="mine")
    assert str(caught.value) == (
        f'{path}, line 1: expected message 1\'s "from" to name its speaker (human, gpt, system, '
        "function_call, observation or any other name), not an empty one (nothing was imported; "
        "--skip-bad imports the rest)"
    )
