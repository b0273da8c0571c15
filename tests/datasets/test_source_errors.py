"""Bad sources give one clear line (file, JSON path or line and byte, what was expected) and
exit code 2, never a traceback: ids beyond int64, JSON nested too deep, text in a number
column of the fact database, invalid UTF-8, an empty list or an empty split."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli import cli
from testsupport import FIXTURES, SHARED

INT64_MAX = 2**63 - 1


def _casino(folder: Path, first_id: bytes) -> Path:
    for split in ("valid", "test"):
        shutil.copy(SHARED / "casino" / f"casino_{split}.json", folder / f"casino_{split}.json")
    path = folder / "casino_train.json"
    path.write_bytes(b'[{"dialogue_id": ' + first_id + b', "chat_logs": []}]')
    return path


def _curiosity(folder: Path, train: bytes | None = None) -> Path:
    shutil.copytree(FIXTURES / "curiosity", folder / "curiosity")
    if train is not None:
        (folder / "curiosity" / "curiosity_dialogs.train.json").write_bytes(train)
    return folder / "curiosity" / "curiosity_dialogs.train.json"


def _pec(folder: Path, split: str, data: bytes) -> Path:
    shutil.copytree(FIXTURES / "pec", folder / "pec")
    path = folder / "pec" / "hf_pec" / "happy" / f"{split}.txt"
    path.write_bytes(data)
    return path


def id_beyond_int64(folder: Path) -> tuple[str, str]:
    path = _casino(folder, b"1" + b"0" * 400)
    return "casino", (
        f"{path}: at $[0].dialogue_id: expected `int` <= {INT64_MAX}; not the CaSiNo format as published — "
        "re-fetch the file or check that it is the right one"
    )


def id_of_two_to_the_63(folder: Path) -> tuple[str, str]:
    path = folder / "summer_wild_evaluation_dialogs.json"
    path.write_text(
        f'[{{"dialog_id": "0x1", "dialog": [{{"id": {2**63}, "sender": "participant1", "text": "hi"}}]}}]'
    )
    return "convai2", (
        f"{path}: at $[0].dialog[0].id: expected `int` <= {INT64_MAX}; not the ConvAI2 wild evaluation "
        "format as published — re-fetch the file or check that it is the right one"
    )


def dialog_id_of_two_to_the_63(folder: Path) -> tuple[str, str]:
    text = (FIXTURES / "curiosity" / "curiosity_dialogs.train.json").read_text()
    path = _curiosity(folder, text.replace('"dialog_id": 21922', f'"dialog_id": {2**63}').encode())
    return "curiosity", (
        f"{path}: at $.dialogs[0].dialog_id: expected `int` <= {INT64_MAX}; not the Curiosity format as "
        "published — re-fetch the file or check that it is the right one"
    )


def nested_200000_deep(folder: Path) -> tuple[str, str]:
    depth = 200_000
    path = _curiosity(folder, b'{"dialogs": ' + b"[" * depth + b"]" * depth + b"}")
    return "curiosity", (
        f"{path}: JSON nested more than 1,000 levels deep at line 1, column 1012 (byte 1011), deeper than "
        "a decoder can follow; not the Curiosity format as published — re-fetch the file or check that it "
        "is the right one"
    )


def text_in_a_number_column(folder: Path) -> tuple[str, str]:
    _curiosity(folder)
    db = folder / "curiosity" / "wiki_sql.sqlite.db"
    with sqlite3.connect(db) as con:
        con.executescript((FIXTURES / "curiosity" / "facts.sql").read_text())
        con.execute("UPDATE fact SET pageviews = 'many' WHERE id = 77725")
    (folder / "curiosity" / "facts.sql").unlink()
    return "curiosity", (
        f"{db}: table fact, row id=77725: column pageviews holds 'many'; expected an integer — not the "
        "Curiosity fact database as published, re-fetch wiki_sql.sqlite.db"
    )


def invalid_utf8(folder: Path) -> tuple[str, str]:
    line1 = "alice ---+--- caf\u00e9 is open\n".encode()
    path = _pec(folder, "train", line1 + b"bob ---+--- caf\xe9 \xff\n" + b"*" * 20 + b"\n")
    byte = len(line1) + len(b"bob ---+--- caf")
    return "pec", (
        f"{path}: line 2, byte {byte}: invalid UTF-8 (invalid continuation byte); expected UTF-8 text as "
        "published — re-fetch hf_pec.zip"
    )


def invalid_utf8_in_json(folder: Path) -> tuple[str, str]:
    """Before: `Invalid UTF-8 encoded string`, no place (2 of 2 files: CaSiNo, ConvAI2)."""
    path = folder / "summer_wild_evaluation_dialogs.json"
    head = b'[{"dialog_id": "0x1",\n  "dialog": [{"id": 1, "sender": "participant1", "text": "caf'
    path.write_bytes(head + b'\xe9"}]}]')
    column = len(head) - head.index(b"\n")  # the bad byte's, counted from 1
    return "convai2", (
        f"{path}: malformed JSON at line 2, column {column} (byte {len(head)}): "
        "invalid UTF-8 (invalid continuation byte); expected well-formed JSON — re-fetch the file (it may "
        "be truncated or corrupted)"
    )


def empty_json_list(folder: Path) -> tuple[str, str]:
    (folder / "ccpe").mkdir()
    path = folder / "ccpe" / "data.json"
    path.write_text("[]")
    return "ccpe", (
        f"{path}: no records; expected the CCPE-M file as published, which is never empty — re-fetch the "
        "file or check that it is the right one"
    )


def empty_dialogs(folder: Path) -> tuple[str, str]:
    path = _curiosity(folder, b'{"dialogs": [], "fold": "train"}\n')
    return "curiosity", (
        f"{path}: no records; expected the Curiosity file as published, which is never empty — re-fetch the "
        "file or check that it is the right one"
    )


def empty_pec_split(folder: Path) -> tuple[str, str]:
    path = _pec(folder, "valid", b"")
    return "pec", (
        f"{path}: no conversation; expected lines 'speaker ---+--- utterance' each conversation closed by "
        "a line of 20 '*' — re-fetch hf_pec.zip"
    )


CASES: list[Callable[[Path], tuple[str, str]]] = [
    id_beyond_int64,
    id_of_two_to_the_63,
    dialog_id_of_two_to_the_63,
    nested_200000_deep,
    text_in_a_number_column,
    invalid_utf8,
    invalid_utf8_in_json,
    empty_json_list,
    empty_dialogs,
    empty_pec_split,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_source_is_one_line_and_exit_2(case: Callable[[Path], tuple[str, str]], tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    name, message = case(folder)
    # PEC's bad file is in happy: offmychest builds (issue 34.1); this is happy's error alone
    config = {"convai2": ["--config", "summer_wild"], "pec": ["--config", "happy"]}.get(name, [])
    result = CliRunner().invoke(cli, ["build", name, *config, "--source", str(folder), "--no-verify"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.strip().splitlines() == [f"error: {message}"]


def test_a_build_with_a_bad_file_shows_what_it_built_and_what_failed(tmp_path: Path) -> None:
    """Issue 24.7, then 34.1: `build ccpe curiosity pec` with a bad Curiosity file builds
    CCPE-M and PEC (Curiosity is tried in its turn, not the end of the build), prints the
    table of the splits built and the config failed, the one-line reason; exit 2."""
    from testsupport import make_fixture_sources

    folder = make_fixture_sources(tmp_path / "src")
    bad = folder / "curiosity" / "curiosity_dialogs.train.json"
    bad.write_bytes(b'{"dialogs": [], "fold": "train"}\n')
    result = CliRunner().invoke(
        cli, ["build", "ccpe", "curiosity", "pec", "--source", str(folder), "--no-verify"]
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    rows = [line.split("│")[1:4] + line.split("│")[-2:-1] for line in lines if line.startswith("│")]
    assert [[c.strip() for c in row] for row in rows] == [
        ["ccpe", "default", "train", "built"],
        *(
            ["pec", config, split, "built"]
            for config in ("happy", "offmychest")
            for split in ("train", "valid", "test")
        ),
        ["curiosity", "default", "", "failed"],
    ]
    assert lines[-2].startswith(f"failed curiosity/default: {bad}: ")
    assert lines[-1] == "7 splits built in " + lines[-1].split(" built in ")[1]
    assert lines[-1].endswith(" s, 1 config failed")
