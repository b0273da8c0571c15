"""What a plugin dataset's per-record hooks hand back is checked where the build takes it:
``conversation_id`` must give, for each record, a string, the id its mapping gave (the id
the bank holds); ``read`` records (an iterator or a list); ``map_batch`` the tables. Anything
else is one line naming the plugin, exit 1, nothing of it kept (before: ``conversation_id``
giving ``5``, ``None`` or another id than the mapping's built, exit 0; ``read`` giving a list
wrote its first batch again and again until killed; ``map_batch`` giving ``None`` was blamed
on convbank's local engine; 2 of 2 runs each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convbank.store import Bank
from testsupport import PLUGINS, convbank_with_plugins, plugin

PLUGIN = """\
from convbank_tsvdial import TsvDial


class Hooked(TsvDial):
    name = "hooked"

    def {hook}(self, *args):
        return {value}
"""

ORIGIN = "entry point hooked = hooked:Hooked of group convbank.datasets (package hooked 1.0)"


@pytest.mark.parametrize(
    ("hook", "value", "said"),
    [
        ("conversation_id", "5", "conversation_id gave an int for record 0 of train, not a string"),
        ("conversation_id", "None", "conversation_id gave a NoneType for record 0 of train, not a string"),
        (
            "conversation_id",
            "'r' + str(args[2])",
            "conversation_id gave 'r0' for record 0 of train, where its to_conversation (map_batch) gave 'r001'",
        ),
        ("read", "5", "its reader gave an int, not records (an iterator or a list)"),
        (
            "map_batch",
            "None",
            "map_batch gave a batch of train that is a NoneType, not tables by name or a WrittenPiece",
        ),
    ],
    ids=["int-id", "no-id", "other-id", "int-records", "no-tables"],
)
def test_what_a_record_hook_gives_is_checked_naming_the_plugin(
    hook: str, value: str, said: str, tmp_path: Path
) -> None:
    plugin(
        tmp_path,
        "hooked",
        "[convbank.datasets]\nhooked = hooked:Hooked\n",
        hooked=PLUGIN.format(hook=hook, value=value),
    )
    home = tmp_path / "home"
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    done = convbank_with_plugins(home, "build", "hooked", "--source", str(samples), path=(PLUGINS, tmp_path))
    assert (done.returncode, done.stderr) == (
        1,
        f"error: the code of {ORIGIN} failed building hooked/default (TypeError: {said}); nothing of it was "
        "kept — report it to its authors (--debug shows the traceback)\n",
    )
    assert [p for p in home.rglob("*") if "dataset=hooked" in p.parts] == []


def test_records_read_as_a_list_are_built_once(tmp_path: Path) -> None:
    source = PLUGIN.format(hook="read", value="list(TsvDial.read(self, *args))")
    plugin(tmp_path, "hooked", "[convbank.datasets]\nhooked = hooked:Hooked\n", hooked=source)
    home = tmp_path / "home"
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    done = convbank_with_plugins(home, "build", "hooked", "--source", str(samples), path=(PLUGINS, tmp_path))
    assert done.returncode == 0, done.stderr  # before: its first batch written until killed
    splits = Bank(home / "bank").manifest().datasets["hooked"].configs["default"].splits
    assert {s: e.conversations for s, e in splits.items()} == {"train": 3, "test": 2}
