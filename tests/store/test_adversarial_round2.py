"""The second adversarial round of issue 35: new variants of its nine categories, each a
case that failed before its fix.

- A bank file replaced under a long-lived reader (a :class:`~convbank.Corpus` that has read
  it once) by a valid Parquet file of the same size holding another split's rows: before,
  ``to_arrow``, ``to_polars``, ``to_pandas`` and ``turns_with_labels`` served the test split's
  1,394 turns as the train split's 12,501 (the footer was checked once per snapshot by the
  file's path, then the path was opened again to read); a FIFO put there made the next read
  wait forever. Now every read opens the file once, checks its footer through that open file
  (again whenever it is not the file checked before) and reads from it.
- A signal that interrupts a DuckDB call of ``stats`` or ``report`` made DuckDB raise
  ``RuntimeError: Query interrupted``: a traceback and exit 1. Now whatever a command fails
  with after a signal is the signal's line and exit code.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli
from convbank.errors import DamagedBankError
from convbank.store import Bank
from testsupport import turns_file


def _same_size_file_of_rows(rows_of: Path, size: int, staged: Path) -> bytes:
    """A valid Parquet file (page checksums written) of ``rows_of``'s rows, padded through its
    schema's metadata to ``size`` bytes."""
    rows = pq.read_table(rows_of)

    def written(pad: int) -> int:
        # padded in the footer's key-value metadata, a byte a character (metadata of the
        # schema would also go into its base64 copy, in steps that can miss the size)
        with pq.ParquetWriter(staged, rows.schema, write_page_checksum=True) as writer:
            writer.write_table(rows)
            writer.add_key_value_metadata({"pad": "x" * pad})
        return staged.stat().st_size

    low, high = 0, size
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if written(middle) < size else (low, middle)
    for pad in range(low, low + 4):
        if written(pad) == size:
            break
    assert staged.stat().st_size == size
    data = staged.read_bytes()
    staged.unlink()
    return data


def _swap(path: Path, forged: bytes, how: str, staged: Path) -> None:
    """Put ``forged`` at ``path``: ``rename`` a new file over it (a new inode at the path),
    else write it into the file in place (the same inode, rewritten)."""
    if how == "rename":
        staged.write_bytes(forged)
        os.replace(staged, path)
    else:
        with path.open("r+b") as f:
            f.write(forged)


READS: dict[str, Callable[[Any], int]] = {
    "to_arrow": lambda c: c.to_arrow("turns").num_rows,
    "to_polars": lambda c: c.to_polars("turns").height,
    "to_pandas": lambda c: len(c.to_pandas("turns")),
    "turns_with_labels": lambda c: c.turns_with_labels().num_rows,
    "iterate": lambda c: sum(len(conversation.turns) for conversation in c),
    "sql": lambda c: (
        c.sql("SELECT count(DISTINCT text) AS n FROM turns WHERE split = 'train'").column("n")[0].as_py()
    ),
}


@pytest.mark.parametrize("read", list(READS))
@pytest.mark.parametrize("swap", ["rename", "rewrite"])
def test_a_file_replaced_under_a_live_reader_is_refused(
    casino_home: Bank, tmp_path: Path, read: str, swap: str
) -> None:
    """Before: to_arrow, to_polars, to_pandas and turns_with_labels gave 1,394 (the test split's
    turns) where the train split has 12,501."""
    train, test = turns_file(casino_home, "train"), turns_file(casino_home, "test")
    forged = _same_size_file_of_rows(test, train.stat().st_size, tmp_path / "staged.parquet")
    corpus = convbank.load("casino", split="train", bank=casino_home)
    sound = READS[read](corpus)
    _swap(train, forged, swap, tmp_path / "forged.parquet")
    with pytest.raises(DamagedBankError) as info:
        got = READS[read](corpus)
        pytest.fail(f"{read}: an answer from the replaced file ({got}; sound {sound})")
    assert str(info.value) == (
        f"the bank is damaged: {train} is corrupt (its Parquet footer differs from the manifest's); "
        "run `convbank doctor` to check every file, then `convbank build casino` to rebuild it"
    )


def test_a_fifo_put_under_a_live_reader_is_refused_not_waited_on(casino_home: Bank) -> None:
    """Before: the next read opened the FIFO and waited for a writer (here: 5 s, then the
    test writes nothing to it and fails)."""
    train = turns_file(casino_home, "train")
    corpus = convbank.load("casino", split="train", bank=casino_home)
    assert corpus.to_arrow("turns").num_rows == 12501
    train.unlink()
    os.mkfifo(train)
    ref = corpus.snapshot.ref("turns", "casino", "default", "train")
    raised: list[BaseException] = []

    def read() -> None:
        try:
            corpus.snapshot.read_table(ref)
        except BaseException as exc:  # handed to the test's thread
            raised.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():
        with open(train, "wb"):  # let the waiting reader go
            pass
        reader.join(5)
        pytest.fail("the read waited on the FIFO")
    assert [type(e) for e in raised] == [DamagedBankError]
    assert str(raised[0]) == (
        f"the bank is damaged: {train} is not a regular file; run `convbank doctor` to check "
        "every file, then `convbank build casino` to rebuild it"
    )


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_query_interrupted_by_a_signal_is_the_signals_line_not_a_traceback(
    casino_home: Bank, monkeypatch: pytest.MonkeyPatch, signum: int, code: int
) -> None:
    """Before: a signal while ``stats`` or ``report`` waited in DuckDB's ``execute`` (3 of 25
    seeded SIGINTs to ``stats``, 1 of 4 SIGHUPs to ``report``) was DuckDB's ``RuntimeError:
    Query interrupted``, a 30-line traceback, exit 1. Here the signal arrives as the first
    query runs (its watcher interrupts DuckDB, which raises what it raised there)."""
    from convbank import stats as stats_module
    from convbank.cli import _signals

    def interrupted_rows(*args: object) -> list[tuple[object, ...]]:
        _signals._interrupt_queries(signum)  # what the watcher thread does on the signal
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(stats_module, "_rows", interrupted_rows)
    result = CliRunner().invoke(cli, ["stats", "casino"])
    line, expected = _signals.message(signum)
    assert (result.exit_code, result.output) == (code, f"{line}\n") and expected == code
    after = CliRunner().invoke(cli, ["query", "SELECT 1 AS x", "--format", "csv"])
    assert (after.exit_code, after.output) == (0, "x\n1\n")  # the next command is not interrupted


@pytest.mark.parametrize("fmt", ["json", "ndjson"])
def test_printed_json_lines_hold_no_line_separator(
    casino_home: Bank, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Before: U+2028 and U+2029 were printed raw, and ``str.splitlines()`` cut the one row of
    ``query --format ndjson`` into two lines, neither of them JSON."""
    sql = "SELECT 'a' || chr(8232) || 'b' || chr(8233) || 'c' AS x"
    result = CliRunner().invoke(cli, ["query", sql, "--format", fmt])
    assert result.exit_code == 0
    assert result.stdout_bytes == (
        b'[{"x":"a\\u2028b\\u2029c"}]\n' if fmt == "json" else b'{"x":"a\\u2028b\\u2029c"}\n'
    )
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0].strip("[]")) == {"x": "a\u2028b\u2029c"}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_after_the_commands_last_line_keeps_its_exit_code(signum: int) -> None:
    """A signal in the interpreter's shutdown, after the command printed its last line and
    chose its exit code (4 of 20 runs of a stats sweep ended by the signal, silently): the
    process exits with the command's code. The signal is sent at the first moment after
    ``main()`` is done, from the process itself, so the race is won every time."""
    import subprocess
    import sys

    code = (
        "import os, signal, sys, time\n"
        "from convbank.cli.main import main\n"
        "sys.argv = ['convbank', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as done:\n"
        f"    os.kill(os.getpid(), {int(signum)})\n"
        "    time.sleep(0.2)\n"
        "    sys.exit(done.code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("convbank, version ")


TRAIN_TURNS = "SELECT count(*) AS n FROM turns WHERE dataset = 'casino' AND split = 'train'"


def _sql() -> int:
    return int(convbank.sql(TRAIN_TURNS).column("n")[0].as_py())


def _sql_batches() -> int:
    return int(next(convbank.sql_batches(TRAIN_TURNS)).column("n")[0].as_py())


def _query() -> int:
    return int(CliRunner().invoke(cli, ["query", TRAIN_TURNS, "--format", "csv"]).output.split()[-1])


MID_QUERY: dict[str, Callable[[], int]] = {"sql": _sql, "sql_batches": _sql_batches, "query": _query}


@pytest.mark.parametrize("read", list(MID_QUERY))
@pytest.mark.parametrize("swap", ["rename", "rewrite"])
def test_a_file_replaced_while_a_query_runs_is_never_read(
    casino_home: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: str, swap: str
) -> None:
    """The file is replaced once the query's connection has checked the footers, before its
    scan reads them (a second into a long query, by another process). Before: the scan
    opened the path again and served the test split's 1,394 turns as the train split's
    12,501 (3 of 3 runs of a query of 8 s over a bank of imported splits, a file renamed
    over at 1 s). Now a rename changes nothing read (the descriptors checked are read), and
    a write in place is refused, naming the file."""
    from convbank.store import queries

    train, test = turns_file(casino_home, "train"), turns_file(casino_home, "test")
    forged = _same_size_file_of_rows(test, train.stat().st_size, tmp_path / "staged.parquet")
    connect = queries.connect

    def connect_then_swap(*args: Any, **kwargs: Any) -> Any:
        con = connect(*args, **kwargs)
        _swap(train, forged, swap, tmp_path / "forged.parquet")
        return con

    monkeypatch.setattr(queries, "connect", connect_then_swap)
    if swap == "rename":
        assert MID_QUERY[read]() == 12501
        return
    if read == "query":
        result = CliRunner().invoke(cli, ["query", TRAIN_TURNS])
        assert (result.exit_code, result.output) == (
            4,
            f"error: the bank is damaged: {train} is corrupt (its Parquet footer differs from the "
            "manifest's); run `convbank doctor` to check every file, then `convbank build casino` "
            "to rebuild it\n",
        )
        return
    with pytest.raises(DamagedBankError) as info:
        pytest.fail(f"{read}: an answer from the file written in place ({MID_QUERY[read]()})")
    assert str(info.value) == (
        f"the bank is damaged: {train} is corrupt (its Parquet footer differs from the manifest's); "
        "run `convbank doctor` to check every file, then `convbank build casino` to rebuild it"
    )


@pytest.mark.parametrize("command", ["stats", "report", "validate"])
def test_a_file_written_in_place_under_stats_report_or_validate_is_never_an_answer(
    casino_home: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """convbank's own queries (statistics, the report's charts, validate's duplicate ids) are
    vouched for as ``query``'s are: the file is written in place with the test split's rows
    once their connection has checked it. Before: ``stats casino --json`` counted 1,394
    train turns (the test split's) for 12,501, exit 0, 2 of 2 runs; no ``verify`` came after
    their queries (``report`` and ``validate`` refused the file only because they read it
    again later, through another open)."""
    from convbank import stats as stats_module
    from convbank import validate as validate_module

    train, test = turns_file(casino_home, "train"), turns_file(casino_home, "test")
    if command == "validate":  # its queries read the conversations
        with casino_home.snapshot() as snap:
            train = snap.ref("conversations", "casino", "default", "train").path
            test = snap.ref("conversations", "casino", "default", "test").path
    forged = _same_size_file_of_rows(test, train.stat().st_size, tmp_path / "staged.parquet")
    module = validate_module if command == "validate" else stats_module
    connect = module.connect

    def connect_then_write(*args: Any, **kwargs: Any) -> Any:
        con = connect(*args, **kwargs)
        with train.open("r+b") as f:
            f.write(forged)
        return con

    monkeypatch.setattr(module, "connect", connect_then_write)
    args = {
        "stats": ["stats", "casino", "--json"],
        "report": ["report", "casino", "-o", str(tmp_path / "r.html")],
    }
    result = CliRunner().invoke(cli, args.get(command, ["validate", "casino"]))
    assert (result.exit_code, result.output) == (
        4,
        f"error: the bank is damaged: {train} is corrupt (its Parquet footer differs from the "
        "manifest's); run `convbank doctor` to check every file, then `convbank build casino` "
        "to rebuild it\n",
    )
    assert not (tmp_path / "r.html").exists()


def test_the_viewers_console_vouches_for_its_rows(casino_home: Bank, tmp_path: Path) -> None:
    """The SQL console's answer (its worker's first 1,000 rows) is vouched for as a stream's
    is: the train file written in place with the test split's rows after the worker's
    connection checked it. Before: the console's rows were fetched and sent without a
    check (here ``12501``, from the footer Arrow had kept, the file by then holding the
    test split's rows)."""
    from convbank.store import sandbox
    from convbank.store.sql import connect

    train, test = turns_file(casino_home, "train"), turns_file(casino_home, "test")
    forged = _same_size_file_of_rows(test, train.stat().st_size, tmp_path / "staged.parquet")
    with casino_home.snapshot() as snapshot:
        con = connect(snapshot)
        assert sandbox._answer(None, con, TRAIN_TURNS, "rows", (1000, 10_000))[2] == [(12501,)]  # type: ignore[arg-type]
        with train.open("r+b") as f:
            f.write(forged)
        with pytest.raises(DamagedBankError) as info:
            pytest.fail(f"an answer: {sandbox._answer(None, con, TRAIN_TURNS, 'rows', (1000, 10_000))}")  # type: ignore[arg-type]
        con.close()
    assert str(info.value) == (
        f"the bank is damaged: {train} is corrupt (its Parquet footer differs from the manifest's); "
        "run `convbank doctor` to check every file, then `convbank build casino` to rebuild it"
    )


@pytest.mark.parametrize("read", [*MID_QUERY, "viewer"])
@pytest.mark.parametrize("mtime", ["moved", "set back"])
def test_a_file_written_and_put_back_under_a_query_is_never_an_answer(
    casino_home: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: str, mtime: str
) -> None:
    """The train file is written in place with the test split's rows once the query's
    connection has checked it, the query reads them, and the file's own bytes are put back
    (its mtime too, or not) before the answer is vouched for. Before: the footer, checked
    again as the file then was, passed, and the test split's 1,394 turns were the answer
    (a query of 3 s over a synthetic PEC bank, another split's file written in place at
    0.8 s and put back 0.3 s later, answered 172,291 train turns for 224,687, exit 0). Now
    a file written at all while it was read is refused, naming it."""
    from convbank.store import _held, queries

    train, test = turns_file(casino_home, "train"), turns_file(casino_home, "test")
    own, was = train.read_bytes(), train.stat()
    forged = _same_size_file_of_rows(test, was.st_size, tmp_path / "staged.parquet")
    connect, verify = queries.connect, _held.HeldFile.verify

    def connect_then_write(*args: Any, **kwargs: Any) -> Any:
        con = connect(*args, **kwargs)
        with train.open("r+b") as f:
            f.write(forged)
        return con

    def put_back_then_verify(self: _held.HeldFile) -> None:
        if train.read_bytes() != own:
            with train.open("r+b") as f:
                f.write(own)
            if mtime == "set back":
                os.utime(train, ns=(was.st_atime_ns, was.st_mtime_ns))
        verify(self)

    monkeypatch.setattr(_held.HeldFile, "verify", put_back_then_verify)
    message = (
        f"the bank is damaged: {train} is corrupt (written in place while it was read); run "
        "`convbank doctor` to check every file, then `convbank build casino` to rebuild it"
    )
    if read == "viewer":
        from starlette.testclient import TestClient

        from convbank.web import create_app

        client = TestClient(create_app(casino_home), base_url="http://127.0.0.1")
        assert client.get("/datasets/casino", params={"split": "valid"}).status_code == 200
        with train.open("r+b") as f:
            f.write(forged)
        page = client.get("/datasets/casino", params={"split": "train"})
        assert page.status_code == 503
        assert f"<p>{message}</p>".replace("'", "&#39;") in page.text
        assert client.get("/datasets/casino", params={"split": "train"}).status_code == 200  # put back
        return
    monkeypatch.setattr(queries, "connect", connect_then_write)
    if read == "query":
        result = CliRunner().invoke(cli, ["query", TRAIN_TURNS])
        assert (result.exit_code, result.output) == (4, f"error: {message}\n")
        return
    with pytest.raises(DamagedBankError) as info:
        pytest.fail(f"{read}: an answer from the file written in place ({MID_QUERY[read]()})")
    assert str(info.value) == message
    assert train.read_bytes() == own


@pytest.mark.parametrize("swap", ["rename", "rewrite"])
def test_the_viewers_listing_reads_the_files_it_checked(casino_home: Bank, tmp_path: Path, swap: str) -> None:
    """The viewer keeps its connections for a generation's life, checked once. Before: a
    file replaced after the first page was served was read by the next listing, never
    checked: 503 with a decoder's ``SQL error: ... ZSTD decompression failed``, or, for a
    file not yet scanned, the test split's conversations listed as the train split's."""
    from starlette.testclient import TestClient

    from convbank.web import create_app

    client = TestClient(create_app(casino_home), base_url="http://127.0.0.1")
    assert client.get("/datasets/casino", params={"split": "valid"}).status_code == 200
    with casino_home.snapshot() as snap:
        train = snap.ref("conversations", "casino", "default", "train").path
        test = snap.ref("conversations", "casino", "default", "test").path
    forged = _same_size_file_of_rows(test, train.stat().st_size, tmp_path / "staged.parquet")
    _swap(train, forged, swap, tmp_path / "forged.parquet")
    page = client.get("/datasets/casino", params={"split": "train"})
    if swap == "rename":  # the generation's own file, still held
        assert page.status_code == 200
        assert '<p class="muted" id="count">900 conversations · page 1 of' in page.text
        return
    assert page.status_code == 503
    assert (
        f"<p>the bank is damaged: {train} is corrupt (its Parquet footer differs from the manifest&#39;s); "
        "run `convbank doctor` to check every file, then `convbank build casino` to rebuild it</p>"
    ) in page.text


EARLY = "SELECT conversation_id FROM turns LIMIT 50"
"""A query whose scan stops early, its reads still pending: what made the exit fail."""


def test_a_process_that_queried_the_bank_exits_cleanly(casino_home: Bank) -> None:
    """Arrow reads the held files through ``/dev/fd`` paths, never through Python file
    objects: those made the interpreter abort or hang as it exited (apache/arrow #50482;
    7 of 25 ``convbank query`` runs of a ``LIMIT 50`` ended ``terminate called without an
    active exception``, exit 134, and 1 of 30 hung at exit, deaf to SIGTERM). 16 runs, two
    at a time, of the command and of ``convbank.sql`` in a script: each exits 0 with its
    50 rows. By construction: every fragment of the connection's datasets is a path Arrow
    opens itself (before: a Python file object, ``<Buffer>``), its file held open by the
    connection."""
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    script = (
        "import convbank; from convbank.store import Bank; "
        f"bank = Bank({str(casino_home.root)!r}); "
        f"print(convbank.sql({EARLY!r}, bank=bank).num_rows)"
    )
    held: list[Any] = []
    with casino_home.snapshot() as snapshot:
        fragments = [f for d in snapshot.arrow_datasets(held).values() for f in d.get_fragments()]
        assert fragments and all(
            f.path == f"/dev/fd/{h.fileno()}" for f, h in zip(fragments, held, strict=True)
        )
    runs = [[sys.executable, "-m", "convbank", "query", EARLY, "--format", "csv"]] * 8
    runs += [[sys.executable, "-c", script]] * 8

    def run(args: list[str]) -> tuple[int, str]:
        try:
            done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return -1, "hung at exit"
        lines = done.stdout.splitlines()
        return done.returncode, str(len(lines) - 1) if len(lines) > 1 else (lines or [done.stderr[-200:]])[-1]

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(run, runs))
    assert outcomes == [(0, "50")] * 16
