"""What the pages show, read from the bank: conversation listings with filters, and one
conversation prepared for display (span highlighting, and what the dataset adds to a turn:
:meth:`Presentation.viewer_turn`). Filters are each dataset's :attr:`Presentation.viewer_filters`."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import duckdb

from convbank import catalog
from convbank._textio import bidi_closed
from convbank.corpus._filters import unknown_label
from convbank.datasets import Context, Dataset
from convbank.errors import UnknownDatasetError, did_you_mean
from convbank.model import UNIFIED_TABLES, Annotation, Conversation

PER_PAGE = 50

SORTS = ("source", "id", "turns", "split")
"""Orders of a listing besides the metadata fields (``meta:<field>``); ``source`` and
``split`` follow the catalog's order of configs and splits (train before test)."""

SNIPPET = 120
"""Characters of a conversation's first message shown in a listing (and of a turn that
matched the text search, around the match)."""

HITS = 3
"""Turns that matched the text search shown per conversation of a listing."""

_SAME = (
    "x.dataset = c.dataset AND x.config = c.config AND x.split = c.split "
    "AND x.conversation_id = c.conversation_id"
)


@dataclass
class Listing:
    """One page of conversations, and what the request asked that the data cannot answer."""

    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    notices: list[str] = field(default_factory=list)
    where: str = "c.dataset = ?"
    """The SQL condition on ``conversations c`` that selects the listing (all pages)."""
    params: list[Any] = field(default_factory=list)
    """The parameters of :attr:`where`."""

    @property
    def filtered(self) -> bool:
        """Whether a filter narrows the dataset (more than ``c.dataset = ?``)."""
        return len(self.params) > 1


def _sql_list(values: list[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _field_value(dataset: Dataset, name: str, params: list[Any]) -> str:
    """SQL for a metadata field's value of conversation ``c`` (participants' values: the
    largest, for sorting and ranges; the JSON path goes to ``params``)."""
    field = dataset.presentation.viewer_filters[name]
    params.append(field.path)
    value = "json_extract_string(x.meta, ?)"
    if field.table == "conversations":
        return value.replace("x.meta", "c.meta")
    return f"(SELECT max(TRY_CAST({value} AS DOUBLE)) FROM {field.table} x WHERE {_SAME})"


def _order(dataset: Dataset, args: dict[str, str], params: list[Any]) -> str:
    direction = "DESC" if args.get("order") == "desc" else "ASC"
    configs = _sql_list([c.name for c in dataset.configs])
    splits = _sql_list(list(dict.fromkeys(s for c in dataset.configs for s in c.splits)))
    config_pos = f"array_position({configs}, c.config)"
    split_pos = f"array_position({splits}, c.split)"
    sort = args.get("sort", "")
    if sort.startswith("meta:") and sort[5:] in dataset.presentation.viewer_filters:
        value = _field_value(dataset, sort[5:], params)
        keys = [f"TRY_CAST({value} AS DOUBLE)", f"CAST({value} AS VARCHAR)"]
        params.append(params[-1])  # the second use of the path
    else:
        keys = {
            "id": ["c.conversation_id"],
            "turns": ["c.num_turns"],
            "split": [split_pos, config_pos, "c.source_index"],
        }.get(sort, [config_pos, split_pos, "c.source_index"])
    tiebreak = [config_pos, split_pos, "c.source_index"]
    return ", ".join([*(f"{k} {direction} NULLS LAST" for k in keys), *tiebreak])


def list_conversations(
    con: duckdb.DuckDBPyConnection,
    dataset: str,
    args: dict[str, str],
    page: int,
    known_labels: Sequence[tuple[str, str, int]] | None = None,
) -> Listing:
    """The conversations of ``dataset`` matching the filters in ``args`` (config, split,
    label, q, field with value or min/max, sort, order), one page of them, each with its
    first message and its key metadata. Filters the data cannot match are explained in
    :attr:`Listing.notices`, in the API's words where it has them: an unknown config or split
    (:meth:`Dataset.parts`: a union config stands for its parts), label (checked against
    ``known_labels``, the dataset's ``(layer, label, count)``, when given), metadata field,
    sort or order, and a bound that is not a number."""
    ds = catalog.get(dataset)
    notices = []
    where = ["c.dataset = ?"]
    params: list[Any] = [dataset]
    config, split = args.get("config") or None, args.get("split") or None
    try:  # the API's rule and words: a union config stands for its parts
        ds.parts(config, split)
        configs = [c.name for c in ds.stored_configs(config)] if config else []
    except UnknownDatasetError as exc:
        notices.append(str(exc))
        configs = [config] if config else []  # selects nothing, as the notice says
    if configs:
        where.append(f"c.config IN ({', '.join('?' * len(configs))})")
        params += configs
    if split:
        where.append("c.split = ?")
        params.append(split)
    if args.get("label"):
        notices += _label_filter(ds, args["label"], known_labels, where, params)
    if args.get("q"):
        where.append(f"EXISTS (SELECT 1 FROM turns x WHERE {_SAME} AND x.text ILIKE ? ESCAPE '\\')")
        params.append(_like(args["q"]))
    notices += _field_filter(ds, args, where, params)
    notices += _order_problems(ds, args)
    sql_where = " AND ".join(where)
    total = con.execute(f"SELECT count(*) FROM conversations c WHERE {sql_where}", params).fetchone()
    count = int(total[0]) if total else 0
    pages = max(1, math.ceil(count / PER_PAGE))
    page = min(max(page, 1), pages)
    order_params: list[Any] = []
    order = _order(ds, args, order_params)
    rows = con.execute(
        f"SELECT c.config, c.split, c.conversation_id, c.num_turns FROM conversations c "
        f"WHERE {sql_where} ORDER BY {order} LIMIT {PER_PAGE} OFFSET {(page - 1) * PER_PAGE}",
        [*params, *order_params],
    ).fetchall()
    keys = ("config", "split", "conversation_id", "num_turns")
    listing = Listing([dict(zip(keys, r, strict=True)) for r in rows], count, page, pages, notices)
    listing.where, listing.params = sql_where, params
    _describe_rows(con, dataset, listing.rows)
    if args.get("q"):
        _matching_turns(con, dataset, listing.rows, args["q"])
    return listing


def _label_filter(
    ds: Dataset,
    wanted: str,
    known_labels: Sequence[tuple[str, str, int]] | None,
    where: list[str],
    params: list[Any],
) -> list[str]:
    """Add the condition of ``label=layer:label`` to ``where`` and ``params``; the notice
    ``filter(label=)`` gives for a label not in ``known_labels`` (when given), the closest
    named."""
    layer, _, label = wanted.partition(":")
    notices = []
    if known_labels is not None:
        known: dict[str, list[str]] = {}
        for a, b, _ in known_labels:
            known.setdefault(a, []).append(b)
        problem = unknown_label(ds.name, wanted, known)
        if problem:
            notices.append(problem)
    where.append(f"EXISTS (SELECT 1 FROM annotations x WHERE {_SAME} AND x.layer = ? AND x.label = ?)")
    params += [layer, label]
    return notices


def _field_filter(ds: Dataset, args: dict[str, str], where: list[str], params: list[Any]) -> list[str]:
    """Add the conditions of ``field`` with ``value`` or ``min``/``max`` to ``where`` and
    ``params``; the notices of an unknown field (the closest named) and of a bound that is
    not a number."""
    fields = ds.presentation.viewer_filters
    name = args.get("field", "")
    if name and name not in fields:
        hint = did_you_mean(name, fields)
        listed = ", ".join(fields) or "none"
        return [f"{ds.name} has no metadata field {name!r}; {hint}one of {listed}"]
    if not name:
        return []
    notices = []
    table, path = fields[name].table, fields[name].path
    # One row (a participant) holds the value and is within both bounds: bounds met by two
    # different participants are no match (min 10 and max 5 matched 3 CaSiNo dialogues).
    conditions: list[str] = []
    if args.get("value", "") != "":
        conditions.append("json_extract_string(x.meta, ?) = ?")
        params += [path, args["value"]]
    for bound, op in (("min", ">="), ("max", "<=")):
        if args.get(bound, "") == "":
            continue
        try:
            limit = float(args[bound])
        except ValueError:
            limit = math.nan
        if not math.isfinite(limit):  # 'nan' matched nothing as a min, everything as a max
            kind = "a number" if math.isnan(limit) else "a finite number"
            notices.append(f"{bound} {args[bound]!r} is not {kind}")
            continue
        conditions.append(f"TRY_CAST(json_extract_string(x.meta, ?) AS DOUBLE) {op} ?")
        params += [path, limit]
    if conditions:
        where.append(f"EXISTS (SELECT 1 FROM {table} x WHERE {_SAME} AND {' AND '.join(conditions)})")
    return notices


def sorts(dataset: Dataset) -> list[str]:
    """The orders of a listing of ``dataset``: :data:`SORTS`, then ``meta:<field>`` for each
    of its metadata fields."""
    return [*SORTS, *(f"meta:{f}" for f in dataset.presentation.viewer_filters)]


def _order_problems(dataset: Dataset, args: dict[str, str]) -> list[str]:
    """What is wrong with a listing's ``sort`` and ``order`` (the listing keeps its default
    order then)."""
    problems = []
    known = sorts(dataset)
    if args.get("sort") and args["sort"] not in known:
        hint = did_you_mean(args["sort"], known).rstrip()
        shown = f"sort {args['sort']!r} is not one of {', '.join(known)}"
        problems.append(f"{shown}; {hint}" if hint else shown)
    if args.get("order") and args["order"] not in ("asc", "desc"):
        problems.append(f"order {args['order']!r} is not asc or desc")
    return problems


def _like(text: str) -> str:
    """An ``ILIKE ... ESCAPE '\\'`` pattern that finds ``text`` anywhere, literally."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _matching_turns(con: duckdb.DuckDBPyConnection, dataset: str, rows: list[dict[str, Any]], q: str) -> None:
    """Add each row's first :data:`HITS` turns that contain ``q`` (``hits``: turn index,
    speaker and :func:`highlight` pieces) and how many turns matched in all (``hit_count``)."""
    if not rows:
        return
    ids = [r["conversation_id"] for r in rows]
    marks = ", ".join("?" * len(ids))
    found: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    counts: dict[tuple[str, str, str], int] = {}
    for config, split, cid, index, speaker, text, n in con.execute(
        "SELECT config, split, conversation_id, turn_index, participant_id, text, "
        "count(*) OVER (PARTITION BY config, split, conversation_id) FROM turns "
        f"WHERE dataset = ? AND conversation_id IN ({marks}) AND text ILIKE ? ESCAPE '\\' "
        "QUALIFY row_number() OVER (PARTITION BY config, split, conversation_id ORDER BY turn_index) <= ? "
        "ORDER BY turn_index",
        [dataset, *ids, _like(q), HITS],
    ).fetchall():
        key = (config, split, cid)
        found.setdefault(key, []).append({"turn": index, "speaker": speaker, "pieces": highlight(text, q)})
        counts[key] = int(n)
    for r in rows:
        key = (r["config"], r["split"], r["conversation_id"])
        r["hits"] = found.get(key, [])
        r["hit_count"] = counts.get(key, 0)


def highlight(text: str, q: str, width: int = SNIPPET) -> list[tuple[str, bool]]:
    """``text`` cut to about ``width`` characters around the first occurrence of ``q`` (any
    case), as pieces ``(text, is_match)``: the page wraps the matches in ``<mark>``, each
    piece escaped on its own, so that neither the text nor the search term can add markup::

        highlight("I need water, and more Water", "water")
        # [("I need ", False), ("water", True), (", and more ", False), ("Water", True)]
    """
    found = list(re.finditer(re.escape(q), text, re.IGNORECASE)) if q else []
    if not found:
        return [(text if len(text) <= width else text[: width - 1] + "…", False)]
    start = max(0, min(found[0].start() - (width - len(q)) // 2, len(text) - width))
    end = min(len(text), start + width)
    pieces: list[tuple[str, bool]] = [("…", False)] if start > 0 else []
    at = start
    for m in found:
        if m.end() <= start or m.start() >= end:
            continue
        a, b = max(m.start(), start), min(m.end(), end)
        if a > at:
            pieces.append((text[at:a], False))
        pieces.append((text[a:b], True))
        at = b
    if at < end:
        pieces.append((text[at:end], False))
    if end < len(text):
        pieces.append(("…", False))
    return pieces


def _describe_rows(con: duckdb.DuckDBPyConnection, dataset: str, rows: list[dict[str, Any]]) -> None:
    """Add each row's first message (``snippet``) and key metadata (``summary``)."""
    if not rows:
        return
    ids = [r["conversation_id"] for r in rows]
    marks = ", ".join("?" * len(ids))
    first = {
        (config, split, cid): text
        for config, split, cid, text in con.execute(
            "SELECT config, split, conversation_id, arg_min(text, turn_index) FROM turns "
            f"WHERE dataset = ? AND conversation_id IN ({marks}) AND kind = 'message' AND text <> '' "
            "GROUP BY ALL",
            [dataset, *ids],
        ).fetchall()
    }
    values: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    for name, meta_field in catalog.get(dataset).presentation.viewer_filters.items():
        table, path = meta_field.table, meta_field.path
        order = ", participant_id" if table == "participants" else ""
        for config, split, cid, value in con.execute(
            f"SELECT config, split, conversation_id, json_extract_string(meta, ?) AS v FROM {table} "
            f"WHERE dataset = ? AND conversation_id IN ({marks}) ORDER BY conversation_id{order}",
            [path, dataset, *ids],
        ).fetchall():
            if value is not None:
                values.setdefault((config, split, cid), {}).setdefault(name, []).append(value)
    for r in rows:
        key = (r["config"], r["split"], r["conversation_id"])
        text = first.get(key) or ""
        r["snippet"] = text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"
        r["summary"] = " · ".join(f"{n}: {' / '.join(v)}" for n, v in values.get(key, {}).items())
        r["hits"], r["hit_count"] = [], 0  # the text search's, when there is one


def selection_stats(con: duckdb.DuckDBPyConnection, dataset: str, listing: Listing) -> dict[str, Any]:
    """:func:`convbank.stats.stats` of the conversations a listing selects (all its pages),
    for the charts above it: while they are computed, temporary views of the selection stand
    in for the four unified views (the connection's own are untouched and serve again after)."""
    from convbank.stats import dataset_stats

    row = con.execute("SELECT current_database()").fetchone()
    db = '"' + str(row[0] if row else "memory").replace('"', '""') + '"'
    name = "'" + dataset.replace("'", "''") + "'"
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _selected AS SELECT c.config, c.split, c.conversation_id "
        f"FROM conversations c WHERE {listing.where}",
        listing.params,
    )
    try:
        for table in UNIFIED_TABLES:
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT * FROM {db}.main.{table} x "
                f"WHERE x.dataset = {name} AND EXISTS (SELECT 1 FROM temp._selected s WHERE "
                "s.config = x.config AND s.split = x.split AND s.conversation_id = x.conversation_id)"
            )
        return dataset_stats(con, dataset, crosstabs=False)
    finally:
        for table in UNIFIED_TABLES:
            con.execute(f"DROP VIEW IF EXISTS temp.{table}")
        con.execute("DROP TABLE IF EXISTS temp._selected")


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


def show_value(value: Any) -> str:
    """A metadata value as text: objects as ``key: value; ...`` (nested ones in
    parentheses), lists comma-separated, null, true and false as JSON writes them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):  # each key and value closes the bidi controls it opens
        return "; ".join(
            f"{bidi_closed(str(k))}: " + (f"({show_value(v)})" if isinstance(v, dict) else show_value(v))
            for k, v in value.items()
        )
    if isinstance(value, list):
        return ", ".join(show_value(v) for v in value)
    return str(bidi_closed(str(value)))


def constant_turn_meta(conv: Conversation) -> dict[str, dict[str, Any]]:
    """Per participant with more than one turn, the turn metadata that is the same on all
    of their turns (a sender class): shown once beside them, not on every turn."""
    hidden = catalog.get(conv.dataset).presentation.viewer_hidden_meta
    out: dict[str, dict[str, Any]] = {}
    for p in conv.participants:
        turns = [t for t in conv.turns if t.participant_id == p.participant_id]
        if len(turns) < 2:
            continue
        same = {
            k: v
            for k, v in turns[0].meta.items()
            if k not in hidden and v is not None and all(t.meta.get(k) == v for t in turns)
        }
        if same:
            out[p.participant_id] = same
    return out


def turn_views(conv: Conversation, context: Context) -> list[dict[str, Any]]:
    """Per turn: speaker, side, text pieces with span marks (``title``: each span's label and
    the dataset's detail), whole-turn labels with their style, what the dataset adds
    (``shown``: an action table, badges, notes) and ``extra``, the rest of the turn's
    metadata, less what :func:`constant_turn_meta` shows once per participant."""
    ds = catalog.get(conv.dataset)
    first = conv.participants[0].participant_id if conv.participants else None
    roles = {p.participant_id: p.role for p in conv.participants}
    constant = constant_turn_meta(conv)

    def title(marks: list[Annotation]) -> str:
        details = (ds.presentation.span_detail(a) for a in marks)
        return "; ".join(f"{a.label} / {d}" if d else a.label for a, d in zip(marks, details, strict=True))

    views = []
    for t in conv.turns:
        anns = conv.annotations_of(t.turn_index)
        pieces = segments(t.text, [a for a in anns if a.start_char is not None])
        views.append(
            {
                "turn": t,
                "role": roles.get(t.participant_id, "?"),
                "side": "left" if t.participant_id == first else "right",
                "segments": [(seg, title(seg.marks)) for seg in pieces],
                "spans": [(a, seg.text, ds.presentation.span_detail(a)) for seg in pieces for a in seg.marks],
                "labels": [(a, ds.presentation.label_class(a)) for a in anns if a.start_char is None],
                "shown": ds.presentation.viewer_turn(t, context),
                "extra": {
                    k: v
                    for k, v in t.meta.items()
                    if k not in ds.presentation.viewer_hidden_meta
                    and k not in constant.get(t.participant_id, {})
                },
            }
        )
    return views
