"""Two parts never share a file: a config's and a split's names run together in a file's name
(``{dataset}_{config}_{split}``), so ``x_y``/``train`` and ``x``/``y_train`` would both be
``chats_x_y_train``. Before: the second part's file replaced the first's, exit 0, 1 of 2
conversations lost (chat, sharegpt, parlai, jsonl, csv: 5 of 5 formats written per part)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convbank
from convbank.errors import ExportError
from convbank.export import export

RECORDS = [
    {
        "id": "a",
        "messages": [{"role": "user", "content": "one"}],
        "metadata": {"config": "x_y", "split": "train"},
    },
    {
        "id": "b",
        "messages": [{"role": "user", "content": "two"}],
        "metadata": {"config": "x", "split": "y_train"},
    },
]


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        ("chat", "chats_x_y_train.chat.jsonl"),
        ("jsonl", "chats_x_y_train.jsonl"),
        ("csv", "chats_x_y_train.turns.csv"),
    ],
)
def test_two_parts_whose_names_run_together_are_refused_not_one_file(
    tmp_path: Path, fmt: str, name: str
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    convbank.import_conversations(path, name="chats")
    with pytest.raises(ExportError) as caught:
        export(convbank.load("chats"), fmt, tmp_path / "out")
    assert str(caught.value) == (
        f"the parts x/y_train and x_y/train of chats would both be written to {name} (the config's "
        "and the split's names run together); export them one at a time (--config, --split)"
    )
    assert not (tmp_path / "out").exists()
    (one,) = export(convbank.load("chats", config="x"), fmt, tmp_path / "x")
    assert one.name == name


def test_a_split_named_as_hugging_faces_own_file_is_one_line(tmp_path: Path) -> None:
    """Before: ``FileExistsError`` naming the staging folder, exit 1 (1 of 1 tries)."""
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"messages": RECORDS[0]["messages"]}) + "\n", encoding="utf-8")
    convbank.import_conversations({"dataset_dict.json": path}, name="dd")
    with pytest.raises(ExportError) as caught:
        export(convbank.load("dd"), "hf", tmp_path / "out")
    assert str(caught.value) == (
        "dd's split default/dataset_dict.json cannot be written as Hugging Face data: save_to_disk "
        "keeps that name for its own file; export the other splits (--split) or import it under "
        "another split name"
    )
    assert not (tmp_path / "out").exists()


def test_an_imported_corpus_source_export_never_writes_one_file_for_two_parts(tmp_path: Path) -> None:
    """Before: ``export --format source`` wrote ``x_y_train.jsonl`` for both parts, the second
    over the first, exit 0, 1 of 2 conversations lost (1 of 1 tries)."""
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    convbank.import_conversations(path, name="chats")
    with pytest.raises(ExportError) as caught:
        export(convbank.load("chats"), "source", tmp_path / "out")
    assert str(caught.value) == (
        "the part x_y/train of chats would be written to x_y_train.jsonl, which another of its parts "
        "was (the config's and the split's names run together); export them one at a time "
        "(--config, --split)"
    )
    assert not (tmp_path / "out").exists()
    (one,) = export(convbank.load("chats", config="x_y"), "source", tmp_path / "x_y")
    assert one.name == "x_y_train.jsonl" and len(one.read_text(encoding="utf-8").splitlines()) == 1


def test_a_file_name_longer_than_a_name_may_be_is_said_before_the_work(tmp_path: Path) -> None:
    """Before: ``File name too long`` naming a file in the export's staging folder (gone by
    then), exit 1, after the work (1 of 1 tries)."""
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"messages": RECORDS[0]["messages"]}) + "\n", encoding="utf-8")
    convbank.import_conversations(path, name="longn", config="c" * 120, split="s" * 120)
    with pytest.raises(ExportError) as caught:
        export(convbank.load("longn"), "chat", tmp_path / "out")
    assert str(caught.value) == (
        f"longn_{'c' * 54}…: the chat export would write a file name of 258 bytes, more than the 255 "
        "a name may hold (its dataset's, config's and split's names together); import the part "
        "under a shorter config or split name"
    )
    assert not (tmp_path / "out").exists()


def test_one_name_limit_serves_exports_predictions_and_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 19: the limit was written three ways (the export's 255, the temporary files'
    255 - 36, ``--write-predictions``' ``pathconf``); now each asks ``_atomic.name_max``,
    what the folder's file system says. A file system of 200-byte names: each says 200."""
    from convbank._atomic import _owner
    from convbank.bench import BenchError
    from convbank.bench.files import refuse_unwritable

    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"messages": RECORDS[0]["messages"]}) + "\n", encoding="utf-8")
    convbank.import_conversations(path, name="longn", config="c" * 100, split="s" * 100)
    monkeypatch.setattr("os.pathconf", lambda folder, name: 200)
    with pytest.raises(ExportError) as caught:
        export(convbank.load("longn"), "chat", tmp_path / "out")
    assert (
        str(caught.value)
        .split(": ", 1)[1]
        .startswith("the chat export would write a file name of 218 bytes, more than the 200 a name may hold")
    )
    with pytest.raises(BenchError) as refused:
        refuse_unwritable(tmp_path / ("p" * 201))
    assert str(refused.value).endswith(
        "its name is longer than the 200 bytes a file's name may be there; name a file elsewhere"
    )
    assert len(_owner(tmp_path / ("p" * 190)).encode()) == 200 - 36
