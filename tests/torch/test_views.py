"""convbank.torch over example views and with filters: slices and selections of a map-style
dataset, ``where=`` giving full batches of CaSiNo's message turns, a unit read with one
``__getitems__`` call, and a mixture sharded by DataLoader workers and two simulated ranks,
drawn again each epoch."""

from __future__ import annotations

import pickle
from collections import Counter
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from convbank import load  # noqa: E402
from convbank.examples._mix import mix  # noqa: E402
from convbank.store import Bank  # noqa: E402
from convbank.torch import CorpusDataset, IterableCorpusDataset, collate  # noqa: E402
from listviews import ListExamples, casino_turns, numbered  # noqa: E402

CASINO_TURNS, CASINO_ACTIONS = 14297, 2378  # the bank's turns table: kind == "action"


def _key(t: dict[str, Any]) -> tuple[str, str, int]:
    return (t["split"], t["conversation_id"], t["turn_index"])


def test_slices_and_selections_are_datasets_of_those_items(built: Bank) -> None:
    data = CorpusDataset(load("casino"), "turns")
    head = data[0:5]
    assert isinstance(head, CorpusDataset) and len(head) == 5
    assert [head[i] for i in range(5)] == [data[i] for i in range(5)] and head[-1] == data[4]
    tail = data[-3:]
    assert [_key(t) for t in tail] == [
        _key(data[i]) for i in (CASINO_TURNS - 3, CASINO_TURNS - 2, CASINO_TURNS - 1)
    ]
    picked = data.select([10, 2, -1])
    assert [_key(t) for t in picked] == [_key(data[10]), _key(data[2]), _key(data[-1])]
    assert [_key(t) for t in data[::5000]] == [_key(data[i]) for i in (0, 5000, 10000)]
    assert [t["turn_index"] for t in data[100:110][2:4]] == [data[102]["turn_index"], data[103]["turn_index"]]
    with pytest.raises(IndexError, match="index 14297 is outside this dataset of 14,297 turns"):
        data.select([14297])
    with pytest.raises(IndexError, match="index 5 is outside this dataset of 5 turns"):
        head[5]
    conversations = CorpusDataset(load("casino"))[3:6]
    assert [c.conversation_id for c in conversations] == load("casino").conversation_ids()[3:6]
    plain = CorpusDataset([{"x": i} for i in range(20)], transform=lambda e: e["x"])
    assert list(plain[15:]) == [15, 16, 17, 18, 19]
    assert pickle.loads(pickle.dumps(head))[4] == data[4]


@pytest.mark.parametrize("workers", [0, 2])
def test_where_gives_full_batches_of_message_turns(built: Bank, workers: int) -> None:
    def messages(t: dict[str, Any]) -> bool:
        return bool(t["kind"] == "message")

    kinds_in_bank = load("casino").to_arrow("turns").column("kind").to_pylist()
    assert kinds_in_bank.count("action") == CASINO_ACTIONS and len(kinds_in_bank) == CASINO_TURNS
    data = CorpusDataset(load("casino"), "turns", where=messages)
    assert len(data) == CASINO_TURNS - CASINO_ACTIONS == 11919
    sizes, kinds = [], set()
    for batch in DataLoader(data, batch_size=64, num_workers=workers, collate_fn=collate):
        sizes.append(len(batch["text"]))
        kinds |= set(batch["kind"])
    assert kinds == {"message"} and sum(sizes) == 11919
    assert sizes[:-1] == [64] * (len(sizes) - 1) and sizes[-1] == 11919 % 64 == 15
    assert [_key(t) for t in data[:3]] == [_key(t) for t in CorpusDataset(load("casino"), "turns")[:3]]
    assert len(data[100:200]) == 100 and all(t["kind"] == "message" for t in data[100:200])
    streamed = IterableCorpusDataset(load("casino"), "turns", where=messages, shuffle=True, seed=1)
    sizes = [
        len(b["text"]) for b in DataLoader(streamed, batch_size=64, num_workers=workers, collate_fn=collate)
    ]
    assert sum(sizes) == 11919
    assert sorted(sizes)[max(workers, 1) :] == [64] * (
        len(sizes) - max(workers, 1)
    )  # a short last per worker


def test_an_iterable_dataset_reads_a_unit_of_a_view_with_one_call() -> None:
    view = numbered(5000, "v")
    data = IterableCorpusDataset(view, unit=1000, transform=lambda e: e["i"])
    assert list(data) == list(range(5000))
    assert view.fetches == 5  # five units, one __getitems__ each
    kept = IterableCorpusDataset(view, unit=1000, where=lambda e: e["i"] % 3 == 0, transform=lambda e: e["i"])
    assert list(kept) == list(range(0, 5000, 3))
    mapped = CorpusDataset(view)
    view.fetches = 0
    assert [e["i"] for e in mapped.__getitems__([7, 3, 9])] == [7, 3, 9] and view.fetches == 1


@pytest.mark.parametrize("stopping", ["first_exhausted", "all_exhausted"])
def test_a_mixture_of_real_turns_is_covered_once_per_epoch_across_workers_and_ranks(
    built: Bank, stopping: Any
) -> None:
    mixture = mix({casino_turns("valid"): 2, casino_turns("test"): 1}, seed=3, stopping=stopping)
    epochs = []
    for epoch in (0, 1):
        seen: Counter[tuple[Any, ...]] = Counter()
        per_rank = []
        for rank in range(2):
            data = IterableCorpusDataset(mixture, rank=rank, world_size=2, unit=100)
            data.set_epoch(epoch)
            assert mixture.epoch == epoch  # the mixture drew this epoch's plan
            before = sum(seen.values())
            for batch in DataLoader(data, batch_size=32, num_workers=2, collate_fn=collate):
                seen.update(
                    zip(
                        batch["source"],
                        batch["split"],
                        batch["conversation_id"],
                        batch["turn_index"].tolist(),
                        strict=True,
                    )
                )
            per_rank.append(sum(seen.values()) - before)
        planned = Counter((e["source"], *_key(e)) for e in mixture)
        assert seen == planned and sum(seen.values()) == len(mixture)  # each example of the plan once
        assert all(n > 0 for n in per_rank)
        epochs.append(list(zip(mixture.plan_sources.tolist(), mixture.plan_positions.tolist(), strict=True)))
    assert epochs[0] != epochs[1]  # each epoch its own plan
    if stopping == "all_exhausted":
        assert {k[1:] for k in seen} == {
            _key(t) for t in casino_turns("valid").rows + casino_turns("test").rows
        }


def test_mixture_examples_through_workers_are_the_plan_s(built: Bank) -> None:
    a, b = numbered(300, "a"), numbered(120, "b")
    mixture = mix([a, b], weights=[1, 1], seed=9, stopping="all_exhausted")
    for epoch in (0, 1):
        got: Counter[tuple[str, int]] = Counter()
        for rank in range(2):
            data = IterableCorpusDataset(mixture, rank=rank, world_size=2, unit=64)
            data.set_epoch(epoch)
            for batch in DataLoader(data, batch_size=16, num_workers=2, collate_fn=collate):
                got.update(zip(batch["source"], batch["i"].tolist(), strict=True))
        expected = Counter((e["source"], e["i"]) for e in mixture)
        assert got == expected and sum(got.values()) == len(mixture)
        assert {k for k in got} == {("a", i) for i in range(300)} | {("b", i) for i in range(120)}
    mapped = CorpusDataset(mixture, where=lambda e: e["source"] == "b")
    mapped.set_epoch(2)
    assert mixture.epoch == 2 and len(mapped) == mixture.counts()["b"]
    assert all(e["source"] == "b" for e in mapped)
    assert np.array_equal([e["i"] for e in mapped], mixture.plan_positions[mixture.plan_sources == 1])


def test_a_list_view_of_real_turns_is_read_in_units(built: Bank) -> None:
    view = ListExamples(casino_turns("valid").rows, "valid")
    keys = [_key(t) for t in IterableCorpusDataset(view, shuffle=True, seed=2, unit=100)]
    assert Counter(keys) == Counter(_key(t) for t in view.rows) and view.fetches == 5
