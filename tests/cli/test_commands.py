"""The command line: help everywhere, one-line errors with exit codes, every command's output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from convbank.cli import cli
from convbank.store import Bank
from testsupport import SHARED

VALID = SHARED / "casino" / "casino_valid.json"


def run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_has_help(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    assert cli.commands[command].help and len(cli.commands[command].help) > 20
    assert "Usage: " in result.output


def test_list_shows_sources_and_built(built: Bank) -> None:
    result = run("list", "--source", SHARED)
    assert result.exit_code == 0
    lines = {
        line.split("│")[1].strip(): line
        for line in result.output.splitlines()
        if line.startswith("│ ") and line.split("│")[1].strip()
    }
    assert "│ all " in lines["casino"] and "default" in lines["casino"]
    assert "│ 2/4 " in lines["convai2"]
    assert "│ none " in lines["ccpe"]  # a --source folder is never passed over for a remembered copy
    remembered = run("list").output  # the build found ccpe in a --source folder, and remembers
    (ccpe,) = [line for line in remembered.splitlines() if line.startswith("│ ccpe ")]
    assert "│ all " in ccpe


def test_info_prints_bibtex_unwrapped() -> None:
    from convbank.catalog import get

    text = run("info", "casino").output
    assert get("casino").citation in text  # every BibTeX line whole, none broken at 80 columns


def test_info_json(built: Bank) -> None:
    result = run("info", "convai2", "--json", "--source", SHARED)
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert {"name", "title", "license", "homepage", "citation", "version", "configs", "files"} <= set(data)
    assert data["configs"]["volunteers"] == {
        "description": "Final round with volunteers (1,111).",
        "splits": {"train": 1111},
    }
    files = {f["name"]: f for f in data["files"]}
    assert (
        files["data_tolokers.json"]["checksum"] == "unverified"
        and files["data_tolokers.json"]["sha256"] is None
    )
    assert files["data_volunteers.json"]["checksum"] == "published"
    assert files["data_volunteers.json"]["present"] == str(SHARED / "convai2" / "data_volunteers.json")
    assert data["built"] == ["intermediate", "volunteers"]


def test_info_text_and_fetch() -> None:
    result = run("info", "casino")
    assert (
        result.exit_code == 0
        and "CaSiNo" in result.output
        and "@inproceedings{chawla2021casino" in result.output
    )
    assert "default config: default" in result.output
    assert "default config: summer_wild" in run("info", "convai2").output
    result = run("fetch", "casino", "--source", SHARED)
    assert result.exit_code == 0
    assert result.output.splitlines()[0] == f"casino_train.json\t{SHARED / 'casino' / 'casino_train.json'}"


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (("casino",), 1030),
        (("casino", "--split", "valid"), 30),
        (("convai2", "--config", "volunteers"), 1111),
        (("casino", "--limit", "5"), 5),
    ],
)
def test_raw_json_lines(args: tuple[str, ...], count: int) -> None:
    result = run("raw", *args, "--source", SHARED)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == count
    assert all(isinstance(json.loads(line), dict) for line in lines)


def test_raw_keeps_published_values() -> None:
    result = run("raw", "convai2", "--config", "volunteers", "--limit", "1", "--source", SHARED)
    first = json.loads(result.output)
    assert first["profile_match"] == "" and first["eval_score"] is None
    assert first == json.loads((SHARED / "convai2" / "data_volunteers.json").read_text())[0]


def _broken(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "src"
    folder.mkdir(exist_ok=True)
    path = folder / "casino_valid.json"
    path.write_text(text)
    return path


ORIGINAL = VALID.read_text()
DATA = json.loads(ORIGINAL)


def _typed() -> str:
    data = json.loads(ORIGINAL)
    data[2]["participant_info"]["mturk_agent_2"]["outcomes"]["points_scored"] = "19"
    return json.dumps(data)


def _missing() -> str:
    data = json.loads(ORIGINAL)
    del data[1]["chat_logs"][3]["id"]
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            ORIGINAL.replace('"chat_logs": [', '"chat_logs": ;', 1),
            "malformed JSON at line 1, column 36 (byte 35): invalid character; expected well-formed JSON — re-fetch "
            "the file (it may be truncated or corrupted)",
        ),
        (
            ORIGINAL[:5000],
            "malformed JSON: the input ends early (at byte 5000); expected well-formed JSON — re-fetch the file "
            "(it may be truncated or corrupted)",
        ),
        (
            _typed(),
            "at $[2].participant_info.mturk_agent_2.outcomes.points_scored: expected `int`, got `str`; not the CaSiNo "
            "format as published — re-fetch the file or check that it is the right one",
        ),
        (
            _missing(),
            "at $[1].chat_logs[3]: object missing required field `id`; not the CaSiNo format as published — re-fetch "
            "the file or check that it is the right one",
        ),
        (
            '{"dialogue_id": 1}',
            "expected `array`, got `object`; not the CaSiNo format as published — re-fetch the file or check "
            "that it is the right one",
        ),
    ],
)
def test_format_errors_are_one_line_with_exit_code_2(tmp_path: Path, text: str, message: str) -> None:
    path = _broken(tmp_path, text)
    result = run("raw", "casino", "--split", "valid", "--source", path.parent, "--no-verify")
    assert result.exit_code == 2
    assert result.output == f"error: {path}: {message}\n"
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.parquet"))


def test_checksum_error_exit_code_and_debug(tmp_path: Path) -> None:
    path = _broken(tmp_path, ORIGINAL + " ")
    result = run("raw", "casino", "--split", "valid", "--source", path.parent)
    assert result.exit_code == 2
    size = f"{len(ORIGINAL.encode()):,}"  # a byte more than the publisher's: refused by its size, unread
    assert result.output.startswith(
        f"error: {path}: {int(size.replace(',', '')) + 1:,} bytes, not the {size} "
    )
    assert result.output.count("\n") == 1
    assert "Traceback" not in result.output
    debug = run("--debug", "raw", "casino", "--split", "valid", "--source", path.parent)
    assert debug.exit_code == 1 and type(debug.exception).__name__ == "ChecksumError"


def test_unknown_names_exit_2() -> None:
    result = run("info", "nope")
    assert result.exit_code == 2
    assert (
        result.output
        == "error: unknown dataset 'nope'; known datasets: casino, ccpe, curiosity, pec, convai2, tsvdial\n"
    )


def test_offline_missing_file_exit_3() -> None:
    result = run("raw", "ccpe")
    assert result.exit_code == 3
    assert result.output.startswith(
        "error: ccpe: data.json is not available offline (CONVBANK_OFFLINE is set); "
        "download it from https://storage.googleapis.com/dialog-data-corpus/CCPE-M-2019/data.json"
    )


def test_build_summary_and_exit_codes(tmp_path: Path) -> None:
    result = run("build", "casino", "--source", SHARED)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("│ casino")]
    assert [r.split("│")[3].strip() for r in rows] == ["train", "valid", "test"]
    assert [r.split("│")[4].strip() for r in rows] == ["900", "30", "100"]
    partial = run("build", "convai2", "--source", SHARED)
    assert partial.exit_code == 3
    assert (
        "not built convai2/summer_wild: convai2: summer_wild_evaluation_dialogs.json is not available offline"
        in partial.output
    )
    everything = run("build", "--source", SHARED)
    assert everything.exit_code == 0  # no names: builds what it can, reports the rest
    assert "not built ccpe/default" in everything.output
    empty = run("build", "ccpe")
    assert empty.exit_code == 3


def test_query_formats(built: Bank) -> None:
    q = "SELECT conversation_id, num_turns FROM conversations WHERE dataset='casino' AND split='train' ORDER BY source_index LIMIT 2"
    as_json = json.loads(run("query", q, "--format", "json").output)
    assert as_json == [
        {"conversation_id": "938", "num_turns": 13},
        {"conversation_id": as_json[1]["conversation_id"], "num_turns": as_json[1]["num_turns"]},
    ]
    as_csv = run("query", q, "--format", "csv").output.splitlines()
    assert as_csv[0] == "conversation_id,num_turns" and as_csv[1] == "938,13"
    table = run("query", q)
    assert table.exit_code == 0 and "938" in table.output
    refused = run("query", "DELETE FROM turns")
    assert refused.exit_code == 2
    assert refused.output == (
        "error: only read-only statements are allowed (SELECT, WITH ... SELECT, DESCRIBE, "
        "SHOW, EXPLAIN); got DELETE\n"
    )
    bad = run("query", "SELEC 1")
    assert bad.exit_code == 2 and bad.output.startswith("error: SQL syntax error: Parser Error: syntax error")


def test_query_on_an_empty_bank() -> None:
    result = run("query", "SELECT 1")
    assert result.exit_code == 4
    assert result.output.startswith("error: the bank at ") and result.output.endswith(
        "is empty; run `convbank build` first\n"
    )


def test_show_text_and_json(built: Bank) -> None:
    text = run("show", "casino", "938")
    assert text.exit_code == 0
    out = text.output
    assert "mturk_agent_1 (negotiator)" in out and "It gets cold at night" in out
    assert "[Submit-Deal] proposer gets 3 Water, 1 Firewood, 0 Food" in out
    data = json.loads(run("show", "casino", "938", "--json").output)
    assert set(data) >= {"participants", "turns", "annotations", "meta", "conversation_id", "num_turns"}
    assert data["num_turns"] == 13 and data["turns"][11]["kind"] == "action"
    ccpe = run("show", "ccpe", "CCPE-8e113")
    assert "preference:ENTITY_NAME[8:14] preference:ENTITY_PREFERENCE[8:14]" in ccpe.output
    missing = run("show", "casino", "nope")
    assert (
        missing.exit_code == 4 and missing.output == "error: casino has no conversation 'nope' in the bank\n"
    )


def test_show_not_built(tmp_path: Path) -> None:
    result = run("show", "casino", "938")
    assert result.exit_code == 4
    assert result.output.startswith("error: casino is not in the bank at ")


def test_where(tmp_path: Path) -> None:
    result = run("where")
    assert result.output.splitlines()[2] == f"bank\t{tmp_path / 'home' / 'bank'}"
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def test_show_curiosity_joins_used_fact_text(built: Bank) -> None:
    result = run("show", "curiosity", "21922")
    assert result.exit_code == 0
    text = " ".join(result.output.split())  # the terminal is 80 columns: undo the wrapping
    assert "facts shown 3, used 1" in text
    assert "fact 77870: Namibia's press freedom is ranked among the highest in Africa." in text
    assert "fact 77676:" not in text  # shown but not used
    assert "liked=True" in text and "dialog_act:inform_response" in text
    assert "<i>rated</i>" in text  # markup in dataset text is printed as text


@pytest.mark.parametrize(
    ("args", "warnings"),
    [
        (["--shards", "2"], ["warning: --shards is not an option of the local engine; ignored"]),
        (
            ["--shards", "2", "--master", "local[1]"],
            [
                "warning: --master is not an option of the local engine; ignored",
                "warning: --shards is not an option of the local engine; ignored",
            ],
        ),
        (["--workers", "1"], []),
    ],
)
def test_build_warns_of_options_its_engine_ignores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], warnings: list[str]
) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path))
    result = CliRunner().invoke(
        cli, ["build", "convai2", "-c", "intermediate", "--source", str(SHARED), *args]
    )
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("warning:")] == warnings
