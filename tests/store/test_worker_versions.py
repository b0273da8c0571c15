"""A worker process started by a convbank that another version replaced on disk since (a long
``convbank serve``, a notebook) says so, and the caller says it in one line: the worker runs
nothing and writes nothing on stderr (before: it ran the new code with the old caller's
arguments and messages, a ``TypeError`` or ``ValueError`` traceback on stderr, then `the query
process could not start` or `... ran out of memory`, 2 of 2 changes tried; found by pass 19)."""

from __future__ import annotations

import pytest

import convbank._workers as workers
from convbank import _version
from convbank.errors import QueryError, SetupError
from convbank.store.bank import Bank
from convbank.store.sandbox import SqlSandbox

LINE = (
    "a worker process started now runs convbank '{new}', this process convbank '0.0.1': another "
    "convbank was installed since this process started; start it again"
)


def test_a_query_worker_of_another_convbank_is_one_line(
    built: Bank, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(workers, "__version__", "0.0.1")  # this process: the convbank of before
    box = SqlSandbox(built.root)
    try:
        with pytest.raises(QueryError) as caught:
            box.run(built.snapshot(), "SELECT 1", timeout=30, max_rows=5)
    finally:
        box.close()
    assert str(caught.value) == LINE.format(new=_version.__version__)
    assert capfd.readouterr().err == ""


def test_a_map_worker_of_another_convbank_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(workers, "__version__", "0.0.1")
    monkeypatch.setattr(workers, "may_fork", lambda: False)  # a forked worker is this very convbank
    with pytest.raises(SetupError) as caught:
        list(workers.map_in_order(str, [1, 2], workers=1))
    assert str(caught.value) == LINE.format(new=_version.__version__)
    assert capfd.readouterr().err == ""
