"""A plugin whose dataset code raises something other than a convbank error (a bug: a
``RuntimeError``, a ``KeyError``, ``None`` where a conversation is due) fails its config with
one line naming the plugin, exit 1, and every other dataset asked for is still built (before:
a traceback of some 50 lines, exit 1, and the datasets after it never built)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from testsupport import PLUGINS, convbank_with_plugins, plugin

PLUGIN = """\
from convbank_tsvdial import TsvDial


class Faulty(TsvDial):
    name = "faulty"

    def {method}(self, *args):
        {body}
"""

FAULTS = {
    "read": ("read", "raise RuntimeError('boom\\nsecond line')", "RuntimeError: boom"),
    "to_conversation": (
        "to_conversation",
        "return None",
        "AttributeError: 'NoneType' object has no attribute",
    ),
    "files_for": ("files_for", "raise KeyError('train')", "KeyError: 'train'"),
    "exit": ("read", "raise SystemExit(0)", "SystemExit: 0"),
}
ORIGIN = "entry point faulty = faulty:Faulty of group convbank.datasets (package faulty 1.0)"


def _install(folder: Path, method: str, body: str) -> None:
    """The plugin ``faulty`` (a TsvDial whose ``method`` runs ``body``), installed in ``folder``."""
    plugin(
        folder,
        "faulty",
        "[convbank.datasets]\nfaulty = faulty:Faulty\n",
        faulty=PLUGIN.format(method=method, body=body),
    )


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_plugins_fault_fails_its_config_and_the_others_are_built(tmp_path: Path, fault: str) -> None:
    method, body, said = FAULTS[fault]
    _install(tmp_path, method, body)
    home = tmp_path / "home"
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    done = convbank_with_plugins(
        home, "build", "faulty", "tsvdial", "--source", str(samples), path=(PLUGINS, tmp_path)
    )
    assert done.returncode == 1, done.stderr
    failed, summary = done.stderr.splitlines()  # the one line, then the build's summary
    assert failed.startswith(
        f"failed faulty/default: the code of {ORIGIN} failed building faulty/default ({said}"
    )
    assert failed.endswith(
        "); nothing of it was kept — report it to its authors (--debug shows the traceback)"
    )
    assert re.fullmatch(r"2 splits built in [\d.]+ s, 1 config failed", summary), summary
    assert not [p for p in home.rglob("*") if "dataset=faulty" in p.parts]
    listed = convbank_with_plugins(
        home,
        "query",
        "SELECT DISTINCT dataset FROM conversations",
        "--format",
        "csv",
        path=(PLUGINS, tmp_path),
    )
    assert listed.stdout.split() == ["dataset", "tsvdial"]


def test_a_plugins_fault_in_files_for_never_stops_the_list(tmp_path: Path) -> None:
    """`convbank list` says a plugin's fault in a warning and lists every dataset, the faulty
    one's sources `?` (before: `KeyError` traceback of about 40 lines, exit 1, nothing listed,
    2 of 2 runs)."""
    method, body, said = FAULTS["files_for"]
    _install(tmp_path, method, body)
    done = convbank_with_plugins(tmp_path / "home", "list", path=(PLUGINS, tmp_path))
    assert (done.returncode, done.stderr) == (0, f"warning: faulty: the code of {ORIGIN} failed ({said})\n")
    rows = {
        line.split("│")[1].strip(): line.split("│")[5].strip()
        for line in done.stdout.splitlines()
        if "│" in line
    }
    assert rows["faulty"] == "?" and rows["casino"] == "none" and rows["tsvdial"] == "none"


@pytest.mark.parametrize("command", [["fetch", "faulty"], ["raw", "faulty", "--from-source"]])
def test_a_plugins_fault_in_fetch_or_raw_is_one_line_naming_it(tmp_path: Path, command: list[str]) -> None:
    """`fetch` and `raw` of a plugin whose code raises say whose code failed in one line, exit
    1 (before: a traceback of about 40 lines, 2 of 2 commands); convbank's own faults keep
    their tracebacks, and `--debug` shows the plugin's."""
    method, body, said = FAULTS["files_for"]
    _install(tmp_path, method, body)
    home = tmp_path / "home"
    done = convbank_with_plugins(home, *command, path=(PLUGINS, tmp_path))
    line = f"error: the code of {ORIGIN} failed ({said}); report it to its authors (--debug shows the traceback)\n"
    assert (done.returncode, done.stderr) == (1, line)
    debug = convbank_with_plugins(home, "--debug", *command, path=(PLUGINS, tmp_path))
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr


@pytest.mark.parametrize("command", ["list", "fetch", "build"])
def test_a_plugins_generator_exit_is_its_fault_as_any_other(tmp_path: Path, command: str) -> None:
    """A plugin's code raising `GeneratorExit` (or a bare `BaseException`) is its fault as a
    `KeyError` is: `list` warns and lists, `fetch` one line, exit 1, `build` fails its config
    (before: a traceback, exit 1, in `build`, `list` and `fetch`, 3 of 3, 2 of 2 runs)."""
    _install(tmp_path, "files_for", "raise GeneratorExit('closed')")
    args = [command] if command == "list" else [command, "faulty"]
    done = convbank_with_plugins(tmp_path / "home", *args, path=(PLUGINS, tmp_path))
    said = f"the code of {ORIGIN} failed"
    tail = "; report it to its authors (--debug shows the traceback)"
    assert (done.returncode, done.stderr.splitlines()[0]) == {
        "list": (0, f"warning: faulty: {said} (GeneratorExit: closed)"),
        "fetch": (1, f"error: {said} (GeneratorExit: closed){tail}"),
        "build": (
            1,
            f"error: {said} building faulty/default (GeneratorExit: closed); nothing of it was kept "
            "— report it to its authors (--debug shows the traceback)",
        ),
    }[command]


PARENT = """\
from convbank_tsvdial import TsvDial


def _helper(name):
    raise KeyError(f"boom {name}")


class Parent(TsvDial):
    name = "parent"

    def files_for(self, part):
        _helper(self.name)
"""


@pytest.mark.parametrize("command", [["fetch", "child"], ["raw", "child", "--from-source"]])
def test_a_fault_in_an_inherited_method_blames_the_dataset_it_ran_for(
    tmp_path: Path, command: list[str]
) -> None:
    """A plugin's dataset that subclasses another plugin's runs the parent's code as its own:
    a fault there is blamed on the entry point that loaded the dataset it ran for (before:
    on the parent's, whose package held the failing frames, 2 of 2 commands)."""
    plugin(tmp_path, "parent", "[convbank.datasets]\nparent = parentmod:Parent\n", parentmod=PARENT)
    child = "from parentmod import Parent\n\n\nclass Child(Parent):\n    name = 'child'\n"
    plugin(tmp_path, "child", "[convbank.datasets]\nchild = childmod:Child\n", childmod=child)
    done = convbank_with_plugins(tmp_path / "home", *command, path=(PLUGINS, tmp_path))
    origin = "entry point child = childmod:Child of group convbank.datasets (package child 1.0)"
    tail = "; report it to its authors (--debug shows the traceback)\n"
    assert (done.returncode, done.stderr) == (
        1,
        f"error: the code of {origin} failed (KeyError: 'boom child'){tail}",
    )
    done = convbank_with_plugins(tmp_path / "home", "fetch", "parent", path=(PLUGINS, tmp_path))
    origin = "entry point parent = parentmod:Parent of group convbank.datasets (package parent 1.0)"
    assert (done.returncode, done.stderr) == (
        1,
        f"error: the code of {origin} failed (KeyError: 'boom parent'){tail}",
    )
