"""What the build accepts, every command handles (issue 26.9), and the last silent exits and
tracebacks of settings and plugins (26.10): a CaSiNo deal count that is not a number is a
validation error naming the record; a setting of 5,000 digits, a ``~user`` of no user and a
plugin that calls ``sys.exit(0)`` at import are one line, exit 5."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli import cli
from testsupport import ROOT, SHARED, plugin


def invoke(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


# ---------------------------------------------------------------------- 26.9 a deal count "x"
@pytest.fixture
def odd_deal(tmp_path: Path) -> Path:
    """A bank built from CaSiNo whose valid dialogue 157 submits a deal of "x" Food."""
    src = tmp_path / "src"
    src.mkdir()
    for split in ("train", "test"):
        (src / f"casino_{split}.json").symlink_to(SHARED / "casino" / f"casino_{split}.json")
    dialogues = json.loads((SHARED / "casino" / "casino_valid.json").read_text(encoding="utf-8"))
    dialogue = next(d for d in dialogues if d["dialogue_id"] == 157)
    submit = next(log for log in dialogue["chat_logs"] if log["text"] == "Submit-Deal")
    submit["task_data"]["issue2youget"]["Food"] = "x"
    (src / "casino_valid.json").write_text(json.dumps(dialogues), encoding="utf-8")
    code, output = invoke("build", "casino", "--source", src, "--no-verify")
    assert code == 0, output
    return tmp_path


def test_a_deal_count_that_is_not_a_number_is_a_validation_error(odd_deal: Path) -> None:
    code, output = invoke("validate", "casino")
    assert code == 1, output
    assert "Traceback" not in output and "ValueError" not in output
    lines = [line.split() for line in output.splitlines() if " 157 " in line]
    assert [" ".join(w) for w in lines] == [
        "error casino 157 casino.points: the final deal (Submit-Deal at turn 10) has a count that is not a number",
        "error casino 157 casino.deals: Submit-Deal at turn 10 gives 'x' Food, not a count",
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["report", "casino", "-o", "{tmp}/report"],
        ["stats", "casino"],
        ["show", "casino", "157"],
        ["export", "casino", "--format", "chat", "-o", "{tmp}/chat"],
    ],
    ids=lambda c: c[0],
)
def test_a_deal_count_that_is_not_a_number_crashes_nothing(odd_deal: Path, command: list[str]) -> None:
    code, output = invoke(*(a.format(tmp=odd_deal) for a in command))
    assert code == 0, output
    if command[0] == "export":
        chats = (odd_deal / "chat").rglob("*.jsonl")
        text = "".join(p.read_text(encoding="utf-8") for p in chats)
        assert '\\"Food\\":\\"x\\"' in text  # kept as it is, not made a number


# ---------------------------------------------------------------------- 26.10 settings, plugins
def _convbank(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convbank", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "CONVBANK_EXTRACT_MAX_BYTES",
            "9" * 5000,
            "error: CONVBANK_EXTRACT_MAX_BYTES='99999999999999999999...(5,000 characters)' is larger "
            "than the most convbank takes (4,611,686,018,427,387,904); fix or unset it\n",
        ),
        (
            "CONVBANK_EXTRACT_MAX_MEMBERS",
            "1" * 25,
            f"error: CONVBANK_EXTRACT_MAX_MEMBERS='{'1' * 25}' is larger than the most convbank takes "
            "(4,611,686,018,427,387,904); fix or unset it\n",
        ),
        (
            "CONVBANK_DOWNLOAD_MAX_BYTES",
            "lots",
            "error: CONVBANK_DOWNLOAD_MAX_BYTES='lots' is not a size in bytes, optionally with K, M, G or "
            "T (powers of 1024), e.g. 8G; fix or unset it\n",
        ),
        (
            "CONVBANK_HOME",
            "~nosuchuser/x",
            "error: CONVBANK_HOME='~nosuchuser/x': ~nosuchuser names no user's home folder; use an "
            "absolute path\n",
        ),
        (
            "CONVBANK_HOME",
            " ",
            "error: CONVBANK_HOME=' ' is only white space, not a folder's name; unset it or name a folder\n",
        ),
        (
            "CONVBANK_SOURCE",
            "\t",
            "error: CONVBANK_SOURCE='\\t' is only white space, not a folder's name; unset it or name a folder\n",
        ),
        (  # before: every file "in" it missed, blamed on the file (exit 3); 2 of 2 runs
            "CONVBANK_SOURCE",
            "/dev/null",
            "error: CONVBANK_SOURCE names /dev/null, which is not a folder; fix or unset it\n",
        ),
        (
            "CONVBANK_SOURCE",
            f"{SHARED}{os.pathsep}{SHARED / 'casino' / 'casino_valid.json'}",
            f"error: CONVBANK_SOURCE names {SHARED / 'casino' / 'casino_valid.json'}, which is not a folder; fix "
            "or unset it\n",
        ),
    ],
)
def test_impossible_settings_are_one_line(name: str, value: str, message: str) -> None:
    done = _convbank("list", env={name: value})
    assert (done.returncode, done.stderr) == (5, message)


@pytest.mark.parametrize("under", [False, True], ids=["the-home", "a-folder-in-it"])
def test_a_home_that_is_a_link_loop_is_the_homes_error(tmp_path: Path, under: bool) -> None:
    """Before: `build` and `list` said `the bank is damaged: .../manifest.json is unreadable
    (Too many levels of symbolic links); run convbank doctor`, exit 4 (2 of 2 runs each)."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    home = loop / "sub" if under else loop
    said = (
        f"error: CONVBANK_HOME {home}: Too many levels of symbolic links; point CONVBANK_HOME at a "
        "folder convbank can use\n"
    )
    for args in (["build", "casino", "--source", str(SHARED)], ["list"]):
        done = _convbank(*args, env={"CONVBANK_HOME": str(home)})
        assert (done.returncode, done.stdout, done.stderr) == (5, "", said)


@pytest.mark.parametrize(
    "args", [["build", "casino", "--source", str(SHARED)], ["list"], ["query", "SELECT 1"]]
)
def test_a_home_whose_path_is_not_utf8_is_one_line(tmp_path: Path, args: list[str]) -> None:
    """Before: ``CONVBANK_HOME=$'/tmp/h\\xff'`` made ``build`` a ``UnicodeEncodeError``
    traceback from pyarrow, exit 1, after making the folder. The bank's files are opened by
    path as text: such a home is a setting convbank cannot use, one line, exit 5."""
    home = str(tmp_path / os.fsdecode(b"h\xff"))
    done = _convbank(*args, env={"CONVBANK_HOME": home})
    shown = home.replace("\udcff", "\\udcff")
    assert (done.returncode, done.stdout, done.stderr) == (
        5,
        "",
        f"error: CONVBANK_HOME {shown}: its path is not UTF-8 text (byte 0xff), which the bank's files "
        "cannot be opened under; point CONVBANK_HOME at a folder whose path is UTF-8\n",
    )
    assert os.listdir(tmp_path) == []


def test_a_plugin_that_exits_at_import_is_a_plugin_error(tmp_path: Path) -> None:
    plugin(
        tmp_path,
        "quitter",
        "[convbank.datasets]\nquitter = quitter:Q\n",
        quitter=("import sys\nsys.exit(0)\n"),
    )
    env = {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{tmp_path}", "CONVBANK_HOME": str(tmp_path / "home")}
    for args in (["list"], ["info", "casino"], ["validate"]):
        done = _convbank(*args, env=env)
        assert (done.returncode, done.stdout, done.stderr) == (
            5,
            "",
            "error: entry point quitter = quitter:Q of group convbank.datasets (package quitter 1.0) "
            "cannot be loaded: it calls sys.exit(0) when imported\n",
        ), args
