"""A plugin dataset's side tables (``extra_tables``) are named as its own,
``<dataset>_<lowercase letters, digits, _>``, or the build fails naming the plugin, exit 1,
nothing committed (before: a side table named ``../../escaped`` was written outside the
staging folder and committed, ``manifest.json`` replaced the bank's manifest by a folder,
``turns`` was committed as a split ``all`` of the turns table: each left the bank damaged,
every later command exit 4, 2 of 2 runs each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testsupport import PLUGINS, convbank_with_plugins, plugin

SAMPLES = PLUGINS / "convbank_tsvdial" / "samples"


@pytest.mark.parametrize("name", ["../../escaped", "manifest.json"])
def test_a_side_table_not_named_as_the_datasets_own_is_never_written(tmp_path: Path, name: str) -> None:
    site = tmp_path / "site"
    plugin(
        site,
        "sidetab",
        "[convbank.datasets]\nsidetab = sidetabmod:S\n",
        sidetabmod=(
            "import pyarrow as pa\nfrom convbank_tsvdial import TsvDial\n\nclass S(TsvDial):\n"
            "    name = 'sidetab'\n\n    def extra_tables(self, paths, config):\n"
            f"        yield {name!r}, pa.table({{'a': [1]}})\n"
        ),
    )
    home = tmp_path / "home"
    args = ("build", "sidetab", "--source", str(SAMPLES), "--no-verify")
    done = convbank_with_plugins(home, *args, path=(PLUGINS, site))
    assert (done.returncode, done.stderr) == (
        1,
        "error: the code of entry point sidetab = sidetabmod:S of group convbank.datasets (package sidetab 1.0) "
        f"failed building sidetab/default (ValueError: extra_tables gave a side table named {name!r}; expected "
        "sidetab_<lowercase letters, digits, _> other than sidetab_raw); nothing of it was kept — report it to "
        "its authors (--debug shows the traceback)\n",
    )
    assert sorted(p.name for p in (home / "bank").iterdir() if not p.name.startswith(".")) == []
    assert not (home / "escaped").exists()


class _Sides:
    """A dataset's stand-in for :func:`side_tables`: its name and what its extra_tables gives."""

    name = "sidetab"

    def __init__(self, tables: list[tuple[str, object]]) -> None:
        self.tables = tables

    def extra_tables(self, paths: object, config: str) -> object:
        return iter(self.tables)


def test_a_side_table_given_twice_is_the_plugins_fault() -> None:
    """Two side tables of one name are refused, never their rows written into one table (before:
    the same columns twice built one table of both tables' rows, exit 0; other columns a
    pyarrow ``Table schema does not match`` line; 2 of 2 runs each)."""
    import pyarrow as pa

    from convbank.engines._checked import side_tables

    one = pa.table({"a": [1]})
    for second in (one, pa.table({"b": ["x"]})):
        sides = _Sides([("sidetab_side", one), ("sidetab_side", second)])
        with pytest.raises(ValueError) as caught:
            list(side_tables(sides, {}, "default"))  # type: ignore[arg-type]
        assert str(caught.value) == "extra_tables gave sidetab_side twice; expected each side table once"
    assert [n for n, _ in side_tables(_Sides([("sidetab_a", one), ("sidetab_b", one)]), {}, "default")] == [  # type: ignore[arg-type]
        "sidetab_a",
        "sidetab_b",
    ]
