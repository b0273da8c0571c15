"""Validation: prove each dataset's invariants over the bank.

``validate(["casino"])`` runs the generic checks (ids unique, published counts, turn
indices, annotation references, spans, speakers) and the dataset's own, and returns a
:class:`ValidationReport` of per-check pass/fail counts and findings.
"""

from __future__ import annotations

from collections.abc import Sequence

from convbank import catalog, registry
from convbank.datasets._declared import counts_of
from convbank.errors import NotBuiltError
from convbank.query import Corpus
from convbank.store import Bank, connect
from convbank.store.sql import bank_queries, fetched
from convbank.validate._core import (
    Check,
    CheckResult,
    Finding,
    Recorder,
    Severity,
    ValidationReport,
    checks_for,
)

CHECKS = registry.checks
"""Every check: the generic ones, then each dataset's (a registry; iterate it)."""

__all__ = [
    "CHECKS",
    "Check",
    "CheckResult",
    "Finding",
    "Severity",
    "ValidationReport",
    "checks_for",
    "validate",
]

_COUNTS = "published_counts", "Each split has the number of conversations the publisher gives."
_UNIQUE = "unique_ids", "Conversation ids are unique within the dataset."


def _split_checks(recorder: Recorder, corpus: Corpus) -> None:
    name = corpus.dataset.name
    for part in corpus.parts():
        n = corpus.snapshot.split_info(name, *part).conversations
        published, problem = counts_of(corpus.dataset, part, n)
        if published is None:
            recorder.record(*_COUNTS, None, None)  # nothing published to compare with
            continue
        recorder.record(*_COUNTS, None, [("error", problem)] if problem else [])
    con = connect(corpus.snapshot)
    try:
        with bank_queries(corpus.snapshot, con):  # vouched for before it is an answer
            distinct, duplicates = (  # Ctrl-C stops them at once (fetched)
                fetched(
                    con,
                    "SELECT count(DISTINCT conversation_id), list(conversation_id) FILTER (WHERE n > 1) "
                    "FROM (SELECT conversation_id, count(*) AS n FROM conversations WHERE dataset = ? "
                    "GROUP BY 1)",
                    [name],
                )
                or [(0, None)]
            )[0]
            where = dict(
                fetched(
                    con,
                    "SELECT conversation_id, string_agg(config || '/' || split, ', ' ORDER BY config, split) "
                    "FROM conversations WHERE dataset = ? AND list_contains(?, conversation_id) GROUP BY 1",
                    [name, duplicates or []],
                )
            )
    finally:
        con.close()
    result = recorder.result(*_UNIQUE)
    result.passed += distinct - len(duplicates or [])
    for cid in duplicates or []:
        recorder.record(*_UNIQUE, cid, [("error", f"id {cid!r} is used more than once ({where[cid]})")])


def validate(names: Sequence[str] | None = None, *, bank: Bank | None = None) -> ValidationReport:
    """Run every check over the named datasets (default: every built one)."""
    bank = bank or Bank()
    with bank.snapshot() as snapshot:
        if not names:
            names = catalog.built(snapshot.manifest)
            if not names:
                raise NotBuiltError(
                    f"the bank at {bank.root} is empty; run `convbank build` first", path=bank.root
                )
        report = ValidationReport()
        for name in names:
            corpus = Corpus(name, snapshot=snapshot)
            recorder = Recorder(report, name)
            with bank_queries(snapshot):
                _split_checks(recorder, corpus)
                recorder.run(checks_for(name), corpus)
    return report
