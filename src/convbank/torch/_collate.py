"""The collates of :mod:`convbank.torch`: dicts of values into tensors, and the padding of
tokenised examples (:class:`PadCollator`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

from convbank._arguments import a_flag_or_none
from convbank._wording import article
from convbank.errors import whole_number

if TYPE_CHECKING:
    from convbank.model import Conversation

__all__ = ["PadCollator", "collate", "collate_conversations"]


# ---------------------------------------------------------------------- collate
def collate(batch: Sequence[Any]) -> Any:
    """A batch of dicts as a dict of per-key values: numbers (int, float, bool) become a
    tensor, tensors of one shape are stacked, lists of numbers of one length (multi-hot
    vectors) become a 2-D tensor (bool, int64, or float32 if any is a float), anything else
    (strings, label lists, lists of unequal lengths, None, an int beyond int64 or a finite
    float beyond float32's range, which the tensor would not hold) stays a list; a batch of anything
    but dicts is returned as a list. :class:`PadCollator` pads token lists instead.

    >>> collate([{"text": "a", "turn_index": 0}, {"text": "b", "turn_index": 1}])
    {'text': ['a', 'b'], 'turn_index': tensor([0, 1])}
    >>> collate([{"labels": [0, 1, 1]}, {"labels": [1, 0, 0]}])["labels"]
    tensor([[0, 1, 1],
            [1, 0, 0]])
    """
    if not batch or not all(isinstance(x, dict) for x in batch):
        return list(batch)
    out: dict[str, Any] = {}
    for key in dict.fromkeys(key for x in batch for key in x):  # a mixture's views' keys may differ
        out[key] = _column([x.get(key) for x in batch])
    return out


def _column(values: list[Any]) -> Any:
    first = values[0]
    kind = type(first)
    if not all(map(_fits, values)):
        return values  # an int a 64-bit tensor cannot hold (an md5 as a number), a float 1e300: a list
    if kind in (bool, int, float) and all(type(v) is kind for v in values):
        return torch.tensor(values, dtype={bool: torch.bool, int: torch.int64, float: torch.float32}[kind])
    if kind in (int, float) and all(type(v) in (int, float) for v in values):
        return torch.tensor(values, dtype=torch.float32)
    if isinstance(first, torch.Tensor) and all(
        isinstance(v, torch.Tensor) and v.shape == first.shape for v in values
    ):
        return torch.stack(values)
    if isinstance(first, (list, tuple)) and first:
        width = len(first)
        if all(isinstance(v, (list, tuple)) and len(v) == width and all(map(_fits, v)) for v in values):
            kinds = {type(x) for v in values for x in v}
            for allowed, dtype in _VECTOR_KINDS:
                if kinds <= allowed:
                    return torch.tensor(values, dtype=dtype)
    return values


_VECTOR_KINDS = (
    ({bool}, torch.bool),
    ({int}, torch.int64),
    ({int, float}, torch.float32),
)
"""What the items of equal-length lists of numbers become: the first kind set holding them."""


_FLOAT32_INFINITE = 3.4028235677973366e38
"""The least magnitude float32 rounds to infinity (its largest finite value, and half a step)."""


def _fits(value: Any) -> bool:
    """Whether ``value`` is not an int outside int64 nor a finite float that float32 makes
    infinite (the ranges of the tensors made here): such a number stays as it is, in a list."""
    if type(value) is float:
        return abs(value) < _FLOAT32_INFINITE or not math.isfinite(value)
    return type(value) is not int or -(1 << 63) <= value < (1 << 63)


def collate_conversations(batch: Sequence[Conversation]) -> list[Conversation]:
    """A batch of conversations as a list (``DataLoader``'s default collate cannot batch
    them): pass it as ``collate_fn`` for a conversation dataset without a transform."""
    return list(batch)


# ---------------------------------------------------------------------- padding
_PADDED = ("input_ids", "attention_mask", "labels", "position_ids", "token_type_ids")
"""The keys padded to the batch's length (labels: when they are token labels)."""


class PadCollator:
    """A ``collate_fn`` for tokenised examples: pads ``input_ids`` (with ``pad_token_id``),
    ``attention_mask`` (0 on padding; made of 1s where the examples have none),
    ``position_ids`` and ``token_type_ids`` (0), and ``labels`` (``label_pad_id``) when they are
    token labels, into int64 tensors of the batch's longest length, rounded up to a multiple of
    ``pad_to_multiple_of``; other keys are batched as :func:`collate` does (so class ids become
    a tensor, multi-hot vectors a stacked tensor).

    ``labels`` are token labels (padded) when every example's are a list of ints as long as
    its ``input_ids``; else they are stacked (``token_labels=True``/``False`` decides instead).
    ``max_length`` cuts longer examples on the padding side (right: their end; left: their
    start, so a prompt keeps its last tokens). ``pad_token_id`` or a ``tokenizer`` whose
    ``pad_token_id`` it reads (only the number is kept: the collator pickles small).

    >>> pad = PadCollator(0, pad_to_multiple_of=4)
    >>> batch = pad([{"input_ids": [5, 6, 7], "labels": [-100, 6, 7]}, {"input_ids": [8], "labels": [8]}])
    >>> batch["input_ids"], batch["attention_mask"], batch["labels"]
    (tensor([[5, 6, 7, 0],
            [8, 0, 0, 0]]), tensor([[1, 1, 1, 0],
            [1, 0, 0, 0]]), tensor([[-100,    6,    7, -100],
            [   8, -100, -100, -100]]))
    """

    def __init__(
        self,
        pad_token_id: int | None = None,
        *,
        tokenizer: Any = None,
        padding_side: Literal["right", "left"] = "right",
        pad_to_multiple_of: int | None = None,
        label_pad_id: int = -100,
        max_length: int | None = None,
        token_labels: bool | None = None,
    ) -> None:
        if tokenizer is not None:
            if pad_token_id is not None:
                raise TypeError("give pad_token_id= or tokenizer=, not both")
            pad_token_id = getattr(tokenizer, "pad_token_id", None)
            if pad_token_id is None:
                raise ValueError(
                    "the tokenizer has no pad token (its pad_token_id is None): set "
                    "tokenizer.pad_token = tokenizer.eos_token, or pass pad_token_id="
                )
        if pad_token_id is None:
            raise TypeError("PadCollator needs the pad_token_id (or a tokenizer= to read it from)")
        if padding_side not in ("right", "left"):
            raise ValueError(f"padding_side must be 'right' or 'left', not {padding_side!r}")
        for name, value in (("pad_to_multiple_of", pad_to_multiple_of), ("max_length", max_length)):
            whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            if value is not None and (not whole or value < 1):
                raise ValueError(f"{name} must be a positive whole number or None, not {value!r}")
        if pad_to_multiple_of and max_length and max_length % pad_to_multiple_of:
            raise ValueError(
                f"max_length {max_length} is not a multiple of pad_to_multiple_of {pad_to_multiple_of}"
            )
        self.pad_token_id = _token_id(pad_token_id, "pad_token_id")
        self.padding_side = padding_side
        self.pad_to_multiple_of = None if pad_to_multiple_of is None else int(pad_to_multiple_of)
        self.label_pad_id = _token_id(label_pad_id, "label_pad_id")
        self.max_length = None if max_length is None else int(max_length)
        self.token_labels = a_flag_or_none(token_labels, "token_labels")

    def __repr__(self) -> str:
        return (
            f"PadCollator(pad_token_id={self.pad_token_id}, padding_side={self.padding_side!r}, "
            f"pad_to_multiple_of={self.pad_to_multiple_of}, label_pad_id={self.label_pad_id}, "
            f"max_length={self.max_length}, token_labels={self.token_labels})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PadCollator) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    def __call__(self, batch: Sequence[dict[str, Any]]) -> dict[str, Any]:
        if not batch or not all(isinstance(x, dict) and "input_ids" in x for x in batch):
            raise TypeError("PadCollator pads examples (dicts) with input_ids; use collate for others")
        ids = [_tokens(x["input_ids"], "input_ids", i) for i, x in enumerate(batch)]
        length = max(len(t) for t in ids)
        if self.max_length is not None:
            length = min(length, self.max_length)
        if self.pad_to_multiple_of:
            length = -(-length // self.pad_to_multiple_of) * self.pad_to_multiple_of
        token_labels = self.token_labels
        if token_labels is None and all("labels" in x for x in batch):
            token_labels = all(_is_token_list(x["labels"], len(t)) for x, t in zip(batch, ids, strict=True))
        pads = {
            "input_ids": self.pad_token_id,
            "attention_mask": 0,
            "labels": self.label_pad_id,
            "position_ids": 0,
            "token_type_ids": 0,
        }
        out: dict[str, Any] = {}
        for key in dict.fromkeys(key for x in batch for key in x):
            if (
                (key == "labels" and not token_labels)
                or key not in _PADDED
                or any(key not in x for x in batch)
            ):
                out[key] = _column([x.get(key) for x in batch])
                continue
            rows = ids if key == "input_ids" else _aligned(batch, key, ids)
            out[key] = self._pad(rows, length, pads[key])
            if key == "input_ids" and "attention_mask" not in batch[0]:
                out["attention_mask"] = self._pad([[1] * len(t) for t in ids], length, 0)
        return out

    def _pad(self, rows: list[list[int]], length: int, value: int) -> torch.Tensor:
        out = torch.full((len(rows), length), value, dtype=torch.int64)
        for i, row in enumerate(rows):
            cut = row[:length] if self.padding_side == "right" else row[max(0, len(row) - length) :]
            if not cut:
                continue
            if self.padding_side == "right":
                out[i, : len(cut)] = torch.tensor(cut, dtype=torch.int64)
            else:
                out[i, length - len(cut) :] = torch.tensor(cut, dtype=torch.int64)
        return out


def _tokens(value: Any, key: str, at: int) -> list[int]:
    """Token ids (a list, tuple, 1-d array or tensor of ints, NumPy's too) as a list of ints,
    or an error naming ``key`` and the example: a float is never cut to an int, a bool never
    counted as one, an int beyond int64 never left to the tensor's overflow."""
    if isinstance(value, torch.Tensor | np.ndarray):
        whole = value.dtype.kind in "iu" if isinstance(value, np.ndarray) else _whole_tensor(value)
        if value.ndim != 1 or not whole:
            raise TypeError(
                f"{key} of example {at} is {article(f'{value.ndim}-d')} array of {value.dtype}; "
                "expected token ids (ints)"
            )
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{key} of example {at} is {type(value).__name__}; expected a list of token ids (ints)"
        )
    odd = [v for v in value if not _an_id(v)][:1]
    if odd:
        raise TypeError(
            f"{key} of example {at} holds {odd[0]!r}; expected token ids (ints an int64 tensor holds)"
        )
    return [int(v) for v in value]


def _whole_tensor(value: torch.Tensor) -> bool:
    return not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)


def _an_id(value: Any) -> bool:
    """An int (NumPy's too, never a bool) that an int64 tensor holds."""
    whole = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    return whole and -(1 << 63) <= int(value) < (1 << 63)


def _aligned(batch: Sequence[dict[str, Any]], key: str, ids: list[list[int]]) -> list[list[int]]:
    """The rows of a padded key beside ``input_ids`` (a mask, positions, token labels): one
    value per token, else a ``ValueError`` naming the example (never padded or cut to fit)."""
    rows = [_tokens(x[key], key, i) for i, x in enumerate(batch)]
    for i, (row, tokens) in enumerate(zip(rows, ids, strict=True)):
        if len(row) != len(tokens):
            raise ValueError(f"example {i} has {len(tokens)} input_ids and {len(row)} {key}: one per token")
    return rows


def _token_id(value: Any, name: str) -> int:
    """A padding value as an int64 tensor holds it (NumPy's ints too), or an error naming it:
    a bool, a float or a string is never read as a number."""
    number = whole_number(value, name, least=None)
    if not _fits(number):
        raise ValueError(f"{name} must be a whole number an int64 tensor holds, not {value!r}")
    return number


def _is_token_list(labels: Any, n: int) -> bool:
    """Token labels: one integer per token (a list, tuple, array or tensor of ``n`` ints)."""
    if isinstance(labels, torch.Tensor):
        return labels.ndim == 1 and len(labels) == n and not labels.is_floating_point()
    if isinstance(labels, np.ndarray):
        return labels.ndim == 1 and len(labels) == n and labels.dtype.kind in "iu"
    return (
        isinstance(labels, (list, tuple))
        and len(labels) == n
        and all(type(v) is int or isinstance(v, np.integer) for v in labels)
    )
