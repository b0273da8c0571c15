"""A plugin's card (``describe``) that is not one, a list, or holding what JSON cannot, is one
line naming the plugin, exit 1, from ``info`` and ``info --json`` (before: a ``TypeError``
traceback from convbank's code, ``list indices must be integers or slices, not str`` or
``Obj is not JSON``, exit 1, 2 of 2 runs each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testsupport import PLUGINS, convbank_with_plugins, plugin

CARDS = {
    "[1]": "TypeError: describe() gave a list, not a card (a dict)",
    "{**super().describe(), 'x': object()}": "TypeError: Encoding objects of type object is unsupported",
}


@pytest.mark.parametrize("card", CARDS)
def test_a_plugins_card_that_is_not_one_is_one_line_naming_it(tmp_path: Path, card: str) -> None:
    site = tmp_path / "site"
    plugin(
        site,
        "badcard",
        "[convbank.datasets]\nbadcard = badcardmod:B\n",
        badcardmod=(
            "from convbank_tsvdial import TsvDial\n\nclass B(TsvDial):\n    name = 'badcard'\n\n"
            f"    def describe(self):\n        return {card}\n"
        ),
    )
    json = ["--json"] if "object" in card else []  # the two ways of info, one each
    done = convbank_with_plugins(tmp_path / "home", "info", "badcard", *json, path=(PLUGINS, site))
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "error: the code of entry point badcard = badcardmod:B of group convbank.datasets (package badcard "
        f"1.0) failed ({CARDS[card]}); report it to its authors\n",
    )
