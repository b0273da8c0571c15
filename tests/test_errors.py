"""The error tree: every class holds the facts its message states as attributes and its exit
code as a class attribute, the one thing the command line reads to exit; the facts survive
a trip through pickle (a worker process sends its errors back whole)."""

from __future__ import annotations

import errno
import pickle
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import convbank
from convbank import catalog, errors
from convbank.errors import ConvbankError

EXIT_CODES = {
    "ConvbankError": 1,
    "BuildError": 1,
    "DiskFullError": 1,
    "UnknownDatasetError": 2,
    "UnknownFieldError": 2,
    "ChecksumError": 2,
    "FormatError": 2,
    "QueryError": 2,
    "ExportError": 2,
    "ServeError": 2,
    "ScaffoldError": 2,
    "BenchError": 2,
    "MissingExtraError": 2,
    "SourceError": 3,
    "OfflineError": 3,
    "DownloadError": 3,
    "NotBuiltError": 4,
    "DamagedBankError": 4,
    "SchemaVersionError": 4,
    "ConversationNotFoundError": 4,
    "SetupError": 5,
    "PluginError": 5,
}
"""The exit codes of the command line, as ``convbank --help`` and the errors' module say."""

FACTS = {
    "ConvbankError": (),
    "UnknownDatasetError": ("kind", "name", "known"),
    "UnknownFieldError": ("name", "known"),
    "SourceError": ("dataset", "file", "path"),
    "OfflineError": ("dataset", "file", "path"),
    "DownloadError": ("dataset", "file", "path", "url"),
    "ChecksumError": ("path", "expected", "actual"),
    "FormatError": ("path", "line", "json_path", "record"),
    "NotBuiltError": ("dataset", "config", "split", "path"),
    "DamagedBankError": ("path",),
    "SchemaVersionError": ("path", "dataset", "built_by", "schema_version", "reads", "problem"),
    "ConversationNotFoundError": ("dataset", "conversation_id"),
    "QueryError": ("sql", "limit", "path"),
    "BuildError": ("path",),
    "ExportError": ("format", "path"),
    "ServeError": ("host", "port"),
    "ScaffoldError": ("name", "path"),
    "BenchError": ("task", "model", "path", "line", "split"),
    "MissingExtraError": ("module", "extra"),
    "SetupError": ("path", "variable"),
    "DiskFullError": ("path", "variable", "free"),
    "PluginError": ("path", "variable", "origin", "name"),
}

CLASSES = [getattr(errors, name) for name in errors.__all__]


def test_every_class_is_listed_once() -> None:
    assert {c.__name__ for c in CLASSES} == set(EXIT_CODES) == set(FACTS)
    assert all(issubclass(c, ConvbankError) for c in CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_class_holds_its_facts_and_its_exit_code(cls: type[ConvbankError]) -> None:
    assert cls.exit_code == EXIT_CODES[cls.__name__]
    assert cls.all_facts() == FACTS[cls.__name__]
    given = {fact: f"the {fact}" for fact in cls.all_facts()}
    error = cls("one line, as raised", **given)
    assert str(error) == "one line, as raised"
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls and str(back) == "one line, as raised"
    for fact in cls.all_facts():
        expected = tuple(given[fact]) if fact == "known" else given[fact]
        assert getattr(error, fact) == getattr(back, fact) == expected
    bare = cls("no facts given")
    assert all(getattr(bare, fact) is None for fact in cls.all_facts())
    with pytest.raises(TypeError) as info:
        cls("x", nonsense=1)
    listed = ", ".join(cls.all_facts()) or "none"
    assert str(info.value) == f"{cls.__name__} has no fact 'nonsense'; its facts: {listed}"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_command_line_exits_with_the_class_code(cls: type[ConvbankError]) -> None:
    """One mapping: ``ConvbankGroup`` prints the message and exits with ``exit_code``."""
    from convbank.cli.main import ConvbankGroup

    @click.group(cls=ConvbankGroup)
    def group() -> None:
        pass

    @group.command()
    def fail() -> None:
        raise cls("what went wrong, where")

    result = CliRunner().invoke(group, ["fail"])
    assert (result.exit_code, result.output) == (cls.exit_code, "error: what went wrong, where\n")


def test_an_unknown_dataset_names_what_was_asked_and_what_is_known() -> None:
    with pytest.raises(errors.UnknownDatasetError) as info:
        convbank.load("casion")
    assert (info.value.kind, info.value.name) == ("dataset", "casion")
    assert info.value.known == tuple(catalog.names())
    assert str(info.value).startswith("unknown dataset 'casion'; did you mean casino? known datasets: casino")
    with pytest.raises(errors.UnknownDatasetError) as info:
        catalog.get("ccpe").config("nope")
    assert (info.value.kind, info.value.name, info.value.known) == ("config", "nope", ("default",))


def test_a_missing_conversation_label_and_split_name_themselves(casino_home: object) -> None:
    corpus = convbank.load("casino")
    with pytest.raises(errors.ConversationNotFoundError) as found:
        corpus["no-such-id"]
    assert (found.value.dataset, found.value.conversation_id) == ("casino", "no-such-id")
    with pytest.raises(errors.UnknownFieldError) as field:
        corpus.filter(label="strategy:uv-prat")
    assert field.value.name == "strategy:uv-prat" and "strategy:uv-part" in (field.value.known or ())
    with pytest.raises(errors.NotBuiltError) as built:
        convbank.load("ccpe")
    assert built.value.dataset == "ccpe"


def test_a_full_disk_under_the_bank_is_a_disk_full_error(tmp_path: Path) -> None:
    from convbank.store.staging import disk_full

    error = disk_full(tmp_path, OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x")))
    assert isinstance(error, errors.DiskFullError) and error.exit_code == 1
    assert error.path == str(tmp_path / "x") and isinstance(error.free, int)
    assert str(error).startswith(f"{tmp_path / 'x'}: no space left on the device holding the bank (")
    assert disk_full(tmp_path, OSError(errno.EACCES, "Permission denied")) is None


def test_a_missing_extra_names_its_module_and_extra() -> None:
    with pytest.raises(errors.MissingExtraError) as info:
        errors.require("no_such_module_here", "hf", "this")
    assert (info.value.module, info.value.extra) == ("no_such_module_here", "hf")
    assert str(info.value) == (
        "this needs the 'no_such_module_here' library, which is not installed; "
        "install it with: pip install 'convbank[hf]'"
    )
