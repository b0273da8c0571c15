"""Statistics of the bank, computed with DuckDB over the views: sizes, turn lengths, label
distributions per annotation layer, the key metadata of each dataset and its cross-tabs (what
each dataset declares: :attr:`Presentation.distributions`, :attr:`Presentation.crosstabs`).

Everything returned is JSON-ready: ``stats([name])[name]["splits"][0]["turns"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from convbank import catalog
from convbank.datasets import CrossTab, Distribution
from convbank.errors import NotBuiltError
from convbank.store import Bank, Snapshot, connect
from convbank.store.sql import bank_queries, fetched

__all__ = ["crosstab", "dataset_stats", "stats", "turn_length_histogram"]


def _words(column: str = "text") -> str:
    return f"len(regexp_split_to_array(trim({column}), '\\s+')) * (trim({column}) <> '')::INT"


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return fetched(con, sql, params)  # Ctrl-C stops it at once


def _distribution(con: duckdb.DuckDBPyConnection, name: str, d: Distribution) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for config, split, value, n in _rows(
        con, f"SELECT config, split, value, count(*) FROM ({d.sql}) GROUP BY ALL", [name]
    ):
        out.setdefault((config, split), {})["null" if value is None else str(value)] = n
    for part, counts in out.items():
        known = [v for v in d.order if v in counts]
        rest = sorted((v for v in counts if v not in d.order), key=_sort_key)
        out[part] = {"counts": {v: counts[v] for v in (*known, *rest)}}
    if d.numeric:
        for config, split, mean, median in _rows(
            con, f"SELECT config, split, avg(value), median(value) FROM ({d.sql}) GROUP BY ALL", [name]
        ):
            if mean is not None:
                out[(config, split)].update(mean=round(mean, 4), median=float(median))
    return out


def _sort_key(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


def stats(
    names: Sequence[str] | None = None, *, bank: Bank | None = None, snapshot: Snapshot | None = None
) -> dict[str, Any]:
    """Per dataset and split: conversations, participants, turns, words, turns per
    conversation (mean, median, max), label counts per annotation layer and the dataset's
    metadata distributions (:attr:`Presentation.distributions`) and cross-tabs
    (:attr:`Presentation.crosstabs`), from one generation of the bank
    (``snapshot``, or the current one)."""
    if snapshot is None:
        with (bank or Bank()).snapshot() as current:
            return stats(names, snapshot=current)
    root = snapshot.bank.root
    built = snapshot.built()
    names = list(names or catalog.built(snapshot.manifest))
    for name in names:
        catalog.get(name)
        if name not in built:
            raise NotBuiltError(
                f"{name} is not in the bank at {root}; run `convbank build {name}` first", dataset=name
            )
    if not names:
        raise NotBuiltError(f"the bank at {root} is empty; run `convbank build` first", path=root)
    con = connect(snapshot)
    try:
        with bank_queries(snapshot, con):
            return {name: dataset_stats(con, name) for name in names}
    finally:
        con.close()


def dataset_stats(con: duckdb.DuckDBPyConnection, name: str, *, crosstabs: bool = True) -> dict[str, Any]:
    """One dataset's entry of :func:`stats` over the views of ``con`` (which may stand for a
    selection of its conversations, as the viewer's filtered charts do); ``crosstabs`` False
    leaves its cross-tabs out (an empty list)."""
    splits: dict[tuple[str, str], dict[str, Any]] = {}
    for config, split, n, mean, median, most in _rows(
        con,
        "SELECT config, split, count(*), avg(num_turns), median(num_turns), max(num_turns) "
        "FROM conversations WHERE dataset = ? GROUP BY ALL ORDER BY ALL",
        [name],
    ):
        splits[(config, split)] = {
            "config": config,
            "split": split,
            "conversations": n,
            "turns_per_conversation": {"mean": round(mean, 4), "median": float(median), "max": most},
            "labels": {},
            "metadata": {},
        }
    for config, split, turns, actions, words in _rows(
        con,
        f"SELECT config, split, count(*), count(*) FILTER (kind = 'action'), sum({_words()}) "
        "FROM turns WHERE dataset = ? GROUP BY ALL",
        [name],
    ):
        splits[(config, split)].update(turns=turns, actions=actions, words=int(words or 0))
    for config, split, participants in _rows(
        con, "SELECT config, split, count(*) FROM participants WHERE dataset = ? GROUP BY ALL", [name]
    ):
        splits[(config, split)]["participants"] = participants
    for config, split, layer, label, n in _rows(
        con,
        "SELECT config, split, layer, label, count(*) AS n FROM annotations WHERE dataset = ? "
        "GROUP BY ALL ORDER BY layer, n DESC, label",
        [name],
    ):
        splits[(config, split)]["labels"].setdefault(layer, {})[label] = n
    dataset = catalog.get(name)
    for d in dataset.presentation.distributions:
        for part, entry in _distribution(con, name, d).items():
            splits[part]["metadata"][d.name] = entry
    for entry in splits.values():
        entry.setdefault("turns", 0)
        entry.setdefault("actions", 0)
        entry.setdefault("words", 0)
        entry.setdefault("participants", 0)
    order = {(c.name, s): i for i, (c, s) in enumerate((c, s) for c in dataset.configs for s in c.splits)}
    ordered = sorted(splits.values(), key=lambda e: order.get((e["config"], e["split"]), len(order)))
    return {
        "title": dataset.title,
        "splits": ordered,
        "turn_words": turn_length_histogram(con, name),
        "crosstabs": [crosstab(con, t) for t in dataset.presentation.crosstabs] if crosstabs else [],
    }


def turn_length_histogram(
    con: duckdb.DuckDBPyConnection, name: str, width: int = 5, last: int = 60
) -> dict[str, int]:
    """Words per message (all splits), in bins of ``width`` words; the last bin is open."""
    rows = _rows(
        con,
        f"SELECT least({_words()} // {width} * {width}, {last}) AS bin, count(*) FROM turns "
        "WHERE dataset = ? AND kind = 'message' GROUP BY bin ORDER BY bin",
        [name],
    )
    return {(f"{b}+" if b == last else f"{b}-{b + width - 1}"): n for b, n in rows}


def crosstab(con: duckdb.DuckDBPyConnection, table: CrossTab) -> dict[str, Any]:
    """A dataset's cross-tab: ``{"title", "question", "columns", "rows"}`` (floats to 3 places)."""
    rows = fetched(con, table.sql)
    return {
        "title": table.title,
        "question": table.question,
        "columns": list(table.columns),
        "rows": [[round(v, 3) if isinstance(v, float) else v for v in row] for row in rows],
    }
