"""What the pages show, read from the bank: conversation listings with filters, and one
conversation prepared for display (span highlighting, deals, facts)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import duckdb

from convbank.model import Annotation, Conversation

PER_PAGE = 50

FILTERS: dict[str, dict[str, tuple[str, str]]] = {
    "casino": {
        "satisfaction": ("participants", "$.outcomes.satisfaction"),
        "opponent_likeness": ("participants", "$.outcomes.opponent_likeness"),
        "points_scored": ("participants", "$.outcomes.points_scored"),
    },
    "ccpe": {},
    "curiosity": {
        "focus_entity": ("conversations", "$.focus_entity"),
        "user_dialog_rating": ("conversations", "$.user_dialog_rating"),
        "assistant_dialog_rating": ("conversations", "$.assistant_dialog_rating"),
    },
    "pec": {"domain": ("conversations", "$.domain")},
    "convai2": {
        "eval_score": ("conversations", "$.eval_score"),
        "profile_match": ("conversations", "$.profile_match"),
    },
}
"""Metadata a listing can be filtered on, per dataset: (table, JSON path)."""

SORTS = {
    "source": "c.config, c.split, c.source_index",
    "id": "c.conversation_id",
    "turns": "c.num_turns",
    "split": "c.split, c.source_index",
}

_SAME = (
    "x.dataset = c.dataset AND x.config = c.config AND x.split = c.split "
    "AND x.conversation_id = c.conversation_id"
)


@dataclass
class Listing:
    """One page of conversations."""

    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int


def list_conversations(
    con: duckdb.DuckDBPyConnection, dataset: str, args: dict[str, str], page: int
) -> Listing:
    """The conversations of ``dataset`` matching the filters in ``args`` (config, split,
    label, q, field + value, sort, order), one page of them."""
    where, params = ["c.dataset = ?"], [dataset]
    for key in ("config", "split"):
        if args.get(key):
            where.append(f"c.{key} = ?")
            params.append(args[key])
    if args.get("label"):
        layer, _, label = args["label"].partition(":")
        where.append(f"EXISTS (SELECT 1 FROM annotations x WHERE {_SAME} AND x.layer = ? AND x.label = ?)")
        params += [layer, label]
    if args.get("q"):
        where.append(f"EXISTS (SELECT 1 FROM turns x WHERE {_SAME} AND x.text ILIKE ?)")
        params.append("%" + args["q"].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
    field = FILTERS.get(dataset, {}).get(args.get("field", ""))
    if field and args.get("value", "") != "":
        table, path = field
        where.append(f"EXISTS (SELECT 1 FROM {table} x WHERE {_SAME} AND json_extract_string(x.meta, ?) = ?)")
        params += [path, args["value"]]
    order = SORTS.get(args.get("sort", ""), SORTS["source"])
    direction = "DESC" if args.get("order") == "desc" else "ASC"
    order = ", ".join(f"{col} {direction}" for col in order.split(", "))
    sql_where = " AND ".join(where)
    total = con.execute(f"SELECT count(*) FROM conversations c WHERE {sql_where}", params).fetchone()
    count = int(total[0]) if total else 0
    pages = max(1, math.ceil(count / PER_PAGE))
    page = min(max(page, 1), pages)
    rows = con.execute(
        f"SELECT c.config, c.split, c.conversation_id, c.num_turns, c.meta::VARCHAR AS meta "
        f"FROM conversations c WHERE {sql_where} ORDER BY {order} "
        f"LIMIT {PER_PAGE} OFFSET {(page - 1) * PER_PAGE}",
        params,
    ).fetchall()
    keys = ("config", "split", "conversation_id", "num_turns", "meta")
    return Listing([dict(zip(keys, r, strict=True)) for r in rows], count, page, pages)


def labels(con: duckdb.DuckDBPyConnection, dataset: str) -> list[tuple[str, str, int]]:
    """(layer, label, count) of a dataset's annotations, most frequent first."""
    return [
        (str(a), str(b), int(n))
        for a, b, n in con.execute(
            "SELECT layer, label, count(*) AS n FROM annotations WHERE dataset = ? "
            "GROUP BY ALL ORDER BY layer, n DESC",
            [dataset],
        ).fetchall()
    ]


# ---------------------------------------------------------------------- one conversation
@dataclass
class Segment:
    """A piece of a turn's text and the span annotations covering it."""

    text: str
    marks: list[Annotation]


def segments(text: str, spans: list[Annotation]) -> list[Segment]:
    """Cut ``text`` at every span boundary; each piece knows the spans over it."""
    bounds = [
        (a, a.start_char, a.end_char)
        for a in spans
        if a.start_char is not None and a.end_char is not None and 0 <= a.start_char < a.end_char <= len(text)
    ]
    cuts = sorted({0, len(text), *(s for _, s, _ in bounds), *(e for _, _, e in bounds)})
    out = [
        Segment(text[start:end], [a for a, s, e in bounds if s <= start and end <= e])
        for start, end in pairwise(cuts)
    ]
    return out or [Segment(text, [])]


_SHOWN_ELSEWHERE = frozenset(
    {
        "task_data",
        "facts",
        "strategy_slots",
        "liked",
        "message_id",
        "dialog_acts",
        "segments",
        "index",
        "unannotated_segments",
    }
)
"""Turn meta shown otherwise (deals, facts, likes, labels) or kept only for the round trip."""


def turn_views(conv: Conversation, facts: dict[int, str]) -> list[dict[str, Any]]:
    """Per turn: speaker, side, text pieces with span marks, labels, deal, likes and facts."""
    first = conv.participants[0].participant_id if conv.participants else None
    roles = {p.participant_id: p.role for p in conv.participants}
    views = []
    for t in conv.turns:
        anns = conv.annotations_of(t.turn_index)
        spans = [a for a in anns if a.start_char is not None]
        deal = t.meta.get("task_data", {})
        views.append(
            {
                "turn": t,
                "role": roles.get(t.participant_id, "?"),
                "side": "left" if t.participant_id == first else "right",
                "segments": segments(t.text, spans),
                "labels": [a for a in anns if a.start_char is None],
                "deal": deal if "issue2youget" in deal else None,
                "facts": [
                    {
                        "fid": f["fid"],
                        "used": f.get("used"),
                        "source": f.get("source"),
                        "text": facts.get(f["fid"]),
                    }
                    for f in t.meta.get("facts", ())
                ],
                "extra": {k: v for k, v in t.meta.items() if k not in _SHOWN_ELSEWHERE},
            }
        )
    return views
