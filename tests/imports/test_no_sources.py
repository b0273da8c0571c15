"""A corpus imported from the researcher's own files has no publisher's files: `fetch`, `build`
and `raw --from-source` of it say so in one line, exit 2, and nothing changes (before: `fetch`
and `raw --from-source` tried to download its file:// path, exit 3 'not an http(s) URL'; `build`
blamed a plugin that does not exist, exit 5; 3 of 3 commands)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli
from convbank.errors import CorpusImportError

SAID = (
    "error: mine was imported from chat files (convbank import): it has no publisher's files to "
    "fetch, build or read; its conversations are in the bank (convbank raw mine), and `convbank "
    "import FILE ... --name mine --replace` imports them again\n"
)


@pytest.mark.parametrize("command", [["fetch", "mine"], ["build", "mine"], ["raw", "mine", "--from-source"]])
def test_an_import_has_no_sources_to_fetch_build_or_read(tmp_path: Path, command: list[str]) -> None:
    chats = tmp_path / "chats.jsonl"
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    chats.write_text(json.dumps({"id": "c1", "messages": messages}) + "\n", encoding="utf-8")
    convbank.import_conversations(chats, name="mine")
    done = CliRunner().invoke(cli, command)
    assert (done.exit_code, done.stdout, done.stderr) == (2, "", SAID)
    with pytest.raises(CorpusImportError, match="no publisher's files"):
        convbank.build(["mine"])
    corpus = convbank.load("mine")
    assert [t.text for t in corpus["c1"].turns] == ["hi", "yo"]  # the import as it was
    raw = CliRunner().invoke(cli, ["raw", "mine"])
    assert raw.exit_code == 0 and json.loads(raw.stdout)["conversation_id"] == "c1"
