"""Dataset text never drives the terminal (issue 26, item 7): rich markup in data is printed
as it is, escape sequences and other control characters are shown as escapes, in every
command that prints data; the viewer's CSV download neutralises formulas.

A CaSiNo bank whose first annotated dialogue carries the payloads in a turn's text and an
annotation label is built once for the module."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from convbank.cli._console import visible
from convbank.cli.main import cli
from convbank.store import Bank
from testsupport import casino_home_with

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x9b31m\r"
MARKUP = "[bold]x[/bold] [/b] [link=http://evil.example]click[/link] :smile:"
PAYLOAD = f"{MARKUP} {ESCAPES}end"
LABEL = "[/b]"


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield casino_home_with(tmp_path_factory.mktemp("hostile"), PAYLOAD, LABEL)


def run(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    return CliRunner().invoke(cli, list(args))


def _safe(text: str) -> None:
    """Nothing that drives a terminal: no ESC, BEL, CR or C1 control reached the output."""
    assert not any(c in text for c in "\x1b\x07\x9b\r"), repr(text[:300])


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("[/b]", "[/b]"),  # before: exit 1, a 58-line MarkupError
        ("[bold]x[/bold]", "[bold]x[/bold]"),  # before: 'x'
        ("[link=http://evil.example]y[/link]", "[link=http://evil.example]y[/link]"),  # before: a hyperlink
        (":smile:", ":smile:"),
        ("a\x1b[2Jb", "a\\x1b[2Jb"),  # before: the screen cleared
        ("t\x1b]0;pwned\x07", "t\\x1b]0;pwned\\x07"),  # before: the window's title set
    ],
)
def test_query_prints_data_as_text(built: Bank, value: str, shown: str) -> None:
    literal = value.replace("'", "''")
    result = CliRunner().invoke(cli, ["query", f"SELECT '{literal}' AS v"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[3] == f"│ {shown} │"
    _safe(result.output)
    named = CliRunner().invoke(cli, ["query", f'SELECT 1 AS "{value.replace(chr(34), "")}"'])
    assert named.exit_code == 0 and shown in named.stdout
    _safe(named.output)


def test_machine_formats_keep_data_whole(built: Bank) -> None:
    """csv and json are data, not terminal text: the bytes stay as they are (escaped in JSON)."""
    query = "SELECT 'a\x1b[2Jb' AS v"
    assert CliRunner().invoke(cli, ["query", query, "--format", "csv"]).stdout == "v\na\x1b[2Jb\n"
    assert CliRunner().invoke(cli, ["query", query, "--json"]).stdout == '[{"v":"a\\u001b[2Jb"}]\n'


def test_show_prints_turn_text_as_text(hostile_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dialogue = (hostile_home / "dialogue").read_text(encoding="utf-8")
    result = run(hostile_home, monkeypatch, "show", "casino", dialogue)
    assert result.exit_code == 0
    assert visible(PAYLOAD) in result.stdout and f"strategy:{LABEL}" in result.stdout.replace("\n", "")
    _safe(result.output)


def test_stats_validate_and_query_take_a_markup_label(
    hostile_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the CaSiNo label '[/b]' crashed `stats` with a MarkupError."""
    stats = run(hostile_home, monkeypatch, "stats", "casino")
    assert stats.exit_code == 0 and f"{LABEL} 1 (" in stats.stdout
    _safe(stats.output)
    validate = run(hostile_home, monkeypatch, "validate", "casino")
    assert validate.exit_code in (0, 1) and "Traceback" not in validate.output
    _safe(validate.output)
    query = run(hostile_home, monkeypatch, "query", "SELECT text FROM turns WHERE text LIKE '%pwned%'")
    assert (
        query.exit_code == 0 and visible(PAYLOAD, keep_newlines=False)[:59] + "…" in query.stdout
    )  # cut at 60
    _safe(query.output)
    raw = run(hostile_home, monkeypatch, "raw", "casino", "--limit", "1000")
    assert raw.exit_code == 0 and "\\u001b[2J" in raw.stdout
    _safe(raw.output)


def test_errors_that_quote_data_show_escapes(built: Bank) -> None:
    result = CliRunner().invoke(cli, ["show", "casino", "\x1b[2Jnope"])
    assert result.exit_code == 4 and "\\x1b[2Jnope" in result.output
    _safe(result.output)


def test_viewer_csv_neutralises_formulas(built: Bank) -> None:
    """Before: '=HYPERLINK(...)' went into the CSV as a formula."""
    from starlette.testclient import TestClient

    from convbank.web.app import create_app

    client = TestClient(create_app(built), base_url="http://127.0.0.1")
    q = "SELECT '=HYPERLINK(\"http://evil.example\")' AS a, '+1' AS b, '-2+3' AS c, '@x' AS d, 'ok' AS e, -5 AS f"
    csv_text = client.get("/sql", params={"q": q, "format": "csv"}).text
    assert csv_text == 'a,b,c,d,e,f\n"\'=HYPERLINK(""http://evil.example"")",\'+1,\'-2+3,\'@x,ok,-5\n'


def test_viewer_csv_neutralises_full_width_formulas(built: Bank) -> None:
    """Third round. Before: cells starting with the full-width U+FF1D, U+FF0B, U+FF0D, U+FF20 (which
    spreadsheets in CJK locales take as ``= + - @``) and their small forms went into the
    viewer's CSV download as they were: 8 of 8 unguarded. Now each gets the leading quote."""
    from starlette.testclient import TestClient

    from convbank.web.app import create_app

    client = TestClient(create_app(built), base_url="http://127.0.0.1")
    starts = ["\uff1d", "\uff0b", "\uff0d", "\uff20", "\ufe66", "\ufe62", "\ufe63", "\ufe6b"]
    q = "SELECT " + ", ".join(f"'{c}SUM(1)' AS c{i}" for i, c in enumerate(starts)) + ", 'x\uff1d1' AS inside"
    csv_text = client.get("/sql", params={"q": q, "format": "csv"}).text
    assert csv_text.splitlines()[1] == ",".join(f"'{c}SUM(1)" for c in starts) + ",x\uff1d1"


def test_a_title_or_a_runs_name_never_drives_the_terminal(tmp_path: Path) -> None:
    """Sixth round. Before: an imported dataset's title holding an escape and a bidi override
    was printed raw by `list` (its table; `info` escaped it), and a saved run's model name
    (`bench --name`) raw by `bench --results`: the screen cleared, the text reversed. Now every
    string the command line's consoles print is shown as :func:`visible` shows it."""
    hostile = "T\u202eitle\x1b[2J\x1b]0;pwned\x07\x9b31m"
    chats = tmp_path / "chats.jsonl"
    chats.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n', encoding="utf-8")
    imported = CliRunner().invoke(cli, ["import", str(chats), "--name", "hostile", "--title", hostile])
    assert imported.exit_code == 0, imported.output
    results = Path(os.environ["CONVBANK_HOME"]) / "bench" / "results"
    results.mkdir(parents=True)
    run = {"task": "casino-strategy", "model": hostile, "seed": 0, "metrics": {"mean_f1": 0.5}}
    (results / "20260101T000000-casino-strategy-x-seed0.json").write_text(json.dumps(run), encoding="utf-8")
    for args in (["list"], ["info", "hostile"], ["bench", "casino-strategy", "--results"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, (args, result.output)
        shown = "".join(c for c in result.stdout if c not in "│ \n")  # a table's cell may be folded
        assert visible(hostile) in shown, (args, result.stdout)
        _safe(result.output)
        assert "\u202e" not in result.output, args


def test_a_width_of_zero_columns_prints_as_no_width_given() -> None:
    """``COLUMNS=0`` (a terminal of no size, some CI runners) is no width: `list` prints as
    with ``COLUMNS`` unset, and an error is still said (before: rich took the width as 0 and
    `list`, `stats`, `show`, `validate`, `tables` and `info` printed nothing at all, their
    errors neither, 6 of 6 commands, exit status as usual)."""
    import subprocess
    import sys

    from testsupport import ROOT

    def run(*args: str, columns: str | None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env["PYTHONPATH"] = str(ROOT / "src")
        if columns is not None:
            env["COLUMNS"] = env["LINES"] = columns
        return subprocess.run(
            [sys.executable, "-m", "convbank", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    zero, unset = run("list", columns="0"), run("list", columns=None)
    assert zero.returncode == 0 and "casino" in zero.stdout
    assert zero.stdout == unset.stdout
    said = run("show", "nosuch", "1", columns="0")
    assert (said.returncode, said.stderr.splitlines()[0]) == (
        2,
        "error: unknown dataset 'nosuch'; known datasets: casino, ccpe, curiosity, pec, convai2",
    )


def test_a_long_turn_is_shown_whole_and_at_once(tmp_path: Path) -> None:
    """`show` of a turn of 200,000 short lines (600 KB) writes its text whole, as
    :func:`visible` shows it, the next turn after it, in well under 5 s (before: rich split
    and wrapped it line by line, 20 s; a 2 MB turn 115 s, 2 of 2 runs)."""
    import time

    text = "xy\n" * 200_000 + "\x1b[2J"
    chats = tmp_path / "long.jsonl"
    turns = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    chats.write_text(json.dumps({"id": "c1", "messages": turns}) + "\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["import", str(chats), "--name", "long"]).exit_code == 0
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["show", "long", "c1"])
    seconds = time.monotonic() - started
    assert result.exit_code == 0, result.output
    assert f"  0 user: {visible(text)}\n  1 assistant: ok\n" in result.stdout
    assert seconds < 5, seconds
