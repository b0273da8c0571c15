"""Lossless: every record maps to the unified model and back exactly, and the source export
from the bank equals the publisher's files."""

from __future__ import annotations

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


SOURCE_FILES = {
    ("casino", "default"): [SHARED / "casino" / f"casino_{s}.json" for s in ("train", "valid", "test")],
    ("convai2", "volunteers"): [SHARED / "convai2" / "data_volunteers.json"],
    ("convai2", "intermediate"): [SHARED / "convai2" / "data_intermediate.json"],
    ("convai2", "summer_wild"): [Path("convai2/summer_wild_evaluation_dialogs.json")],
    ("ccpe", "default"): [Path("ccpe/data.json")],
    ("curiosity", "default"): [
        Path(f"curiosity/curiosity_dialogs.{s}.json") for s in ("train", "val", "test", "test_zero")
    ],
    ("pec", "all"): [
        Path(f"pec/hf_pec/{c}/{s}.txt")
        for c in ("happy", "offmychest")
        for s in ("train", "valid", "test", "persona")
    ],
}


@pytest.mark.parametrize(("name", "config"), sorted(SOURCE_FILES))
def test_source_export_is_byte_exact(
    name: str, config: str, built: object, fixture_sources: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli, ["export", name, "--config", config, "--format", "source", "-o", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    expected = [
        str(p.relative_to(SHARED / name)) if p.is_absolute() else str(p.relative_to(name))
        for p in SOURCE_FILES[(name, config)]
    ]
    assert written == sorted(expected)
    for original in SOURCE_FILES[(name, config)]:
        path = original if original.is_absolute() else fixture_sources / original
        relative = path.relative_to(SHARED / name if original.is_absolute() else fixture_sources / name)
        assert (tmp_path / relative).read_bytes() == path.read_bytes(), relative


def test_pec_export_reads_back_identically(built: object, fixture_sources: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["export", "pec", "--format", "source", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for config in ("happy", "offmychest"):
        original = [
            r for _, _, r in read_raw("pec", config, fetcher=Fetcher(sources=[fixture_sources], verify=False))
        ]
        again = [r for _, _, r in read_raw("pec", config, fetcher=Fetcher(sources=[tmp_path], verify=False))]
        assert again == original
