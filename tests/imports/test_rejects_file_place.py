"""``--skip-bad FILE`` never replaces what it must not: the rejects file named as an input
(by its path, another spelling, a hard link or a symbolic link), inside an input folder, in
the bank or under ``CONVBANK_HOME`` is one line, exit 2, before anything is read; the input
and the bank stay as they were. Before: the input was replaced by the rejects (its good
records lost), and a rejects file in the bank folder committed the import, then failed exit
5 (the temporary rejects cleaned away with the bank's leftovers)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli.main import cli
from convbank.store import Bank

GOOD = [{"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(3)]
LINES = json.dumps(GOOD[0]) + "\nnot json\n" + "".join(json.dumps(g) + "\n" for g in GOOD[1:])


def _home() -> Path:
    return Path(os.environ["CONVBANK_HOME"])


PLACES: dict[str, Callable[[Path], Path]] = {
    "the input": lambda tmp: tmp / "chats.jsonl",
    "the input, spelled another way": lambda tmp: tmp / "." / "x" / ".." / "chats.jsonl",
    "a hard link to the input": lambda tmp: (
        os.link(tmp / "chats.jsonl", tmp / "hard.jsonl"),
        tmp / "hard.jsonl",
    )[1],
    "a symbolic link to the input": lambda tmp: (
        (tmp / "sym.jsonl").symlink_to(tmp / "chats.jsonl"),
        tmp / "sym.jsonl",
    )[1],
    "the bank's manifest": lambda tmp: _home() / "bank" / "manifest.json",
    "a new file in the bank": lambda tmp: _home() / "bank" / "rejects.jsonl",
    "a file of CONVBANK_HOME": lambda tmp: _home() / "sources.json",
}


@pytest.mark.parametrize("place", list(PLACES))
def test_a_rejects_file_that_would_replace_an_input_or_the_banks_files_is_refused(
    place: str, tmp_path: Path
) -> None:
    (tmp_path / "x").mkdir()
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "first", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert CliRunner().invoke(cli, ["import", str(chats), "--name", "first"]).exit_code == 0
    (_home() / "sources.json").write_text("{}", encoding="utf-8")
    chats.write_text(LINES, encoding="utf-8")
    rejects = PLACES[place](tmp_path)
    manifest = (_home() / "bank" / "manifest.json").read_bytes()
    result = CliRunner().invoke(cli, ["import", str(chats), "--name", "second", "--skip-bad", str(rejects)])
    assert result.exit_code == 2, result.output  # before: 0 (the input replaced), or 5 after a commit
    assert result.stderr.count("\n") == 1 and "the rejects file (--skip-bad)" in result.stderr, result.stderr
    assert chats.read_text(encoding="utf-8") == LINES  # before: the rejects, the good records gone
    assert (_home() / "bank" / "manifest.json").read_bytes() == manifest
    assert (_home() / "sources.json").read_text(encoding="utf-8") == "{}"
    assert "second" not in Bank().manifest().datasets


def test_a_rejects_file_in_an_input_folder_is_refused(tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(LINES, encoding="utf-8")
    assert (
        CliRunner()
        .invoke(cli, ["import", str(chats), "--name", "one", "--skip-bad", str(tmp_path / "r.jsonl")])
        .exit_code
        == 0
    )
    assert (
        CliRunner()
        .invoke(cli, ["export", "one", "--format", "convokit", "-o", str(tmp_path / "ck")])
        .exit_code
        == 0
    )
    folder = tmp_path / "ck" / "one_convokit"
    before = sorted(p.name for p in folder.iterdir())
    result = CliRunner().invoke(
        cli, ["import", str(folder), "--name", "two", "--skip-bad", str(folder / "r.jsonl")]
    )
    assert result.exit_code == 2 and "is in the input folder" in result.stderr, result.output
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_rejects_file_elsewhere_is_written(tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(LINES, encoding="utf-8")
    rejects = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(cli, ["import", str(chats), "--name", "ok", "--skip-bad", str(rejects)])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["where"] for line in rejects.read_text(encoding="utf-8").splitlines()] == [
        "line 2"
    ]
    assert chats.read_text(encoding="utf-8") == LINES


@pytest.mark.parametrize("given", [True, False], ids=["--card", "card.toml beside the input"])
def test_a_rejects_file_that_is_the_card_is_refused(given: bool, tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(LINES, encoding="utf-8")
    card = tmp_path / ("my-card.toml" if given else "card.toml")
    card.write_text('title = "My chats"\n', encoding="utf-8")
    args = ["import", str(chats), "--name", "carded", "--skip-bad", str(card)]
    result = CliRunner().invoke(cli, [*args, "--card", str(card)] if given else args)
    assert result.exit_code == 2, result.output  # before: 0, the card replaced by the rejects
    assert f"the rejects file (--skip-bad) is the card {card}" in result.stderr, result.stderr
    assert card.read_text(encoding="utf-8") == 'title = "My chats"\n'
    assert "carded" not in Bank().manifest().datasets


def _many_lines(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(count):
            f.write(
                "not json\n"
                if i % 100 == 7
                else json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i} " * 20}]})
                + "\n"
            )


@pytest.mark.parametrize("seed", range(3))
def test_a_killed_imports_temporary_rejects_file_is_removed_by_the_next(seed: int, tmp_path: Path) -> None:
    """``kill -9`` while the rejects are written leaves ``.<rejects>.<pid>.<random>.tmp``; the
    next import writing that rejects file removes it, its process being gone (before: it
    stayed for good, its name saying nothing of whose it was)."""
    import random
    import subprocess
    import sys
    import time

    chats = tmp_path / "chats.jsonl"
    _many_lines(chats, 60_000)
    out = tmp_path / "out"
    out.mkdir()
    rejects = out / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "convbank",
            "import",
            str(chats),
            "--name",
            "killed",
            "--skip-bad",
            str(rejects),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while not list(out.glob(".r.jsonl.*.tmp")) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0, 0.3))
    child.kill()
    child.wait()
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")], "the import ended before it was killed"
    # a live process's temporary file of the same rejects file is its own: left alone
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = out / f".r.jsonl.{sleeper.pid}.abcdefgh.tmp"
        live.write_bytes(b"")
        chats.write_text(LINES, encoding="utf-8")
        result = CliRunner().invoke(cli, ["import", str(chats), "--name", "next", "--skip-bad", str(rejects)])
        assert result.exit_code == 0, result.output
        assert sorted(p.name for p in out.iterdir()) == sorted(
            [live.name, "r.jsonl"]
        )  # before: the killed one's too
    finally:
        sleeper.kill()
        sleeper.wait()
