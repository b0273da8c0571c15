"""Sequence packing (:func:`pack`): consecutive tokenised examples concatenated into sequences
of at most ``seq_len`` tokens, with per-example position ids, as torchtune's ``PackedDataset``
and Hugging Face's ``DataCollatorWithFlattening``."""

from __future__ import annotations

from typing import Any

import numpy as np

from convbank._arguments import a_flag
from convbank._wording import counted
from convbank.examples._base import Examples
from convbank.examples._rows import Example
from convbank.examples._tokenize import IGNORE_INDEX

__all__ = ["IGNORE_INDEX", "Packed", "pack"]

_CHUNK = 1024
"""Examples read together to measure their lengths."""


def pack(
    view: Examples,
    seq_len: int,
    *,
    pad_token_id: int | None = None,
    mask_boundaries: bool = True,
) -> Packed:
    """The examples of a tokenised view (with ``input_ids`` and maybe token ``labels``; without
    them, the labels are the ``input_ids``: a turn's label names or a class id are not token
    labels) packed greedily in order: consecutive
    examples go into one sequence while it holds at most ``seq_len`` tokens.

    Each packed example has ``input_ids``, ``labels`` (the examples' labels: a -100 stays a
    -100, so contexts stay masked), ``position_ids`` (restarting at 0 for each example, which
    flash-attention kernels read as sequence boundaries, as with ``DataCollatorWithFlattening``),
    ``seq_lens`` (the lengths of its examples) and ``attention_mask`` (1 on tokens).

    - ``mask_boundaries=True`` (the default, as ``DataCollatorWithFlattening``) sets the first
      label of each example to -100: a causal model shifts labels by one, and no token is then
      trained to follow the previous example's last one.
    - An example longer than ``seq_len`` is cut to its first ``seq_len`` tokens and packed
      alone (:attr:`Packed.truncated` counts them; tokenise with ``max_length`` and a
      ``truncation_side`` to choose what is kept). Examples without tokens are left out
      (:attr:`Packed.empty` counts them).
    - ``pad_token_id`` pads every pack to exactly ``seq_len``: padding has that id, label -100,
      attention mask 0 and its own positions from 0 (a segment of its own); without it packs
      are as long as their examples and a collator pads batches.

    Which examples go in which pack is decided once, here, from the lengths (each example is
    read once for it; a view that tokenises on the fly is worth ``map``-caching first).

    >>> tokens = convbank.load("casino", split="valid").examples("turns")\\
    ...     .tokenize(lambda text: [len(w) for w in text.split()])
    >>> packed = pack(tokens, 64)
    >>> len(tokens), len(packed), max(len(p["input_ids"]) for p in packed) <= 64
    (402, 115, True)
    """
    return Packed(view, seq_len, pad_token_id=pad_token_id, mask_boundaries=mask_boundaries)


class Packed(Examples):
    """Tokenised examples packed into sequences of at most ``seq_len`` tokens (see :func:`pack`,
    which makes them). Pack ``i`` holds the view's examples ``members[offsets[i]:offsets[i + 1]]``.

    >>> tokens = convbank.load("casino", split="valid").examples("turns")\\
    ...     .tokenize(lambda text: [len(w) for w in text.split()])
    >>> packed = pack(tokens, 64, pad_token_id=0)
    >>> {len(p["input_ids"]) for p in packed}, packed.truncated
    ({64}, 2)
    """

    def __init__(
        self,
        view: Examples,
        seq_len: int,
        *,
        pad_token_id: int | None = None,
        mask_boundaries: bool = True,
    ) -> None:
        if isinstance(seq_len, bool) or not isinstance(seq_len, (int, np.integer)) or seq_len < 1:
            raise ValueError(f"seq_len must be a whole number of tokens, at least 1, not {seq_len!r}")
        whole = isinstance(pad_token_id, (int, np.integer)) and not isinstance(pad_token_id, bool)
        if pad_token_id is not None and not whole:
            raise TypeError(f"pad_token_id must be a token id (an int) or None, not {pad_token_id!r}")
        self.view = view
        self.seq_len = int(seq_len)
        self.pad_token_id = None if pad_token_id is None else int(pad_token_id)  # NumPy's as its value
        self.mask_boundaries = a_flag(mask_boundaries, "mask_boundaries")
        lengths = _lengths(view)
        self.truncated = int((lengths > self.seq_len).sum())
        """Examples longer than ``seq_len``, cut to it."""
        self.empty = int((lengths == 0).sum())
        """Examples without tokens, left out."""
        self.members, self.offsets = _plan(np.minimum(lengths, self.seq_len), self.seq_len)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        spans = [(int(self.offsets[i]), int(self.offsets[i + 1])) for i in indices.tolist()]
        wanted = [self.members[a:b] for a, b in spans]
        rows = self.view._fetch(np.concatenate(wanted)) if wanted else []
        out: list[Example] = []
        at = 0
        for a, b in spans:
            out.append(self._pack(rows[at : at + b - a]))
            at += b - a
        return out

    def _pack(self, rows: list[Example]) -> Example:
        ids: list[int] = []
        labels: list[int] = []
        positions: list[int] = []
        lens: list[int] = []
        for row in rows:
            tokens = list(row["input_ids"])[: self.seq_len]
            given = row.get("labels")
            if not _token_labels(given):
                given = None  # a turn's label names, a class id or a vector: the text itself is learnt
            marks = list(tokens) if given is None else list(given)[: self.seq_len]
            if len(marks) != len(tokens):
                raise ValueError(
                    f"an example has {len(row['input_ids'])} input_ids and {len(given or [])} labels: "
                    "token labels are one per token"
                )
            if self.mask_boundaries:
                marks[0] = IGNORE_INDEX
            ids += tokens
            labels += marks
            positions += range(len(tokens))
            lens.append(len(tokens))
        mask = [1] * len(ids)
        pad = self.seq_len - len(ids) if self.pad_token_id is not None else 0
        if pad:
            ids += [int(self.pad_token_id or 0)] * pad
            labels += [IGNORE_INDEX] * pad
            positions += range(pad)
            mask += [0] * pad
        return {
            "input_ids": ids,
            "labels": labels,
            "position_ids": positions,
            "seq_lens": lens,
            "attention_mask": mask,
        }

    def _key(self) -> tuple[Any, ...]:
        return ("packed", self.view._key(), self.seq_len, self.pad_token_id, self.mask_boundaries)

    def _describe(self) -> str:
        return f"Packed {self.view._describe()} into {counted(self.seq_len, 'token')}"

    def cache_home(self) -> Any:
        """Where the packed view caches :meth:`map` results."""
        return self.view.cache_home()


def _lengths(view: Examples) -> np.ndarray:
    out = np.empty(len(view), dtype=np.int64)
    for start in range(0, len(view), _CHUNK):
        rows = view._fetch(np.arange(start, min(start + _CHUNK, len(view)), dtype=np.int64))
        if rows and "input_ids" not in rows[0]:
            raise ValueError(
                f"pack() needs tokenised examples (with input_ids); these have {', '.join(rows[0])}: "
                "tokenize() them first"
            )
        out[start : start + len(rows)] = [len(r["input_ids"]) for r in rows]
    return out


def _plan(lengths: np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy in order: (the examples packed, in order; where each pack starts among them)."""
    members: list[int] = []
    offsets = [0]
    room = -1  # no pack open yet
    for i, n in enumerate(lengths.tolist()):
        if n == 0:
            continue
        if n > room:  # a new pack
            if members:
                offsets.append(len(members))
            room = seq_len
        members.append(i)
        room -= n
    if members:
        offsets.append(len(members))
    return np.asarray(members, dtype=np.int64), np.asarray(offsets, dtype=np.int64)


def _token_labels(labels: Any) -> bool:
    """Whether ``labels`` are token labels (integers, one a token: checked where they are
    used), not a turn's label names, a class id or a multi-hot vector."""
    return isinstance(labels, list) and bool(labels) and all(type(x) is int for x in labels)
