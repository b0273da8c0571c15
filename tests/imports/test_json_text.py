"""A record's JSON text is imported whole or refused in one line: an object giving a key twice
(whose first value a JSON decoder drops without a word) and a lone UTF-16 surrogate escape
are each named, with where they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convbank
from convbank.errors import CorpusImportError
from convbank.imports import import_conversations

OK = '{"messages": [{"role": "user", "content": "ok"}]}'
TWICE = '{"messages": [{"role": "user", "content": "hi", "content": "lost?"}]}'


def test_a_key_given_twice_is_refused_naming_the_file_the_record_and_the_key(tmp_path: Path) -> None:
    """Nineteenth pass. Before: ``{"content": "hi", "content": "lost?"}`` was imported as
    ``lost?``, ``hi`` dropped without a word, exit 0 (3 of 3 files: JSON Lines, a JSON array,
    a ShareGPT record)."""
    lines = tmp_path / "c.jsonl"
    lines.write_text(f"{OK}\n{TWICE}\n")
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(lines, name="mine")
    said = (
        'expected each key of a JSON object once (the key "content" is given twice in '
        '$["messages"][0]; a reader would keep the last alone)'
    )
    assert str(caught.value) == f"{lines}, line 2: {said} (nothing was imported; --skip-bad imports the rest)"
    whole = tmp_path / "c.json"
    whole.write_text(f'[{OK}, {{"id": "x", "id": "y", "messages": []}}]')
    with pytest.raises(CorpusImportError, match=r'the key "id" is given twice in \$\[1\];'):
        import_conversations(whole, name="mine")
    import_conversations(lines, name="mine", skip_bad=tmp_path / "rejects.jsonl")
    assert [t.text for c in convbank.load("mine") for t in c.turns] == ["ok"]
    assert json.loads((tmp_path / "rejects.jsonl").read_text())["expected"] == said


def test_an_escaped_quote_or_keys_of_like_text_are_no_repeat(tmp_path: Path) -> None:
    """What only looks like a repeat is imported as it is: ``\\u0022`` (a quote escaped), the
    same key in two objects, a key whose text is another's escaped."""
    path = tmp_path / "c.jsonl"
    record = {"messages": [{"role": "user", "content": 'a "b"'}, {"role": "assistant", "content": "c"}]}
    path.write_text(
        json.dumps(record).replace('\\"', "\\u0022") + "\n" + '{"messages": [], "\\u0061": 1, "a ": 2}\n'
    )
    import_conversations(path, name="mine", format="chat")
    assert [t.text for t in convbank.load("mine")[0].turns] == ['a "b"', "c"]


@pytest.mark.parametrize(
    ("text", "escape", "byte"),
    [("x\\ud800", "\\ud800", 44), ("\\udc00y", "\\udc00", 43), ("\\ud800\\ud800\\udc00", "\\ud800", 43)],
)
def test_a_lone_surrogate_escape_is_named_as_what_it_is(
    tmp_path: Path, text: str, escape: str, byte: int
) -> None:
    """Nineteenth pass. Before: ``"\\ud800"`` was refused as `expected JSON (Input data was
    truncated)`, though nothing was cut short (2 of 2 records); a lone low one as `invalid
    utf-16 surrogate pair`. A pair (``\\ud83d\\ude00``) and an escaped backslash before
    ``ud800`` are text."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "' + text + '"}]}\n')
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(path, name="mine", format="chat")
    assert str(caught.value) == (
        f"{path}, line 1: expected JSON text of whole characters ({escape} at byte {byte} is half of a "
        "UTF-16 surrogate pair, alone) (nothing was imported; --skip-bad imports the rest)"
    )
    path.write_text('{"messages": [{"role": "user", "content": "\\\\ud800 \\ud83d\\ude00"}]}\n')
    import_conversations(path, name="mine", format="chat")
    assert [t.text for t in convbank.load("mine")[0].turns] == ["\\ud800 \U0001f600"]


def _hf_export_of(tmp_path: Path, text: str | None) -> Path:
    """A folder as ``export --format hf`` writes an imported dataset, its one row's
    ``conversation`` column holding ``text``."""
    datasets = pytest.importorskip("datasets")
    row = {"conversation_id": "a", "messages": [{"role": "user", "content": "hi"}], "conversation": text}
    folder = tmp_path / "hf"
    datasets.DatasetDict({"train": datasets.Dataset.from_list([row])}).save_to_disk(str(folder))
    return folder


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"dataset": "x", "conversation_id": "lost", "conversation_id": "a"}',
         'expected each key of a JSON object once (the key "conversation_id" is given twice in $; a reader would keep the last alone)'),
        ('{"dataset": "x", "conversation_id": "\\ud800"}',
         "expected JSON text of whole characters (\\ud800 at byte 37 is half of a UTF-16 surrogate pair, alone)"),
        (None, "not NoneType"),
    ],
)  # fmt: skip
def test_a_hugging_face_exports_conversation_text_is_read_as_every_record_is(
    tmp_path: Path, text: str | None, why: str
) -> None:
    """Nineteenth pass. Before: the ``conversation`` column of an imported dataset's ``hf``
    export giving a key twice was imported with the first value dropped, exit 0; a lone
    surrogate was `Input data was truncated`; None a ``TypeError`` traceback (3 of 3 rows)."""
    folder = _hf_export_of(tmp_path, text)
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(folder, name="mine")
    assert str(caught.value) == (
        f"{folder}, train row 1: expected a unified conversation ({why}) "
        "(nothing was imported; --skip-bad imports the rest)"
    )
