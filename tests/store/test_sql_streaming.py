"""Large results stream and memory limits hold (issue 26, item 5; issue 24, item 6): a result
far larger than a low memory limit is written with both processes' peak memory near that
limit, a batch Arrow cannot hold and a result nested deeper than Arrow takes are one line,
and a worker answers from the manifest its caller pinned.

None of these has a bound in seconds, so they run beside other tests (the ones that do are in
test_sql_limits_and_streaming.py, run alone)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from convbank.errors import QueryError
from convbank.query import sql, sql_batches
from convbank.store import Bank
from convbank.store.queries import close_sandboxes
from testsupport import convbank_process, descendants


def test_a_result_larger_than_the_limit_streams_within_it(built: Bank, tmp_path: Path) -> None:
    """Before: the worker held the whole result (674 MiB at 256MB; 3,000,000 rows of 100
    characters here: out of memory, exit 2). Now each process stays near the limit. (330,000
    rows of 1,000 characters: as many bytes in a tenth of the rows, 22 s of the suite before.)"""
    rows = 330_000
    output = tmp_path / "out.csv"
    with output.open("wb") as sink:
        process = convbank_process(
            "query",
            f"SELECT i, repeat('x', 1000) AS pad FROM range({rows}) t(i)",
            "--format",
            "csv",
            "--memory-limit",
            "256MB",
            stdout=sink.fileno(),
        )
        peaks: dict[str, int] = {}
        while process.poll() is None:
            for name, pid in [("cli", process.pid), *(("worker", k) for k in descendants(process.pid))]:
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                hwm = [
                    int(line.split()[1]) // 1024 for line in status.splitlines() if line.startswith("VmHWM:")
                ]
                if hwm:
                    peaks[name] = max(peaks.get(name, 0), hwm[0])
            time.sleep(0.05)
        stderr = process.communicate()[1].decode()
    assert (process.returncode, stderr) == (0, "")
    with output.open("rb") as f:
        assert sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b"")) == rows + 1
    assert output.stat().st_size > 300 * 2**20  # the result: larger than the limit
    assert set(peaks) == {"cli", "worker"}
    assert peaks["worker"] < 256 + 200 and peaks["cli"] < 256, peaks


def test_sql_batches_stream_a_result_in_pieces(built: Bank) -> None:
    sizes = [b.num_rows for b in sql_batches("SELECT * FROM range(100000)", batch_rows=8192)]
    assert sum(sizes) == 100_000 and max(sizes) <= 8192 and len(sizes) >= 13
    limited = [b.num_rows for b in sql_batches("SELECT * FROM range(50000)", memory_limit="256MB")]
    assert sum(limited) == 50_000 and len(limited) > 1
    first = next(iter(sql_batches("SELECT * FROM range(10000000)", timeout=30)))  # left early: fine
    assert first.num_rows > 0
    assert sql("SELECT 1 AS x", timeout=30).to_pylist() == [{"x": 1}]  # a new worker took over


TOO_MUCH_TEXT = "SELECT repeat('a', 1000000) AS s FROM range(2200)"
"""2.2 GB of text: more than one Arrow batch's string column holds (2 GiB)."""


def test_a_batch_of_more_text_than_arrow_holds_is_one_line(built: Bank) -> None:
    """A result batch whose text is over 2 GiB is convbank's QueryError in Python and one
    line, exit 2, from the command line (before: a bare OSError from ``sql_batches``, and exit
    1 with "check that the path exists and can be written"); fewer rows a batch answer it."""
    with pytest.raises(QueryError) as caught:
        for _ in sql_batches(TOO_MUCH_TEXT):
            pass
    assert str(caught.value).startswith(
        "a batch of 8,192 rows of the result holds over 2 GiB of text in one column (Arrow's limit"
    )
    fewer = sql_batches(TOO_MUCH_TEXT, batch_rows=1000)
    assert next(fewer).num_rows == 1000  # the rest as many: not made (11 s of the suite)
    fewer.close()
    done = convbank_process("query", TOO_MUCH_TEXT, "--format", "csv")
    _, err = done.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "over 2 GiB of text" in lines[0], lines


DEEP_LIST = "SELECT (repeat('[', 70) || '1' || repeat(']', 70))::INTEGER" + "[]" * 70 + " AS d"


def test_a_result_nested_deeper_than_arrow_takes_is_one_line(built: Bank) -> None:
    """A column nested 63 levels or more (a list of lists ... of 70 levels) is QueryError in
    Python and one line, exit 2, from the command line (before: ``pyarrow.lib.ArrowInvalid:
    Recursion level in ArrowSchema struct exceeded``, a traceback, exit 1, from ``query``,
    ``sql`` and ``sql_batches``, 2 of 2 runs each); 62 levels are read."""
    from click.testing import CliRunner

    from convbank.cli.main import cli

    said = (
        "a column of the result is nested deeper than Arrow takes (62 levels of lists or structs); "
        "select fewer levels (unnest, or cast the column to VARCHAR)"
    )
    with pytest.raises(QueryError) as caught:
        sql(DEEP_LIST)
    assert str(caught.value) == said
    with pytest.raises(QueryError, match=r"nested deeper than Arrow takes"):
        list(sql_batches(DEEP_LIST))
    result = CliRunner().invoke(cli, ["query", DEEP_LIST])
    assert result.exit_code == 2 and result.stderr == f"error: {said}\n", result.output
    assert sql(DEEP_LIST.replace("70", "62").replace("[]" * 70, "[]" * 62)).num_rows == 1


def test_a_memory_limit_that_strikes_in_arrows_buffers_says_so(built: Bank) -> None:
    """A worker's capped address space reached as Arrow builds a result's batch is the memory
    limit's message, not DuckDB's advice to ``SET memory_limit`` (which the query cannot run):
    before, ``SQL error: Out of Memory Error: ArrowBuffer: failed to allocate 16777216 bytes``
    and five lines of "Possible solutions" from ``sql``, ``sql_batches`` and the viewer's
    console, 2 of 4 queries of 10 or 12 columns of 10,000 characters by 1,000 rows (where the
    allocation that fails falls varies)."""
    said = (
        "the query needs more memory than its limit of 256 MB allows; select fewer rows or "
        "columns, or aggregate"
    )
    for columns in (10, 12, 10, 12, 11, 9):
        wide = ", ".join(f"repeat(chr(65 + {i}), 10000) || i AS c{i}" for i in range(columns))
        with pytest.raises(QueryError) as caught:
            sql(f"SELECT {wide} FROM range(1000) t(i)", memory_limit="256MB")
        assert str(caught.value) == said, columns


def test_a_worker_answers_from_the_manifest_its_caller_pinned(casino_home: Bank) -> None:
    """A query in a worker (a time limit) reads the very manifest its caller pinned: one
    written in place since (here the valid split taken out of it) is named as damage, never
    the source of an answer (before: ``Corpus.sql(hard=True)`` and ``sql(snapshot=,
    timeout=)`` counted two splits where the pinned generation holds three, 2 of 2 runs,
    while the same corpus's query in this process counted three)."""
    import json

    from convbank.errors import DamagedBankError

    query = "SELECT split, count(*) AS n FROM turns GROUP BY 1 ORDER BY 1"
    snapshot = casino_home.snapshot()
    assert len(sql(query, snapshot=snapshot, timeout=30)) == 3
    close_sandboxes()  # the next worker reads the generation anew
    data = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    config = data["datasets"]["casino"]["configs"]["default"]
    for entries in (*config["files"].values(), config["records"], config["splits"]):
        del entries["valid"]
    casino_home.manifest_path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DamagedBankError) as caught:
        sql(query, snapshot=snapshot, timeout=30)
    assert str(caught.value) == (
        f"the bank at {casino_home.root}: the manifest of generation {snapshot.generation} changed "
        "after the query pinned it (written in place, not by a build); run `convbank doctor`"
    )
    assert len(sql(query, snapshot=snapshot)) == 3  # in this process: the pinned manifest
    snapshot.close()
    close_sandboxes()
