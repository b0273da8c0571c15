"""A researcher's first hour at the command line: sources remembered after a build, every
missing file named at once, `raw` from the bank, `query` as Unix tools and the DuckDB CLI
behave (stdin, files, NDJSON, JSON objects, numbers), `tables`, `list --json`, positions."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from convbank import load
from convbank.cli import cli
from convbank.store import Bank
from testsupport import SHARED


def run(*args: object, stdin: str | None = None) -> click.testing.Result:
    return CliRunner().invoke(cli, [str(a) for a in args], input=stdin)


@pytest.fixture
def casino_source(tmp_path: Path) -> Path:
    folder = tmp_path / "sources"
    shutil.copytree(SHARED / "casino", folder / "casino")
    shutil.copytree(SHARED / "convai2", folder / "convai2")
    return folder


def test_sources_are_remembered_after_a_build(casino_source: Path) -> None:
    assert run("build", "casino", "--source", casino_source).exit_code == 0
    listed = json.loads(run("list", "--json").output)
    casino = next(d for d in listed if d["name"] == "casino")
    assert casino["sources"] == {"present": 3, "files": 3} and casino["built"] == ["default"]
    assert casino["configs"] == {"default": {"train": 900, "valid": 30, "test": 100}}
    again = run("build", "casino")  # no --source, no CONVBANK_SOURCE: found where it was
    assert again.exit_code == 0, again.output
    # a remembered file that changed is verified again: a different file is refused
    valid = casino_source / "casino" / "casino_valid.json"
    valid.write_text(valid.read_text(encoding="utf-8").replace("Hello", "Howdy", 1), encoding="utf-8")
    changed = run("build", "casino")
    assert changed.exit_code == 2
    assert changed.output.startswith(f"error: {valid}: sha256 ")
    assert "(remembered source)" in changed.output


def test_raw_reads_the_bank_once_built(casino_source: Path) -> None:
    assert run("build", "convai2", "--config", "volunteers", "--source", casino_source).exit_code == 0
    shutil.rmtree(casino_source)  # the sources are gone: raw reads the bank
    out = run("raw", "convai2", "--config", "volunteers", "-n", "3")
    assert out.exit_code == 0, out.output
    records = [json.loads(line) for line in out.output.splitlines()]
    published = json.loads((SHARED / "convai2" / "data_volunteers.json").read_text(encoding="utf-8"))
    assert records == published[:3]
    gone = run("raw", "convai2", "--config", "volunteers", "--from-source", "-n", "1")
    assert gone.exit_code == 3


def test_every_missing_file_is_named_at_once(casino_source: Path, tmp_path: Path) -> None:
    fetched = run("fetch", "convai2", "--source", casino_source)
    assert fetched.exit_code == 3
    assert fetched.stdout.splitlines() == [
        f"data_intermediate.json\t{casino_source / 'convai2' / 'data_intermediate.json'}",
        f"data_volunteers.json\t{casino_source / 'convai2' / 'data_volunteers.json'}",
    ]
    failed = fetched.stderr.splitlines()
    assert [line.split(":")[0] for line in failed] == [
        "not fetched convai2/summer_wild",
        "not fetched convai2/tolokers",
    ]
    curiosity = run("fetch", "curiosity")
    assert curiosity.exit_code == 3
    assert curiosity.stderr.startswith(
        "not fetched curiosity/default: curiosity: 4 files are not available offline (CONVBANK_OFFLINE "
        "is set): curiosity_dialogs.train.json, curiosity_dialogs.val.json, curiosity_dialogs.test.json, "
        "curiosity_dialogs.test_zero.json; download them from the URLs `convbank info curiosity` lists"
    )
    assert curiosity.stderr.count("\n") == 1


def test_a_failed_download_prints_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """No chatter (a downloader's "Downloading data from") before the error."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from convbank import catalog
    from convbank.datasets import SourceFile

    ccpe = catalog.get("ccpe")
    moved = SourceFile(name="data.json", url=f"http://127.0.0.1:{port}/data.json", sha256=None)
    monkeypatch.setattr(type(ccpe), "files", (moved,))
    monkeypatch.delenv("CONVBANK_OFFLINE")
    result = run("fetch", "ccpe")
    assert result.exit_code == 3
    cache = Path(os.environ["CONVBANK_HOME"]) / "downloads" / "ccpe"
    assert result.stderr == (
        f"not fetched ccpe/default: http://127.0.0.1:{port}/data.json: cannot connect to 127.0.0.1; "
        f"put data.json in {cache} or in a --source folder, or retry when online\n"
    )
    assert "Downloading" not in result.output


# ---------------------------------------------------------------------- query
def test_query_from_stdin_file_and_dash_comment(built: Bank, tmp_path: Path) -> None:
    text = "-- strategies\nSELECT count(*) AS n FROM annotations WHERE dataset = 'casino'\n"
    assert run("query", "-", "--format", "csv", stdin=text).output == "n\n5858\n"
    script = tmp_path / "q.sql"
    script.write_text(text, encoding="utf-8")
    assert run("query", "--file", script, "--format", "csv").output == "n\n5858\n"
    assert run("query", "-f", "-", "--json", stdin=text).output == '[{"n":5858}]\n'
    both = run("query", "SELECT 1", "--file", script)
    assert both.exit_code == 2 and "give the SQL as an argument or with --file, not both" in both.output
    none = run("query")
    assert none.exit_code == 2 and "give the SQL as an argument, with --file FILE, or '-'" in none.output


def test_query_json_has_objects_and_numbers(built: Bank) -> None:
    q = (
        "SELECT conversation_id, meta, sum(num_turns) OVER () AS total, [meta] AS metas "
        "FROM conversations WHERE dataset = 'convai2' AND config = 'volunteers' ORDER BY source_index LIMIT 2"
    )
    rows = json.loads(run("query", q, "--format", "json").output)
    assert rows[0]["meta"]["eval_score"] == rows[0]["metas"][0]["eval_score"]
    assert isinstance(rows[0]["meta"], dict) and rows[0]["total"] == 14623  # a number, not "14623"
    lines = run("query", q, "--format", "ndjson").output.splitlines()
    assert [json.loads(line) for line in lines] == rows
    total = run(
        "query",
        "SELECT sum(num_turns) AS s, avg(num_turns)::DECIMAL(6,2) AS a FROM conversations "
        "WHERE dataset = 'casino'",
        "--json",
    )
    assert total.output == '[{"s":14297,"a":13.88}]\n'


def test_query_table_keeps_one_line_per_row(built: Bank) -> None:
    result = run(
        "query",
        "SELECT dataset, config, split, conversation_id, num_turns, source_index, meta "
        "FROM conversations WHERE dataset = 'convai2' ORDER BY config, source_index LIMIT 3",
    )
    body = [line for line in result.stdout.splitlines() if line.startswith("│")]
    assert len(body) == 3  # one line a row, not one word a line
    assert "intermediate-00000" in body[0] and "…" in body[0]  # the long meta is cut
    assert result.stderr == "3 rows; long cells cut: --format csv or json shows them whole\n"


def test_tables_lists_views_and_columns(built: Bank) -> None:
    views = {v["name"]: v for v in json.loads(run("tables", "--json").output)}
    assert list(views)[:4] == ["annotations", "conversations", "participants", "turns"]
    assert views["conversations"]["rows"] == sum(
        r["n"] for r in json.loads(run("query", "SELECT count(*) AS n FROM conversations", "--json").output)
    )
    assert {"name": "meta", "type": "JSON"} in views["turns"]["columns"]
    assert views["casino_raw"]["rows"] == 1030
    text = run("tables", "--columns").output
    assert "conversation_id VARCHAR" in text and "curiosity_facts" in text


# ---------------------------------------------------------------------- small things
def test_corpus_by_position(built: Bank) -> None:
    corpus = load("casino", split="train")
    assert corpus[0].conversation_id == "938" and corpus[-1] == corpus[899]
    with pytest.raises(IndexError, match=r"^position 900 is outside this corpus of 900 conversations$"):
        corpus[900]
    with pytest.raises(TypeError, match=r"^a corpus is indexed by conversation id \(a str, such as '938'\)"):
        corpus[1.5]  # type: ignore[index]


def test_plural_and_build_summary(casino_source: Path) -> None:
    one = run("build", "convai2", "--config", "volunteers", "--source", casino_source)
    assert re.fullmatch(r"1 split built in \d+\.\d s\n", one.stderr.splitlines(keepends=True)[-1])
