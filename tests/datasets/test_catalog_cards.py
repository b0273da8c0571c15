"""The catalog: names, configs, splits and counts as fixed by the foundation issue, cards."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

import convbank.datasets
from convbank import catalog, registry
from convbank.datasets import BUILTIN, Dataset, Part
from convbank.datasets.casino import Casino
from convbank.errors import PluginError, UnknownDatasetError
from testsupport import dist_info

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
    """The built-in datasets first, in their order, then the plugins (here: the test suite's)."""
    assert catalog.names()[:5] == ["casino", "ccpe", "curiosity", "pec", "convai2"]
    assert catalog.names()[5:] == ["tsvdial"]


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
            assert {f.name for f in ds.files_for(Part(cfg.name, split))} <= names


def test_union_config_reads_its_parts() -> None:
    pec = catalog.get("pec")
    assert [c.name for c in pec.stored_configs("all")] == ["happy", "offmychest"]
    assert [c.name for c in pec.stored_configs()] == ["happy", "offmychest"]
    parts = [pec.config(n).splits for n in ("happy", "offmychest")]
    assert pec.config("all").splits == {s: parts[0][s] + parts[1][s] for s in parts[0]}  # type: ignore[operator]


def test_only_tolokers_lacks_a_published_checksum() -> None:
    missing = {f.name for ds in catalog.catalog for f in ds.files if f.sha256 is None}
    assert missing == {"data_tolokers.json"}
    fact_db = catalog.get("curiosity").file("wiki_sql.sqlite.db")  # its Git LFS pointer's figures
    assert fact_db.sha256 == "3d598e6b546ea340d2f4632f221c63a70bc3f4baa7fec371cacc5b604e31dba5"
    assert fact_db.size == 365_248_512


def test_unknown_names_are_clear() -> None:
    with pytest.raises(
        UnknownDatasetError, match=r"unknown dataset 'nope'; known datasets: casino, ccpe, .*, tsvdial"
    ):
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


# ---------------------------------------------------------------------- plugins
def _fresh() -> registry.Registry[Dataset]:
    """A dataset registry loaded as the catalog is, from the current sys.path."""
    return registry.Registry("dataset", load=registry._load_datasets)


def test_a_plugin_is_found_through_its_entry_point() -> None:
    assert registry.datasets.origin("casino") == "convbank"
    assert registry.datasets.origin("tsvdial") == (
        "entry point tsvdial = convbank_tsvdial:TsvDial of group convbank.datasets "
        "(package convbank-tsvdial 0.1.0)"
    )
    tsvdial = catalog.get("tsvdial")
    assert [c.name for c in registry.checks if c.dataset == "tsvdial"] == ["tsvdial.alternation"]
    assert [t.name for t in registry.tasks if t.dataset == "tsvdial"] == ["tsvdial-intents"]
    assert tsvdial.parts() == [("default", "train"), ("default", "test")]


def test_built_ins_declared_as_entry_points_are_not_registered_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """convbank's own metadata declares no built-in, but a stale install of an older convbank
    may list them as entry points: each still loads once, by import."""
    lines = "\n".join(f"{spec.split(':')[0].rsplit('.', 1)[1]} = {spec}" for spec in BUILTIN)
    monkeypatch.syspath_prepend(str(dist_info(tmp_path, "convbank_copy", f"[convbank.datasets]\n{lines}\n")))
    fresh = _fresh()
    assert fresh.names() == catalog.names()
    assert {fresh.origin(n) for n in fresh.names()[:5]} == {"convbank"}


def test_a_plugin_taking_a_built_in_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "rival.py"
    package.write_text(
        "from convbank.datasets.casino import Casino\n\nclass Rival(Casino):\n    pass\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(
        str(dist_info(tmp_path, "rival", "[convbank.datasets]\ncasino = rival:Rival\n"))
    )
    with pytest.raises(PluginError) as info:
        _fresh().names()
    assert str(info.value) == (
        "a dataset named 'casino' is already registered (from convbank); entry point casino = rival:Rival "
        "of group convbank.datasets (package rival 1.0) registers another — uninstall one of them or rename it"
    )
    assert info.value.exit_code == 5 and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("missing_module:Thing", "cannot be loaded: ModuleNotFoundError: No module named 'missing_module'"),
        ("json:dumps", "is not a convbank.datasets.Dataset (class or instance)"),
    ],
)
def test_a_broken_plugin_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, problem: str
) -> None:
    monkeypatch.syspath_prepend(
        str(dist_info(tmp_path, "broken", f"[convbank.datasets]\nbroken = {value}\n"))
    )
    with pytest.raises(PluginError) as info:
        _fresh().names()
    message = str(info.value)
    assert message.startswith(f"entry point broken = {value} of group convbank.datasets (package broken 1.0)")
    assert problem in message and "\n" not in message


OLD_CONTRACT = {
    "config and split as two strings": (
        "class Old(Casino):\n"
        "    def read(self, paths, config, split):\n"
        "        return super().read(paths, Part(config, split))\n",
        "old.Old.read takes (paths, config, split) (config and split as two strings: the older "
        "contract); a dataset's read takes (paths, part), part being one convbank.datasets.Part "
        "(part.config, part.split) (see docs/adding-a-dataset.md)",
    ),
    "a presentation hook on the dataset": (
        "class Old(Casino):\n    def chat_side(self, conversation):\n        return 'mturk_agent_1'\n",
        "old.Old defines the presentation hook chat_side on the dataset (in Old), where nothing asks "
        "for it; move it to a convbank.datasets.Presentation subclass and set presentation_class to "
        "it (see docs/adding-a-dataset.md)",
    ),
    "a presentation inherited": (
        "from convbank.datasets.casino.present import CasinoPresentation\n\n"
        "class Old(CasinoPresentation, Casino):\n    pass\n",
        "old.Old inherits its presentation (convbank.datasets.casino.present.CasinoPresentation); a "
        "dataset holds it instead: drop that base class and set presentation_class = it on Old "
        "(see docs/adding-a-dataset.md)",
    ),
}


@pytest.mark.parametrize("case", list(OLD_CONTRACT))
def test_a_plugin_of_the_older_dataset_contract_is_refused_in_one_line(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset written against the contract before presentation was a held object and
    methods took a Part would half work (hooks silently ignored, a TypeError deep in a
    build): its registration is refused, naming the entry point and what to change."""
    body, problem = OLD_CONTRACT[case]
    sys.modules.pop("old", None)  # each case imports its own module old
    (tmp_path / "old.py").write_text(
        f"from convbank.datasets import Part\nfrom convbank.datasets.casino import Casino\n\n{body}\n"
        "Old.name = 'old'\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(dist_info(tmp_path, "old", "[convbank.datasets]\nold = old:Old\n")))
    with pytest.raises(PluginError) as info:
        _fresh().names()
    assert str(info.value) == (
        f"entry point old = old:Old of group convbank.datasets (package old 1.0): {problem}"
    )
    old = importlib.import_module("old")
    with pytest.raises(PluginError) as info:
        registry.Registry("dataset", accept=registry._dataset).register(old.Old)
    assert str(info.value) == f"convbank.registry: {problem}"
    sys.modules.pop("old")


def test_every_dataset_package_is_listed_once_in_builtin() -> None:
    """The built-ins are found one way, :data:`convbank.datasets.BUILTIN` (no package scan,
    no entry points of convbank's own): a package of ``convbank.datasets`` missing from it
    would never load, so each one is there, in catalog order, and convbank's metadata
    declares none of them."""
    import tomllib

    folder = Path(convbank.datasets.__file__).parent
    packages = sorted(p.name for p in folder.iterdir() if (p / "__init__.py").is_file())
    assert sorted(spec.split(":")[0].rsplit(".", 1)[1] for spec in BUILTIN) == packages
    assert catalog.names()[:5] == ["casino", "ccpe", "curiosity", "pec", "convai2"]
    pyproject = tomllib.loads((folder.parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "convbank.datasets" not in pyproject["project"]["entry-points"]


def test_engines_are_registered_like_datasets() -> None:
    from convbank.engines import Engine, SqlEngine
    from convbank.engines.local import LocalEngine
    from convbank.engines.spark import SparkEngine

    assert registry.engines.names() == ["local", "spark"]
    local = registry.engines.get("local").from_options({"master": "ignored"})
    spark = registry.engines.get("spark").from_options({"master": "local[1]", "shards": 3})
    assert isinstance(local, LocalEngine) and isinstance(local, Engine) and not isinstance(local, SqlEngine)
    assert isinstance(spark, SparkEngine) and isinstance(spark, SqlEngine)
    assert (spark.master, spark.shards_per_file) == ("local[1]", 3)
    with pytest.raises(UnknownDatasetError, match="unknown engine 'dask'; known engines: local, spark"):
        registry.engines.get("dask")


def test_one_rule_for_config_and_split_names() -> None:
    pec, convai2 = catalog.get("pec"), catalog.get("convai2")
    assert pec.parts() == [(c, s) for c in ("happy", "offmychest") for s in ("train", "valid", "test")]
    assert pec.parts("all", "valid") == [("happy", "valid"), ("offmychest", "valid")]
    assert convai2.parts(split="train") == [
        (c, "train") for c in ("summer_wild", "tolokers", "intermediate", "volunteers")
    ]
    with pytest.raises(
        UnknownDatasetError, match=r"^pec has no split 'dev'; known splits: train, valid, test$"
    ):
        pec.parts("all", "dev")
    with pytest.raises(
        UnknownDatasetError, match="pec has no config 'sad'; known configs: happy, offmychest, all"
    ):
        pec.parts("sad")
    assert pec.count_problem(Part("happy", "valid"), 19829) is None
    assert pec.count_problem(Part("happy", "valid"), 3) == "happy/valid has 3 conversations; 19,829 published"
    assert pec.count_problem(Part("happy", "valid"), 1) == "happy/valid has 1 conversation; 19,829 published"
    assert (
        convai2.count_problem(Part("tolokers", "train"), 3)
        == "tolokers/train has 3 conversations; 3,127 published"
    )


def test_a_builtin_is_found_without_loading_the_rest() -> None:
    """Opening one dataset imports its package only (no other dataset, no plugin scan):
    the registry loads everything when a listing or an unknown name needs it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from convbank import catalog\n"
        "catalog.get('casino')\n"
        "print(sorted(m for m in sys.modules if m.startswith('convbank.datasets.') and m.count('.') == 2 and '._' not in m))\n"
        "catalog.names()\n"
        "print(len([m for m in sys.modules if m.startswith('convbank.datasets.') and m.count('.') == 2 and '._' not in m]) >= 5)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["['convbank.datasets.casino']", "True"]
