"""What an engine hands back is checked before the build writes any of it: a batch that is
not ``(split, tables)`` of a split the config has, or tables that are not the unified ones
and the dataset's raw table of their schemas, is one line naming the engine, exit 1, the
bank as it was (before: ``[("train", 5)]`` was a ``TypeError`` traceback from build.py, an
unknown split a ``KeyError``, no plugin named; a table named ``../../escaped`` was written
outside the staging folder and committed, every later command then saying the bank is
damaged, exit 4; 2 of 2 runs each)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from convbank.build import build
from convbank.engines import WrittenPiece
from convbank.engines.local import LocalEngine
from convbank.errors import BuildError
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import SHARED, convbank_with_plugins, plugin


def test_an_entry_point_engines_wrong_batches_are_one_line_naming_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    plugin(
        site,
        "wrongbatch",
        "[convbank.engines]\nwrongbatch = wrongbatchmod:Wrong\n",
        wrongbatchmod=(
            "class Wrong:\n    name = 'wrongbatch'\n\n    @classmethod\n    def from_options(cls, options):\n"
            "        return cls()\n\n    def config_batches(self, *args):\n        return [('train', 5)]\n"
        ),
    )
    args = ("build", "casino", "--source", str(SHARED / "casino"), "--engine", "wrongbatch")
    done = convbank_with_plugins(tmp_path / "home", *args, path=(site,))
    assert (done.returncode, done.stderr) == (
        1,
        "error: the code of entry point wrongbatch = wrongbatchmod:Wrong of group convbank.engines (package "
        "wrongbatch 1.0) failed building casino/default: it handed back a batch of train that is an int, not "
        "tables by name or a WrittenPiece; nothing of it was kept — report it to its authors\n",
    )


class _Altered(LocalEngine):
    """The local engine's batches, each changed by ``alter``."""

    def __init__(self, alter: Any) -> None:
        super().__init__(1)
        self.alter = alter

    def config_batches(self, *args: Any, **kwargs: Any) -> Any:
        return (self.alter(s, b) for s, b in super().config_batches(*args, **kwargs))


ALTERED = {
    "split": (
        lambda s, b: ("nosuch", b),
        "a batch of split 'nosuch', not one of the config's (train, valid, test)",
    ),
    "pair": (lambda s, b: (s, b, 3), "a tuple of 3, not a (split, batch) pair"),
    "escape": (
        lambda s, b: (s, {**b, "../../escaped": pa.table({"a": [1]})}),
        "a table named '../../escaped' in a batch of train, not one of conversations, participants, turns, "
        "annotations, casino_raw",
    ),
    "schema": (
        lambda s, b: (s, {**b, "turns": pa.table({"a": [1]})}),
        "a turns table in a batch of train not of the turns schema",
    ),
    "none": (lambda s, b: (s, {}), "a batch of train without its conversations table"),
}


def test_wrong_batches_are_refused_before_any_is_written(casino_home: Bank) -> None:
    before = casino_home.manifest_path.read_bytes()
    fetcher = Fetcher(sources=[SHARED], verify=False, progress=False)
    for alter, said in ALTERED.values():
        with pytest.raises(BuildError) as caught:
            build(["casino"], fetcher=fetcher, bank=casino_home, engine=_Altered(alter))
        assert str(caught.value) == (
            f"the code of engine {__name__}._Altered failed building casino/default: it handed back {said}; "
            "nothing of it was kept — report it to its authors"
        )
        assert casino_home.manifest_path.read_bytes() == before
        assert not (casino_home.root.parent / "escaped").exists()


ODD_ENGINE = """import os
MODE = os.environ['ODD_ENGINE']

class Odd:
    name = 5 if MODE == 'name' else 'odd'
    options = 5 if MODE == 'options' else ()

    @classmethod
    def from_options(cls, options):
        return None if MODE == 'none' else cls()

    def config_batches(self, *args):
        return iter(())

    def sql(self, query, *, bank):
        return 5
"""


@pytest.mark.parametrize(
    ("mode", "args", "said"),
    [
        (
            "none",
            ["build", "casino", "--engine", "odd", "--source", str(SHARED)],
            (1, "failed: from_options gave a NoneType, not an engine"),
        ),
        (
            "sql",
            ["query", "SELECT 1", "--engine", "odd"],
            (1, "failed: sql gave a value of type int, not a table"),
        ),
        (
            "options",
            ["build", "casino", "--engine", "odd", "--source", str(SHARED)],
            (5, "its options 5 are not a tuple of option names"),
        ),
        (  # before: registered as '5': 'unknown engine', exit 2 (2 of 2 runs)
            "name",
            ["build", "casino", "--engine", "odd", "--source", str(SHARED)],
            (5, "its name 5 cannot name an engine: it is an int, not text"),
        ),
    ],
)
def test_an_engine_that_makes_or_answers_no_engine_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, args: list[str], said: tuple[int, str]
) -> None:
    """Before: ``from_options`` giving ``None`` built with the local engine, exit 0; ``sql``
    giving ``5`` was an ``AttributeError`` traceback, and ``options = 5`` a ``TypeError`` one,
    exit 1 (2 of 2 runs each)."""
    site = tmp_path / "site"
    plugin(site, "odd", "[convbank.engines]\nodd = oddmod:Odd\n", oddmod=ODD_ENGINE)
    monkeypatch.setenv("ODD_ENGINE", mode)
    done = convbank_with_plugins(tmp_path / "home", *args, path=(site,))
    code, what = said
    origin = "entry point odd = oddmod:Odd of group convbank.engines (package odd 1.0)"
    line = f"the code of {origin} {what}; report it to its authors" if code == 1 else f"{origin}: {what}"
    assert (done.returncode, done.stderr) == (code, f"error: {line}\n")


class _Written(LocalEngine):
    """The local engine's batches, each written into the staging folder as a piece and
    handed back as a :class:`WrittenPiece` changed by ``alter``."""

    def __init__(self, alter: Any) -> None:
        super().__init__(1)
        self.alter = alter

    def config_batches(self, ds: Any, paths: Any, config: str, batch_size: int, staging: Any = None) -> Any:
        from convbank.store import Staging

        for number, (split, tables) in enumerate(
            super().config_batches(ds, paths, config, batch_size, staging)
        ):
            own = Staging(staging.root, ds.name, config)
            own.write_batch(split, tables, piece=number)
            own.close()
            ids = tables["conversations"].column("conversation_id").to_pylist()
            yield from self.alter(split, WrittenPiece(dict(own.rows), ids), own)


def _facts(piece: WrittenPiece, staging: Any, grow: int) -> dict[Any, Any]:
    from convbank.store.staging import file_facts

    facts = {k: file_facts(staging.path(*k), k[0]) for k in piece.rows}
    return {k: (sha, size + grow, footer, layout) for k, (sha, size, footer, layout) in facts.items()}


WRITTEN = {
    "unwritten": (
        lambda s, p, st: [(s, replace(p, rows={**p.rows, ("turns", s, 7): 3}))],
        "naming turns piece 7, a file it did not write in the staging folder",
    ),
    "twice": (
        lambda s, p, st: [(s, p), (s, p)],
        "naming conversations piece 0 again, a piece an earlier one named",
    ),
    "rows": (
        lambda s, p, st: [(s, replace(p, rows=5))],
        "whose rows are an int, not counts by (table, split, piece)",
    ),
    "count": (
        lambda s, p, st: [(s, replace(p, rows=dict.fromkeys(p.rows, -3)))],
        "counting -3 rows of conversations piece 0, not a number of rows",
    ),
    "ids": (
        lambda s, p, st: [(s, replace(p, ids=None))],
        "whose ids are a NoneType, not a list of conversation ids (strings)",
    ),
    "id": (
        lambda s, p, st: [(s, replace(p, ids=[5] * len(p.ids)))],
        "whose ids hold an int, not only conversation ids (strings)",
    ),
    "fewer": (
        lambda s, p, st: [(s, replace(p, ids=p.ids[:-1]))],
        "of 19 conversation ids counting 20 conversations",
    ),
    "hashes": (
        lambda s, p, st: [(s, replace(p, ids=[], hashes=b"xyz"))],
        "whose id hashes are 3 bytes, not eight bytes an id",
    ),
    "facts": (
        lambda s, p, st: [(s, replace(p, facts=dict.fromkeys(p.rows, 5)))],
        "whose facts of conversations piece 0 are an int, not (sha256, size, footer, layout)",
    ),
    "size": (
        lambda s, p, st: [(s, replace(p, facts=_facts(p, st, 1)))],
        "saying conversations piece 0 is 2,052 bytes, not the 2,051 it holds",
    ),
}


@pytest.mark.parametrize("mode", WRITTEN)
def test_written_pieces_are_checked_whole_before_the_build_counts_them(casino_home: Bank, mode: str) -> None:
    """A :class:`WrittenPiece` naming a file it never wrote, or a piece an earlier one named,
    or whose rows, ids, hashes or facts are not what it wrote, is one line naming the engine,
    exit 1, the bank as it was (before: the line named a staging path, exit 5 or 1, or a
    ``TypeError``/``ValueError`` traceback; 2 of 2 runs each)."""
    before = casino_home.manifest_path.read_bytes()
    fetcher = Fetcher(sources=[SHARED], verify=False, progress=False)
    alter, said = WRITTEN[mode]
    with pytest.raises(BuildError) as caught:
        build(["casino"], fetcher=fetcher, bank=casino_home, engine=_Written(alter), batch_size=20)
    assert str(caught.value) == (
        f"the code of engine {__name__}._Written failed building casino/default: it handed back a written "
        f"piece of train {said}; nothing of it was kept — report it to its authors"
    )
    assert casino_home.manifest_path.read_bytes() == before
