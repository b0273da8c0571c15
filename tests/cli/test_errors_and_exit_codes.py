"""The error tree: every class holds the facts its message states as attributes and its exit
code as a class attribute, the one thing the command line reads to exit; the facts survive
a trip through pickle (a worker process sends its errors back whole)."""

from __future__ import annotations

import errno
import os
import pickle
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import convbank
from convbank import catalog, errors
from convbank.errors import ConvbankError
from convbank.store import Bank

EXIT_CODES = {
    "ConvbankError": 1,
    "BuildError": 1,
    "DiskFullError": 1,
    "UnknownDatasetError": 2,
    "UnknownFieldError": 2,
    "ChecksumError": 2,
    "FormatError": 2,
    "QueryError": 2,
    "ExportError": 2,
    "ServeError": 2,
    "ScaffoldError": 2,
    "BenchError": 2,
    "CorpusImportError": 2,
    "MissingExtraError": 2,
    "SourceError": 3,
    "OfflineError": 3,
    "DownloadError": 3,
    "NotBuiltError": 4,
    "DamagedBankError": 4,
    "SchemaVersionError": 4,
    "ConversationNotFoundError": 4,
    "SetupError": 5,
    "PluginError": 5,
}
"""The exit codes of the command line, as ``convbank --help`` and the errors' module say."""

FACTS = {
    "ConvbankError": (),
    "UnknownDatasetError": ("kind", "name", "known"),
    "UnknownFieldError": ("name", "known"),
    "SourceError": ("dataset", "file", "path"),
    "OfflineError": ("dataset", "file", "path"),
    "DownloadError": ("dataset", "file", "path", "url"),
    "ChecksumError": ("path", "expected", "actual"),
    "FormatError": ("path", "line", "json_path", "record"),
    "NotBuiltError": ("dataset", "config", "split", "path"),
    "DamagedBankError": ("path",),
    "SchemaVersionError": ("path", "dataset", "built_by", "schema_version", "reads", "problem"),
    "ConversationNotFoundError": ("dataset", "conversation_id"),
    "QueryError": ("sql", "limit", "path"),
    "BuildError": ("path",),
    "ExportError": ("format", "path"),
    "ServeError": ("host", "port"),
    "ScaffoldError": ("name", "path"),
    "BenchError": ("task", "model", "path", "line", "split"),
    "CorpusImportError": ("name", "path", "where"),
    "MissingExtraError": ("module", "extra"),
    "SetupError": ("path", "variable"),
    "DiskFullError": ("path", "variable", "free"),
    "PluginError": ("path", "variable", "origin", "name"),
}

CLASSES = [getattr(errors, name) for name in errors.__all__]


def test_every_class_is_listed_once() -> None:
    assert {c.__name__ for c in CLASSES} == set(EXIT_CODES) == set(FACTS)
    assert all(issubclass(c, ConvbankError) for c in CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_class_holds_its_facts_and_its_exit_code(cls: type[ConvbankError]) -> None:
    assert cls.exit_code == EXIT_CODES[cls.__name__]
    assert cls.all_facts() == FACTS[cls.__name__]
    given = {fact: f"the {fact}" for fact in cls.all_facts()}
    error = cls("one line, as raised", **given)
    assert str(error) == "one line, as raised"
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls and str(back) == "one line, as raised"
    for fact in cls.all_facts():
        expected = tuple(given[fact]) if fact == "known" else given[fact]
        assert getattr(error, fact) == getattr(back, fact) == expected
    bare = cls("no facts given")
    assert all(getattr(bare, fact) is None for fact in cls.all_facts())
    with pytest.raises(TypeError) as info:
        cls("x", nonsense=1)
    listed = ", ".join(cls.all_facts()) or "none"
    assert str(info.value) == f"{cls.__name__} has no fact 'nonsense'; its facts: {listed}"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_command_line_exits_with_the_class_code(cls: type[ConvbankError]) -> None:
    """One mapping: ``ConvbankGroup`` prints the message and exits with ``exit_code``."""
    from convbank.cli.main import ConvbankGroup

    @click.group(cls=ConvbankGroup)
    def group() -> None:
        pass

    @group.command()
    def fail() -> None:
        raise cls("what went wrong, where")

    result = CliRunner().invoke(group, ["fail"])
    assert (result.exit_code, result.output) == (cls.exit_code, "error: what went wrong, where\n")


def test_an_unknown_dataset_names_what_was_asked_and_what_is_known() -> None:
    with pytest.raises(errors.UnknownDatasetError) as info:
        convbank.load("casion")
    assert (info.value.kind, info.value.name) == ("dataset", "casion")
    assert info.value.known == tuple(catalog.names())
    assert str(info.value).startswith("unknown dataset 'casion'; did you mean casino? known datasets: casino")
    with pytest.raises(errors.UnknownDatasetError) as info:
        catalog.get("ccpe").config("nope")
    assert (info.value.kind, info.value.name, info.value.known) == ("config", "nope", ("default",))


def test_a_missing_conversation_label_and_split_name_themselves(casino_home: object) -> None:
    corpus = convbank.load("casino")
    with pytest.raises(errors.ConversationNotFoundError) as found:
        corpus["no-such-id"]
    assert (found.value.dataset, found.value.conversation_id) == ("casino", "no-such-id")
    with pytest.raises(errors.UnknownFieldError) as field:
        corpus.filter(label="strategy:uv-prat")
    assert field.value.name == "strategy:uv-prat" and "strategy:uv-part" in (field.value.known or ())
    with pytest.raises(errors.NotBuiltError) as built:
        convbank.load("ccpe")
    assert built.value.dataset == "ccpe"


def test_a_full_disk_under_the_bank_is_a_disk_full_error(tmp_path: Path) -> None:
    from convbank.store.staging import disk_full

    error = disk_full(tmp_path, OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x")))
    assert isinstance(error, errors.DiskFullError) and error.exit_code == 1
    assert error.path == str(tmp_path / "x") and isinstance(error.free, int)
    assert str(error).startswith(f"{tmp_path / 'x'}: no space left on the device holding the bank (")
    assert disk_full(tmp_path, OSError(errno.EACCES, "Permission denied")) is None


def test_a_missing_extra_names_its_module_and_extra() -> None:
    with pytest.raises(errors.MissingExtraError) as info:
        errors.require("no_such_module_here", "hf", "this")
    assert (info.value.module, info.value.extra) == ("no_such_module_here", "hf")
    assert str(info.value) == (
        "this needs the 'no_such_module_here' library, which is not installed; "
        "install it with: pip install 'convbank[hf]'"
    )


SRC = Path(__file__).resolve().parents[2] / "src" / "convbank"

UNFILLED = {
    ("build.py", "_plugin_fault"): "a plugin's own exception: its entry point is said, no file of the bank",
    ("cli/_options.py", "_bad"): "a command-line option's bad value: no file, line or name to hold",
    (
        "engines/_checked.py",
        "_wrong",
    ): "an engine plugin's bad batch: its entry point is said, no file of the bank",
    (
        "engines/_checked.py",
        "made_engine",
    ): "an engine plugin's from_options gave no engine: its entry point is said",
    ("engines/_checked.py", "sql_answer"): "an engine plugin's sql gave no table: its entry point is said",
    ("export/chat.py", "side"): "shared by the per-side formats, which do not pass their name here",
    ("store/sql.py", "connect"): "DuckDB's own words on a connection it cannot open: no fact of ours",
    ("tasks/_base.py", "folds"): "a count of dialogues; the task is not known where folds are drawn",
}
"""The raises whose f-string message names a value and that pass no facts, each with why."""


def _unfilled() -> set[tuple[str, str]]:
    """``(file, function)`` of every call of a convbank error class with facts whose message
    is an f-string and that passes no keyword (no fact) at all."""
    import ast

    with_facts = {name for name in errors.__all__ if getattr(errors, name).all_facts()}
    found: set[tuple[str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
            for node in ast.walk(function):
                if not isinstance(node, ast.Call) or node.keywords or not node.args:
                    continue
                callee = node.func
                name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
                if name in with_facts and isinstance(node.args[0], ast.JoinedStr):
                    found.add((path.relative_to(SRC).as_posix(), function.name))
    return found


def test_every_raise_whose_message_names_a_value_fills_its_facts() -> None:
    """A message that says a file, a line, a name or a limit gives it as a fact too; the few
    that do not are listed, with why, in ``UNFILLED``."""
    assert _unfilled() == set(UNFILLED)


def test_a_malformed_casino_file_names_its_path_and_json_path(tmp_path: Path) -> None:
    from convbank.model import Part

    path = tmp_path / "casino_train.json"
    path.write_bytes(b'[{"dialogue_id": "seven", "chat_logs": []}]')
    with pytest.raises(errors.FormatError) as info:
        list(catalog.get("casino").read({"casino_train.json": path}, Part("default", "train")))
    assert (info.value.path, info.value.json_path, info.value.line) == (path, "$[0].dialogue_id", None)
    assert str(info.value) == (
        f"{path}: at $[0].dialogue_id: expected `int`, got `str`; not the CaSiNo format as published — "
        "re-fetch the file or check that it is the right one"
    )
    path.write_bytes(b'[{"dialogue_id": 1,\n "chat_logs": [}]')
    with pytest.raises(errors.FormatError) as info:
        list(catalog.get("casino").read({"casino_train.json": path}, Part("default", "train")))
    assert (info.value.path, info.value.line, info.value.json_path) == (path, 2, None)
    assert str(info.value).startswith(f"{path}: malformed JSON at line 2, column 16 (byte 35): ")


def test_a_pec_file_names_the_line_it_breaks_at(tmp_path: Path) -> None:
    from convbank.datasets.pec.text import parse_lines

    path = tmp_path / "train.txt"
    path.write_text("a ---+--- hello\n" + "*" * 20 + "\n" + "*" * 20 + "\n", encoding="utf-8")
    with pytest.raises(errors.FormatError) as info:
        list(parse_lines(path))
    assert (info.value.path, info.value.line) == (path, 3)
    assert str(info.value) == f"{path}: line 3: a conversation with no utterance"


def test_loading_two_datasets_at_once_names_them() -> None:
    with pytest.raises(errors.UnknownDatasetError) as info:
        convbank.load(["casino", "ccpe"])  # type: ignore[arg-type]
    assert (info.value.kind, info.value.name) == ("dataset", ["casino", "ccpe"])


def test_a_bad_time_limit_and_a_bad_memory_limit_are_facts(casino_home: object) -> None:
    from convbank.query import sql

    with pytest.raises(errors.QueryError) as info:
        sql("SELECT 1", timeout=-1)
    assert (info.value.sql, info.value.limit) == ("SELECT 1", -1)
    assert str(info.value) == "a time limit is a positive number of seconds, not -1"
    with pytest.raises(errors.QueryError) as info:
        sql("SELECT 1", memory_limit="lots")
    assert (info.value.sql, info.value.limit) == (None, "lots")


def test_a_time_limit_or_a_batch_size_that_is_not_a_number_is_one_line(casino_home: object) -> None:
    """Before: `sql(q, timeout="5")` was a TypeError from comparing it, `timeout=True` a limit
    of 1 s; `sql_batches(q, batch_rows=0)` DuckDB's RuntimeError, `-1` or `10**30` a
    binding's TypeError listing its signatures, `2.5` taken; 6 of 6."""
    from convbank.query import sql, sql_batches

    for timeout, shown in (("5", "'5'"), (True, "True"), (None, None)):
        if shown is None:
            assert sql("SELECT 1 AS x", timeout=timeout).num_rows == 1
            continue
        with pytest.raises(errors.QueryError) as info:
            sql("SELECT 1", timeout=timeout)  # type: ignore[arg-type]
        assert str(info.value) == f"a time limit is a positive number of seconds, not {shown}"
    for rows, error in ((0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error) as failed:
            list(sql_batches("SELECT 1", batch_rows=rows))  # type: ignore[arg-type]
        assert str(failed.value) == f"batch_rows must be a whole number of at least 1, not {rows!r}"
    assert [b.num_rows for b in sql_batches("SELECT * FROM range(10)", batch_rows=10**30)] == [10]
    assert [b.num_rows for b in sql_batches("SELECT * FROM range(10)", batch_rows=4, timeout=60)] == [4, 4, 2]


@pytest.mark.xdist_group("time-limits")
@pytest.mark.alone
@pytest.mark.parametrize("hard", [True, False], ids=["worker", "in-process"])
def test_a_query_past_its_time_limit_names_the_sql_and_the_limit(casino_home: object, hard: bool) -> None:
    from convbank.store.queries import stream
    from convbank.store.sql import collect

    runaway = "SELECT count(*) FROM turns a, turns b, turns c"
    with pytest.raises(errors.QueryError) as info:
        collect(stream(runaway, timeout=0.5, hard=hard, last_only=True))
    assert (info.value.sql, info.value.limit) == (runaway, 0.5)
    assert str(info.value) == "the query ran past its time limit of 0.5 s and was stopped"


def test_an_export_refused_names_the_file_in_the_way(casino_home: object, tmp_path: Path) -> None:
    from convbank.export import export

    mine = tmp_path / "casino_default_valid.chat.jsonl"
    mine.write_text("my own notes\n", encoding="utf-8")
    with pytest.raises(errors.ExportError) as info:
        export(convbank.load("casino", split="valid"), "chat", tmp_path)
    assert (info.value.path, info.value.format) == (mine, "chat")
    assert str(info.value).startswith(f"{mine} exists and convbank did not write it there; the chat export")
    with pytest.raises(errors.ExportError) as info:
        export(convbank.load("casino"), "chta", tmp_path)
    assert info.value.format == "chta"


@pytest.mark.parametrize("where", [0.5, 1], ids=["mid-file", "the footer"])
def test_a_damaged_file_found_by_a_query_worker_keeps_its_path(casino_home: Bank, where: float) -> None:
    """The worker process sends the error's facts back with its message: the path survives."""
    from convbank.query import sql
    from testsupport import turns_file

    path = turns_file(casino_home, "test")
    flipped = bytearray(path.read_bytes())
    flipped[int(len(flipped) * where) - 40] ^= 0xFF
    path.write_bytes(bytes(flipped))
    with pytest.raises(errors.DamagedBankError) as info:
        sql("SELECT text FROM turns WHERE split = 'test'", timeout=60)
    assert str(info.value).startswith(f"the bank is damaged: {path} is ")
    assert Path(str(info.value.path)) == path


_INTERRUPTED_IN_A_STRING_EXEC = """
import sys
from convbank.cli import main as script
import convbank.cli.main as commands

def command(prog_name):  # Ctrl-C in a dataclass's made methods at import: handled, its code chosen
    try:
        exec("raise KeyboardInterrupt")
    except KeyboardInterrupt:
        sys.exit(130)

commands.cli = command
script()
"""


def test_ctrl_c_in_a_string_exec_keeps_the_commands_exit_code_under_python_m(tmp_path: Path) -> None:
    """CPython remembers a KeyboardInterrupt that ended a string's ``exec`` (a dataclass's
    methods are made so, at import) even once handled, and ``python -m`` then ends the
    process by SIGINT. Before: ``python -m convbank report`` Ctrl-C'd at 0.35-1.2 s printed its
    line, then was killed by SIGINT (-2), 4-6 of 30 runs (strace: ``kill(self, SIGINT)`` after
    the exit code was chosen)."""
    (tmp_path / "interrupted_command.py").write_text(_INTERRUPTED_IN_A_STRING_EXEC)
    src = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-m", "interrupted_command"],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([src, str(tmp_path)])},
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (130, "")


_SIGNAL_AS_ITS_HANDLER_IS_SET = """
import sys
from convbank.cli import main as script
import convbank.cli.main as commands

def watch_interrupts():  # a signal pending as terminate_on_signals() sets its handler runs it there
    raise KeyboardInterrupt

commands.watch_interrupts = watch_interrupts
sys.argv = ["convbank", "list"]
script()
"""


def _script(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` with this checkout's ``src`` on the path and ``env`` added."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": src, **env},
        timeout=60,
    )


def test_a_signal_as_the_scripts_handlers_are_set_is_its_line_and_code() -> None:
    """A signal that arrives as ``main()`` sets the command's handlers (between the starting
    handler and the command's ``try``) is the signal's line and exit code (before: a
    ``KeyboardInterrupt`` traceback from ``terminate_on_signals``, killed by SIGINT, -2, 1 of
    50 ``report`` runs Ctrl-C'd at 0.8-1.3 s under strace)."""
    done = _script(_SIGNAL_AS_ITS_HANDLER_IS_SET)
    assert (done.returncode, done.stderr) == (
        130,
        "interrupted (Ctrl-C): stopped; nothing half-written was kept\n",
    )


_RAISED_WITH_NO_SIGNAL = """
import os
import sys
from convbank._starting import record
from convbank.cli import main as script
import convbank.cli.main as commands

@commands.cli.command("raises")
def raises() -> None:  # code raising KeyboardInterrupt; after a signal's handler took one, or not
    if os.environ.get("SIGNALLED"):
        record(2)
    raise KeyboardInterrupt

sys.argv = ["convbank", "raises"]
script()
"""


@pytest.mark.parametrize("signalled", [False, True])
def test_a_keyboard_interrupt_no_signal_sent_is_a_fault_not_ctrl_c(signalled: bool) -> None:
    """Only a signal a handler of the script took is said as Ctrl-C: a ``KeyboardInterrupt``
    raised by code with none sent is a fault, its traceback, exit 1 (before: ``interrupted
    (Ctrl-C)``, exit 130, 2 of 2 runs; pass 21 saw that line once from ``stats`` under
    ``ulimit -v`` with no signal sent)."""
    done = _script(_RAISED_WITH_NO_SIGNAL, SIGNALLED="1" if signalled else "")
    if signalled:
        assert (done.returncode, done.stderr) == (
            130,
            "interrupted (Ctrl-C): stopped; nothing half-written was kept\n",
        )
    else:
        assert done.returncode == 1
        assert done.stderr.splitlines()[-1] == (
            "RuntimeError: a KeyboardInterrupt was raised with no signal sent (a fault, not Ctrl-C)"
        )
        assert "interrupted" not in done.stderr
