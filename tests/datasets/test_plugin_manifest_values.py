"""What a dataset puts in the manifest (``file_meta``, ``published_count``) is read back
before the manifest is written: a value the manifest's reader refuses fails the build naming
the plugin, exit 1, the bank as it was (before: a ``file_meta`` that is a list, or a
published count of ``True`` or ``2.5``, was written, and every later command said the whole
bank was damaged, exit 4, 2 of 2 runs each)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convbank import catalog
from convbank.build import build
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import PLUGINS, SHARED, convbank_with_plugins, plugin


def test_a_plugins_file_meta_the_manifest_cannot_hold_fails_its_build(tmp_path: Path) -> None:
    site = tmp_path / "site"
    plugin(
        site,
        "badmeta",
        "[convbank.datasets]\nbadmeta = badmetamod:B\n",
        badmetamod=(
            "from convbank_tsvdial import TsvDial\n\nclass B(TsvDial):\n    name = 'badmeta'\n\n"
            "    def file_meta(self, paths, part):\n        return [1, 2]\n"
        ),
    )
    home = tmp_path / "home"
    args = ("build", "badmeta", "--source", str(PLUGINS / "convbank_tsvdial" / "samples"), "--no-verify")
    done = convbank_with_plugins(home, *args, path=(PLUGINS, site))
    assert (done.returncode, done.stderr) == (
        1,
        "error: the code of entry point badmeta = badmetamod:B of group convbank.datasets (package badmeta 1.0) "
        "failed building badmeta/default (ValueError: the manifest to write would not be read back: not a "
        "convbank manifest (Expected `object`, got `array` - at `$.datasets[...].configs[...].splits[...]."
        "file_meta`)); nothing of it was kept — report it to its authors (--debug shows the traceback)\n",
    )
    assert not (home / "bank" / "manifest.json").exists()


@pytest.mark.parametrize("count", [True, 2.5, -1])
def test_a_published_count_the_manifest_cannot_hold_leaves_the_bank_as_it_was(
    casino_home: Bank, monkeypatch: pytest.MonkeyPatch, count: object
) -> None:
    """Checked where it is handed back (before: ``-1`` was built, exit 0, and ``validate``
    then blamed the bank's counts)."""
    before = casino_home.manifest_path.read_bytes()
    monkeypatch.setattr(type(catalog.get("casino")), "published_count", lambda self, part: count)
    fetcher = Fetcher(sources=[SHARED], verify=False, progress=False)
    said = f"published_count gave {count!r} for casino/default/train, not a number of conversations or None"
    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        build(["casino"], fetcher=fetcher, bank=casino_home)
    assert casino_home.manifest_path.read_bytes() == before
    assert list(Bank(casino_home.root).manifest().datasets) == ["casino"]


COUNTED = """\
import os

from convbank.datasets import Presentation
from convbank_tsvdial import TsvDial


class Counted(TsvDial):
    name = "counted"
    presentation_class = Presentation

    def count_problem(self, part, conversations):
        return eval(os.environ.get("COUNTED", "None"))
"""


def test_a_count_problem_that_is_no_message_is_one_line_naming_the_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``count_problem`` giving what is not a message (text) or None is one line naming the
    plugin, exit 1, in ``build`` as in ``validate`` (before: ``validate`` died of an
    ``AttributeError`` traceback from the code that prints findings; 2 of 2 runs each)."""
    plugin(tmp_path, "counted", "[convbank.datasets]\ncounted = counted:Counted\n", counted=COUNTED)
    home = tmp_path / "home"
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    built = convbank_with_plugins(
        home, "build", "counted", "--source", str(samples), path=(PLUGINS, tmp_path)
    )
    assert built.returncode == 0, built.stderr
    monkeypatch.setenv("COUNTED", "['short']")
    origin = "entry point counted = counted:Counted of group convbank.datasets (package counted 1.0)"
    said = "count_problem gave a list for counted/default/train, not a message (text) or None"
    done = convbank_with_plugins(home, "validate", "counted", path=(PLUGINS, tmp_path))
    assert (done.returncode, done.stderr) == (
        1,
        f"error: the code of {origin} failed (UndeclaredError: {said}); report it to its authors (--debug "
        "shows the traceback)\n",
    )
