"""How an example view's plan is made: the unified tables' rows of the selected conversations
read a stored batch at a time in Arrow, each with its conversation's source position, kept by
vectorised conditions, and put in the corpus's order with NumPy."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from convbank.model import Conversation, Participant

if TYPE_CHECKING:
    import pyarrow as pa

    from convbank.corpus._source import Source

__all__ = ["chat_sides", "numpy_mask", "plan_of", "speaker_keys", "stored", "strings", "turn_keys"]


def stored(corpus: Any, table: str, columns: list[str]) -> pa.Table:
    """The rows of a unified table for the selected conversations' stored batches (the
    columns asked for), with ``_position``: the source position of each row's conversation.
    A stored batch with none of the selection is not read."""
    import pyarrow as pa

    source: Source = corpus._source
    chosen = np.unique(corpus._positions())
    pieces = []
    for batch in range(len(source.batches)):
        lo, hi = source.starts[batch], source.starts[batch + 1]
        if np.searchsorted(chosen, lo) == np.searchsorted(chosen, hi):
            continue
        read = source.read(batch, table, ["conversation_id", *columns])
        if not read.num_rows:
            continue
        runs = pc.run_end_encode(read.column(0).combine_chunks())  # rows come grouped by conversation
        rows = source.ids(batch)
        first = np.fromiter((rows[cid] for cid in runs.values.to_pylist()), np.int64, len(runs.values)) + lo
        lengths = np.diff(runs.run_ends.to_numpy(), prepend=0)
        pieces.append(
            read.drop_columns(["conversation_id"]).append_column(
                "_position", pa.array(np.repeat(first, lengths))
            )
        )
    if not pieces:
        names = [*columns, "_position"]
        empty = source.read(0, table, columns).schema.append(pa.field("_position", pa.int64()))
        return empty.empty_table().select(names)
    return pa.concat_tables(pieces)


def plan_of(corpus: Any, rows: pa.Table, keep: np.ndarray, values: Any) -> tuple[np.ndarray, np.ndarray]:
    """The plan of the kept rows of a ``_stored`` table in the corpus's order (a conversation
    repeated in a selection gives its examples again): per example, its conversation's place
    in the corpus and its value (``values``, else its row's place among its conversation's rows)."""
    positions = rows.column("_position").to_numpy()
    if values is None:  # the index of each row among its conversation's rows
        first = np.searchsorted(positions, positions, side="left")
        found = np.arange(len(positions), dtype=np.int64) - first
    else:
        found = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values, dtype=np.int64)
    kept, found = positions[keep], found[keep]
    order = np.argsort(kept, kind="stable")
    kept, found = kept[order], found[order]
    wanted = corpus._positions()
    starts = np.searchsorted(kept, wanted, side="left")
    counts = np.searchsorted(kept, wanted, side="right") - starts
    convs = np.repeat(np.arange(len(wanted), dtype=np.int64), counts)
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return convs, found[np.repeat(starts, counts) + within]


def chat_sides(dataset: Any, people: pa.Table) -> np.ndarray:
    """Which participant rows are their conversation's chat side (the dataset's
    ``chat_side``, asked once per distinct list of participants and roles)."""
    positions = people.column("_position").to_numpy()
    ids = people.column("participant_id").to_pylist()
    roles = people.column("role").to_pylist()
    bounds = np.flatnonzero(np.diff(positions, prepend=-1, append=-1)).tolist()
    mine = np.zeros(len(ids), dtype=bool)
    asked: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
    for a, b in itertools.pairwise(bounds):
        key = (tuple(ids[a:b]), tuple(roles[a:b]))
        at = asked.get(key)
        if at is None:
            listed = [Participant(pid, role) for pid, role in zip(*key, strict=True)]
            side = dataset.presentation.chat_side(
                Conversation(dataset.name, "", "", "", 0, participants=listed)
            )
            at = asked[key] = key[0].index(side)
        mine[a + at] = True
    return mine


def speaker_keys(table: pa.Table) -> Any:
    """One string per row: its conversation's position and its participant."""
    return pc.binary_join_element_wise(
        table.column("_position").cast("string"), table.column("participant_id"), "\x1f"
    )


def turn_keys(table: pa.Table) -> np.ndarray:
    """One number per row: its conversation's position and its turn index."""
    keys: np.ndarray = (
        table.column("_position").to_numpy() * (1 << 32) + table.column("turn_index").to_numpy()
    )
    return keys


def numpy_mask(mask: Any) -> np.ndarray:
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


def strings(value: str | Sequence[str]) -> Any:
    import pyarrow as pa

    return pa.array([value] if isinstance(value, str) else list(value), pa.string())
