"""An import reads within bounds: a line longer than ``LINE_LIMIT`` (64 MiB) is one line
naming the file and the line, exit 2, read past in blocks (never held: a file of one endless
line costs no more memory than a line of the limit), and ``--skip-bad`` imports the others;
a JSON file decoded whole (an array of records) over ``WHOLE_LIMIT`` is refused unread, and
one too large for the memory the process may take is the same one line, never a
``MemoryError`` traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from convbank.cli.main import cli
from convbank.export import _json_text, _read
from convbank.export._read import LINE_LIMIT

CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _with_a_long_line(path: Path, head: bytes, size: int, tail: bytes = b"") -> Path:
    """``head``, then a line of NULs to ``size`` bytes (a sparse file), then ``tail``."""
    with path.open("wb") as f:
        f.write(head)
        f.truncate(size)
        f.seek(size)
        f.write(tail)
    return path


def _convokit_folder(tmp_path: Path) -> Path:
    (tmp_path / "small.jsonl").write_text(json.dumps(CHAT) + "\n", encoding="utf-8")
    assert _run("import", str(tmp_path / "small.jsonl"), "--name", "small")[0] == 0
    assert _run("export", "small", "--format", "convokit", "-o", str(tmp_path / "ck"))[0] == 0
    return tmp_path / "ck" / "small_convokit"


CHAT_LINE = json.dumps(CHAT).encode() + b"\n"
FORMATS = {  # format: (file name, the lines before the long one, its first and last bytes)
    "chat": ("c.jsonl", CHAT_LINE, b'{"messages": [{"role": "user", "content": "', b'"}]}'),
    "sharegpt": (
        "s.jsonl",
        b'{"conversations": [{"from": "human", "value": "hi"}]}\n',
        b'{"conversations": [{"from": "human", "value": "',
        b'"}]}',
    ),
    "parlai": (
        "p.txt",
        b"text:hello\tlabels:hi\tepisode_done:True\n",
        b"text:",
        b"\tlabels:hi\tepisode_done:True",
    ),
}


def _long_input(tmp_path: Path, fmt: str, size: int) -> Path:
    if fmt == "convokit":
        folder = _convokit_folder(tmp_path)
        utterances = folder / "utterances.jsonl"
        first = utterances.read_bytes()
        _with_a_long_line(utterances, first + b'{"id": "', len(first) + size, b"\n")
        return folder
    name, before, start, _ = FORMATS[fmt]
    return _with_a_long_line(tmp_path / name, before + start, len(before) + size, b"\n" + CHAT_LINE)


@pytest.mark.parametrize("fmt", [*FORMATS, "convokit"])
def test_a_line_over_the_limit_is_one_line_naming_it_in_bounded_memory(fmt: str, tmp_path: Path) -> None:
    given = _long_input(tmp_path, fmt, 512 << 20)
    script = textwrap.dedent(
        f"""
        import resource, subprocess, sys
        done = subprocess.run([sys.executable, "-m", "convbank", "import", {str(given)!r}, "--name", "big",
                               "--format", {fmt!r}], capture_output=True, text=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10
        print(done.returncode, peak, done.stderr.strip().replace(chr(10), "|"), sep="\\t")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=os.environ
    )
    code, peak, said = out.stdout.strip().split("\t")
    assert code == "2", out.stdout + out.stderr  # before: a MemoryError traceback, or 512 MiB held
    where = "utterances.jsonl, line 3" if fmt == "convokit" else f"{given.name}, line 2"  # after 2 turns
    assert said.startswith("error: ") and where in said and "|" not in said, said
    assert f"a line of at most {LINE_LIMIT:,} bytes" in said, said
    assert int(peak) < 400, f"peak {peak} MiB for a line of 512 MiB"  # before: over 600 MiB


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_line_limit_is_exact_and_skip_bad_imports_the_rest(fmt: str, tmp_path: Path) -> None:
    name, before, start, end = FORMATS[fmt]
    fill = b"a" * (LINE_LIMIT - len(start) - len(end))
    path = tmp_path / name
    path.write_bytes(before + start + fill + end + b"\r\n")
    code, output = _run("import", str(path), "--name", "exact", "--format", fmt)
    assert code == 0, output  # a line of the limit exactly, its CRLF no part of it
    path.write_bytes(before + start + fill + b"a" + end + b"\n" + before.replace(b"hi", b"hello"))
    rejects = tmp_path / "rejects.jsonl"
    code, output = _run("import", str(path), "--name", "over", "--format", fmt)
    assert code == 2 and f"{path.name}, line 2: a line of at most {LINE_LIMIT:,} bytes" in output, output
    code, output = _run("import", str(path), "--name", "over", "--format", fmt, "--skip-bad", str(rejects))
    kept = 2  # parlai: the episode the long line ends goes with it, the next is kept (before: 1)
    assert code == 0 and f"{kept} conversations" in output, output
    (reject,) = [json.loads(line) for line in rejects.read_text(encoding="utf-8").splitlines()]
    assert reject["where"] == "line 2" and len(reject["record"]) == _read.RECORD_LIMIT


_ROOM = LINE_LIMIT + 5  # what the reader takes of a line at once (the limit, a BOM, a CRLF)
DONE_AT = {  # where episode_done:true is in a line over the limit: its offset, or None for none
    "its start": 0,
    "the first block read": 1 << 20,
    "across the first block's end": _ROOM - 10,
    "across a later block's end": _ROOM + (1 << 20) - 9,
    "its end": -1,
    "its end, before a CRLF": -2,
    "its end, at the file's end": -3,
    "nowhere": None,
}


@pytest.mark.parametrize("place", list(DONE_AT))
def test_a_parlai_line_over_the_limit_that_ends_its_episode_keeps_the_next(
    place: str, tmp_path: Path
) -> None:
    """A ParlAI line over the limit is read past in blocks, watching for its
    ``episode_done`` field: one that holds it (of any value, as ParlAI reads it) ends its
    episode (rejected with it, the reason says so) and the next episode is imported
    (before: dropped with it); one that does not takes its episode to the next line ending
    one, and says so."""
    at = DONE_AT[place]
    size = LINE_LIMIT + (3 << 20)
    first = b"text:hello\tlabels:hi\tepisode_done:True\n"
    field = b"episode_done:true" if at == 0 else b"\tepisode_done:true"  # ParlAI: any value but ""
    path = tmp_path / "p.txt"
    with path.open("wb") as f:
        f.write(first)
        if at == 0:
            f.write(field + b"\ttext:")
        else:
            f.write(b"text:")
        if at is not None and at > 0:
            f.seek(len(first) + at)
            f.write(field + b"\tlabels:x")
        end = {-1: b"\n", -2: b"\r\n", -3: b""}.get(at if at is not None else 0, b"\n")
        f.seek(len(first) + size)
        if at is not None and at < 0:
            f.write(field)
        f.write(end)
        if at != -3:
            f.write(b"text:next\tlabels:kept\tepisode_done:True\n")
    rejects = tmp_path / "rejects.jsonl"
    code, output = _run(
        "import", str(path), "--name", "long", "--format", "parlai", "--skip-bad", str(rejects)
    )
    (reject,) = [json.loads(line) for line in rejects.read_text(encoding="utf-8").splitlines()]
    assert reject["where"] == "line 2", reject["where"]
    ends = at is not None
    if ends and at != -3:
        assert code == 0 and "2 conversations" in output, output  # before: 1, the next dropped
        import convbank

        assert [[t.text for t in c.turns] for c in convbank.load("long")] == [
            ["hello", "hi"],
            ["next", "kept"],
        ]
    else:
        assert code == 0 and "1 conversation" in output, output
    said = "the episode it ends is left out with it" if ends else "to the next line that ends one"
    assert said in reject["expected"], reject["expected"]


def test_a_json_array_over_the_whole_limit_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chats.json"
    path.write_text(json.dumps([CHAT] * 40), encoding="utf-8")
    monkeypatch.setattr(_read, "WHOLE_LIMIT", 1000)
    read: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self) or real(self))
    code, output = _run("import", str(path), "--name", "arr")
    assert code == 2 and "chats.json, file: a JSON file read whole of at most 1,000 bytes" in output, output
    assert not [p for p in read if p.name == "chats.json"]
    assert "write it as JSON Lines" in output and output.count("\n") == 1


def test_a_json_array_too_large_for_memory_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chats.json"
    path.write_text(json.dumps([CHAT] * 10), encoding="utf-8")

    def no_memory(data: bytes | str) -> object:
        if len(data) > 300:
            raise MemoryError
        return msgspec.json.decode(data)

    monkeypatch.setattr(_json_text, "_decode", no_memory)
    result = CliRunner().invoke(cli, ["import", str(path), "--name", "arr", "--format", "chat"])
    assert result.exit_code == 2, result.output  # before: exit 1, a MemoryError traceback
    assert "chats.json, file: a JSON file read whole in the memory this process may take" in result.stderr
    assert result.stderr.count("\n") == 1


CARDS = {
    "a FIFO": ("a FIFO (named pipe), not a regular file", os.mkfifo),
    "a device": ("a device, not a regular file", lambda p: p.symlink_to("/dev/zero")),
    "a sparse 3 GiB file": (
        "larger than 1,048,576 bytes",
        lambda p: _with_a_long_line(p, b'title = "', 3 << 30),
    ),
}


@pytest.mark.parametrize("kind", list(CARDS))
def test_a_card_that_is_a_fifo_a_device_or_huge_is_one_line_never_waited_on(
    kind: str, tmp_path: Path
) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_bytes(CHAT_LINE)
    said, make = CARDS[kind]
    card = tmp_path / "card.toml"
    make(card)
    done = subprocess.run(
        [sys.executable, "-m", "convbank", "import", str(chats), "--name", "carded", "--card", str(card)],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,  # before: the FIFO waited for ever; /dev/zero and 3 GiB read until memory ran out
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: {card}: expected a TOML card ({said})\n"


def _nested(depth: int) -> bytes:
    """A chat line whose message holds a list nested ``depth`` deep (its turn's meta: the
    message, so ``depth + 2`` deep with the meta object and the message)."""
    return b'{"messages": [{"role": "user", "content": "yo", "x": ' + b"[" * depth + b"]" * depth + b"}]}\n"


@pytest.mark.parametrize(
    ("depth", "said"),
    [
        (30, None),  # meta 32 deep: imported, and read by every reader
        (31, "meta nested at most 32 deep (turn 0's meta is deeper)"),
        (100, "meta nested at most 32 deep (turn 0's meta is deeper)"),
        (5000, "expected JSON nested less deep"),
        (1_000_000, "expected JSON nested less deep"),
    ],
)
def test_nesting_the_bank_cannot_type_is_a_bad_record(depth: int, said: str | None, tmp_path: Path) -> None:
    import convbank

    path = tmp_path / "deep.jsonl"
    path.write_bytes(CHAT_LINE + _nested(depth))
    result = CliRunner().invoke(cli, ["import", str(path), "--name", "deep"])
    if said is None:
        assert result.exit_code == 0, result.output
        corpus = convbank.load("deep")
        assert corpus.to_arrow("turns").num_rows == 3 and len(corpus.to_pandas("turns")) == 3
        assert len(corpus.select([1]).to_arrow("turns")) == 1
        return
    # before: 100 deep was imported, then to_arrow, to_pandas and a selection's reads were
    # pyarrow's ArrowInvalid "Recursion level in ArrowSchema struct exceeded"; 5,000 deep a
    # RecursionError traceback, exit 1
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and str(path) in result.stderr and said in result.stderr, (
        result.stderr
    )
    rejects = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(cli, ["import", str(path), "--name", "deep", "--skip-bad", str(rejects)])
    assert result.exit_code == 0 and "1 conversation," in result.output, result.output


def test_a_convokit_utterance_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    folder = _convokit_folder(tmp_path)
    utterances = folder / "utterances.jsonl"
    deep = b'{"id": "u9", "conversation_id": "c9", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    utterances.write_bytes(utterances.read_bytes() + deep)
    result = CliRunner().invoke(cli, ["import", str(folder), "--name", "deepck"])
    assert result.exit_code == 2, result.output  # before: a RecursionError traceback, exit 1
    assert result.stderr.startswith(f"error: {utterances}, line 3: expected JSON nested less deep"), (
        result.stderr
    )
