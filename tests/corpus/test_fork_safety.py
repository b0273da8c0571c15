"""A corpus read in a forked child (a ``DataLoader`` worker, ``multiprocessing``'s fork)
while a thread of the parent held one of convbank's locks: the child reads on (before: it
hung for ever at its first read, the lock inherited locked; 2 of 400 seeded forks of a
process reading PEC in three threads hung at ``Kept.put``)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli
from convbank.store import integrity, queries


def _corpus(tmp_path: Path) -> convbank.Corpus:
    chats = tmp_path / "chats.jsonl"
    with chats.open("w", encoding="utf-8") as f:
        for i in range(300):
            turns = [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
            f.write(json.dumps({"id": f"c{i}", "messages": turns}) + "\n")
    assert CliRunner().invoke(cli, ["import", str(chats), "--name", "forked"]).exit_code == 0
    return convbank.load("forked")


LOCKS: dict[str, Callable[[convbank.Corpus], Any]] = {
    "the kept entries": lambda c: c._source._kept._lock,
    "a record file": lambda c: next(iter(c._source._record_files.values()))._lock,
    "the corpus's source": lambda c: c._source._lock,
    "the pinned generation": lambda c: c._source.snapshot._lock,
    "the footers checked": lambda c: integrity._CHECKED_LOCK,
    "the query workers": lambda c: queries._lock,
}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
@pytest.mark.parametrize("held", list(LOCKS))
def test_a_child_forked_while_a_thread_holds_a_lock_reads_on(held: str, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    assert corpus[0].conversation_id == "c0"  # its record file opened, an entry kept
    lock = LOCKS[held](corpus)
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                got = [corpus[i].conversation_id for i in range(1, 300, 7)]
                rows = corpus.to_arrow("turns").num_rows
                answer = convbank.sql("SELECT count(*) FROM conversations", timeout=20).column(0)[0].as_py()
                code = (
                    0 if got == [f"c{i}" for i in range(1, 300, 7)] and rows == 600 and answer == 300 else 2
                )
            finally:
                os._exit(code)
        deadline = time.monotonic() + 15
        while not (ended := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < deadline:
            time.sleep(0.02)
        if not ended[0]:  # hung: before, at the lock it inherited locked
            os.kill(pid, signal.SIGKILL)
            ended = os.waitpid(pid, 0)
        status = ended[1]
    finally:
        done.set()
        thread.join()
        corpus.close()
    assert os.waitstatus_to_exitcode(status) == 0, (
        f"the child ended {os.waitstatus_to_exitcode(status)} (-9: hung)"
    )
