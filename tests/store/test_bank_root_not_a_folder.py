"""A bank whose folder is a file (or lies under one) is the CLI's one line in Python too,
:class:`SetupError`, exit 5 (before: ``convbank.sql(..., bank=Bank('/etc/passwd'))`` raised a
bare ``NotADirectoryError``; found by pass 19, 2 of 2 runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

import convbank
from convbank.errors import QueryError, SetupError
from convbank.store.bank import Bank


@pytest.mark.parametrize("below", ["", "bank"])
def test_a_bank_folder_that_is_a_file_is_one_line_in_python(tmp_path: Path, below: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    root = blocker / below if below else blocker
    for call in (
        lambda: convbank.sql("SELECT 1", bank=Bank(root)),
        lambda: list(convbank.sql_batches("SELECT 1", bank=Bank(root))),
        lambda: Bank(root).snapshot(),
    ):
        with pytest.raises(SetupError) as caught:
            call()
        assert str(caught.value) == (
            f"the bank folder {root}: {blocker} is a file, not a folder; move it away or open the bank in a folder"
        )
        assert caught.value.exit_code == 5


def test_a_home_that_is_a_file_is_the_clis_line_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.write_text("x", encoding="utf-8")
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    with pytest.raises(SetupError) as caught:
        convbank.sql("SELECT 1")
    assert str(caught.value) == (
        f"CONVBANK_HOME {home}: {home} is a file, not a folder; move it away or point CONVBANK_HOME "
        "at a writable folder"
    )


def test_a_bank_folder_the_system_cannot_look_at_is_one_line(tmp_path: Path) -> None:
    """A NUL in its path, a link loop, a path too long (before: a bare ``ValueError: embedded
    null byte``, or ``OSError: [Errno 36] File name too long``, from ``convbank.sql``; a loop
    said a damaged bank, exit 4; 2 of 2 each)."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    long = tmp_path / ("x" * 300)
    for root, problem in (
        (Path("/tmp/a\0b"), "its path holds a NUL character"),
        (loop, "Too many levels of symbolic links"),
        (long, "File name too long"),
    ):
        with pytest.raises(SetupError) as caught:
            convbank.sql("SELECT 1", bank=Bank(root))
        shown = str(root).replace("\0", "\\x00")
        assert str(caught.value) == f"the bank folder {shown}: {problem}; open the bank in another folder"
        assert caught.value.exit_code == 5


def test_a_path_given_as_bank_is_one_line(built: Bank) -> None:
    """``bank`` takes a :class:`Bank`, as ``load`` says (before: a path given to
    ``convbank.sql``, ``sql_batches`` or ``describe`` was ``AttributeError: 'str' object has no
    attribute 'snapshot'``, 2 of 2)."""
    given = str(built.root)
    for call in (
        lambda: convbank.sql("SELECT 1", bank=given),
        lambda: convbank.sql("SELECT 1", bank=given, timeout=30),
        lambda: list(convbank.sql_batches("SELECT 1", bank=given)),
        lambda: convbank.query.describe(bank=given),
        lambda: convbank.load("casino", bank=given),
    ):
        with pytest.raises(TypeError) as caught:
            call()
        assert str(caught.value) == f"bank is a convbank.store.Bank (Bank(path)), not str {given!r}"
    with pytest.raises(TypeError, match=r"^snapshot is a Snapshot, not int 1$"):
        convbank.sql("SELECT 1", snapshot=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [5, b"1GB", 1.5])
def test_a_memory_limit_that_is_not_text_is_one_line(built: Bank, limit: object) -> None:
    """Before: ``memory_limit=5`` was ``AttributeError: 'int' object has no attribute
    'upper'``, ``b'1GB'`` a ``TypeError`` about a string pattern (2 of 2 each)."""
    said = f"memory limit: {limit!r} is not a size such as '512MB' or '2GB' (text)"
    with pytest.raises(QueryError) as caught:
        convbank.sql("SELECT 1", memory_limit=limit)  # type: ignore[arg-type]
    assert str(caught.value) == said
    with pytest.raises(QueryError) as streamed:
        list(convbank.sql_batches("SELECT 1", memory_limit=limit))  # type: ignore[arg-type]
    assert str(streamed.value) == said
