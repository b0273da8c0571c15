"""convbank.torch: map-style and iterable datasets over the real CaSiNo of the session bank,
through a real DataLoader (0 and 2 workers) and two simulated ranks."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from convbank import load  # noqa: E402
from convbank.examples import mix  # noqa: E402
from convbank.store import Bank  # noqa: E402
from convbank.torch import (  # noqa: E402
    TURN_FIELDS,
    CorpusDataset,
    IterableCorpusDataset,
    collate,
    collate_conversations,
)

Key = tuple[str, str, int]


def _bank_turns() -> list[Key]:
    turns = load("casino").to_arrow("turns", meta="json")
    return list(
        zip(*(turns.column(c).to_pylist() for c in ("split", "conversation_id", "turn_index")), strict=True)
    )


def _keys(loader: Any) -> list[Key]:
    out: list[Key] = []
    for batch in loader:
        out += zip(batch["split"], batch["conversation_id"], batch["turn_index"].tolist(), strict=True)
    return out


def test_import_convbank_does_not_import_torch() -> None:
    code = "import sys, convbank; convbank.load; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_turn_item_has_its_role_and_labels(built: Bank) -> None:
    data = CorpusDataset(load("casino"), "turns")
    bank = _bank_turns()
    assert len(data) == len(bank) == 14297
    assert data[0]["conversation_id"] == "938" and data[0]["text"] == "Hello!, how are you doing?"
    first = data[bank.index(("train", "1", 0))]
    assert tuple(first) == TURN_FIELDS
    assert first == {
        "dataset": "casino",
        "config": "default",
        "split": "train",
        "conversation_id": "1",
        "turn_index": 0,
        "participant_id": "mturk_agent_2",
        "role": "negotiator",
        "text": "Hello. How are you?",
        "kind": "message",
        "labels": ["strategy:small-talk"],
    }
    assert data[-1]["conversation_id"] == bank[-1][1] and data[-1]["turn_index"] == bank[-1][2]
    with pytest.raises(IndexError, match="index 14297 is outside this dataset of 14,297 turns"):
        data[14297]


@pytest.mark.parametrize("workers", [0, 2])
def test_map_style_turns_through_a_dataloader_are_the_bank_s_turns(built: Bank, workers: int) -> None:
    data = CorpusDataset(load("casino"), "turns")
    loader = DataLoader(data, batch_size=500, num_workers=workers, collate_fn=collate)
    assert _keys(loader) == _bank_turns()  # in the corpus's order, each once


def test_map_style_and_iterable_turns_are_the_same_items(built: Bank) -> None:
    corpus = load("casino", split="valid")
    mapped = list(CorpusDataset(corpus, "turns"))
    streamed = list(IterableCorpusDataset(corpus, "turns"))
    assert len(mapped) == len(streamed) == 402
    assert mapped == streamed
    annotations = corpus.to_arrow("annotations").num_rows
    assert sum(len(t["labels"]) for t in streamed) == annotations == 90


@pytest.mark.parametrize("workers", [0, 2])
def test_every_turn_once_per_epoch_whatever_the_workers_and_ranks(built: Bank, workers: int) -> None:
    corpus = load("casino")
    bank = Counter(_bank_turns())
    seen: list[Key] = []
    for rank in range(2):
        data = IterableCorpusDataset(corpus, "turns", shuffle=True, seed=3, rank=rank, world_size=2)
        keys = _keys(DataLoader(data, batch_size=64, num_workers=workers, collate_fn=collate))
        assert 0 < len(keys) < len(bank)
        seen += keys
    assert len(seen) == 14297
    assert Counter(seen) == bank  # the union is the corpus, nothing twice


def test_set_epoch_changes_the_order_and_each_epoch_covers_everything_once(built: Bank) -> None:
    data = IterableCorpusDataset(load("casino"), "turns", shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=128, num_workers=2, collate_fn=collate)
    epochs = []
    for epoch in (0, 1):
        data.set_epoch(epoch)
        epochs.append(_keys(loader))
    bank = Counter(_bank_turns())
    assert Counter(epochs[0]) == Counter(epochs[1]) == bank
    assert epochs[0] != epochs[1]
    data.set_epoch(0)
    assert _keys(loader) == epochs[0]  # the same seed and epoch: the same order
    assert _keys(
        DataLoader(IterableCorpusDataset(load("casino"), "turns"), batch_size=128, collate_fn=collate)
    ) == list(bank)  # unshuffled: storage order


def _mixed_keys(loader: Any) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    for batch in loader:
        out += zip(batch["source"], batch["conversation_id"], batch["turn_index"].tolist(), strict=True)
    return out


@pytest.mark.parametrize(
    "kind", ["iterable turns", "iterable mixture", "map-style mixture", "map-style where"]
)
def test_set_epoch_reaches_persistent_workers(built: Bank, kind: str) -> None:
    """With ``persistent_workers=True`` (workers copy the dataset once), each epoch is the
    one set: the order, a mixture's plan, ``where``'s positions in it, as without persistent
    workers (before: every epoch was epoch 0's, the order repeated and a mixture's plan of
    1,782 examples where epoch 1's has 1,740, 4 of 4 datasets)."""
    valid = load("casino", split="valid")
    if kind == "iterable turns":

        def make() -> Any:
            return IterableCorpusDataset(valid, "turns", shuffle=True, seed=0)

        keys: Any = _keys
    else:
        mixture = mix([valid.examples("turns"), load("casino", split="test").examples("turns")], seed=0)
        keys = _mixed_keys
        if kind == "iterable mixture":

            def make() -> Any:
                return IterableCorpusDataset(copy.deepcopy(mixture))
        else:

            def make() -> Any:
                where = (lambda x: x["kind"] == "message") if kind == "map-style where" else None
                return CorpusDataset(copy.deepcopy(mixture), where=where)

    def epochs(persistent: bool) -> list[list[Any]]:
        data = make()
        loader = DataLoader(
            data, batch_size=64, num_workers=2, persistent_workers=persistent, collate_fn=collate
        )
        out = []
        for epoch in (0, 1, 2):
            data.set_epoch(epoch)
            out.append(keys(loader))
        return out

    persistent, fresh = epochs(True), epochs(False)
    assert persistent == fresh
    assert persistent[0] != persistent[1] != persistent[2]
    if kind != "iterable turns":
        expected = []
        for epoch in (0, 1, 2):
            mixture.set_epoch(epoch)
            made = [
                (x["source"], x["conversation_id"], x["turn_index"])
                for x in mixture
                if x["kind"] == "message" or kind != "map-style where"
            ]
            expected.append(made)
        assert [len(e) for e in expected][:2] == ([1782, 1740] if kind != "map-style where" else [1496, 1465])
        assert [sorted(e) for e in persistent] == [sorted(e) for e in expected]


@pytest.mark.parametrize("workers", [0, 2])
def test_conversations_of_a_selection_once_per_epoch_across_ranks(built: Bank, workers: int) -> None:
    corpus = load("casino").filter(label="strategy:uv-part").shuffle(seed=1)
    assert len(corpus) == 89
    seen: list[str] = []
    for rank in range(2):
        data = IterableCorpusDataset(corpus, transform=lambda c: c.conversation_id, rank=rank, world_size=2)
        for batch in DataLoader(data, batch_size=16, num_workers=workers, collate_fn=collate):
            seen += batch
    assert sorted(seen) == sorted(corpus.conversation_ids())
    assert len(seen) == len(set(seen)) == 89


def test_examples_of_a_plain_sequence_with_a_transform(built: Bank) -> None:
    examples = [{"text": f"example {i}", "label": i % 3, "score": i / 10} for i in range(103)]
    seen: list[int] = []
    for rank in range(2):
        data = IterableCorpusDataset(
            examples,
            transform=lambda e: {**e, "length": len(e["text"])},
            shuffle=True,
            rank=rank,
            world_size=2,
        )
        for batch in DataLoader(data, batch_size=10, num_workers=2, collate_fn=collate):
            assert batch["length"].dtype == torch.int64 and batch["score"].dtype == torch.float32
            assert isinstance(batch["text"], list)
            seen += [int(t.split()[1]) for t in batch["text"]]
    assert sorted(seen) == list(range(103))
    mapped = CorpusDataset(examples, transform=lambda e: e["label"])
    assert len(mapped) == 103 and [mapped[i] for i in (0, 1, 2, -1)] == [0, 1, 2, 0]


def test_map_style_conversations_go_to_workers(built: Bank) -> None:
    corpus = load("casino").shuffle(seed=2)[:300]
    data = CorpusDataset(corpus)
    loader = DataLoader(data, batch_size=32, num_workers=2, collate_fn=collate_conversations)
    ids = [c.conversation_id for batch in loader for c in batch]
    assert ids == corpus.conversation_ids()
    assert pickle.loads(pickle.dumps(data))[5].conversation_id == corpus[5].conversation_id


def test_rank_and_world_size_come_from_torch_distributed(
    built: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda: 2)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda: 3)
    data = IterableCorpusDataset(load("casino"))
    assert data.shard() == (2, 3)
    assert len(list(data)) == 1030 - 2 * 344  # units of 344, 344 and 342 conversations
    with pytest.raises(ValueError, match="give both rank= and world_size=, or neither"):
        IterableCorpusDataset(load("casino"), rank=1)


def test_collate_batches_dicts_of_lists() -> None:
    out = collate(
        [
            {"text": "a", "i": 0, "ok": True, "labels": ["x:y"]},
            {"text": "b", "i": 1, "ok": False, "labels": []},
        ]
    )
    assert out["text"] == ["a", "b"] and out["labels"] == [["x:y"], []]
    assert out["i"].tolist() == [0, 1] and out["ok"].tolist() == [True, False]
    stacked = collate([{"ids": torch.tensor([1, 2])}, {"ids": torch.tensor([3, 4])}])
    assert stacked["ids"].tolist() == [[1, 2], [3, 4]]
    assert collate([1, "a"]) == [1, "a"]


def test_spawned_workers_reopen_the_corpus(built: Bank) -> None:
    corpus = load("casino", split="valid")
    data = IterableCorpusDataset(corpus, "turns", shuffle=True, seed=5)
    loader = DataLoader(
        data, batch_size=50, num_workers=2, multiprocessing_context="spawn", collate_fn=collate
    )
    keys = _keys(loader)  # each worker unpickled the corpus: the same generation, opened again
    turns = corpus.to_arrow("turns", meta="json")
    bank = zip(
        *(turns.column(c).to_pylist() for c in ("split", "conversation_id", "turn_index")), strict=True
    )
    assert Counter(keys) == Counter(bank) and len(keys) == 402


def test_a_unit_reads_only_the_stored_batches_holding_it(
    built: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = load("casino")  # three stored batches: train, valid, test
    source = corpus._source
    reads: list[tuple[int, str]] = []
    read = source.read

    def counted(batch: int, table: str, columns: list[str] | None = None) -> Any:
        reads.append((batch, table))
        return read(batch, table, columns)

    monkeypatch.setattr(source, "read", counted)
    unit = corpus.select(range(900, 930))  # the 30 valid conversations
    items = IterableCorpusDataset(unit, "turns")._read(np.arange(30))
    assert len(items) == 402 and {i["split"] for i in items} == {"valid"}
    assert {batch for batch, _ in reads} == {1}
    # its ids come from its record file's index, not from the conversations table
    assert {table for _, table in reads} == {"participants", "annotations", "turns"}


@pytest.mark.parametrize("epoch", [2**63, 2**70], ids=["2**63", "2**70"])
def test_an_epoch_the_shared_int64_cannot_hold_is_named(built: Bank, epoch: int) -> None:
    """Before: ``set_epoch(2**63)`` was torch's ``RuntimeError: value cannot be converted to
    type int64_t without overflow`` and ``set_epoch(2**70)`` ``OverflowError: int too big to
    convert``, naming no argument (2 of 2 in both datasets); the epoch kept is the last good."""
    valid = load("casino", split="valid")
    message = f"epoch must be a whole number of at least 0 and below 2**63, not {epoch}"
    iterable = IterableCorpusDataset(valid, "turns", shuffle=True, seed=0)
    iterable.set_epoch(2**63 - 1)
    mapped = CorpusDataset(mix([valid.examples("turns"), valid.examples("turns")]))
    for data in (iterable, mapped):
        with pytest.raises(ValueError) as caught:
            data.set_epoch(epoch)
        assert str(caught.value) == message
    assert iterable.epoch == 2**63 - 1
