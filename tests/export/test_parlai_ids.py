"""A ParlAI line's ``id`` field is escaped as its text is (``\\t``, ``\\n``, ``__PIPE__``, as
ParlAI's ``msg_to_str`` escapes every field and ``str_to_msg`` reads it back). Before: a
conversation id holding a newline or a tab was written as it was, so an imported id
``x\\nlabels:evil`` split the episode into a line of its own (read back as an extra turn
``evil``, the id cut to ``x``) and ``y\\tepisode_done:True`` read back as ``y`` (2 of 2 ids)."""

from __future__ import annotations

import json
from pathlib import Path

import convbank
from convbank.export import export

IDS = ["x\nlabels:evil", "y\tepisode_done:True", "p|q"]


def test_an_id_holding_a_newline_or_a_tab_stays_in_its_field(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    records = [
        {"id": i, "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
        for i in IDS
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    convbank.import_conversations(path, name="odd_ids")
    (out,) = export(convbank.load("odd_ids"), "parlai", tmp_path / "out")
    assert out.read_text(encoding="utf-8").splitlines() == [
        "text:q\tlabels:a\tid:odd_ids/x\\nlabels:evil\tepisode_done:True",
        "text:q\tlabels:a\tid:odd_ids/y\\tepisode_done:True\tepisode_done:True",
        "text:q\tlabels:a\tid:odd_ids/p__PIPE__q\tepisode_done:True",
    ]
    convbank.import_conversations(out, name="odd_back")
    assert [(c.conversation_id, [t.text for t in c.turns]) for c in convbank.load("odd_back")] == [
        (i, ["q", "a"]) for i in IDS
    ]
