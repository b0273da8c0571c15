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
