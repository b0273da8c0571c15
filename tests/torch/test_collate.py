"""Padding tokenised examples into tensors (``convbank.torch.PadCollator``) and stacking
multi-hot vectors (``collate``): exact tensors, right and left, rounded to a multiple of 8,
cut to a maximum length, labels padded only when they are token labels."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from convbank.torch import PadCollator, collate  # noqa: E402

BATCH = [
    {"input_ids": [11, 12, 13], "labels": [-100, 12, 13], "position_ids": [0, 1, 2], "text": "a"},
    {"input_ids": [21], "labels": [21], "position_ids": [0], "text": "b"},
    {"input_ids": [31, 32], "labels": [-100, 32], "position_ids": [0, 1], "text": "c"},
]


def test_right_padding_is_exact() -> None:
    out = PadCollator(0)(BATCH)
    assert list(out) == ["input_ids", "attention_mask", "labels", "position_ids", "text"]
    assert all(out[k].dtype == torch.int64 for k in ("input_ids", "attention_mask", "labels", "position_ids"))
    assert out["input_ids"].tolist() == [[11, 12, 13], [21, 0, 0], [31, 32, 0]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]
    assert out["labels"].tolist() == [[-100, 12, 13], [21, -100, -100], [-100, 32, -100]]
    assert out["position_ids"].tolist() == [[0, 1, 2], [0, 0, 0], [0, 1, 0]]
    assert out["text"] == ["a", "b", "c"]


def test_left_padding_to_a_multiple_of_8_is_exact() -> None:
    out = PadCollator(7, padding_side="left", pad_to_multiple_of=8, label_pad_id=-1)(BATCH)
    assert out["input_ids"].tolist() == [
        [7, 7, 7, 7, 7, 11, 12, 13],
        [7, 7, 7, 7, 7, 7, 7, 21],
        [7, 7, 7, 7, 7, 7, 31, 32],
    ]
    assert out["attention_mask"].tolist() == [[0] * 5 + [1] * 3, [0] * 7 + [1], [0] * 6 + [1] * 2]
    assert out["labels"].tolist() == [
        [-1, -1, -1, -1, -1, -100, 12, 13],
        [-1, -1, -1, -1, -1, -1, -1, 21],
        [-1, -1, -1, -1, -1, -1, -100, 32],
    ]
    assert out["position_ids"].tolist() == [[0] * 5 + [0, 1, 2], [0] * 8, [0] * 6 + [0, 1]]
    right = PadCollator(0, pad_to_multiple_of=8)(BATCH)
    assert right["input_ids"].shape == (3, 8) and right["input_ids"][0].tolist() == [
        11,
        12,
        13,
        0,
        0,
        0,
        0,
        0,
    ]


def test_max_length_cuts_on_the_padding_side() -> None:
    long = [
        {"input_ids": [1, 2, 3, 4, 5, 6], "attention_mask": [1] * 6},
        {"input_ids": [9], "attention_mask": [1]},
    ]
    right = PadCollator(0, max_length=4)(long)
    assert right["input_ids"].tolist() == [[1, 2, 3, 4], [9, 0, 0, 0]]
    assert right["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 0, 0, 0]]
    left = PadCollator(0, max_length=4, padding_side="left")(long)
    assert left["input_ids"].tolist() == [[3, 4, 5, 6], [0, 0, 0, 9]]  # a prompt keeps its end
    assert PadCollator(0, max_length=16, pad_to_multiple_of=8)(long)["input_ids"].shape == (2, 8)


def test_class_ids_and_multi_hot_labels_are_stacked_not_padded() -> None:
    classes = PadCollator(0)([{"input_ids": [1, 2], "labels": 3}, {"input_ids": [4], "labels": 0}])
    assert classes["labels"].dtype == torch.int64 and classes["labels"].tolist() == [3, 0]
    hot = [{"input_ids": [1, 2, 3], "labels": [0, 1]}, {"input_ids": [4], "labels": [1, 1]}]
    stacked = PadCollator(0)(hot)
    assert stacked["labels"].tolist() == [[0, 1], [1, 1]] and stacked["labels"].dtype == torch.int64
    floats = PadCollator(0)(
        [{"input_ids": [1], "labels": [0.0, 1.0]}, {"input_ids": [2, 3], "labels": [1, 0]}]
    )
    assert floats["labels"].dtype == torch.float32 and floats["labels"].tolist() == [[0.0, 1.0], [1.0, 0.0]]
    # two labels for two tokens in every example: token labels unless said otherwise
    same = [{"input_ids": [1, 2], "labels": [0, 1]}, {"input_ids": [3, 4], "labels": [1, 1]}]
    assert PadCollator(0, token_labels=False)(same)["labels"].tolist() == [[0, 1], [1, 1]]
    tokens = PadCollator(0, pad_to_multiple_of=4)(same)["labels"].tolist()
    assert tokens == [[0, 1, -100, -100], [1, 1, -100, -100]]


def test_tensors_and_arrays_are_padded_too() -> None:
    out = PadCollator(0)(
        [
            {"input_ids": torch.tensor([5, 6]), "labels": np.array([5, 6])},
            {"input_ids": np.array([7]), "labels": [7]},
        ]
    )
    assert out["input_ids"].tolist() == [[5, 6], [7, 0]] and out["labels"].tolist() == [[5, 6], [7, -100]]


def test_collate_stacks_equal_length_lists_of_numbers() -> None:
    out = collate(
        [
            {
                "hot": [0, 1, 1],
                "scores": [0.5, 1],
                "flags": [True, False],
                "ragged": [1, 2],
                "tags": ["x"],
                "none": [],
            },
            {
                "hot": [1, 0, 0],
                "scores": [1, 2],
                "flags": [False, False],
                "ragged": [3],
                "tags": ["y"],
                "none": [],
            },
        ]
    )
    assert out["hot"].dtype == torch.int64 and out["hot"].tolist() == [[0, 1, 1], [1, 0, 0]]
    assert out["scores"].dtype == torch.float32 and out["scores"].tolist() == [[0.5, 1.0], [1.0, 2.0]]
    assert out["flags"].dtype == torch.bool and out["flags"].tolist() == [[True, False], [False, False]]
    assert out["ragged"] == [[1, 2], [3]] and out["tags"] == [["x"], ["y"]] and out["none"] == [[], []]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([2**63, 1], [2**63, 1]),
        ([1, 2**70], [1, 2**70]),
        ([[2**64, 1], [0, 1]], [[2**64, 1], [0, 1]]),
        ([-(2**63), 1], torch.tensor([-(2**63), 1])),
    ],
)
def test_an_int_a_tensor_cannot_hold_stays_a_list(values: list[Any], expected: Any) -> None:
    """An int outside int64 (an md5 as a number) keeps its column a list, as anything else
    that is not a tensor's (before: ``ValueError: Overflow when unpacking long long`` from
    ``torch.tensor``, 3 of 3 columns); int64's own range is still a tensor."""
    made = collate([{"key": v, "n": i} for i, v in enumerate(values)])["key"]
    if isinstance(expected, list):
        assert made == expected
    else:
        assert torch.equal(made, expected)
    assert PadCollator(0)([{"input_ids": [1], "key": v} for v in values])["key"] is not None


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1e300, 1.0], [1e300, 1.0]),
        ([1, -1e39], [1, -1e39]),
        ([[1e300, 2.0], [1.0, 1.0]], [[1e300, 2.0], [1.0, 1.0]]),
        ([3.4028234663852886e38, float("inf")], torch.tensor([3.4028234663852886e38, float("inf")])),
    ],
)
def test_a_float_float32_cannot_hold_stays_a_list(values: list[Any], expected: Any) -> None:
    """Twentieth pass. Before: a finite float beyond float32's range (``1e300``, a column of
    ints and ``-1e39``, a vector holding one) was made ``inf`` in the batch's float32 tensor,
    without a word (3 of 3 columns), where an int beyond int64 keeps its column a list. Now such
    a float keeps its column a list too; float32's own range, and an infinity, is a tensor."""
    made = collate([{"key": v, "n": i} for i, v in enumerate(values)])["key"]
    if isinstance(expected, list):
        assert made == expected
    else:
        assert torch.equal(made, expected.float())
    assert PadCollator(0)([{"input_ids": [1], "key": v} for v in values])["key"] is not None


def test_the_pad_id_comes_from_a_tokenizer_and_the_collator_pickles() -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(
        WordLevel({"[PAD]": 0, "[UNK]": 1, "hello": 2, "there": 3, "deal": 4}, unk_token="[UNK]")
    )
    words.pre_tokenizer = Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="[PAD]", unk_token="[UNK]")
    pad = PadCollator(tokenizer=tokenizer, pad_to_multiple_of=4)
    assert pad.pad_token_id == 0
    examples = [dict(tokenizer(t)) for t in ("hello there", "deal", "hello there deal deal deal")]
    batches = list(DataLoader(examples, batch_size=2, collate_fn=pickle.loads(pickle.dumps(pad))))
    assert batches[0]["input_ids"].tolist() == [[2, 3, 0, 0], [4, 0, 0, 0]]
    assert batches[1]["input_ids"].tolist() == [[2, 3, 4, 4, 4, 0, 0, 0]]
    assert pickle.loads(pickle.dumps(pad)) == pad and "pad_token_id=0" in repr(pad)
    tokenizer.pad_token = None
    with pytest.raises(ValueError) as caught:
        PadCollator(tokenizer=tokenizer)
    assert str(caught.value) == (
        "the tokenizer has no pad token (its pad_token_id is None): set "
        "tokenizer.pad_token = tokenizer.eos_token, or pass pad_token_id="
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, TypeError, "PadCollator needs the pad_token_id (or a tokenizer= to read it from)"),
        (
            {"pad_token_id": 0, "padding_side": "top"},
            ValueError,
            "padding_side must be 'right' or 'left', not 'top'",
        ),
        (
            {"pad_token_id": 0, "pad_to_multiple_of": 0},
            ValueError,
            "pad_to_multiple_of must be a positive whole number or None, not 0",
        ),
        (
            {"pad_token_id": 0, "max_length": 10, "pad_to_multiple_of": 8},
            ValueError,
            "max_length 10 is not a multiple of pad_to_multiple_of 8",
        ),
        ({"pad_token_id": 0, "tokenizer": object()}, TypeError, "give pad_token_id= or tokenizer=, not both"),
    ],
)
def test_bad_settings_say_what_is_wrong(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        PadCollator(**kwargs)
    assert str(caught.value) == message
    with pytest.raises(TypeError, match="PadCollator pads examples"):
        PadCollator(0)([{"text": "no ids"}])


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([1.5, 2], "input_ids of example 0 holds 1.5; expected token ids (ints an int64 tensor holds)"),
        ([True, False], "input_ids of example 0 holds True; expected token ids (ints an int64 tensor holds)"),
        ([2**70], f"input_ids of example 0 holds {2**70}; expected token ids (ints an int64 tensor holds)"),
        ("abc", "input_ids of example 0 is str; expected a list of token ids (ints)"),
        (None, "input_ids of example 0 is NoneType; expected a list of token ids (ints)"),
        (np.array([1.5]), "input_ids of example 0 is a 1-d array of float64; expected token ids (ints)"),
        (np.array([[1, 2]]), "input_ids of example 0 is a 2-d array of int64; expected token ids (ints)"),
    ],
    ids=["float", "bool", "int-beyond-64-bits", "str", "none", "float-array", "2-d-array"],
)
def test_token_ids_that_are_not_ints_are_named_never_cut(ids: Any, message: str) -> None:
    """Before: ``[1.5, 2]`` was padded as ``[1, 2]`` and ``[True, False]`` as ``[1, 0]``
    silently, a float array cut to ints and a 2-d one flattened; ``"abc"`` was `invalid literal
    for int()`, ``None`` `'NoneType' object is not iterable` and ``2**70`` `Overflow when
    unpacking long long` (7 of 7 values)."""
    with pytest.raises(TypeError) as caught:
        PadCollator(0)([{"input_ids": ids}])
    assert str(caught.value) == message


def test_a_mask_or_token_labels_not_one_per_token_are_named() -> None:
    """Before: an ``attention_mask`` of 1 value beside 3 ids was padded to ``[1, 0, 0]`` and
    ``token_labels=True`` labels of 3 beside 2 ids were cut, silently (2 of 2 keys)."""
    with pytest.raises(ValueError, match=r"^example 0 has 3 input_ids and 1 attention_mask: one per token$"):
        PadCollator(0)([{"input_ids": [1, 2, 3], "attention_mask": [1]}])
    with pytest.raises(ValueError, match=r"^example 1 has 2 input_ids and 3 labels: one per token$"):
        PadCollator(0, token_labels=True)(
            [{"input_ids": [1], "labels": [1]}, {"input_ids": [1, 2], "labels": [1, 2, 3]}]
        )
    batch = PadCollator(0)([{"input_ids": np.array([5, 6], dtype=np.int32), "labels": [np.int64(-100), 6]}])
    assert batch["input_ids"].tolist() == [[5, 6]] and batch["labels"].tolist() == [[-100, 6]]
