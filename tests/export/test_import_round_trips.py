"""Export, ``convbank import`` into a bank of its own, load, compare with the bank: every
dataset of the session bank (the real CaSiNo and ConvAI2, the fixtures of CCPE-M, Curiosity
and PEC) in each format convbank writes and reads. Every conversation comes back, turn text
byte for byte, speakers and order; what a format cannot carry is :data:`LOST`, asserted
exactly; the one-side formats (chat, sharegpt, parlai) give back that side's view exactly.
The table of what each round trip lost is printed (``pytest -s``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import convbank
from convbank import catalog
from convbank.export import export
from convbank.export.chat import chat_record
from convbank.export.sharegpt import sharegpt_record
from convbank.imports import import_conversations
from convbank.model import Conversation
from convbank.store import Bank

DATASETS = ("casino", "convai2", "ccpe", "curiosity", "pec")
FORMATS = ("jsonl", "parquet", "convokit", "hf", "csv", "chat", "sharegpt", "parlai")
SIDED = {"chat", "sharegpt", "parlai"}
"""The formats written from one side: what comes back is that side's view."""

_CSV = {"meta", "participants.meta", "participants.persona"}
LOST: dict[tuple[str, str], set[str]] = {
    # the csv export is the turns: no participant's persona or meta, nor one who never speaks,
    # no conversation meta, no annotations (CCPE's turns are its only rows); the order of the
    # rows is the conversations' (their source index comes back)
    ("casino", "csv"): _CSV | {"annotations"},
    ("convai2", "csv"): _CSV | {"participants"},
    ("ccpe", "csv"): {"annotations"},
    ("curiosity", "csv"): _CSV - {"participants.persona"} | {"annotations"},
    ("pec", "csv"): _CSV,
    # the Hugging Face loader's layouts: CaSiNo's participant_info keys in a fixed order (meta
    # participant_info_order); PEC's example holds the responder's persona only, and no source
    ("casino", "hf"): {"meta"},
    ("pec", "hf"): {"meta", "participants.meta", "participants.persona"},
    # ConvoKit speakers whose ids name one person everywhere (PEC's authors) hold one role for
    # the whole corpus: the last conversation's
    ("pec", "convokit"): {"participants.role"},
}
"""Exactly what each round trip loses (nothing where not listed): conversation fields,
``participants.role`` a field of some participant, ``participants`` alone one who never
speaks. ParlAI, one side's view, is compared with that view (:func:`_parlai_expected`)."""


def _import(fmt: str, paths: list[Path], dataset: str, home: Path) -> list[Conversation]:
    """``convbank import`` of an export into the bank at ``home``, and what loading it gives
    (every part the import reports, as many conversations as it says)."""
    bank = Bank(home)
    inputs = paths if fmt != "hf" else sorted({p.parent if p.is_file() else p for p in paths})
    name = f"{dataset}_from_{fmt}"
    report = import_conversations(inputs, name=name, format="table" if fmt == "csv" else fmt, bank=bank)
    got = {part: list(convbank.load(name, *part.split("/"), bank=bank)) for part in report.parts}
    assert {part: len(convs) for part, convs in got.items()} == report.parts
    return [c for convs in got.values() for c in convs]


def _lost(bank: Conversation, got: Conversation) -> set[str]:
    """The fields in which a conversation read back differs from the bank's."""
    a, b = msgspec.to_builtins(bank), msgspec.to_builtins(got)
    out = {k for k in a if k not in ("participants", "turns", "dataset") and a[k] != b[k]}
    if a["participants"] != b["participants"]:
        mine = {p["participant_id"]: p for p in b["participants"]}
        for p in a["participants"]:
            q = mine.get(p["participant_id"])
            out |= {"participants"} if q is None else {f"participants.{k}" for k in p if p[k] != q[k]}
    if a["turns"] != b["turns"]:
        out.add("turns")
    return out


def _parlai_expected(conv: Conversation, context: dict[str, Any]) -> list[tuple[str, str]]:
    """The turns a ParlAI episode of ``conv`` gives back: the chat view's messages, the
    other side's consecutive ones joined by a newline, none after our side's last."""
    record = chat_record(conv, None, context)
    messages = record["messages"][1:]
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    if last < 0:
        return []
    opening = catalog.get(conv.dataset).presentation.parlai_context(conv, record["metadata"]["as"], context)
    while opening and opening[0].startswith(("your persona:", "partner's persona:")):
        opening = opening[1:]  # the persona the reader keeps as the participants'
    out: list[tuple[str, str]] = [("user", line) for line in opening[:1]]
    for line in opening[1:]:
        out[-1] = ("user", out[-1][1] + "\n" + line)
    for m in messages[: last + 1]:
        if m["role"] == "user" and out and out[-1][0] == "user":
            out[-1] = ("user", out[-1][1] + "\n" + m["content"])
        else:
            out.append((m["role"], m["content"]))
    return [m for m in out if m != ("user", "")]  # an empty text is no text in ParlAI


def _view(fmt: str, corpus: Any, conv: Conversation) -> list[tuple[str, str]]:
    """The (speaker, text) turns a one-side export of ``conv`` gives back."""
    if fmt == "parlai":
        return _parlai_expected(conv, corpus.context(conv))
    record = chat_record(conv, None, corpus.context(conv))
    if fmt == "chat":
        return [(m["role"], m["content"]) for m in record["messages"]]
    return [(m["from"], m["value"]) for m in sharegpt_record(conv)["conversations"]]


def _check(fmt: str, corpus: Any, got: list[Conversation]) -> set[str]:
    """Compare what came back with the bank; return what was lost."""
    bank = list(corpus)
    if fmt in SIDED:
        wanted = sorted((c.conversation_id, v) for c in bank if (v := _view(fmt, corpus, c)))
        back = sorted((c.conversation_id, [(t.participant_id, t.text) for t in c.turns]) for c in got)
        assert [cid for cid, _ in back] == [cid for cid, _ in wanted]
        for (cid, turns), (_, expected) in zip(back, wanted, strict=True):
            assert turns == expected, cid
        return {"all but one side's view (its format's loses)"}
    keyed = {(c.config, c.split, c.conversation_id): c for c in got}
    assert len(keyed) == len(bank) == len(got)  # every part, every conversation, none twice
    lost: set[str] = set()
    for b in bank:
        g = keyed[(b.config, b.split, b.conversation_id)]
        assert [(t.participant_id, t.text) for t in g.turns] == [(t.participant_id, t.text) for t in b.turns]
        lost |= _lost(b, g)
    return lost


@pytest.fixture(scope="module")
def table() -> Iterator[dict[tuple[str, str], str]]:
    rows: dict[tuple[str, str], str] = {}
    yield rows
    print("\nround trip   " + "  ".join(f"{f:>9}" for f in FORMATS))
    for name in DATASETS:
        cells = [rows.get((name, f), "-") for f in FORMATS]
        print(f"{name:<12} " + "  ".join(f"{c if c in ('equal', '-') else 'loses *':>9}" for c in cells))
    for (name, fmt), what in sorted(rows.items()):
        if what != "equal":
            print(f"  {name} {fmt}: loses {what}")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", DATASETS)
def test_round_trip(
    built: Bank, tmp_path: Path, name: str, fmt: str, table: dict[tuple[str, str], str]
) -> None:
    corpus = convbank.load(name)
    paths = export(corpus, fmt, tmp_path / "out")
    got = _import(fmt, sorted(paths), name, tmp_path / "home")
    lost = _check(fmt, corpus, got)
    if fmt not in SIDED:
        assert lost == LOST.get((name, fmt), set())
    table[(name, fmt)] = ", ".join(sorted(lost)) or "equal"
