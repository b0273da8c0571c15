"""A command whose reader has left (``convbank import chats.jsonl | head -1``) ends as a
closed pipe ends every command: exit 0, nothing on stderr, the work done. Before, a line
printed through the rich console into the closed pipe ended the command with exit 1 (rich's
own ``on_broken_pipe``), after the import had been committed: 5 of 8 runs into ``head -1``,
the exit code a race between ``head`` leaving and the second line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import convbank
from testsupport import ROOT


def test_an_import_into_a_closed_pipe_exits_0_with_its_work_done(tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    read, write = os.pipe()
    os.close(read)  # the reader has left before the first line: every write is a broken pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "convbank", "import", str(chats), "--name", "chats"],
            stdout=write,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, b"")
    assert [t.text for t in convbank.load("chats")[0].turns] == ["hi"]


def _closed(command: str, *fds: int) -> subprocess.CompletedProcess[bytes]:
    """``convbank COMMAND`` started with the descriptors ``fds`` closed (``1>&-``, ``2>&-``,
    ``0<&-``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    def close() -> None:
        for fd in fds:
            os.close(fd)

    return subprocess.run(
        [sys.executable, "-m", "convbank", *command.split()],
        stdout=None if 1 in fds else subprocess.DEVNULL,
        stderr=None if 2 in fds else subprocess.PIPE,
        env=env,
        timeout=120,
        check=False,
        preexec_fn=close,
    )


def test_a_command_started_with_its_output_closed_says_so_in_one_line() -> None:
    """A command started with standard output closed (``convbank list >&-``: Python's
    ``sys.stdout`` is then None) says so in one line, exit 1, as a full disk is said; with
    both closed, exit 1 still (before: ``AttributeError: 'NoneType' object has no attribute
    'isatty'``, a traceback of 30 lines, exit 1, from 11 of 12 commands that print: `list`,
    `stats`, `show`, `raw`, `validate`, `query`, `report`, `export`...; `where` printed
    nothing and exited 0; ``--version`` and ``--help``, printed by click before any command,
    were the same traceback once commands said it, 2 of 2)."""
    said = (
        "error: standard output is closed (the command was started with 1>&-); "
        "give it a file or /dev/null to write to\n"
    )
    for command in ("list", "where", "--version", "--help"):
        done = _closed(command, 1)
        assert (done.returncode, done.stderr.decode()) == (1, said), command
    assert _closed("list", 1, 2).returncode == 1


def test_a_command_started_with_its_input_closed_says_so_in_one_line() -> None:
    """``convbank query - <&-`` (``sys.stdin`` None) says standard input is closed, exit 2,
    as input that cannot be read (before: ``AttributeError: 'NoneType' object has no
    attribute 'buffer'`` from ``query -``, ``'isatty'`` from ``query`` with no SQL, and
    click's ``RuntimeError: Was not able to determine binary stream for sys.stdin.`` from
    ``query --file -``: a traceback each, exit 1, 3 of 3)."""
    said = (
        "error: standard input is closed (the command was started with 0<&-); "
        "give the input as an argument, a file, or through a pipe\n"
    )
    for command in ("query -", "query --file -", "query"):
        done = _closed(command, 0)
        assert (done.returncode, done.stderr.decode()) == (2, said), command
