"""Statistics of the bank, computed with DuckDB over the views: sizes, turn lengths, label
distributions per annotation layer, the key metadata of each dataset, and cross-tabs.

Everything returned is JSON-ready: ``stats(["casino"])["casino"]["splits"][0]["turns"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from convbank import catalog
from convbank.errors import NotBuiltError
from convbank.store import Bank, Snapshot, connect
from convbank.store.sql import bank_queries

__all__ = ["CROSSTABS", "DISTRIBUTIONS", "Distribution", "stats", "turn_length_histogram"]

SATISFACTION = (
    "Extremely dissatisfied",
    "Slightly dissatisfied",
    "Undecided",
    "Slightly satisfied",
    "Extremely satisfied",
)
LIKENESS = ("Extremely dislike", "Slightly dislike", "Undecided", "Slightly like", "Extremely like")


@dataclass(frozen=True)
class Distribution:
    """A metadata distribution: ``sql`` selects ``config, split, value`` for the dataset
    bound to ``?``; ``order`` fixes the order of categorical values and ``numeric`` adds
    the mean and median."""

    name: str
    sql: str
    order: tuple[str, ...] = ()
    numeric: bool = False


def _of(name: str, table: str, expr: str, where: str = "TRUE", **kw: Any) -> Distribution:
    sql = f"SELECT config, split, {expr} AS value FROM {table} WHERE dataset = ? AND {where}"
    return Distribution(name, sql, **kw)


_LIKERT = ("1", "2", "3", "4", "5")
DISTRIBUTIONS: dict[str, tuple[Distribution, ...]] = {
    "casino": (
        _of("satisfaction", "participants", "meta->>'$.outcomes.satisfaction'", order=SATISFACTION),
        _of("opponent_likeness", "participants", "meta->>'$.outcomes.opponent_likeness'", order=LIKENESS),
        _of("points_scored", "participants", "(meta->>'$.outcomes.points_scored')::INT", numeric=True),
        _of("deal_moves", "turns", "text", "kind = 'action'"),
    ),
    "ccpe": (
        _of("entity_type", "annotations", "meta->>'entityType'"),
        Distribution(
            "annotated_speaker",
            "SELECT a.config, a.split, t.participant_id AS value FROM annotations a JOIN turns t "
            "USING (dataset, config, split, conversation_id, turn_index) WHERE a.dataset = ?",
        ),
    ),
    "curiosity": (
        *(
            _of(n, "conversations", f"meta->>'{n}'", order=_LIKERT)
            for n in (
                "user_dialog_rating",
                "user_other_agent_rating",
                "assistant_dialog_rating",
                "assistant_other_agent_rating",
            )
        ),
        _of("liked", "turns", "meta->>'liked'", "participant_id = 'assistant'", order=("false", "true")),
        _of(
            "facts_shown",
            "turns",
            "json_array_length(meta->'facts')",
            "participant_id = 'assistant'",
            numeric=True,
        ),
    ),
    "pec": (
        _of("persona_sentences", "participants", "len(persona)", numeric=True),
        Distribution(
            "speakers",
            "SELECT config, split, count(*) AS value FROM participants WHERE dataset = ? "
            "GROUP BY config, split, conversation_id",
            numeric=True,
        ),
    ),
    "convai2": (
        _of("eval_score", "conversations", "meta->>'eval_score'", order=_LIKERT),
        _of("profile_match", "conversations", "meta->>'profile_match'", order=("0", "1", "")),
        _of("message_thumbs", "turns", "meta->>'evaluation_score'", "participant_id = 'participant2'"),
    ),
}
"""The key metadata of each dataset."""


def _words(column: str = "text") -> str:
    return f"len(regexp_split_to_array(trim({column}), '\\s+')) * (trim({column}) <> '')::INT"


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return con.execute(sql, params).fetchall()


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
    metadata distributions (see :data:`DISTRIBUTIONS`), from one generation of the bank
    (``snapshot``, or the current one)."""
    if snapshot is None:
        with (bank or Bank()).snapshot() as current:
            return stats(names, snapshot=current)
    root = snapshot.bank.root
    built = snapshot.built()
    names = list(names or [n for n in catalog.names() if n in built])
    for name in names:
        catalog.get(name)
        if name not in built:
            raise NotBuiltError(f"{name} is not in the bank at {root}; run `convbank build {name}` first")
    if not names:
        raise NotBuiltError(f"the bank at {root} is empty; run `convbank build` first")
    con = connect(snapshot)
    try:
        with bank_queries(snapshot):
            return {name: _dataset_stats(con, name) for name in names}
    finally:
        con.close()


def _dataset_stats(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any]:
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
    for d in DISTRIBUTIONS.get(name, ()):
        for part, entry in _distribution(con, name, d).items():
            splits[part]["metadata"][d.name] = entry
    for entry in splits.values():
        entry.setdefault("turns", 0)
        entry.setdefault("actions", 0)
        entry.setdefault("words", 0)
        entry.setdefault("participants", 0)
    order = {
        (c.name, s): i for i, (c, s) in enumerate((c, s) for c in catalog.get(name).configs for s in c.splits)
    }
    ordered = sorted(splits.values(), key=lambda e: order.get((e["config"], e["split"]), len(order)))
    return {
        "title": catalog.get(name).title,
        "splits": ordered,
        "turn_words": turn_length_histogram(con, name),
        "crosstabs": [t(con) for t in CROSSTABS.get(name, ())],
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


def _table(title: str, question: str, columns: list[str], rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    return {
        "title": title,
        "question": question,
        "columns": columns,
        "rows": [[round(v, 3) if isinstance(v, float) else v for v in row] for row in rows],
    }


def _likert(column: str, scale: tuple[str, ...]) -> str:
    cases = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(scale, 1))
    return f"CASE {column} {cases} END"


def casino_strategy_outcomes(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Per strategy: negotiators of the annotated dialogues who used it at least once against
    those who did not, by points, satisfaction and the opponent's liking of them."""
    rows = con.execute(
        f"""
        WITH annotated AS (SELECT DISTINCT config, split, conversation_id FROM annotations
                           WHERE dataset = 'casino' AND layer = 'strategy'),
        people AS (
            SELECT p.config, p.split, p.conversation_id, p.participant_id,
                   (p.meta->>'$.outcomes.points_scored')::INT AS points,
                   {_likert("p.meta->>'$.outcomes.satisfaction'", SATISFACTION)} AS satisfaction,
                   {_likert("o.meta->>'$.outcomes.opponent_likeness'", LIKENESS)} AS liked_by_opponent
            FROM participants p JOIN annotated USING (config, split, conversation_id)
            JOIN participants o ON o.dataset = p.dataset AND o.config = p.config AND o.split = p.split
                 AND o.conversation_id = p.conversation_id AND o.participant_id <> p.participant_id
            WHERE p.dataset = 'casino'),
        used AS (
            SELECT DISTINCT a.config, a.split, a.conversation_id, t.participant_id, a.label
            FROM annotations a JOIN turns t USING (dataset, config, split, conversation_id, turn_index)
            WHERE a.dataset = 'casino' AND a.layer = 'strategy'),
        labels AS (SELECT DISTINCT label FROM used)
        SELECT l.label, count(u.label) AS users, count(*) - count(u.label) AS others,
               avg(points) FILTER (u.label IS NOT NULL), avg(points) FILTER (u.label IS NULL),
               avg(satisfaction) FILTER (u.label IS NOT NULL), avg(satisfaction) FILTER (u.label IS NULL),
               avg(liked_by_opponent) FILTER (u.label IS NOT NULL),
               avg(liked_by_opponent) FILTER (u.label IS NULL)
        FROM labels l CROSS JOIN people p
        LEFT JOIN used u ON u.config = p.config AND u.split = p.split
             AND u.conversation_id = p.conversation_id AND u.participant_id = p.participant_id
             AND u.label = l.label
        GROUP BY l.label ORDER BY users DESC
        """
    ).fetchall()
    return _table(
        "Strategy use against outcomes (CaSiNo, annotated dialogues)",
        "Do negotiators who use a strategy score more points, end more satisfied, and are they "
        "liked more by their opponent? Satisfaction and liking on a 1-5 scale.",
        [
            "strategy",
            "users",
            "non-users",
            "points (users)",
            "points (others)",
            "satisfaction (users)",
            "satisfaction (others)",
            "liked (users)",
            "liked (others)",
        ],
        rows,
    )


def convai2_score_by_profile_match(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Rated ConvAI2 dialogues: eval_score by whether the human recognised the bot's persona."""
    rows = con.execute(
        """
        SELECT config, coalesce(nullif(meta->>'profile_match', ''), 'not answered') AS profile_match,
               count(*), avg((meta->>'eval_score')::INT), avg(num_turns)
        FROM conversations WHERE dataset = 'convai2' AND meta->>'eval_score' IS NOT NULL
        GROUP BY ALL ORDER BY ALL
        """
    ).fetchall()
    return _table(
        "Dialogue rating by persona recognition (ConvAI2)",
        "Do humans rate a dialogue higher when they recognised the bot's persona?",
        ["config", "profile_match", "dialogues", "mean eval_score", "mean turns"],
        rows,
    )


def convai2_score_by_bot(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Rated ConvAI2 dialogues per bot: count, mean eval_score and thumbs-up rate."""
    rows = con.execute(
        """
        WITH bots AS (SELECT config, split, conversation_id, meta->>'user_id' AS bot FROM participants
                      WHERE dataset = 'convai2' AND participant_id = 'participant2'),
        thumbs AS (SELECT config, split, conversation_id,
                          avg((meta->>'evaluation_score')::INT) AS up FROM turns
                   WHERE dataset = 'convai2' AND meta->>'evaluation_score' IS NOT NULL GROUP BY ALL)
        SELECT coalesce(bot, '?') AS bot, count(*) AS n, avg((c.meta->>'eval_score')::INT), avg(up)
        FROM conversations c JOIN bots USING (config, split, conversation_id)
        LEFT JOIN thumbs USING (config, split, conversation_id)
        WHERE c.dataset = 'convai2' AND c.meta->>'eval_score' IS NOT NULL
        GROUP BY ALL ORDER BY 3 DESC
        """
    ).fetchall()
    return _table(
        "Rating per bot (ConvAI2)",
        "Which bots did humans rate highest, and do dialogue ratings agree with per-message thumbs?",
        ["bot", "rated dialogues", "mean eval_score", "thumbs-up rate"],
        rows,
    )


CROSSTABS = {
    "casino": (casino_strategy_outcomes,),
    "convai2": (convai2_score_by_profile_match, convai2_score_by_bot),
}
"""Cross-tabs that answer a research question, per dataset."""
