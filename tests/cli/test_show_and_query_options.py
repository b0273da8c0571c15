"""Issue 24 (a researcher's second hour): `show` with a --split or --config that leaves out the
conversation says where it is (24.9); ``COLUMNS`` fits a pipe's tables."""

from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner

from convbank.cli import cli
from convbank.store import Bank


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_show_with_the_wrong_split_says_where_the_conversation_is(built: Bank) -> None:
    assert _cli("show", "casino", "548", "--split", "train") == (
        4,
        "error: no conversation '548' in casino/*/train: it is in casino/default/test; "
        "drop --split or use --split test\n",
    )
    assert _cli("show", "convai2", "volunteers-00500", "--config", "intermediate")[1] == (
        "error: no conversation 'volunteers-00500' in convai2/intermediate/*: it is in "
        "convai2/volunteers/train; drop --config or use --config volunteers\n"
    )
    code, output = _cli("show", "casino", "548", "--split", "test", "--json")
    assert code == 0 and '"conversation_id":"548"' in output


def test_show_of_an_id_nowhere_keeps_the_plain_message(built: Bank) -> None:
    code, output = _cli("show", "casino", "no-such-id", "--split", "train")
    assert code == 4
    assert output == "error: casino has no conversation 'no-such-id' in the bank\n"


def test_columns_fits_the_tables_of_a_pipe(built: Bank) -> None:
    """A pipe or a file gets each table at its own width (one line a row) unless ``COLUMNS``
    says how wide: then ``list`` and ``query`` fit it, as on a terminal of that width."""

    def widest(*args: str, columns: str | None) -> int:
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        if columns:
            env["COLUMNS"] = columns
        done = subprocess.run(
            [sys.executable, "-m", "convbank", *args], capture_output=True, text=True, env=env, check=True
        )
        return max(len(line) for line in done.stdout.splitlines())

    query = ("query", "SELECT * FROM turns LIMIT 50")
    assert widest("list", columns="100") <= 100 < widest("list", columns=None)
    assert widest(*query, columns="100") <= 100 < widest(*query, columns=None)
