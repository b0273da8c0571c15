"""An empty folder to write into is refused by the Python calls as the command line refuses
``-o ""``. Before (pass 19): ``export(corpus, "chat", "")`` (``Path("")`` too, which is
``Path(".")``) wrote into the current folder, and ``export_task(task, data, "")`` was a
``TypeError`` (``unsupported operand type(s) for /: 'str' and 'str'``), 2 of 2 tries each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import convbank
from convbank.bench import BenchError, export_task, task_named
from convbank.errors import ExportError
from convbank.export import export
from convbank.store import Bank


class _Empty(os.PathLike[str]):
    def __fspath__(self) -> str:
        return ""


@pytest.mark.parametrize("folder", ["", _Empty()], ids=["text", "pathlike"])
def test_an_empty_folder_is_refused_by_export_as_by_the_command_line(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str | os.PathLike[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus = convbank.load("casino", split="valid")
    with pytest.raises(ExportError) as caught:
        export(corpus, "chat", folder)
    assert str(caught.value) == "output: is empty; name a folder ('.' for the current one)"
    assert list(tmp_path.iterdir()) == []
    task = task_named("casino-strategy")
    with pytest.raises(BenchError) as refused:
        export_task(task, task.data(convbank.load("casino")), folder)
    assert str(refused.value) == "directory: is empty; name a folder ('.' for the current one)"
    assert refused.value.task == "casino-strategy"
    assert list(tmp_path.iterdir()) == []
    assert [p.name for p in export(corpus, "chat", ".")] == ["casino_default_valid.chat.jsonl"]


def test_an_argument_of_the_wrong_kind_is_named_before_any_work(built: Bank, tmp_path: Path) -> None:
    """Before: ``export("casino", ...)`` and ``where=5`` were AttributeErrors from inside the
    export, ``output=5`` os.fspath's bare TypeError, and ``overwrite="no"`` read as True."""
    corpus = convbank.load("casino", split="valid")
    out = tmp_path / "out"
    calls = {
        "export's corpus must be a Corpus (convbank.load(...)), not 'casino'": ("casino", out, {}),
        "export's output must be a folder's path (a str or an os.PathLike), not 5": (corpus, 5, {}),
        "where must be a string or None, not 5": (corpus, out, {"where": 5}),
        "as_participant must be a string or None, not 1": (corpus, out, {"as_participant": 1}),
        "overwrite must be True or False, not 'no'": (corpus, out, {"overwrite": "no"}),
        "hard must be True or False, not 1": (corpus, out, {"hard": 1}),
    }
    for said, (what, folder, options) in calls.items():
        with pytest.raises(TypeError) as caught:
            export(what, "chat", folder, **options)
        assert str(caught.value) == said
    assert not out.exists()
    assert [p.name for p in export(corpus, "chat", os.fsencode(out))] == ["casino_default_valid.chat.jsonl"]
