"""An import reads UTF-8 text alone: a file in UTF-16 or UTF-32 (with its byte-order mark or
without) is refused as a whole, in one line naming the file, the encoding found and what is
expected, whichever format reads it, never taken as lines of NULs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli
from convbank.errors import UnknownDatasetError

CHAT = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})
TEXTS = {
    "chat": ("in.jsonl", CHAT + "\n"),
    "parlai": ("in.txt", "text:hi\tlabels:yo\tepisode_done:True\n"),
    "table": ("in.csv", "conversation_id,speaker,text\n1,a,hi\n1,b,yo\n"),
}
FOUND = {
    "utf-16": "a UTF-16 byte-order mark (FF FE); save it as UTF-8 (iconv -f UTF-16 -t UTF-8)",
    "utf-16-be": "UTF-16BE text without a byte-order mark (NULs between its characters); save it as UTF-8 "
    "(iconv -f UTF-16BE -t UTF-8)",
    "utf-16-le": "UTF-16LE text without a byte-order mark (NULs between its characters); save it as UTF-8 "
    "(iconv -f UTF-16LE -t UTF-8)",
    "utf-32": "a UTF-32 byte-order mark (FF FE 00 00); save it as UTF-8 (iconv -f UTF-32 -t UTF-8)",
    "utf-32-be": "UTF-32BE text without a byte-order mark (NULs between its characters); save it as UTF-8 "
    "(iconv -f UTF-32BE -t UTF-8)",
}
NOT_READ = "(nothing was imported; --skip-bad imports the rest)"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("encoding", sorted(FOUND))
@pytest.mark.parametrize("fmt", sorted(TEXTS))
def test_a_file_in_another_encoding_is_named_with_it(tmp_path: Path, fmt: str, encoding: str) -> None:
    """Before: `not a format convbank recognises` (chat, parlai), `line 1: expected JSON (JSON is
    malformed: invalid character (byte 0))` with --format chat, `CSV parse error: Expected 3
    columns, got 1: \\x00` for a CSV, and a `UnicodeDecodeError` traceback for a ParlAI file
    read with --format table; the encoding named in none (15 of 15 files)."""
    name, text = TEXTS[fmt]
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    why = f"{path}, file: expected UTF-8 text, found {FOUND[encoding]}"
    expected = f"error: {why}; nothing was imported\n" if fmt != "table" else f"error: {why} {NOT_READ}\n"
    assert _run("import", str(path), "--name", "mine") == (2, expected)
    for given in ("chat", "parlai", "table"):
        assert _run("import", str(path), "--name", "mine", "--format", given) == (
            2,
            f"error: {why} {NOT_READ}\n",
        )
    with pytest.raises(UnknownDatasetError):
        convbank.load("mine")


def test_a_convokit_corpus_file_in_utf16_is_named_and_skip_bad_imports_the_rest(tmp_path: Path) -> None:
    """Before: a ConvoKit folder whose utterances.jsonl was UTF-16 was `not a format convbank
    recognises`; a UTF-8 file beside a UTF-16 one is imported with --skip-bad, the other a
    rejected record naming the file."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "utterances.jsonl").write_bytes(b"\xff\xfe" + '{"id": "u1"}\n'.encode("utf-16-le"))
    assert _run("import", str(folder), "--name", "mine") == (
        2,
        f"error: {folder / 'utterances.jsonl'}, file: expected UTF-8 text, found {FOUND['utf-16']}; "
        "nothing was imported\n",
    )
    (good := tmp_path / "good.jsonl").write_text(CHAT + "\n")
    (bad := tmp_path / "bad.jsonl").write_bytes((CHAT + "\n").encode("utf-16"))
    rejects = str(tmp_path / "rej.jsonl")
    code, _ = _run("import", str(good), str(bad), "--name", "mine", "--format", "chat", "--skip-bad", rejects)
    assert code == 0 and len(convbank.load("mine")) == 1
    (reject,) = [json.loads(line) for line in (tmp_path / "rej.jsonl").read_text().splitlines()]
    assert (reject["where"], reject["expected"]) == ("file", f"expected UTF-8 text, found {FOUND['utf-16']}")


@pytest.mark.parametrize("name", ["t.csv", "t.tsv"])
def test_a_table_whose_header_is_not_utf8_is_one_line(tmp_path: Path, name: str) -> None:
    """Before: a `UnicodeDecodeError` traceback from Arrow's column names, exit 1 (2 of 2
    files); a value that is not UTF-8 was already one line."""
    sep = "\t" if name.endswith(".tsv") else ","
    path = tmp_path / name
    path.write_bytes(
        sep.join(["conversation_id", "speaker", "t\xe9xt"]).encode("latin-1")
        + b"\n1"
        + 2 * sep.encode()
        + b"\n"
    )
    assert _run("import", str(path), "--name", "mine") == (
        2,
        f"error: {path}, line 1: expected column names of UTF-8 text ('utf-8' codec can't decode byte 0xe9 in "
        f"position 1: invalid continuation byte) {NOT_READ}\n",
    )


@pytest.mark.parametrize("given", [("--map", "text=said"), ("--map", "bogus=x")], ids=["known", "unknown"])
def test_a_map_given_to_a_format_without_columns_is_refused(tmp_path: Path, given: tuple[str, str]) -> None:
    """Before: ``--map`` given with a chat file (even ``bogus=x``) was taken and dropped
    unsaid, the file imported, exit 0 (2 of 2 maps)."""
    (path := tmp_path / "in.jsonl").write_text(CHAT + "\n")
    assert _run("import", str(path), "--name", "mine", *given) == (
        2,
        "error: --map (mapping=) names a table's columns, and chat has none; leave it out, "
        "or give --format table for a table\n",
    )
    with pytest.raises(UnknownDatasetError):
        convbank.load("mine")


def test_a_source_is_a_path_bytes_too_and_anything_else_is_named(tmp_path: Path) -> None:
    """Before: a path given as bytes (as ``open()`` takes one) was iterated as its bytes,
    `expected str, bytes or os.PathLike object, not int`, and ``5`` or ``None`` were `'int'
    object is not iterable` (4 of 4 sources)."""
    (path := tmp_path / "in.jsonl").write_text(CHAT + "\n")
    convbank.import_conversations(bytes(path), name="mine")
    convbank.import_conversations({"test": [bytes(path)]}, name="other")
    assert (
        len(convbank.load("mine")) == 1
        and convbank.load("other").conversation_ids() == convbank.load("mine").conversation_ids()
    )
    for bad in (5, None):
        with pytest.raises(TypeError) as caught:
            convbank.import_conversations(bad, name="bad")
        assert str(caught.value) == (
            "an import takes a path, several, {split: path(s)}, a DataFrame or a Hugging Face "
            f"Dataset, not {type(bad).__name__} {bad!r}"
        )
    with pytest.raises(TypeError, match=r"^an input is a path \(a str or an os.PathLike\), not int 5$"):
        convbank.import_conversations([path, 5], name="bad")


def test_a_card_in_utf16_names_its_encoding(tmp_path: Path) -> None:
    """Before: `expected a TOML card ('utf-8' codec can't decode byte 0xff in position 0:
    invalid start byte)`, the encoding unnamed (1 of 1)."""
    (path := tmp_path / "in.jsonl").write_text(CHAT + "\n")
    (card := tmp_path / "c.toml").write_bytes('title = "T"\n'.encode("utf-16"))
    assert _run("import", str(path), "--name", "mine", "--card", str(card)) == (
        2,
        f"error: {card}: expected a TOML card (expected UTF-8 text, found {FOUND['utf-16']})\n",
    )


@pytest.mark.parametrize("fmt", ["chat", "jsonl"])
def test_lines_ended_by_a_carriage_return_alone_are_said_to_be(tmp_path: Path, fmt: str) -> None:
    """A JSON Lines file whose lines end in CR alone (a classic Mac file) is one line to every
    reader; the error says why, not only msgspec's "trailing characters" (before: that alone,
    2 of 2 files; found by pass 21's D, not fixed there). A CR inside a value is no such line."""
    path = tmp_path / "cr.jsonl"
    path.write_bytes(f"{CHAT}\r{CHAT}\r".encode())
    result = CliRunner().invoke(cli, ["import", str(path), "--name", "cr", "--format", fmt])
    assert result.exit_code == 2
    assert result.output == (
        f"error: {path}, line 1: expected JSON (JSON is malformed: trailing characters (byte "
        f"{len(CHAT) + 2})); its lines end in a carriage return alone (CR): save it with line feeds "
        f"(LF or CRLF) {NOT_READ}\n"
    )
    path.write_bytes(f"{CHAT} x\n".encode())
    result = CliRunner().invoke(cli, ["import", str(path), "--name", "cr", "--format", fmt])
    assert "trailing characters" in result.output and "carriage return" not in result.output


def test_what_is_given_in_place_of_an_input_is_said_shortened_on_one_line() -> None:
    """An input that is no path is a ``TypeError`` showing it shortened, on one line, whatever
    its ``repr`` (before: a ``repr`` that raised replaced the ``TypeError`` by its own error,
    3 of 3 places; a dict of 5,000 characters made a message of 5,064, and a pyarrow
    ``Table`` one of 4 lines)."""

    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("repr boom")

    takes = "an import takes a path, several, {split: path(s)}, a DataFrame or a Hugging Face Dataset"
    for given in (Bad(), {"train": Bad()}):
        with pytest.raises(TypeError, match=rf"^{re.escape(takes)}, not Bad <Bad instance at 0x[0-9a-f]+>$"):
            convbank.import_conversations(given, name="bad")
    with pytest.raises(
        TypeError, match=r"^an input is a path \(a str or an os.PathLike\), not Bad <Bad instance"
    ):
        convbank.import_conversations([Bad()], name="bad")
    with pytest.raises(TypeError) as caught:
        convbank.import_conversations([{"k": "v" * 5000}], name="bad")
    assert str(caught.value) == (
        "an input is a path (a str or an os.PathLike), not dict {'k': '" + "v" * 72 + "…"
    )
    with pytest.raises(TypeError) as caught:
        convbank.import_conversations(pa.table({"a": list(range(1000))}), name="bad")
    assert (
        str(caught.value)
        == f"{takes}, not Table pyarrow.Table a: int64 ---- a: [[0,1,2,3,4,...,995,996,997,998,999]]"
    )
