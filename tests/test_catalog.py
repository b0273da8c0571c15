"""The catalog: names, configs, splits and counts as fixed by the foundation issue, cards."""

from __future__ import annotations

import re

import pytest

from convbank import catalog
from convbank.datasets import Dataset
from convbank.datasets.casino import Casino
from convbank.errors import UnknownDatasetError

EXPECTED_SPLITS = {
    "casino": {"default": {"train": 900, "valid": 30, "test": 100}},
    "ccpe": {"default": {"train": 502}},
    "curiosity": {"default": {"train": 10287, "val": 1287, "test": 1287, "test_zero": 1187}},
    "pec": {
        "happy": {"train": 157195, "valid": 19829, "test": 22730},
        "offmychest": {"train": 123968, "valid": 16004, "test": 15324},
        "all": {"train": 281163, "valid": 35833, "test": 38054},
    },
    "convai2": {
        "summer_wild": {"train": 3495},
        "tolokers": {"train": 3127},
        "intermediate": {"train": 291},
        "volunteers": {"train": 1111},
    },
}
DEFAULT_CONFIG = {
    "casino": "default",
    "ccpe": "default",
    "curiosity": "default",
    "pec": "happy",
    "convai2": "summer_wild",
}


def test_catalog_names_in_order() -> None:
    assert catalog.names() == ["casino", "ccpe", "curiosity", "pec", "convai2"]


@pytest.mark.parametrize("name", list(EXPECTED_SPLITS))
def test_card_configs_and_files(name: str) -> None:
    ds = catalog.get(name)
    info = ds.describe()
    assert {c: v["splits"] for c, v in info["configs"].items()} == EXPECTED_SPLITS[name]
    assert ds.default_config == DEFAULT_CONFIG[name]
    for key in ("title", "description", "license", "citation", "homepage", "version"):
        assert isinstance(info[key], str) and info[key], key
    assert info["citation"].startswith("@") and info["homepage"].startswith("https://")
    assert info["files"], name
    for f in info["files"]:
        assert f["url"].startswith("https://") and f["url"].endswith(f["name"])
        assert f["sha256"] is None or re.fullmatch(r"[0-9a-f]{64}", f["sha256"])
    # every split of every config is served by files of the catalog
    names = {f.name for f in ds.files}
    for cfg in ds.stored_configs():
        for split in cfg.splits:
            assert {f.name for f in ds.files_for(cfg.name, split)} <= names


def test_union_config_reads_its_parts() -> None:
    pec = catalog.get("pec")
    assert [c.name for c in pec.stored_configs("all")] == ["happy", "offmychest"]
    assert [c.name for c in pec.stored_configs()] == ["happy", "offmychest"]
    parts = [pec.config(n).splits for n in ("happy", "offmychest")]
    assert pec.config("all").splits == {s: parts[0][s] + parts[1][s] for s in parts[0]}  # type: ignore[operator]


def test_only_tolokers_and_fact_db_lack_a_published_checksum() -> None:
    missing = {f.name for ds in catalog.catalog for f in ds.files if f.sha256 is None}
    assert missing == {"data_tolokers.json", "wiki_sql.sqlite.db"}


def test_unknown_names_are_clear() -> None:
    with pytest.raises(UnknownDatasetError, match=r"unknown dataset 'nope'; known datasets: casino, ccpe"):
        catalog.get("nope")
    with pytest.raises(UnknownDatasetError, match=r"casino has no config 'x'; known configs: default"):
        catalog.get("casino").config("x")
    with pytest.raises(
        UnknownDatasetError, match=r"casino/default has no split 'dev'; known splits: train, valid, test"
    ):
        catalog.get("casino").parts(split="dev")


def test_duplicate_registration_is_rejected() -> None:
    registry = catalog.Catalog()
    registry.register(Casino())
    with pytest.raises(ValueError, match="a dataset named 'casino' is already registered"):
        registry.register(Casino())
    assert len(registry) == 1 and "casino" in registry


def test_every_dataset_is_a_dataset() -> None:
    assert all(isinstance(ds, Dataset) for ds in catalog.catalog)
