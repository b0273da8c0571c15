"""The ``source`` export reads a config's side table rows with its names quoted whatever they
hold: a (plugin) config named ``x' OR '1'='1`` is a name, not SQL. Before: the name was put
into the query as it was, so such a config read every config's rows (38 of PEC's personas, not
none), ``happy' --`` read happy's, and one holding a lone ``'`` was a query error taken as
"not built", 3 of 3 names."""

from __future__ import annotations

from pathlib import Path

import pytest

import convbank
from convbank._wording import shown
from convbank.export.source import side_reader
from convbank.store import Bank


def test_a_configs_name_holding_a_quote_is_a_name_in_the_side_tables_query(built: Bank) -> None:
    pec = convbank.load("pec")
    happy = side_reader(pec, "happy")("pec_personas")
    assert happy is not None and happy.num_rows > 0
    every = pec.sql("SELECT count(*) AS n FROM pec_personas WHERE dataset = 'pec'")["n"][0].as_py()
    assert happy.num_rows < every
    assert side_reader(pec, "x' OR '1'='1")("pec_personas") is None
    assert side_reader(pec, "happy' --")("pec_personas") is None


def test_what_write_source_gives_is_the_files_it_wrote_in_the_export(tmp_path: Path) -> None:
    """A dataset's ``write_source`` or ``write_side`` giving what is not the files it wrote in
    the export's folder (None, a number, a path outside it, ``../x``) is the dataset's fault,
    an ``UndeclaredError`` the command line says in one line naming the plugin, exit 1
    (before: a ``TypeError`` or ``ValueError`` traceback from the export's listing; 2 of 2 runs
    each of 6 values)."""
    from convbank.datasets._base import UndeclaredError
    from convbank.export.source import files_written

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "ok.tsv").write_text("a\n", encoding="utf-8")
    (tmp_path / "outside.tsv").write_text("b\n", encoding="utf-8")
    assert files_written("odd", "write_source", [tmp_path / "out" / "ok.tsv"], tmp_path / "out") == [
        tmp_path / "out" / "ok.tsv"
    ]
    gave = {
        None: "a NoneType, not the files it wrote",
        5: "an int, not the files it wrote",
        "x.tsv": "a str, not the files it wrote",
        (7,): "an int, not a file it wrote in the export's folder",
        (
            str(tmp_path / "outside.tsv"),
        ): f"{shown(str(tmp_path / 'outside.tsv'))}, not a file it wrote in the export's folder",
        ("../x",): "'../x', not a file it wrote in the export's folder",
        (
            str(tmp_path / "out" / "never.tsv"),
        ): f"{shown(str(tmp_path / 'out' / 'never.tsv'))}, not a file it wrote in the export's folder",
    }
    for value, said in gave.items():
        with pytest.raises(UndeclaredError) as caught:
            files_written("odd", "write_side", value, tmp_path / "out")
        assert (str(caught.value), caught.value.dataset) == (f"write_side gave {said}", "odd")


def test_a_long_path_a_plugin_gave_is_shown_cut_saying_so(tmp_path: Path) -> None:
    """Before: a hostile path of 300 characters was shown cut at 80 with nothing to say it
    was cut (``{...!r:.80}``), 1 of 1; now cut at 79 and ``…``, by the one helper that every
    message showing a shortened value uses (:func:`convbank._wording.shown`)."""
    from convbank.datasets._base import UndeclaredError
    from convbank.export.source import files_written

    (tmp_path / "out").mkdir()
    far = "/" + "x" * 299
    with pytest.raises(UndeclaredError) as caught:
        files_written("odd", "write_side", [far], tmp_path / "out")
    assert (
        str(caught.value) == "write_side gave '/" + "x" * 77 + "…, not a file it wrote in the export's folder"
    )
    assert shown(far, 10) == "'/xxxxxxx…" and shown("short") == "'short'"
    assert shown(10**5000) == "an int (not shown)"
