"""A folder's files changing while they are imported: one removed, or replaced by a FIFO,
after the folder was listed is one line naming it, exit 2, and nothing is imported; one
that grows after it was copied is recorded as the bytes read (their sha256 and their size),
never a size of other bytes than those hashed."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli.main import cli
from convbank.store import Bank


def _corpus(tmp_path: Path) -> Path:
    """A ConvoKit corpus folder (convbank's export of a small import)."""
    chats = tmp_path / "chats.jsonl"
    chats.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}]}) + "\n"
            for i in range(5)
        ),
        encoding="utf-8",
    )
    assert CliRunner().invoke(cli, ["import", str(chats), "--name", "small"]).exit_code == 0
    assert (
        CliRunner()
        .invoke(cli, ["export", "small", "--format", "convokit", "-o", str(tmp_path / "ck")])
        .exit_code
        == 0
    )
    return tmp_path / "ck" / "small_convokit"


def _import_paused(
    folder: Path, name: str, at: str, meanwhile: Callable[[], None]
) -> subprocess.CompletedProcess[str]:
    """``convbank import folder`` paused at ``at`` (``source-opened/<file>``) while ``meanwhile`` runs."""
    flag = folder.parent / "paused"
    env = {**os.environ, "CONVBANK_TEST_PAUSE": f"{at}:{flag}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "convbank", "import", str(folder), "--name", name],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    meanwhile()
    flag.unlink()
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _fifo_in_place(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


CHANGES: dict[str, Callable[[Path], None]] = {"removed": Path.unlink, "replaced by a FIFO": _fifo_in_place}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_file_changed_after_the_folder_was_listed_is_one_line(change: str, tmp_path: Path) -> None:
    folder = _corpus(tmp_path)
    victim = folder / "speakers.json"  # copied after index.json (files are copied in order)
    done = _import_paused(folder, "changed", "source-opened/index.json", lambda: CHANGES[change](victim))
    assert done.returncode == 2, done.stderr  # before: exit 1 "check that the path exists and can be written"
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {victim}: changed while convbank read it"), done.stderr
    assert "--no-verify" not in done.stderr  # before, for the FIFO: an option import does not have
    assert "changed" not in Bank().manifest().datasets


def test_a_file_grown_after_it_was_copied_is_recorded_as_the_bytes_read(tmp_path: Path) -> None:
    folder = _corpus(tmp_path)
    grown = folder / "conversations.json"
    read = grown.read_bytes()
    done = _import_paused(
        folder, "grown", "source-opened/utterances.jsonl", lambda: grown.write_bytes(read + b"   \n")
    )
    assert done.returncode == 0, done.stderr
    entry = Bank().manifest().datasets["grown"].imported
    assert entry is not None
    (recorded,) = [f for f in entry.inputs if f.path.endswith("conversations.json")]
    assert recorded.sha256 == hashlib.sha256(read).hexdigest()
    assert recorded.bytes == len(read)  # before: the size it had by then, 4 bytes more than hashed


def test_an_import_killed_while_copying_leaves_no_private_copy_after_the_next(tmp_path: Path) -> None:
    """Fourth round. Before: an import killed (``kill -9``) while it copied its input left
    its private folder (``$TMPDIR/convbank-verified-*``, the copy of the input in it) for
    good, 2 of 2 kills, 8-12 MB each here; a build killed so too. Each process's folder now
    names its pid, and the next command to copy a file removes those of processes gone."""
    import signal

    temp = tmp_path / "tmp"
    temp.mkdir()
    chats = tmp_path / "chats.jsonl"
    chats.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": "q"}]}) + "\n"
            for i in range(5)
        ),
        encoding="utf-8",
    )
    flag = tmp_path / "paused"
    env = {**os.environ, "TMPDIR": str(temp)}
    for _ in range(2):
        proc = subprocess.Popen(
            [sys.executable, "-m", "convbank", "import", str(chats), "--name", "killed"],
            env={**env, "CONVBANK_TEST_PAUSE": f"source-reading/chats.jsonl:{flag}"},
        )
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        flag.unlink()
        left = [p.name for p in temp.iterdir()]
        assert len(left) == 1 and left[0].startswith(f"convbank-verified-{proc.pid}-")
        assert any(p.name == "chats.jsonl" for p in (temp / left[0]).rglob("*"))  # the copy, half made
    done = subprocess.run(
        [sys.executable, "-m", "convbank", "import", str(chats), "--name", "whole"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert list(temp.iterdir()) == []  # the killed ones' removed, its own at its exit
