"""A record its reader took but its mapping cannot place (a CaSiNo annotation whose text
matches no later message) is one line naming the file it came from, the record and what was
expected, exit 2, the bank as it was (before: the dialogue and the annotation, no file, 2 of
2 edits)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli
from convbank.errors import FormatError, NotBuiltError
from convbank.fetch import Fetcher
from testsupport import SHARED


def test_a_record_that_cannot_be_mapped_names_its_file(tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    shutil.copytree(SHARED / "casino", sources)
    dialogues = json.loads((sources / "casino_valid.json").read_text(encoding="utf-8"))
    dialogues[0]["annotations"][1][0] = "nothing anybody said"
    (sources / "casino_valid.json").write_text(json.dumps(dialogues), encoding="utf-8")
    said = (
        f"casino_valid.json: casino dialogue {dialogues[0]['dialogue_id']}: annotation 1 "
        "('nothing anybody said') matches no later message; expected annotations in utterance "
        "order with the message text"
    )
    with pytest.raises(FormatError) as caught:
        convbank.build(["casino"], fetcher=Fetcher(sources=[sources], verify=False), fail_fast=True)
    assert (str(caught.value), caught.value.path) == (said, "casino_valid.json")
    done = CliRunner().invoke(cli, ["build", "casino", "--source", str(sources), "--no-verify"])
    assert (done.exit_code, done.stderr.splitlines()[0]) == (2, f"error: {said}")
    with pytest.raises(NotBuiltError):
        convbank.load("casino")
