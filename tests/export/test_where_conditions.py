"""What ``export --where`` says about a condition it cannot use (walkthrough 2, problem 5):
an unknown column is named as such, with the view's columns and where labels are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli import cli
from convbank.errors import QueryError
from convbank.store import Bank


def test_an_unknown_column_is_not_called_a_write(built: Bank, tmp_path: Path) -> None:
    """Before: 'error: --where "lable = 'uv-part'" is not a read-only condition on
    conversations: SQL error: Binder Error: ...' (no columns, no caret, no hint)."""
    out = tmp_path / "w1"
    result = CliRunner().invoke(
        cli, ["export", "casino", "--format", "jsonl", "-o", str(out), "--where", "lable = 'uv-part'"]
    )
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr == (
        "error: --where \"lable = 'uv-part'\": conversations has no column 'lable' (its columns: "
        "dataset, config, split, conversation_id, num_turns, source_index, meta; labels are in "
        'annotations: --where "conversation_id IN (SELECT conversation_id FROM annotations WHERE '
        'label = \'LABEL\')"): SQL error: Binder Error: Referenced column "lable" not found in FROM '
        "clause!\nCandidate bindings: \"dataset\"\n\nLINE 1: lable = 'uv-part'\n        ^^^^^\n"
    )
    hinted = "conversation_id IN (SELECT conversation_id FROM annotations WHERE label = 'uv-part')"
    labelled = CliRunner().invoke(
        cli, ["export", "casino", "--format", "jsonl", "-o", str(out), "--where", hinted]
    )
    assert labelled.exit_code == 0, labelled.stderr
    lines = {p.name: p.read_text(encoding="utf-8").count("\n") for p in out.iterdir() if p.suffix == ".jsonl"}
    assert lines == {"casino_default_train.jsonl": 81, "casino_default_test.jsonl": 8}
    write = CliRunner().invoke(
        cli,
        ["export", "casino", "--format", "jsonl", "-o", str(out), "--where", "1=1) UNION (DELETE FROM turns"],
    )
    assert write.exit_code == 2
    assert write.stderr.startswith(
        "error: --where '1=1) UNION (DELETE FROM turns' is not a read-only condition"
    )


def test_export_help_says_source_keeps_the_publishers_names() -> None:
    """Walkthrough 2, problem 12. Before: 'Every path names the dataset', though convai2's
    source export writes data_volunteers.json."""
    text = " ".join(CliRunner().invoke(cli, ["export", "--help"]).output.split())
    assert "source: the publisher's files, byte for byte under their published names (not renamed)" in text
    assert (
        "Every other format's paths name the dataset, so that several datasets and formats share a "
        "folder; source's names are the publisher's."
    ) in text
    assert "Every path names the dataset" not in text


def test_a_condition_closing_its_parentheses_early_stays_within_the_corpus(tmp_path: Path) -> None:
    """Before: the condition was put in parentheses beside the corpus's own restriction, so
    one closing them early (``1=0) OR (dataset = 'second' AND ...``) reached every dataset:
    another dataset's id selected this one's conversation of that id (``export first``
    wrote ``c1``, ``filter`` gave 1). The condition now filters rows already of the corpus."""
    import json

    import convbank

    for name in ("first", "second"):
        chat = tmp_path / f"{name}.jsonl"
        lines = [{"id": f"c{i}", "messages": [{"role": "user", "content": f"{name} {i}"}]} for i in range(3)]
        chat.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        convbank.import_conversations(chat, name=name, format="chat")
    escaping = "1=0) OR (dataset = 'second' AND conversation_id = 'c1'"
    closes = "not one condition: the ')' at character 4 closes a parenthesis the condition did not open"
    with pytest.raises(QueryError, match=re.escape(closes)):
        convbank.load("first").filter(escaping)
    assert len(convbank.load("first").filter("(conversation_id = 'c1') OR (conversation_id = 'c2')")) == 2
    out = tmp_path / "out"
    done = CliRunner().invoke(
        cli, ["export", "first", "--format", "jsonl", "-o", str(out), "--where", escaping]
    )
    assert (done.exit_code, done.stderr) == (
        2,
        f'error: --where "{escaping}" is not a read-only condition on conversations: {closes}\n',
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        (
            "1=0) UNION SELECT conversation_id FROM conversations WHERE (dataset = 'second' AND conversation_id = 'c1'",
            "the ')' at character 4 closes a parenthesis the condition did not open",
        ),
        (
            "1=0) UNION ALL (SELECT 'c1'",
            "the ')' at character 4 closes a parenthesis the condition did not open",
        ),
        (
            "1=0); SELECT 'c1' AS conversation_id; SELECT (1",
            "the ')' at character 4 closes a parenthesis the condition did not open",
        ),
        ("num_turns = 1; SELECT 1", "the ';' at character 14 ends a statement"),
        ("(num_turns = 1", "a parenthesis it opens is not closed"),
    ],
)
def test_a_condition_that_is_not_one_condition_is_refused(tmp_path: Path, where: str, problem: str) -> None:
    """Eleventh pass. Before: a condition closing the parentheses it was put in and adding a
    ``UNION`` gave rows of its own: ``export first --where "1=0) UNION SELECT conversation_id
    FROM conversations WHERE (dataset = 'second' AND conversation_id = 'c1'"`` wrote first's
    ``c1``, another dataset's id selecting this one's conversation, exit 0 (so did ``UNION ALL
    (SELECT 'c1'``); ``1=0); SELECT 'c1' AS conversation_id; SELECT (1`` made the answer
    another statement's (the last one's, an integer: a ``TypeError`` traceback, exit 1). A
    condition is now one condition as DuckDB's tokens read it; a parenthesis or ``;`` in a
    string, a quoted name or a comment is text as ever."""
    import json

    import convbank

    for name in ("first", "second"):
        chat = tmp_path / f"{name}.jsonl"
        lines = [{"id": f"c{i}", "messages": [{"role": "user", "content": f"{name} {i}"}]} for i in range(3)]
        chat.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        convbank.import_conversations(chat, name=name, format="chat")
    with pytest.raises(QueryError) as info:
        convbank.load("first").filter(where)
    assert str(info.value) == f"not one condition: {problem}"
    out = tmp_path / "out"
    done = CliRunner().invoke(cli, ["export", "first", "--format", "jsonl", "-o", str(out), "--where", where])
    said = f"error: --where {where!r} is not a read-only condition on conversations: not one condition: {problem}\n"
    assert (done.exit_code, done.stderr) == (2, said)
    assert not out.exists()
    text = "conversation_id = ')' OR conversation_id = ';' OR conversation_id IN ('c1') -- ) ;\n"
    assert [c.conversation_id for c in convbank.load("first").filter(text)] == ["c1"]
    assert [
        c.conversation_id for c in convbank.load("first").filter("conversation_id = $$c2$$ /* ( ; */")
    ] == ["c2"]


def test_a_condition_on_a_config_whose_name_holds_a_quote(tmp_path: Path) -> None:
    """Before: an import's ``--config "x'y"`` (a name the bank takes) made every ``--where``
    and ``filter(where)`` of that dataset an SQL syntax error, "unterminated string literal",
    the corpus's own restriction written with the name unquoted."""
    import convbank

    chat = tmp_path / "q.jsonl"
    chat.write_text('{"id": "c1", "messages": [{"role": "user", "content": "hi"}]}\n', encoding="utf-8")
    convbank.import_conversations(chat, name="quoted", format="chat", config="x'y")
    assert len(convbank.load("quoted").filter("num_turns = 1")) == 1
    out = tmp_path / "out"
    done = CliRunner().invoke(
        cli, ["export", "quoted", "--format", "jsonl", "-o", str(out), "--where", "num_turns = 1"]
    )
    assert done.exit_code == 0, done.stderr
    assert [p.name for p in out.glob("*.jsonl")] == ["quoted_x'y_train.jsonl"]


SLOW_WHERE = "(SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range * b.range = -1) = 0"
"""A condition whose query runs for hours: a trillion-row join."""
ESCAPING_WHERE = "list_sort(range(30000000)) IS NOT NULL"
"""A condition whose query DuckDB does not interrupt (a sort of one value): only a worker
killed on time stops it (before, with --timeout 0.5: 22 s, exit 0)."""


def test_a_where_query_is_held_to_the_time_limit_query_has(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `export --where` ran an expensive condition without end (only Ctrl-C or
    SIGTERM stopped it); now by default as long as `convbank query` lets a query run
    (shortened here), or --timeout's seconds in a worker killed on time, as `query
    --timeout` holds them, then one line, exit 2, nothing written."""
    import convbank.cli.export
    from convbank import load
    from convbank.export import export

    out = tmp_path / "out"
    told = CliRunner().invoke(
        cli,
        [
            "export",
            "casino",
            "--format",
            "jsonl",
            "-o",
            str(out),
            "--where",
            ESCAPING_WHERE,
            "--timeout",
            "0.5",
        ],
    )
    assert (told.exit_code, told.stderr) == (
        2,
        f"error: --where {ESCAPING_WHERE!r}: the query ran past its time limit of 0.5 s and was stopped\n",
    )
    monkeypatch.setattr(convbank.cli.export, "DEFAULT_QUERY_SECONDS", 0.3)
    default = CliRunner().invoke(
        cli, ["export", "casino", "--format", "hf", "-o", str(out), "--where", SLOW_WHERE]
    )
    assert (default.exit_code, default.stderr) == (
        2,
        f"error: --where {SLOW_WHERE!r}: the query ran past its time limit of 0.3 s and was stopped "
        "(a default of `convbank export`: --timeout SECONDS lifts it, 0: never)\n",
    )
    with pytest.raises(QueryError, match=r"ran past its time limit of 0\.2 s") as raised:
        export(load("casino"), "csv", out, where=SLOW_WHERE, timeout=0.2)
    assert raised.value.limit == 0.2 and not out.exists()
    kept = CliRunner().invoke(
        cli,
        [
            "export",
            "casino",
            "--format",
            "jsonl",
            "-o",
            str(out),
            "--where",
            "num_turns > 20",
            "--timeout",
            "0",
        ],
    )
    assert kept.exit_code == 0 and kept.stdout.count("\n") == 2, kept.stderr


def test_a_time_limit_longer_than_a_thread_can_wait_is_held_without_a_traceback(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 19. Before: ``export(corpus, "jsonl", out, where=..., timeout=1e10)`` (a limit
    the CLI's year-long bound refuses, ``export()`` takes) printed ``Exception in thread``
    and an ``OverflowError`` traceback, the timer's thread dead (2 of 2 tries; ``filter``
    too). A limit past ``threading.TIMEOUT_MAX`` is now waited that long."""
    import threading
    import time

    import convbank
    from convbank.export import export

    died: list[object] = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    corpus = convbank.load("casino", split="valid")
    paths = export(corpus, "jsonl", tmp_path / "out", where="num_turns > 5", timeout=1e10)
    assert [p.name for p in paths] == ["casino_default_valid.jsonl"]
    assert len(corpus.filter("num_turns > 5", timeout=1e300)) == 30
    time.sleep(0.1)  # a timer's thread that died of it has done so by now
    assert died == []
