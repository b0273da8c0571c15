"""Lossless: every record maps to the unified model and back exactly, and the source export
from the bank equals the publisher's files."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.build import read_raw
from convbank.cli import cli
from convbank.export._place import LOCK, RECORD
from convbank.fetch import Fetcher
from convbank.model import Part
from testsupport import ALL_COUNTS, SHARED


@pytest.mark.parametrize(("name", "config"), sorted(ALL_COUNTS))
def test_mapper_round_trip_on_every_record(name: str, config: str, all_sources: list[Path]) -> None:
    ds = catalog.get(name)
    fetcher = Fetcher(sources=all_sources, verify=False, progress=False)
    n = 0
    for cfg, split, record in read_raw(name, config, fetcher=fetcher):
        conv = ds.to_conversation(record, Part(cfg, split), n)
        assert msgspec.to_builtins(ds.from_conversation(conv)) == msgspec.to_builtins(record)
        n += 1
    assert n == sum(ALL_COUNTS[(name, config)].values())


SOURCE_FILES = {
    ("casino", "default"): [SHARED / "casino" / f"casino_{s}.json" for s in ("train", "valid", "test")],
    ("convai2", "volunteers"): [SHARED / "convai2" / "data_volunteers.json"],
    ("convai2", "intermediate"): [SHARED / "convai2" / "data_intermediate.json"],
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
    written = sorted(
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p.is_file() and p.name not in (RECORD, LOCK)
    )
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


def test_summer_wild_fixture_comes_back_byte_for_byte(tmp_path: Path) -> None:
    """The summer_wild fixture (4-space records in ``[{`` ... ``}]``, ASCII escapes, an
    eval_score null and a profile_match "") in a bank of its own: the shared bank holds the
    real ConvAI2 rounds only."""
    from convbank.build import build
    from convbank.export import export
    from convbank.query import Corpus
    from convbank.store import Bank
    from testsupport import FIXTURES

    fetcher = Fetcher(sources=[FIXTURES], verify=False, progress=False)
    bank = Bank(tmp_path / "bank")
    report = build(["convai2"], config="summer_wild", fetcher=fetcher, bank=bank)
    assert [s.conversations for s in report.splits] == [3]
    ds = catalog.get("convai2")
    records = [r for _, _, r in read_raw("convai2", "summer_wild", fetcher=fetcher)]
    assert [(r.eval_score, r.profile_match) for r in records] == [(4, 1), (None, ""), (2, 0)]
    for i, r in enumerate(records):
        assert ds.from_conversation(ds.to_conversation(r, Part("summer_wild", "train"), i)) == r
    export(Corpus("convai2", "summer_wild", bank=bank), "source", tmp_path / "out")
    name = "summer_wild_evaluation_dialogs.json"
    assert (tmp_path / "out" / name).read_bytes() == (FIXTURES / "convai2" / name).read_bytes()
