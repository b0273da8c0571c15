"""A plugin whose ``to_conversation`` gives a value the unified model cannot hold (a turn
with no text, a text that is a number) fails its build with one line naming the dataset,
the part, the table and the column, exit 2, the bank as it was (before: pyarrow's
``ArrowInvalid`` or ``ArrowTypeError`` traceback, exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testsupport import PLUGINS, convbank_with_plugins, plugin

PLUGIN = """\
import msgspec
from convbank_tsvdial import TsvDial


class Odd(TsvDial):
    name = "odd"

    def to_conversation(self, record, part, index):
        conversation = super().to_conversation(record, part, index)
        first = msgspec.structs.replace(conversation.turns[0], text={value})
        return msgspec.structs.replace(conversation, turns=[first, *conversation.turns[1:]])
"""


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (
            "None",
            "odd/default/train: 3 turns row(s) of no text (null), the first of conversation r001, "
            "which the bank never holds: a fault of the dataset's code",
        ),
        (
            "5",
            "odd/default/train: conversation r001: turns.text: a value that is not string "
            "(Expected bytes, got a 'int' object), given by its to_conversation",
        ),
    ],
    ids=["null", "number"],
)
def test_a_value_the_model_cannot_hold_is_one_line_naming_its_column(
    value: str, said: str, tmp_path: Path
) -> None:
    plugin(tmp_path, "odd", "[convbank.datasets]\nodd = odd:Odd\n", odd=PLUGIN.format(value=value))
    home = tmp_path / "home"
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    done = convbank_with_plugins(home, "build", "odd", "--source", str(samples), path=(PLUGINS, tmp_path))
    assert done.returncode == 2, done.stderr  # before: exit 1, pyarrow's traceback
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == f"error: {said}\n"
    assert [p for p in home.rglob("*") if "odd" in p.parts] == []  # nothing of it kept
    built = convbank_with_plugins(
        home, "build", "tsvdial", "--source", str(samples), path=(PLUGINS, tmp_path)
    )
    assert built.returncode == 0, built.stderr  # the bank takes the next build as ever
