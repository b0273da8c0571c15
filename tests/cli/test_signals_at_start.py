"""A signal at any moment of the ``convbank`` script is its one line and exit code: while
``convbank`` itself is imported (before the script's own code runs), and when CPython drops
the exception a handler raised (inside a ``__del__`` or a weakref callback) so that the
command ran on to its end. Each signal lands at a chosen moment, sent by the process itself
(a tracer), so that the race is won every time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from convbank import _starting
from convbank.cli._signals import message
from testsupport import ROOT

LINE = {
    signal.SIGINT: "interrupted (Ctrl-C): stopped; nothing half-written was kept\n",
    signal.SIGTERM: "terminated (SIGTERM): stopped; nothing half-written was kept\n",
    signal.SIGHUP: "terminated (SIGHUP): stopped; nothing half-written was kept\n",
}
CODE = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}

WHILE_CONVBANK_IS_IMPORTED = """
import os, signal, sys
sys.argv = ["convbank", "list"]

def tracer(frame, event, arg):
    # the signal lands as convbank's errors module runs, imported by convbank/__init__.py
    if event == "call" and frame.f_code.co_filename.endswith(os.path.join("convbank", "errors.py")):
        sys.settrace(None)
        os.kill(os.getpid(), signal.SIGNUM)
    return None

sys.settrace(tracer)
from convbank.cli import main
main()
"""


def _run(script: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONVBANK_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    run = [sys.executable, "-c", script]
    return subprocess.run(run, check=False, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_convbank_itself_is_imported_is_the_signals_line(tmp_path: Path, signum: int) -> None:
    """The script's handlers are set by convbank's first line, before ``convbank/__init__.py``
    imports anything (before: from its imports on, 26 ms, SIGINT was a KeyboardInterrupt
    traceback and SIGTERM or SIGHUP ended the script silently, -15 and -1; 11 of 120 signals
    to `convbank list` at 0.03-0.3 s)."""
    done = _run(WHILE_CONVBANK_IS_IMPORTED.replace("SIGNUM", signal.Signals(signum).name), tmp_path)
    assert (done.returncode, done.stderr, done.stdout) == (CODE[signum], LINE[signum], "")


DROPPED = """
import os, signal, sys
sys.argv = ["convbank", *ARGS]
from convbank.cli import main

class Dropped:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGNUM)
        for _ in range(100):  # the handler runs in here: CPython drops what it raises
            pass

def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "WHERE":
        sys.settrace(None)
        Dropped()
    return None

sys.settrace(tracer)
main()
"""


@pytest.mark.parametrize("where", ["list_", "parse_args"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_whose_exception_was_dropped_still_ends_the_command_so(
    tmp_path: Path, signum: int, where: str
) -> None:
    """A signal whose exception CPython dropped (raised in a ``__del__``, as in importlib's
    module-lock weakref callback) is still the command's line and exit code, never exit 0
    (before: ``Exception ignored in ...`` and its traceback, the command run to its end, exit
    0; 1 of 30 `report` runs Ctrl-C'd at 0.35-1.2 s), in the command (``list_``) and while the
    group's options are parsed (``parse_args``)."""
    script = (
        DROPPED.replace("ARGS", repr(["list"]))
        .replace("SIGNUM", signal.Signals(signum).name)
        .replace("WHERE", where)
    )
    done = _run(script, tmp_path)
    assert (done.returncode, done.stderr) == (CODE[signum], LINE[signum])


def test_the_starting_lines_are_the_commands_lines() -> None:
    """The line a signal prints before the commands are imported is the one they print."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        said, code = _starting.LINES[signum]
        assert (f"{said}: {_starting.STOPPED}\n", code) == (LINE[signum], CODE[signum])
        assert message(signum) == (LINE[signum].rstrip("\n"), CODE[signum])


@pytest.mark.parametrize(
    ("argv", "orig_argv", "main_spec", "guarded"),
    [
        (["-m"], ["python", "-m", "convbank", "list"], None, True),
        (["-m"], ["python", "-X", "importtime", "-mconvbank"], None, True),
        (["-m"], ["python", "-m", "convbank.web"], None, False),
        (["-m"], ["python", "-m", "mytool", "convbank"], None, False),
        (["/venv/bin/convbank", "list"], ["python", "/venv/bin/convbank", "list"], None, True),
        (["C:\\venv\\convbank.exe"], [], None, False),  # not this platform's separator
        (["/venv/bin/pytest"], ["python", "/venv/bin/pytest"], None, False),
        (["/venv/bin/convbank"], ["python", "-m", "x"], "a module's spec", False),
        ([], [], None, False),
    ],
)
def test_only_the_script_is_guarded(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], orig_argv: list[str], main_spec: object, guarded: bool
) -> None:
    """``import convbank`` sets no handler in a library's process (a notebook, pytest): only
    the ``convbank`` script and ``python -m convbank`` are guarded."""
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", main_spec, raising=False)
    assert _starting.is_script() is guarded


AS_AN_ERROR_IS_SAID = """
import os, signal, sys
sys.argv = ["convbank", *sys.argv[1:]]
from convbank.cli import main

def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "WHERE":
        sys.settrace(None)
        os.kill(os.getpid(), signal.SIGNUM)
    return None

sys.settrace(tracer)
main()
"""


@pytest.mark.parametrize(
    ("where", "args"),
    [("one_line_error", ["query", "--format", "jsonl"]), ("say", ["show", "casino", "1"])],
)
def test_a_signal_as_an_error_is_said_is_the_signals_line(
    tmp_path: Path, where: str, args: list[str]
) -> None:
    """A signal landing while a command's error is said (a usage error made one line, the
    console imported to say a bank not built) is the signal's line and exit code (before:
    click's blank line and ``Aborted!``, exit 1; 1 of 10 SIGHUPs to `query --format jsonl`
    at 0.1-1.5 s, 2 of 2 made certain by a tracer)."""
    script = AS_AN_ERROR_IS_SAID.replace("SIGNUM", "SIGHUP").replace("WHERE", where)
    env = {**os.environ, "CONVBANK_HOME": str(tmp_path), "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (CODE[signal.SIGHUP], LINE[signal.SIGHUP])


def test_ctrl_c_as_a_corpus_read_sets_up_its_connection_is_keyboard_interrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DuckDB seeing Ctrl-C in the ``SET`` that makes a corpus read's connection safe raises
    ``RuntimeError('Query interrupted')``; it is :class:`KeyboardInterrupt`, as in the read
    itself (before: the RuntimeError, which ``except Exception`` took and went on: 1 of 8
    seeded Ctrl-Cs of ``turns_with_labels()`` in one CI run)."""
    import duckdb

    from convbank.corpus import _frames

    class Interrupted:
        def execute(self, sql: str) -> None:
            raise RuntimeError("Query interrupted")

    monkeypatch.setattr(duckdb, "connect", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        _frames._connection()


LATE = """
import os, signal, sys
import convbank.cli.main as script
settle, sent, signum = script.settled, [], int(sys.argv[1])
def settled():  # the signal lands as main() takes the command's end, before the handlers go
    if not sent:
        sent.append(os.kill(os.getpid(), signum))
    settle()
script.settled = settled
sys.argv = ["convbank", "where"]
script.main()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_as_main_takes_the_commands_end_keeps_its_exit_code(signum: int, tmp_path: Path) -> None:
    """A signal landing after the command ended and before ``main()`` set the signals aside
    (as it takes click's ``SystemExit``) is ignored, as one a moment later is: the command's
    exit code, no traceback (before: ``KeyboardInterrupt`` or ``Terminated``, a traceback,
    the process ended by the signal or exit 1; 1 of 20 SIGINTs of a `validate` sweep, and 6 of
    6 signals sent at that moment)."""
    env = {**os.environ, "CONVBANK_HOME": str(tmp_path), "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", LATE, str(int(signum))],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[0] == f"home\t{tmp_path}"


@pytest.mark.parametrize(
    ("command", "where", "signum"),
    [("report", "dataset_charts", signal.SIGINT), ("export", "_read", signal.SIGTERM)],
)
def test_a_command_whose_signal_was_dropped_commits_nothing(
    built_home: Path, tmp_path: Path, command: str, where: str, signum: int
) -> None:
    """A signal whose exception CPython dropped, the command running on, still leaves nothing
    written: every file a command commits is committed only where no signal came (before:
    ``report`` wrote its file and printed its path, then said `interrupted (Ctrl-C): stopped;
    nothing half-written was kept`, exit 130; an export wrote its files; 2 of 2 each, 1 of 72
    `report` runs signalled at 0.05-2 s)."""
    out = tmp_path / "out"
    out.mkdir()
    args = (
        ["report", "casino", "--no-validate", "-o", str(out / "r.html")]
        if command == "report"
        else ["export", "casino", "--format", "chat", "-o", str(out)]
    )
    script = DROPPED.replace("ARGS", repr(args)).replace("SIGNUM", signal.Signals(signum).name)
    done = _run(script.replace("WHERE", where), built_home)
    assert (done.returncode, done.stderr, done.stdout) == (CODE[signum], LINE[signum], "")
    assert [name for name in os.listdir(out) if name != ".convbank-exports.lock"] == []  # the lock stays
