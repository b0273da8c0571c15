"""Runaway work stops when asked and large results stream (issue 26, items 4 and 5; issue 24,
item 6): Ctrl-C (SIGINT) stops a query, a build, an export, a report at once with exit 130,
one line and no process left; a result far larger than a low memory limit is written with
both processes' peak memory near that limit; a time limit costs a warm worker, not a start.

The commands run as real processes (``python -m convbank``), sent SIGINT once they are
seen at work: a bank file open (a query), a staging folder (a build)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from convbank.errors import QueryError
from convbank.query import sql
from convbank.store import Bank
from convbank.store.queries import close_sandboxes
from testsupport import ROOT, SHARED, convbank_process, descendants

# The tests with time limits here, in tests/web/test_server_load.py and tests/cli/test_signals.py
# run one at a time, on one worker (--dist loadgroup), and alone (conftest): with another test
# beside them on two cores their queries ran past their 2 s limit. Streaming and memory limits,
# which no neighbour slows past a bound, are in test_sql_streaming.py, run beside other tests.
pytestmark = [pytest.mark.xdist_group("time-limits"), pytest.mark.alone]

RUNAWAY = "SELECT count(*) FROM turns a, turns b, turns c"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _opens(pid: int, fragment: str) -> bool:
    try:
        return any(fragment in os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _wait_for(ready: Callable[[], bool], process: subprocess.Popen[bytes], seconds: float = 90) -> None:
    start = time.monotonic()
    while not ready():
        assert process.poll() is None, process.communicate()[1].decode()
        assert time.monotonic() - start < seconds, "never started its work"
        time.sleep(0.02)


def _interrupt(process: subprocess.Popen[bytes]) -> tuple[int, float, str, list[int]]:
    """SIGINT; the exit code, the seconds it took, stderr, and what was left running."""
    children = descendants(process.pid)
    start = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
        pytest.fail("still running 20 s after SIGINT")
    seconds = time.monotonic() - start
    time.sleep(0.2)
    return process.returncode, seconds, stderr.decode(), [c for c in children if _alive(c)]


INTERRUPTED = "interrupted (Ctrl-C): stopped; nothing half-written was kept\n"


@pytest.mark.parametrize(
    "limits", [[], ["--timeout", "600", "--memory-limit", "1GB"]], ids=["default", "worker"]
)
def test_ctrl_c_stops_a_runaway_query(built: Bank, limits: list[str]) -> None:
    """Before: still running 30 s after SIGINT (in process); exit 1 with 'Aborted!' (worker)."""
    process = convbank_process("query", RUNAWAY, *limits)
    _wait_for(lambda: any(_opens(p, ".parquet") for p in [process.pid, *descendants(process.pid)]), process)
    time.sleep(0.5)  # well into the join
    code, seconds, stderr, left = _interrupt(process)
    assert (code, stderr, left) == (130, INTERRUPTED, [])
    assert seconds < 5


def test_ctrl_c_stops_an_export_query(built: Bank, tmp_path: Path) -> None:
    where = "EXISTS (SELECT 1 FROM turns a, turns b, turns c WHERE a.text || b.text || c.text = 'never')"
    process = convbank_process(
        "export", "casino", "--format", "jsonl", "-o", str(tmp_path / "out"), "--where", where
    )
    _wait_for(lambda: _opens(process.pid, ".parquet"), process)
    time.sleep(0.5)
    code, seconds, stderr, left = _interrupt(process)
    assert (code, stderr, left) == (130, INTERRUPTED, [])
    assert seconds < 5
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.jsonl"))


def test_ctrl_c_stops_a_build_and_keeps_the_bank_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    process = convbank_process(
        "build", "casino", "convai2", "--source", str(SHARED), "--workers", "2", "--no-verify"
    )
    staging = home / "bank" / ".staging"
    _wait_for(lambda: staging.exists() and any(staging.iterdir()), process)
    code, seconds, stderr, left = _interrupt(process)
    assert (code, stderr, left) == (130, INTERRUPTED, [])
    assert seconds < 5
    bank = Bank(home / "bank")
    checkup = bank.doctor()
    assert checkup.problems == [] and checkup.leftovers == []  # the old bank (here: none), whole
    assert not staging.exists()


def test_a_time_limit_costs_a_warm_worker_not_a_start(built: Bank) -> None:
    """Before: every call with a timeout started a process (about 1.2 s here, 2 s reported)."""
    close_sandboxes()
    sql("SELECT 1", timeout=30)  # starts the worker
    start = time.perf_counter()
    for _ in range(5):
        assert sql("SELECT count(*) AS n FROM conversations", timeout=30).num_rows == 1
    assert (time.perf_counter() - start) / 5 < 0.4
    with pytest.raises(QueryError, match=r"time limit of 0\.5 s"):
        sql(RUNAWAY, timeout=0.5)  # killed at the deadline...
    assert sql("SELECT 2 AS x", timeout=30).to_pylist() == [{"x": 2}]  # ...and replaced


def test_ctrl_c_interrupts_convbank_sql_in_a_script(built: Bank) -> None:
    """Before: a script's `convbank.sql(...)` ran on for as long as the query took."""
    script = (
        "import convbank\n"
        "try:\n"
        f"    convbank.sql({RUNAWAY!r})\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    _wait_for(lambda: _opens(process.pid, ".parquet"), process)
    time.sleep(0.5)
    start = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("still running 20 s after SIGINT")
    assert (process.returncode, stdout, stderr) == (0, b"interrupted\n", b"")
    assert time.monotonic() - start < 5


_FIRST_CALL = (
    "import sys, time\n"
    "import convbank\n"
    "kwargs = {'timeout': 30} if sys.argv[1] == 'limited' else {}\n"
    "start = time.perf_counter()\n"
    "assert convbank.sql('SELECT dataset, count(*) AS n FROM turns GROUP BY 1', **kwargs).num_rows\n"
    "print(time.perf_counter() - start)\n"
)


def _first_call(mode: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL, mode],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        check=True,
        timeout=120,
    )
    return float(done.stdout)


def test_the_first_limited_query_of_a_process_costs_no_process_start(built: Bank) -> None:
    """Before: the first `convbank.sql(..., timeout=30)` of a process took 3.9-4.4 s against
    2.0-2.4 s without (this loaded machine; 2.35 against 1.25 s in the walkthrough): a new
    interpreter importing DuckDB and Arrow. Now the worker is forked (1.5-1.7 s, both)."""
    plain = min(_first_call("plain") for _ in range(2))
    limited = min(_first_call("limited") for _ in range(2))
    assert limited < 1.4 * plain + 0.2, (limited, plain)


STREAMED = "SELECT i, md5(i::VARCHAR) AS h FROM range(100000000) t(i)"
"""A result long enough that a time limit of 0.2 s strikes while it streams."""


def test_a_time_limit_that_strikes_between_batches_says_so(built: Bank) -> None:
    """A query stopped by its time limit while Arrow streams its result (DuckDB's interrupt
    comes back as Arrow's error) says so, as one stopped before its first batch does
    (before: ``SQL error: INTERRUPT Error: Interrupted!`` from ``Corpus.sql(timeout=1.5)``,
    ``Corpus.filter(timeout=)`` and :func:`convbank.store.sql.results`, 3 of 3 runs)."""
    from convbank.store.sql import connect, results

    con = connect(built)
    with pytest.raises(QueryError) as caught:
        stream = results(con, STREAMED, timeout=0.2, batch_rows=1000)
        for index, _ in enumerate(stream):
            if index == 1:  # a batch in: the limit strikes while Arrow reads the next
                time.sleep(0.4)
    assert str(caught.value) == "the query ran past its time limit of 0.2 s and was stopped"
    con.close()


def test_a_time_limit_after_an_earlier_ctrl_c_is_the_time_limits(built: Bank) -> None:
    """A Ctrl-C that interrupted the queries running then (``interrupt_all``, the command
    line's handler) is not the cause of a later query's interrupt on another connection
    (before: a flag of the process, set for ever, made every later time limit a
    KeyboardInterrupt, which in the clean-clone CI run of 3565dde took down the test worker
    that had run a Ctrl-C test earlier, 1 of 1)."""
    from convbank.store.sql import connect, interrupt_all, results

    first = connect(built)
    interrupt_all()  # as the command line's handler does on Ctrl-C; nothing runs on first
    first.close()
    for query, rows in (("SELECT count(*) FROM range(10000000000) t(i)", None), (STREAMED, 1000)):
        con = connect(built)
        try:
            with pytest.raises(QueryError) as caught:
                for index, _ in enumerate(results(con, query, timeout=0.2, batch_rows=rows or 8192)):
                    if index == 1:  # a batch in: the limit strikes while Arrow reads the next
                        time.sleep(0.4)
        except KeyboardInterrupt:
            pytest.fail(f"a time limit said as Ctrl-C: {query}")
        assert str(caught.value) == "the query ran past its time limit of 0.2 s and was stopped"
        con.close()
