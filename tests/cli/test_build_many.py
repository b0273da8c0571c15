"""Issue 34.1: a build of several datasets tries every one; a failed config keeps its previous
content while the others' new content lands; the table shows what was built, skipped and
failed; the exit code is the worst failure's; ``--fail-fast`` stops at the first."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.build import BuildReport, build
from convbank.cli import cli
from convbank.errors import FormatError
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import SHARED

SAMPLES = SHARED.parent / "samples"
CURIOSITY = SAMPLES / "curiosity"  # train and test hold the same dialog 748: the build fails
REPEAT = "record 0 repeats conversation id '748'"


def _conversations(bank: Bank, name: str) -> dict[str, dict[str, int]]:
    entry = bank.manifest().datasets.get(name)
    if entry is None:
        return {}
    return {c: {s: e.conversations for s, e in cfg.splits.items()} for c, cfg in entry.configs.items()}


def _rows(stdout: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in stdout.splitlines()
        if line.startswith("│ ")
    ]


def test_a_build_tries_every_dataset_and_keeps_a_failed_ones_old_content(fixture_sources: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["build", "curiosity", "--source", str(fixture_sources), "--no-verify"])
    assert first.exit_code == 0, first.output
    bank = Bank()
    old = _conversations(bank, "curiosity")
    assert old == {"default": {"train": 3, "val": 1, "test": 1, "test_zero": 1}}

    args = ["build", "curiosity", "casino", "ccpe", "--source", str(CURIOSITY), "--source", str(SHARED)]
    result = runner.invoke(cli, [*args, "--no-verify"])
    assert result.exit_code == 2, result.output  # the format error's code: the worst failure
    assert result.stdout.splitlines()[0] == f"bank at {bank.root}"
    assert [(r[0], r[1], r[2], r[3], r[-1]) for r in _rows(result.stdout)] == [
        ("casino", "default", "train", "900", "built"),
        ("casino", "default", "valid", "30", "built"),
        ("casino", "default", "test", "100", "built"),
        ("ccpe", "default", "", "", "skipped"),
        ("curiosity", "default", "", "", "failed"),
    ]
    errors = result.stderr.splitlines()
    assert errors[0].startswith(
        "not built ccpe/default: ccpe: data.json is not available offline (CONVBANK_OFFLINE is set)"
    )
    assert errors[1] == (
        f"failed curiosity/default: {CURIOSITY / 'curiosity_dialogs.test.json'} (curiosity/default/test): "
        f"{REPEAT} (first seen at record 0 of {CURIOSITY / 'curiosity_dialogs.train.json'} "
        "(curiosity/default/train)); ids must be unique within a dataset"
    )
    assert errors[2].startswith("3 splits built in ") and errors[2].endswith(
        " s, 1 config skipped, 1 config failed"
    )
    assert len(errors) == 3
    assert _conversations(bank, "curiosity") == old  # the failed build kept the previous content
    assert _conversations(bank, "casino") == {"default": {"train": 900, "valid": 30, "test": 100}}
    assert _conversations(bank, "ccpe") == {}


def test_fail_fast_stops_at_the_first_failure() -> None:
    args = ["build", "curiosity", "pec", "--source", str(SAMPLES), "--no-verify", "--fail-fast"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""  # nothing was built before it
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and REPEAT in line
    assert _conversations(Bank(), "pec") == {}
    alone = CliRunner().invoke(cli, ["build", "pec", "--source", str(SAMPLES), "--no-verify"])
    assert alone.exit_code == 0, alone.output  # PEC builds: --fail-fast left it untried


def test_the_api_builds_every_dataset_then_raises_the_first_failure(tmp_path: Path) -> None:
    bank = Bank(tmp_path / "bank")
    fetcher = Fetcher(sources=[SAMPLES], verify=False, progress=False)
    report = BuildReport()
    with pytest.raises(FormatError, match=REPEAT):
        build(["ccpe", "curiosity", "pec", "casino"], fetcher=fetcher, bank=bank, report=report)
    assert sorted({(s.dataset, s.config) for s in report.splits}) == [
        ("ccpe", "default"),
        ("pec", "happy"),
        ("pec", "offmychest"),
    ]
    assert list(report.errors) == ["curiosity/default"] and REPEAT in str(report.errors["curiosity/default"])
    assert list(report.failures) == ["casino/default"]
    assert not report.ok and report.exit_code == 2
    assert sorted(bank.manifest().datasets) == ["ccpe", "pec"]
    quick = BuildReport()
    with pytest.raises(FormatError, match=REPEAT):
        build(["curiosity", "pec"], fetcher=fetcher, bank=Bank(tmp_path / "b2"), report=quick, fail_fast=True)
    assert quick.splits == [] and quick.errors == {}


def test_a_report_with_nothing_failed_has_exit_code_0() -> None:
    report = BuildReport(failures={"ccpe/default": "not available offline"})
    assert report.exit_code == 0 and not report.ok


def test_a_dataset_builds_the_configs_it_can(tmp_path: Path) -> None:
    import shutil

    from testsupport import FIXTURES

    shutil.copytree(FIXTURES / "pec", tmp_path / "pec")
    bad = tmp_path / "pec" / "hf_pec" / "happy" / "valid.txt"
    bad.write_bytes(b"")
    result = CliRunner().invoke(cli, ["build", "pec", "--source", str(tmp_path), "--no-verify"])
    assert result.exit_code == 2, result.output
    assert [(r[1], r[2], r[-1]) for r in _rows(result.stdout)] == [
        ("offmychest", "train", "built"),
        ("offmychest", "valid", "built"),
        ("offmychest", "test", "built"),
        ("happy", "", "failed"),
    ]
    assert result.stderr.splitlines()[0].startswith(f"failed pec/happy: {bad}: no conversation; ")
    assert _conversations(Bank(), "pec") == {"offmychest": {"train": 2, "valid": 1, "test": 1}}
