"""Lossless: every record maps to the unified model and back exactly, and the source export
from the bank equals the publisher's files."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from conftest import ALL_COUNTS, SHARED
from convbank import catalog
from convbank.build import read_raw
from convbank.cli import cli
from convbank.fetch import Fetcher


@pytest.mark.parametrize(("name", "config"), sorted(ALL_COUNTS))
def test_mapper_round_trip_on_every_record(name: str, config: str, all_sources: list[Path]) -> None:
    ds = catalog.get(name)
    fetcher = Fetcher(sources=all_sources, verify=False, progress=False)
    n = 0
    for cfg, split, record in read_raw(name, config, fetcher=fetcher):
        conv = ds.to_conversation(record, cfg, split, n)
        assert msgspec.to_builtins(ds.from_conversation(conv)) == msgspec.to_builtins(record)
        n += 1
    assert n == sum(ALL_COUNTS[(name, config)].values())


JSON_FILES = {
    ("casino", "default"): [SHARED / "casino" / f"casino_{s}.json" for s in ("train", "valid", "test")],
    ("convai2", "volunteers"): [SHARED / "convai2" / "data_volunteers.json"],
    ("convai2", "intermediate"): [SHARED / "convai2" / "data_intermediate.json"],
    ("ccpe", "default"): [Path("ccpe/data.json")],
    ("curiosity", "default"): [
        Path(f"curiosity/curiosity_dialogs.{s}.json") for s in ("train", "val", "test", "test_zero")
    ],
}


@pytest.mark.parametrize(("name", "config"), sorted(JSON_FILES))
def test_source_export_equals_published_json(
    name: str, config: str, built: object, fixture_sources: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli, ["export", name, "--config", config, "--format", "source", "-o", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    for original in JSON_FILES[(name, config)]:
        path = original if original.is_absolute() else fixture_sources / original
        exported = tmp_path / path.name
        assert json.loads(exported.read_text()) == json.loads(path.read_text()), path.name


def test_pec_source_export_reads_back_identically(
    built: object, fixture_sources: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(cli, ["export", "pec", "--format", "source", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "hf_pec" / "happy" / "persona.txt").is_file()
    for config in ("happy", "offmychest"):
        original = [
            r for _, _, r in read_raw("pec", config, fetcher=Fetcher(sources=[fixture_sources], verify=False))
        ]
        again = [r for _, _, r in read_raw("pec", config, fetcher=Fetcher(sources=[tmp_path], verify=False))]
        assert again == original
    # a canonical file (one space around the separator) comes back byte for byte
    offmychest = fixture_sources / "pec" / "hf_pec" / "offmychest"
    assert (tmp_path / "hf_pec" / "offmychest" / "train.txt").read_text() == (
        offmychest / "train.txt"
    ).read_text()
    assert (tmp_path / "hf_pec" / "offmychest" / "persona.txt").read_text() == (
        offmychest / "persona.txt"
    ).read_text()
