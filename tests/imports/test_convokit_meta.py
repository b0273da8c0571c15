"""A ConvoKit corpus's meta is imported or refused, never dropped without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli


def _corpus(folder: Path, *, utterance_meta: object, speaker_meta: object, conversation: object) -> Path:
    folder.mkdir()
    lines = [
        {"id": "u1", "conversation_id": "u1", "text": "hello", "speaker": "alice", "meta": {"score": 3},
         "reply_to": None, "timestamp": 1700000000.5, "vectors": []},
        {"id": "u2", "conversation_id": "u1", "text": "hi", "speaker": "bob", "meta": utterance_meta,
         "reply_to": "u1", "timestamp": 1700000001, "vectors": []},
    ]  # fmt: skip
    (folder / "utterances.jsonl").write_text("".join(json.dumps(u) + "\n" for u in lines))
    speakers = {"alice": {"meta": speaker_meta, "vectors": []}, "bob": {"meta": {}, "vectors": []}}
    (folder / "speakers.json").write_text(json.dumps(speakers))
    (folder / "conversations.json").write_text(json.dumps({"u1": conversation}))
    (folder / "corpus.json").write_text(json.dumps({"name": "x"}))
    return folder


CASES = {
    "utterance-list": (
        {"utterance_meta": [1, 2], "speaker_meta": {}, "conversation": {"meta": {}}},
        "utterances.jsonl, line 2: expected an object 'meta', not a list",
    ),
    "utterance-text": (
        {"utterance_meta": "x", "speaker_meta": {}, "conversation": {"meta": {}}},
        "utterances.jsonl, line 2: expected an object 'meta', not a string",
    ),
    "speaker-text": (
        {"utterance_meta": {}, "speaker_meta": "x", "conversation": {"meta": {}}},
        "speakers.json, file: expected 'alice' an object whose 'meta' is an object, not a string",
    ),
    "conversation-number": (
        {"utterance_meta": {}, "speaker_meta": {}, "conversation": 5},
        "conversations.json, file: expected 'u1' an object whose 'meta' is an object, not int",
    ),
    # fourteenth pass: a meta key the turn keeps the utterance's own field in (before: the meta's
    # value overwritten by the utterance's timestamp or parent index, exit 0; 2 of 2 keys)
    "utterance-timestamp-key": (
        {"utterance_meta": {"timestamp": "10:01 local"}, "speaker_meta": {}, "conversation": {"meta": {}}},
        "utterances.jsonl, line 2: expected a meta without 'timestamp', where the turn keeps the "
        "utterance's own timestamp",
    ),
    "utterance-reply-to-key": (
        {"utterance_meta": {"reply_to": "a note"}, "speaker_meta": {}, "conversation": {"meta": {}}},
        "utterances.jsonl, line 2: expected a meta without 'reply_to', where the turn keeps the "
        "utterance's own reply_to",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_meta_that_is_not_an_object_is_refused_never_dropped(tmp_path: Path, case: str) -> None:
    """Twelfth pass. Before: an utterance, a speaker or a conversation whose ``meta`` was not
    an object (``[1, 2]``, a string) was imported with its meta dropped, ``{}``, exit 0, and
    exported back without it. Now it is a bad record naming the file and the line (or the
    file), exit 2; ``--skip-bad`` leaves the conversation out with its reason."""
    kwargs, message = CASES[case]
    folder = _corpus(tmp_path / "corpus", **kwargs)  # type: ignore[arg-type]
    done = CliRunner().invoke(cli, ["import", str(folder), "--name", "mine"])
    assert done.exit_code == 2, done.output
    assert done.stderr.strip() == (
        f"error: {folder}/{message} (nothing was imported; --skip-bad imports the rest)"
    )


def test_a_meta_of_null_or_an_object_is_imported(tmp_path: Path) -> None:
    folder = _corpus(
        tmp_path / "corpus", utterance_meta=None, speaker_meta={"age": 3}, conversation={"vectors": []}
    )
    done = CliRunner().invoke(cli, ["import", str(folder), "--name", "mine"])
    assert done.exit_code == 0, done.output
    conv = next(iter(convbank.load("mine")))
    assert [t.meta for t in conv.turns] == [
        {"score": 3, "utterance_id": "u1", "timestamp": 1700000000.5},
        {"utterance_id": "u2", "timestamp": 1700000001, "reply_to": 0},
    ]


def test_what_convokit_itself_leaves_out_is_said_in_what_the_import_loses(tmp_path: Path) -> None:
    """Before: a conversation of ``conversations.json`` with no utterances and a speaker of
    ``speakers.json`` who never speaks were left out with their meta, exit 0, and the import's
    statement of what the format loses said nothing of them (2 of 2). ConvoKit reads a corpus
    so too; now the statement says it."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    line = {"id": "u1", "conversation_id": "c", "speaker": "a", "reply_to": None, "text": "hi", "meta": {}}
    (folder / "utterances.jsonl").write_text(json.dumps(line) + "\n")
    (folder / "speakers.json").write_text(json.dumps({"a": {"meta": {}}, "silent": {"meta": {"age": 5}}}))
    (folder / "conversations.json").write_text(json.dumps({"c": {"meta": {}}, "empty": {"meta": {"t": 1}}}))
    report = convbank.import_conversations(folder, name="mine")
    assert [c.conversation_id for c in convbank.load("mine")] == ["c"]
    assert "a conversation of no utterances and a speaker who never speaks (their meta)" in report.loses
