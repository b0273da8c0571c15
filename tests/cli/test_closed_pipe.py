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
