"""A plugin's distribution whose ``entry_points.txt`` cannot be read, or whose dataset class
cannot be made (its ``__init__`` raises), is one line naming it, exit 5, as a plugin that
cannot be imported is (before: a ``TypeError: Pair.__new__() missing 1 required positional
argument`` traceback from :mod:`importlib.metadata`, and the ``__init__``'s ``RuntimeError``
traceback, from ``list``, exit 1, 2 of 2 runs each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testsupport import PLUGINS, SHARED, convbank_with_plugins, plugin


def _installed(folder: Path, name: str, entry_points: str, module: str) -> None:
    plugin(folder, name, entry_points, **{f"{name}mod": module})


CASES = {
    "unreadable": (
        "[convbank.datasets]\nno equals here\n",
        "",
        "error: package unreadable 1.0: its entry points cannot be read (TypeError: Pair.__new__() missing 1 "
        "required positional argument: 'value'); reinstall or uninstall it\n",
    ),
    "badinit": (
        "[convbank.datasets]\nbadinit = badinitmod:P\n",
        "from convbank_tsvdial import TsvDial\n\nclass P(TsvDial):\n    name = 'badinit'\n\n"
        "    def __init__(self):\n        raise RuntimeError('no')\n",
        "error: entry point badinit = badinitmod:P of group convbank.datasets (package badinit 1.0) cannot be "
        "loaded: RuntimeError: no\n",
    ),
    "exitinit": (
        "[convbank.datasets]\nexitinit = exitinitmod:P\n",
        "import sys\nfrom convbank_tsvdial import TsvDial\n\nclass P(TsvDial):\n    name = 'exitinit'\n\n"
        "    def __init__(self):\n        sys.exit(0)\n",
        "error: entry point exitinit = exitinitmod:P of group convbank.datasets (package exitinit 1.0) cannot "
        "be loaded: SystemExit: 0\n",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_plugin_that_cannot_be_read_or_made_is_one_line_exit_5(tmp_path: Path, case: str) -> None:
    entry_points, module, said = CASES[case]
    _installed(tmp_path / "site", case, entry_points, module)
    done = convbank_with_plugins(tmp_path / "home", "list", path=(PLUGINS, tmp_path / "site"))
    assert (done.returncode, done.stderr) == (5, said)


def test_a_plugin_engines_fault_is_one_line_naming_it(tmp_path: Path) -> None:
    """An engine from another package (``convbank.engines``) whose code raises is one line
    naming it, exit 1, as a plugin dataset's fault is (before: the ``RuntimeError``'s
    traceback, exit 1, 2 of 2 runs, from ``from_options`` and from ``config_batches``)."""
    _installed(
        tmp_path / "site",
        "faulty",
        "[convbank.engines]\nfaulty = faultymod:Faulty\n",
        "class Faulty:\n    name = 'faulty'\n\n    @classmethod\n    def from_options(cls, options):\n"
        "        return cls()\n\n    def config_batches(self, *args):\n        raise RuntimeError('no batches')\n",
    )
    source = str(SHARED / "casino")
    done = convbank_with_plugins(
        tmp_path / "home",
        "build",
        "casino",
        "--source",
        source,
        "--engine",
        "faulty",
        path=(tmp_path / "site",),
    )
    assert (done.returncode, done.stderr) == (
        1,
        "error: the code of entry point faulty = faultymod:Faulty of group convbank.engines (package faulty "
        "1.0) failed (RuntimeError: no batches); report it to its authors (--debug shows the traceback)\n",
    )
