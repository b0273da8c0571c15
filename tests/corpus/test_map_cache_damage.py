"""The ``map()`` cache on disk is derived data a reader trusts: an entry is served only when
its bytes are the ones written for that very call (damaged, truncated, swapped from another
call, a link or a FIFO in its place: computed again), and a served result is the reader's
own (an entry rewritten under it changes nothing it holds)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from convbank import load
from convbank.store import Bank


class Calls:
    n = 0


def _turns(c: object) -> dict[str, int]:
    Calls.n += 1
    return {"n": c.num_turns}  # type: ignore[attr-defined]


def _minus(c: object) -> dict[str, int]:
    return {"n": -1}


def _entries(bank: Bank) -> list[Path]:
    folder = bank.root.with_name(bank.root.name + "-cache") / "map" / "casino"
    return sorted(folder.glob("*/*.arrow"), key=lambda p: p.stat().st_mtime_ns)


def _damage(how: str, mine: Path, other: Path, seed: int) -> None:
    rng = random.Random(seed)
    if how == "flip":  # a byte of its data changed in place, the file as long as before
        data = bytearray(mine.read_bytes())
        at = rng.randrange(len(data) // 4, len(data) * 3 // 4)
        data[at] ^= 1 << rng.randrange(8)
        with mine.open("r+b") as f:
            f.write(bytes(data))
    elif how == "copied":  # another call's bytes at its name
        mine.write_bytes(other.read_bytes())
    elif how == "renamed":  # another call's entry renamed to this call's fingerprint
        key = mine.name.split(".")[0]
        os.replace(other, mine.with_name(key + other.name[other.name.index(".") :]))
        mine.unlink()
    elif how == "link":
        mine.unlink()
        mine.symlink_to(other)
    elif how == "truncated":
        os.truncate(mine, rng.randrange(1, mine.stat().st_size))
    elif how == "fifo":
        mine.unlink()
        os.mkfifo(mine)


@pytest.mark.parametrize("how", ["flip", "copied", "renamed", "link", "truncated", "fifo"])
def test_a_damaged_map_cache_entry_is_computed_again_never_served(casino_home: Bank, how: str) -> None:
    corpus = load("casino", split="valid")
    expected = [c.num_turns for c in corpus]
    for seed in range(3):
        for entry in _entries(casino_home):
            entry.unlink()
        Calls.n = 0
        assert corpus.map(_turns)["n"] == expected and Calls.n == 30
        assert corpus.map(_minus)["n"] == [-1] * 30
        mine, other = _entries(casino_home)
        _damage(how, mine, other, seed)
        Calls.n = 0
        assert corpus.map(_turns)["n"] == expected, (how, seed)
        assert Calls.n == 30  # computed again
        Calls.n = 0
        assert corpus.map(_turns)["n"] == expected and Calls.n == 0  # and cached again, whole


def test_a_map_cache_entry_rewritten_under_its_reader_changes_nothing_it_holds(
    casino_home: Bank, tmp_path: Path
) -> None:
    cache = str(casino_home.root) + "-cache"
    script = tmp_path / "job.py"
    script.write_text(
        "import glob, sys, convbank\n"
        "def wide(c):\n"
        "    return {'s': 'x' * 2000}\n"
        "corpus = convbank.load('casino', split='train')\n"
        "corpus.map(wide)\n"
        "held = corpus.map(wide)\n"
        "for entry in glob.glob(sys.argv[1] + '/map/casino/*/*.arrow'):\n"
        "    open(entry, 'r+b').truncate(0)\n"
        "print(sum(len(s) for s in held['s']))\n"
    )
    env = {**os.environ, "CONVBANK_HOME": str(casino_home.root.parent)}
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(script), cache],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]  # before: -7, SIGBUS
        assert done.stdout.strip() == str(900 * 2000)
