"""Export formats are registered objects: each module declares its :class:`Format` beside its
writer, and everything else (``FORMATS``, the dispatch, ``--format`` and ``--as`` help, the
docs table, the self-check's skip list) reads the registry. A format defined outside convbank
(``tests/format_plugins/convbank_tsvturns``, registered by a ``convbank.formats`` entry point
in its ``*.dist-info``) is exported and listed like the built-in ones; a broken one is one line.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from convbank import registry
from convbank.errors import ExportError, PluginError
from convbank.export import FORMATS, Format, _registry, _run, export, formats
from convbank.query import load
from convbank.store import Bank
from testsupport import PLUGINS, ROOT, convbank_with_plugins, dist_info

FORMAT_PLUGINS = Path(__file__).resolve().parents[1] / "format_plugins"
"""A sys.path entry holding the ``tsv`` format's package and metadata (off the path by default,
so that every other test sees convbank's own formats only)."""
sys.path.insert(0, str(ROOT / "docs" / "scripts"))
from formats_table import IMPORT_PAGE, PAGE, block, import_table, table, with_import_table, with_table  # noqa: E402


def _fresh() -> registry.Registry[Format]:
    """A format registry loaded as :data:`formats` is, from the current sys.path."""
    return registry.Registry("format", load=_registry._load_formats)


def test_the_built_in_formats_in_order_each_declared_by_its_module() -> None:
    assert FORMATS == (
        "source",
        "hf",
        "convokit",
        "parlai",
        "chat",
        "sharegpt",
        "jsonl",
        "parquet",
        "csv",
        "croissant",
    )
    assert {f.name: f.writer.__module__.rsplit(".", 1)[1] for f in formats if f.writer} == {
        "source": "source",
        "hf": "hf",
        "convokit": "convokit",
        "parlai": "parlai",
        "chat": "chat",
        "sharegpt": "sharegpt",
        "jsonl": "tables",
        "parquet": "tables",
        "csv": "tables",
        "croissant": "croissant",
    }
    assert {formats.origin(n) for n in FORMATS} == {"convbank"}
    assert [(f.name, f.extra, f.requires) for f in formats if f.extra] == [
        ("hf", "hf", "datasets"),
        ("croissant", "croissant", "mlcroissant"),
    ]
    assert _registry.sided() == ["chat", "parlai", "sharegpt"]
    assert {f.name: f.reader.__module__.rsplit(".", 1)[1] for f in formats if f.reader} == {
        "hf": "hf",
        "convokit": "convokit",
        "parlai": "parlai",
        "chat": "chat",
        "sharegpt": "sharegpt",
        "jsonl": "tables",
        "parquet": "tables",
        "table": "table",
    }
    assert formats.get("table").writer is None and "table" not in FORMATS
    assert [f.name for f in formats if f.plan is None and f.writer] == ["source"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"name": "Tsv"},
            "a format's name is lower-case letters, digits, '-' and '_', starting with a letter; not 'Tsv'",
        ),
        (
            {"name": "tsv", "extra": "tsv"},
            "format 'tsv' names an extra and the module it installs together, or neither "
            "(extra='tsv', requires=None)",
        ),
    ],
)
def test_a_bad_declaration_is_one_line(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        Format(summary="s", writes="w", read_with="r", writer=formats.get("csv").writer, **fields)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_the_plans_name_what_the_writers_write(built: Bank, tmp_path: Path) -> None:
    """Each plan, checked before the work, is what its writer writes (source's paths, the
    publisher's names, are checked once written)."""
    from convbank.export._core import Selection

    corpus = load("casino", split="valid")
    for f in formats:
        if f.plan is None:
            continue
        written = export(corpus, f.name, tmp_path / f.name)
        assert sorted(f.plan(Selection(corpus))) == sorted(
            p.relative_to(tmp_path / f.name).as_posix() for p in written
        ), f.name
    assert formats.get("hf").plan(Selection(corpus)) == ["casino/default"]  # type: ignore[misc]


def test_the_self_check_skips_a_format_whose_extra_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "datasets" else real(n, *a))
    assert [f.name for f in formats if not f.available()] == ["hf"]


def test_the_docs_table_is_the_registrys() -> None:
    """``python docs/scripts/formats_table.py`` writes it; mkdocs writes it again at build."""
    page = PAGE.read_text(encoding="utf-8")
    assert block(page) == block(with_table(page))
    assert table().splitlines()[2] == (
        "| `source` | the publisher's files under their published names, byte for byte (the proof of "
        "losslessness; see below) | the publisher's own code |  |  |"
    )
    assert "| `chat` |" in table() and table().count("\n") == 2 + len(FORMATS)


def test_the_import_guides_table_is_the_registrys() -> None:
    """A row per format convbank reads, with what it does not carry, as each declares it."""
    page = IMPORT_PAGE.read_text(encoding="utf-8")
    assert page == with_import_table(page)
    rows = import_table().splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == [
        "| `hf`",
        "| `convokit`",
        "| `parlai`",
        "| `chat`",
        "| `sharegpt`",
        "| `jsonl`",
        "| `parquet`",
        "| `table`",
    ]
    assert (
        rows[5]
        == "| `jsonl` | anything | nothing: the bank's conversations exactly (the dataset takes the import's name) |"
    )


# ---------------------------------------------------------------------- a format from another package
def test_a_plugin_format_is_listed_and_written_by_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = [PLUGINS, FORMAT_PLUGINS]
    shown = convbank_with_plugins(home, "export", "--help", path=path)
    assert shown.returncode == 0, shown.stderr
    help_text = " ".join(shown.stdout.split())
    assert "[source|hf|convokit|parlai|chat|sharegpt|jsonl|parquet|csv|croissant|tsv]" in help_text
    assert (
        "croissant: Parquet plus Croissant JSON-LD (DIR/<dataset>_croissant); tsv: the turns as " in help_text
    )
    built = convbank_with_plugins(
        home, "build", "tsvdial", "--source", str(PLUGINS / "convbank_tsvdial" / "samples"), path=path
    )
    assert built.returncode == 0, built.stderr
    out = tmp_path / "out"
    exported = convbank_with_plugins(
        home, "export", "tsvdial", "--split", "test", "--format", "tsv", "-o", str(out), path=path
    )
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"{out / 'tsvdial_default_test.turns.tsv'}\n"
    lines = (out / "tsvdial_default_test.turns.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[:2] == [
        "conversation_id\tturn_index\tparticipant_id\ttext",
        "t001\t0\tcustomer\tHi, is there parking near the restaurant?",
    ]
    assert len(lines) == 1 + 7
    again = convbank_with_plugins(
        home, "export", "tsvdial", "--format", "tsv", "--as", "agent", "-o", str(out), path=path
    )
    assert (again.returncode, again.stderr) == (
        2,
        "error: --as applies to the chat, parlai and sharegpt formats, not tsv\n",
    )


def test_a_plugin_formats_plan_is_checked_before_the_work(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(FORMAT_PLUGINS))
    fresh = _fresh()
    monkeypatch.setattr(_registry, "formats", fresh)
    monkeypatch.setattr(_run, "formats", fresh)
    assert fresh.names()[-1] == "tsv" and fresh.origin("tsv") == (
        "entry point tsv = convbank_tsvturns:FORMAT of group convbank.formats (package convbank-tsvturns 0.1.0)"
    )
    (tmp_path / "casino_default_valid.turns.tsv").write_text("mine\n", encoding="utf-8")
    with pytest.raises(ExportError) as info:
        export(load("casino", split="valid"), "tsv", tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'casino_default_valid.turns.tsv'} exists and convbank did not write it there; the tsv "
        "export of casino (default/valid) would replace it: pass --overwrite (overwrite=True), or export "
        "into another folder"
    )
    (written,) = export(load("casino", split="valid"), "tsv", tmp_path, overwrite=True)
    assert len(written.read_text(encoding="utf-8").splitlines()) == 1 + sum(
        c.num_turns for c in load("casino", split="valid")
    )


@pytest.mark.parametrize(
    ("value", "module", "problem"),
    [
        (
            "missing_module:FORMAT",
            None,
            "cannot be loaded: ModuleNotFoundError: No module named 'missing_module'",
        ),
        ("rival_format:NOT_A_FORMAT", "NOT_A_FORMAT = 'csv'\n", "is not a convbank.export.Format: 'csv'"),
    ],
)
def test_a_broken_format_plugin_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, module: str | None, problem: str
) -> None:
    if module is not None:
        (tmp_path / "rival_format.py").write_text(module, encoding="utf-8")
    monkeypatch.syspath_prepend(
        str(dist_info(tmp_path, "rival_format", f"[convbank.formats]\nbroken = {value}\n"))
    )
    with pytest.raises(PluginError) as info:
        _fresh().names()
    assert (
        str(info.value)
        == f"entry point broken = {value} of group convbank.formats (package rival_format 1.0) {problem}"
    )


def test_a_format_plugin_taking_a_built_in_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "clash.py").write_text(
        "import dataclasses\nfrom convbank.export import formats\n\n"
        "FORMAT = dataclasses.replace(formats.get('jsonl'), summary='mine')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(
        str(dist_info(tmp_path, "clash", "[convbank.formats]\njsonl = clash:FORMAT\n"))
    )
    with pytest.raises(PluginError) as info:
        _fresh().names()
    assert str(info.value) == (
        "a format named 'jsonl' is already registered (from convbank); entry point jsonl = clash:FORMAT of "
        "group convbank.formats (package clash 1.0) registers another — uninstall one of them or rename it"
    )


def test_a_broken_format_plugin_stops_export_only_in_one_line(tmp_path: Path) -> None:
    """The other commands never load the formats: ``--version`` and ``list`` still answer."""
    dist_info(tmp_path / "path", "rival", "[convbank.formats]\nbroken = missing_module:FORMAT\n")
    path = [tmp_path / "path"]
    shown = convbank_with_plugins(tmp_path / "home", "export", "--help", path=path)
    assert (shown.returncode, shown.stdout) == (5, "")
    assert shown.stderr == (
        "error: entry point broken = missing_module:FORMAT of group convbank.formats (package rival 1.0) "
        "cannot be loaded: ModuleNotFoundError: No module named 'missing_module'\n"
    )
    assert convbank_with_plugins(tmp_path / "home", "--version", path=path).returncode == 0
    assert convbank_with_plugins(tmp_path / "home", "list", "--json", path=path).returncode == 0
