"""A selection of a dataset with no rows in a table (an imported chat corpus has no
annotations) reads that table as empty, with its columns, in every form, and exports it:
before, ``to_arrow``, ``to_polars`` and ``to_pandas`` of the selection's annotations were a
``ValueError`` traceback from the reordering (``zip() argument 2 is longer than argument
1``), and so were ``export --format parquet`` and ``croissant`` with ``--where``, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli


@pytest.fixture
def chats(tmp_path: Path) -> str:
    path = tmp_path / "chats.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"c{i}",
                    "messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}],
                }
            )
            + "\n"
            for i in range(6)
        ),
        encoding="utf-8",
    )
    convbank.import_conversations(path, name="chats")
    return "chats"


@pytest.mark.parametrize("how", ["select", "filter", "shuffle", "shard"])
def test_a_selections_empty_table_reads_as_empty(chats: str, how: str) -> None:
    corpus = convbank.load(chats)
    selection = {
        "select": lambda: corpus.select([4, 1, 1]),
        "filter": lambda: corpus.filter(lambda c: c.conversation_id < "c3"),
        "shuffle": lambda: corpus.shuffle(seed=3),
        "shard": lambda: corpus.shard(2, 1, contiguous=False),
    }[how]()
    whole = corpus.to_arrow("annotations")
    assert whole.num_rows == 0
    table = selection.to_arrow("annotations")
    assert table.num_rows == 0 and table.schema.names == whole.schema.names
    assert len(selection.to_polars("annotations")) == 0
    assert len(selection.to_pandas("annotations")) == 0
    assert selection.to_arrow("turns").num_rows == 2 * len(selection)


@pytest.mark.parametrize("fmt", ["parquet", "croissant"])
def test_an_export_with_where_of_a_dataset_without_annotations(chats: str, fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["export", chats, "--format", fmt, "-o", str(out), "--where", "conversation_id < 'c3'"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output  # before: exit 1, a ValueError traceback
    import pyarrow.parquet as pq

    (turns,) = [p for p in out.rglob("*turns.parquet")]
    assert pq.read_table(turns).num_rows == 6
    (annotations,) = [p for p in out.rglob("*annotations.parquet")]
    assert pq.read_table(annotations).num_rows == 0
