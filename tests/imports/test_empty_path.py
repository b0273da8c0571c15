"""An empty path given to an import (``convbank import train=``, ``""``, ``{"train": ""}``)
is one line naming what was given, exit 2, nothing imported; never the current folder, which
``Path("")`` is. Before: in a ConvoKit corpus's folder, ``convbank import train= --name x``
imported that folder, exit 0 (2 of 2 runs); elsewhere it was ``.: not a format convbank
recognises``, naming a folder the user never gave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli
from convbank.errors import CorpusImportError, UnknownDatasetError


def test_an_empty_path_is_one_line_never_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8")
    utterance = {"id": "u1", "conversation_id": "u1", "speaker": "ana", "text": "hola", "reply_to": None}
    (tmp_path / "utterances.jsonl").write_text(json.dumps(utterance) + "\n", encoding="utf-8")  # a corpus
    monkeypatch.chdir(tmp_path)
    for given in ("train=", "", "test=  "):
        done = CliRunner().invoke(cli, ["import", given, "--name", "mine"])
        assert (done.exit_code, done.output) == (
            2,
            f"error: {given!r}: expected a path (a file or a folder), not an empty one\n",
        )
    for source, shown in (("", "''"), ({"train": ""}, "'train='"), ([str(chats), ""], "''")):
        with pytest.raises(CorpusImportError) as caught:
            convbank.import_conversations(source, name="mine")  # type: ignore[arg-type]
        assert str(caught.value) == f"{shown}: expected a path (a file or a folder), not an empty one"
    with pytest.raises(UnknownDatasetError):
        convbank.load("mine")
