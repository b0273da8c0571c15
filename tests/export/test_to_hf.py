"""Corpus.to_hf: one or many configs, selections, streaming from the bank, the chat column."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from convbank import load  # noqa: E402
from convbank.errors import ExportError  # noqa: E402
from convbank.export import chat_record  # noqa: E402
from convbank.store import Bank  # noqa: E402


def test_one_config_is_a_dataset_dict_and_many_a_dict_of_them(built: Bank) -> None:
    casino = load("casino").to_hf()
    assert isinstance(casino, datasets.DatasetDict)
    assert {k: v.num_rows for k, v in casino.items()} == {"train": 900, "valid": 30, "test": 100}
    both = load("convai2").to_hf()
    assert isinstance(both, dict) and set(both) == {"intermediate", "volunteers"}
    assert all(isinstance(dd, datasets.DatasetDict) for dd in both.values())
    assert {c: dd["train"].num_rows for c, dd in both.items()} == {"intermediate": 291, "volunteers": 1111}
    assert both["volunteers"]["train"][0]["id"] == "volunteers-00000"
    one = load("convai2").to_hf("intermediate")
    assert isinstance(one, datasets.DatasetDict) and one["train"].num_rows == 291
    with pytest.raises(
        ExportError, match="this convai2 selection has no config 'nope'; it has intermediate, volunteers"
    ):
        load("convai2").to_hf("nope")


def test_a_filtered_shuffled_corpus_exports_just_its_conversations_in_its_order(built: Bank) -> None:
    corpus = load("casino").filter(label="strategy:uv-part").shuffle(seed=0)
    dd = corpus.to_hf()
    per_split: dict[str, list[str]] = {}
    for conv in corpus:
        per_split.setdefault(conv.split, []).append(conv.conversation_id)
    assert {k: v.num_rows for k, v in dd.items()} == {k: len(v) for k, v in per_split.items()}
    assert sum(v.num_rows for v in dd.values()) == len(corpus) == 89
    for split, ids in per_split.items():
        assert [str(i) for i in dd[split]["dialogue_id"]] == ids


def test_streaming_reads_the_bank_and_pickles(built: Bank) -> None:
    corpus = load("casino")
    stream = corpus.to_hf(streaming=True)
    assert isinstance(stream, datasets.IterableDatasetDict)
    train = stream["train"]
    assert isinstance(train, datasets.IterableDataset)
    assert train.n_shards == 4  # 900 conversations in shards of 250
    whole = corpus.to_hf()
    assert [r["dialogue_id"] for r in train] == whole["train"]["dialogue_id"]
    again = pickle.loads(pickle.dumps(train))  # each shard re-opens the bank's generation
    rows = list(again)
    assert len(rows) == 900 and rows[5] == whole["train"][5]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_stream_through_a_dataloader_gives_every_row_once(built: Bank, workers: int) -> None:
    from torch.utils.data import DataLoader

    train = load("casino", split="train").to_hf(streaming=True)["train"]
    loader = DataLoader(
        train, batch_size=64, num_workers=workers, collate_fn=lambda b: [r["dialogue_id"] for r in b]
    )
    ids = [i for batch in loader for i in batch]
    assert len(ids) == len(set(ids)) == 900


def test_the_chat_column_is_the_chat_export(built: Bank) -> None:
    corpus = load("casino", split="valid")
    dd = corpus.to_hf(chat=True)
    assert dd["valid"].features["messages"] == datasets.List(
        {"role": datasets.Value("string"), "content": datasets.Value("string")}
    )
    conv = corpus["157"]
    row = next(r for r in dd["valid"] if r["dialogue_id"] == 157)
    assert row["messages"] == chat_record(conv, None, corpus.context(conv))["messages"]
    assert [m["role"] for m in row["messages"][:3]] == ["system", "assistant", "user"]
    assert row["chat_logs"][0]["text"] == row["messages"][1]["content"]
    streamed = next(iter(corpus.to_hf(streaming=True, chat=True, as_participant="mturk_agent_2")["valid"]))
    first = corpus[0]
    assert streamed["messages"] == chat_record(first, "mturk_agent_2", corpus.context(first))["messages"]


def test_a_chat_column_never_replaces_a_dataset_column(built: Bank) -> None:
    with pytest.raises(
        ExportError,
        match=re.escape(
            "curiosity rows already have a column 'messages'; name the chat column, e.g. chat='chat_messages'"
        ),
    ):
        load("curiosity", split="train").to_hf(chat=True)
    dd = load("curiosity", split="train").to_hf(chat="chat_messages")
    row = dd["train"][0]
    assert row["chat_messages"][0]["role"] == "system" and "liked" in row["messages"]


def test_pec_splits_keep_convbanks_names_and_the_exported_folder_the_loaders(
    built: Bank, tmp_path: Path
) -> None:
    """Before: ``load("pec", ...).to_hf()`` named the split ``validation`` where convbank,
    ``load(split=...)`` and ``parts()`` say ``valid``."""
    from convbank.export import export, to_hf

    happy = load("pec", "happy")
    assert {p.split for p in happy.parts()} == {"train", "valid", "test"}
    assert set(happy.to_hf()) == {"train", "valid", "test"}
    assert happy.to_hf()["valid"].num_rows == len(load("pec", "happy", "valid")) == 1
    assert set(happy.to_hf(streaming=True)) == {"train", "valid", "test"}
    both = load("pec").to_hf()
    assert {c: set(dd) for c, dd in both.items()} == {
        "happy": {"train", "valid", "test"},
        "offmychest": {"train", "valid", "test"},
    }
    assert set(to_hf(happy, loader_split_names=True)) == {"train", "validation", "test"}
    export(happy, "hf", tmp_path)  # on disk: the loader's names, for code written for it
    saved = datasets.load_from_disk(str(tmp_path / "pec" / "happy"))
    assert set(saved) == {"train", "validation", "test"} and saved["validation"].num_rows == 1
