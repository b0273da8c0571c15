"""A path holding a newline, a tab or an escape never breaks an error, a warning or a note of
the command line in two: each is one line on stderr, the path's control characters shown as
escapes (``\\n``, ``\\t``, ``\\x1b``); DuckDB's multi-line SQL errors alone keep their lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from convbank.cli.main import cli

CHAT = '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'

ODD = ["new\nline", "a\ttab", "esc\x1b[2Jape", "cr\rhere", "-dash\nnl", "line\u2028sep", "para\u2029sep"]
"""Path parts a user (or an attacker naming files) can give; each breaks a line or drives a
terminal if printed as it is (U+2028 and U+2029 end a line for ``str.splitlines()``: seventh
round, before shown raw, 12 of 12 cases two lines)."""


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _import_missing(tmp: Path, odd: str) -> tuple[list[str], int]:
    return ["import", str(tmp / odd / "chats.jsonl"), "--name", "mine"], 2


def _import_card(tmp: Path, odd: str) -> tuple[list[str], int]:
    (tmp / "chats.jsonl").write_text(CHAT, encoding="utf-8")
    return ["import", str(tmp / "chats.jsonl"), "--name", "mine", "--card", str(tmp / odd / "c.toml")], 2


def _import_rejects(tmp: Path, odd: str) -> tuple[list[str], int]:
    (tmp / "chats.jsonl").write_text(CHAT, encoding="utf-8")
    return ["import", str(tmp / "chats.jsonl"), "--name", "mine", "--skip-bad", str(tmp / odd / "r.jsonl")], 2


def _export_under_a_file(tmp: Path, odd: str) -> tuple[list[str], int]:
    (tmp / "chats.jsonl").write_text(CHAT, encoding="utf-8")
    assert _run("import", str(tmp / "chats.jsonl"), "--name", "mine").exit_code == 0
    (tmp / odd).write_text("a file, not a folder", encoding="utf-8")
    return ["export", "mine", "--format", "chat", "-o", str(tmp / odd / "out")], 2


def _build_source(tmp: Path, odd: str) -> tuple[list[str], int]:
    return ["build", "casino", "--source", str(tmp / odd)], 2


def _bench_results(tmp: Path, odd: str) -> tuple[list[str], int]:
    import os

    folder = Path(os.environ["CONVBANK_HOME"]) / "bench" / "results"
    folder.mkdir(parents=True)
    (folder / f"{odd}.json").write_text(json.dumps({"not": "a run"}), encoding="utf-8")
    return ["bench", "--results"], 0


CASES: dict[str, Callable[[Path, str], tuple[list[str], int]]] = {
    "import of a missing file": _import_missing,
    "import --card": _import_card,
    "import --skip-bad": _import_rejects,
    "export -o under a file": _export_under_a_file,
    "build --source": _build_source,
    "bench --results warning": _bench_results,
}


@pytest.mark.parametrize("odd", ODD, ids=["newline", "tab", "escape", "cr", "dash-newline", "u2028", "u2029"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_path_with_a_newline_is_one_line(case: str, odd: str, tmp_path: Path) -> None:
    args, code = CASES[case](tmp_path, odd)
    result = _run(*args)
    assert result.exit_code == code, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(("error:", "warning:")), (
        result.stderr
    )  # before: broken at the newline
    shown = odd.replace("\n", "\\n").replace("\t", "\\t").replace("\x1b", "\\x1b").replace("\r", "\\r")
    shown = shown.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    assert shown in lines[0], lines[0]
    assert not any(c in result.stderr for c in "\x1b\r\t\u2028\u2029"), repr(result.stderr)


def test_a_usage_error_naming_a_path_is_one_line(tmp_path: Path) -> None:
    """Before: `query -f $'x\\ny'` (click.File's message names the path as it is) broke
    click's error line at the newline and printed an escape raw; 2 of 2."""
    for odd in ("x\ny", "e\x1b[2Jz\u2028"):
        result = _run("query", "-f", str(tmp_path / odd))
        assert result.exit_code == 2
        shown = str(tmp_path / odd).replace("\n", "\\n").replace("\x1b", "\\x1b").replace("\u2028", "\\u2028")
        assert result.stderr.splitlines()[-1] == (
            f"Error: Invalid value for '-f' / '--file': '{shown}': No such file or directory"
        )


def test_sql_errors_keep_duckdbs_lines(tmp_path: Path) -> None:
    (tmp_path / "chats.jsonl").write_text(CHAT, encoding="utf-8")
    assert _run("import", str(tmp_path / "chats.jsonl"), "--name", "mine").exit_code == 0
    result = _run("query", "SELEC 1")
    assert result.exit_code == 2
    assert "\nLINE 1: SELEC 1\n" in result.stderr, result.stderr


@pytest.mark.parametrize("form", ["PATH", "SPLIT=PATH"])
def test_an_input_whose_name_is_too_long_is_bad_input(form: str, tmp_path: Path) -> None:
    path = tmp_path / ("é" * 130) / "chats.jsonl"  # a folder name of 260 bytes
    arg = str(path) if form == "PATH" else f"train={path}"
    result = _run("import", arg, "--name", "mine")
    assert result.exit_code == 2, (
        result.stderr
    )  # before: exit 1, "check that the path exists and can be written"
    assert result.stderr == f"error: {path}: File name too long\n"


@pytest.mark.parametrize("where", ["a-missing-folder", "under-a-file"])
def test_a_file_written_whole_into_a_folder_that_cannot_hold_it_is_named_as_given(
    where: str, tmp_path: Path
) -> None:
    """Before: ``report -o missing/r.html`` was ``error: missing/.r.html.30972.ndtg4gt1.tmp: No
    such file or directory``, naming a temporary file the user never gave (2 of 2 folders,
    ``/proc`` too); now the message names ``missing/r.html``."""
    (tmp_path / "chats.jsonl").write_text(CHAT, encoding="utf-8")
    assert _run("import", str(tmp_path / "chats.jsonl"), "--name", "mine").exit_code == 0
    (tmp_path / "under-a-file").write_text("a file, not a folder", encoding="utf-8")
    target = tmp_path / where / "r.html"
    done = _run("report", "mine", "-o", str(target))
    assert done.exit_code == 1, done.output
    assert done.output.startswith(f"error: {target}: "), done.output
    assert ".tmp" not in done.output and done.output.count("\n") == 1, done.output
