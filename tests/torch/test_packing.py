"""Sequence packing (``convbank.examples.pack``): exact packs in a constructed case, the
round trip on real CaSiNo turns (the packs' tokens are the examples' tokens in order, their
label masks kept), no pack over ``seq_len``, truncation and padding counted and exact."""

from __future__ import annotations

import pickle
from itertools import chain
from typing import Any

import numpy as np
import pytest

from convbank.examples._pack import Packed, pack
from convbank.store import Bank
from listviews import ListExamples, casino_turns


def tokenised(lengths: list[int], *, labels: bool = True) -> ListExamples:
    """Examples of these lengths: ids 10*k + j; labels -100 on the first half (a context)."""
    rows = []
    for k, n in enumerate(lengths):
        ids = [10 * k + j for j in range(n)]
        row: dict[str, Any] = {"input_ids": ids, "attention_mask": [1] * n, "text": f"example {k}"}
        if labels:
            row["labels"] = [-100 if j < n // 2 else t for j, t in enumerate(ids)]
        rows.append(row)
    return ListExamples(rows, "tokens")


def test_greedy_packs_are_exact() -> None:
    packed = pack(tokenised([3, 4, 2, 6, 1]), 7)
    assert len(packed) == 3 and packed.truncated == 0 and packed.empty == 0
    assert packed.members.tolist() == [0, 1, 2, 3, 4] and packed.offsets.tolist() == [0, 2, 3, 5]
    assert packed[0] == {
        "input_ids": [0, 1, 2, 10, 11, 12, 13],
        "labels": [-100, 1, 2, -100, -100, 12, 13],  # -100: the contexts and each first label
        "position_ids": [0, 1, 2, 0, 1, 2, 3],
        "seq_lens": [3, 4],
        "attention_mask": [1] * 7,
    }
    assert packed[1] == {
        "input_ids": [20, 21],
        "labels": [-100, 21],
        "position_ids": [0, 1],
        "seq_lens": [2],
        "attention_mask": [1, 1],
    }
    assert packed[2]["seq_lens"] == [6, 1] and packed[2]["position_ids"] == [0, 1, 2, 3, 4, 5, 0]
    plain = pack(tokenised([3, 4], labels=False), 8, mask_boundaries=False)
    assert plain[0]["labels"] == plain[0]["input_ids"] == [0, 1, 2, 10, 11, 12, 13]  # labels: the ids


def test_long_examples_are_cut_and_counted_and_padding_is_exact() -> None:
    packed = pack(tokenised([2, 9, 0, 3]), 5, pad_token_id=0)
    assert packed.truncated == 1 and packed.empty == 1 and len(packed) == 3
    assert packed.members.tolist() == [0, 1, 3]
    assert packed[1]["input_ids"] == [10, 11, 12, 13, 14] and packed[1]["seq_lens"] == [5]
    assert packed[0] == {
        "input_ids": [0, 1, 0, 0, 0],
        "labels": [-100, 1, -100, -100, -100],
        "position_ids": [0, 1, 0, 1, 2],  # the padding: a segment of its own
        "seq_lens": [2],
        "attention_mask": [1, 1, 0, 0, 0],
    }
    assert all(len(p["input_ids"]) == 5 for p in packed)


@pytest.mark.parametrize("seq_len", [16, 64, 256])
def test_packs_of_real_turns_round_trip(built: Bank, seq_len: int) -> None:
    turns = casino_turns("valid")
    rows = []
    for t in turns.rows:  # a toy tokenizer: a word's length and first letter; a context half
        ids = [len(w) * 1000 + ord(w[0]) for w in t["text"].split()]
        rows.append({**t, "input_ids": ids, "labels": [-100] * (len(ids) // 2) + ids[len(ids) // 2 :]})
    view = ListExamples(rows, "casino-valid-tokens")
    packed = pack(view, seq_len)
    packs = packed.to_list()
    lengths = [len(r["input_ids"]) for r in rows]
    assert packed.truncated == sum(n > seq_len for n in lengths) and packed.empty == lengths.count(0)
    kept = [r for r in rows if r["input_ids"]]
    assert all(len(p["input_ids"]) <= seq_len for p in packs)
    for p in packs:
        assert len(p["labels"]) == len(p["position_ids"]) == len(p["attention_mask"]) == len(p["input_ids"])
        assert sum(p["seq_lens"]) == len(p["input_ids"])
        assert p["position_ids"] == list(chain.from_iterable(range(n) for n in p["seq_lens"]))
    assert list(chain.from_iterable(p["input_ids"] for p in packs)) == list(
        chain.from_iterable(r["input_ids"][:seq_len] for r in kept)
    )
    expected = [[-100, *r["labels"][1:seq_len]] for r in kept]
    assert list(chain.from_iterable(p["labels"] for p in packs)) == list(chain.from_iterable(expected))
    greedy = [len(p["seq_lens"]) for p in packs]  # the next example would not have fitted
    starts = np.cumsum([0, *greedy])[1:-1]
    assert all(
        len(packs[i]["input_ids"]) + min(lengths_kept, seq_len) > seq_len
        for i, lengths_kept in zip(
            range(len(packs) - 1), (len(kept[s]["input_ids"]) for s in starts), strict=True
        )
    )
    assert pickle.loads(pickle.dumps(packed)) == packed and pickle.loads(pickle.dumps(packed))[3] == packs[3]


def test_packing_says_what_it_needs() -> None:
    with pytest.raises(ValueError) as caught:
        pack(ListExamples([{"text": "a"}]), 8)
    assert (
        str(caught.value)
        == "pack() needs tokenised examples (with input_ids); these have text: tokenize() them first"
    )
    with pytest.raises(ValueError) as caught:
        pack(tokenised([3]), 0)
    assert str(caught.value) == "seq_len must be a whole number of tokens, at least 1, not 0"
    with pytest.raises(TypeError) as caught:
        pack(tokenised([3]), 4, pad_token_id="<pad>")  # type: ignore[arg-type]
    assert str(caught.value) == "pad_token_id must be a token id (an int) or None, not '<pad>'"
    bad = ListExamples([{"input_ids": [1, 2, 3], "labels": [1, 2]}])
    with pytest.raises(ValueError) as caught:
        pack(bad, 8)[0]
    assert str(caught.value) == "an example has 3 input_ids and 2 labels: token labels are one per token"
    assert isinstance(pack(tokenised([]), 4), Packed) and len(pack(tokenised([]), 4)) == 0


def test_a_pad_token_id_of_numpy_is_its_value() -> None:
    """As ``PadCollator`` and ``seq_len`` take them (before: ``pad_token_id=np.int64(0)`` was
    `pad_token_id must be a token id (an int) or None, not np.int64(0)`; ``True`` still is)."""
    packed = pack(tokenised([2, 9, 0, 3]), 5, pad_token_id=np.int64(0))
    assert packed.pad_token_id == 0 and type(packed.pad_token_id) is int
    assert packed[0]["input_ids"] == [0, 1, 0, 0, 0]
    with pytest.raises(TypeError, match=r"^pad_token_id must be a token id \(an int\) or None, not True$"):
        pack(tokenised([3]), 4, pad_token_id=True)
