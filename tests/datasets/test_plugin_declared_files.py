"""A plugin's declaration is checked as it is loaded: a source file's size, sha256 or URL that
no download or source could be checked against, a file that is no ``SourceFile``, two files of
one name, configs that are no tuple of ``ConfigSpec`` (or none, or two of one name), a split's
count that is no count, a union's part that is no other config, a card field that is no text,
is a :class:`~convbank.errors.PluginError` naming the plugin and the field in one line, exit 5,
while the built-in datasets still fetch and build (before: a size of ``-5`` was taken and the
file used, a sha256 of ``'ZZ'`` or in capitals blamed the publisher's file as changed, exit 2,
two files of one name failed the build with a ``KeyError``, exit 1; configs of ``None``, a
title of ``None`` were tracebacks from ``list``, ``info`` or ``build``, exit 1, no config or a
self-union built nothing, exit 3, and two configs of one name were built twice)."""

from __future__ import annotations

import http.server
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from convbank import registry
from convbank.build import source_paths
from convbank.datasets import ConfigSpec, Presentation, SourceFile
from convbank.datasets._base import UndeclaredError
from convbank.errors import PluginError
from convbank.fetch import Fetcher
from testsupport import PLUGINS, SHARED, convbank_with_plugins, plugin

WHERE = "entry point bad = badplugin:Bad: badplugin.Bad: "


def _tsvdial() -> Any:
    sys.path.insert(0, str(PLUGINS))
    try:
        from convbank_tsvdial import TsvDial
    finally:
        sys.path.remove(str(PLUGINS))
    return TsvDial


def _plugin(files: object) -> type:
    return type("Bad", (_tsvdial(),), {"files": files, "__module__": "badplugin"})


def _train(**fields: object) -> object:
    return msgspec.structs.replace(_tsvdial().files[0], **fields)


SHA = "34b080e610bffb059748873a2875d960a673595c8bb0f64046970dc200dcb456"
FIELDS = [
    ("size", -5, "a whole number of bytes from 0, or None where it is not known"),
    ("size", True, "a whole number of bytes from 0, or None where it is not known"),
    ("size", 2.5, "a whole number of bytes from 0, or None where it is not known"),
    ("size", "12", "a whole number of bytes from 0, or None where it is not known"),
    ("sha256", "ZZ", "64 lowercase hexadecimal digits, or None where the publisher gives none"),
    ("sha256", SHA.upper(), "64 lowercase hexadecimal digits, or None where the publisher gives none"),
    ("sha256", SHA + "0", "64 lowercase hexadecimal digits, or None where the publisher gives none"),
    ("sha256", b"x", "64 lowercase hexadecimal digits, or None where the publisher gives none"),
    ("url", None, "text (the publisher's URL)"),
]


@pytest.mark.parametrize(("field", "value", "expected"), FIELDS, ids=[f"{f}={v!r:.12}" for f, v, _ in FIELDS])
def test_a_declared_field_no_file_can_be_checked_against_is_a_plugin_error(
    field: str, value: object, expected: str
) -> None:
    with pytest.raises(PluginError) as caught:
        registry._dataset(_plugin((_train(**{field: value}),)), "entry point bad = badplugin:Bad")
    assert str(caught.value) == (
        f"{WHERE}source file 'tsvdial_train.tsv': its {field} {value!r} is not {expected}; fix it"
    )


def test_files_that_are_not_source_files_or_share_a_name_are_a_plugin_error() -> None:
    train, test = _tsvdial().files
    said = {}
    for key, files in {
        "dup": (train, msgspec.structs.replace(test, name=train.name)),
        "text": (train, "tsvdial_test.tsv"),
        "not-a-tuple": "tsvdial_train.tsv",
    }.items():
        with pytest.raises(PluginError) as caught:
            registry._dataset(_plugin(files), "entry point bad = badplugin:Bad")
        said[key] = str(caught.value)
    assert said == {
        "dup": f"{WHERE}two source files are named 'tsvdial_train.tsv'; a name is one file of the cache; rename one",
        "text": f"{WHERE}a source file is a str, not a SourceFile: 'tsvdial_test.tsv'; fix it",
        "not-a-tuple": f"{WHERE}its files are a str, not a tuple of SourceFile; fix them",
    }


def test_a_plugin_declaring_a_bad_size_is_one_line_exit_5_and_the_built_ins_still_fetch(
    tmp_path: Path,
) -> None:
    plugin(
        tmp_path,
        "badsrc",
        "[convbank.datasets]\nbadsrc = badsrc:BadSrc\n",
        badsrc=(
            "import msgspec\nfrom convbank_tsvdial import TsvDial\n\nclass BadSrc(TsvDial):\n    name = 'badsrc'\n"
            "    files = (msgspec.structs.replace(TsvDial.files[0], size=-5), *TsvDial.files[1:])\n"
        ),
    )
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    for args in (["list"], ["fetch", "badsrc", "--source", str(samples)]):
        done = convbank_with_plugins(tmp_path / "home", *args, path=(PLUGINS, tmp_path))
        assert (done.returncode, done.stderr) == (
            5,
            "error: entry point badsrc = badsrc:BadSrc of group convbank.datasets (package badsrc 1.0): "
            "badsrc.BadSrc: source file 'tsvdial_train.tsv': its size -5 is not a whole number of bytes "
            "from 0, or None where it is not known; fix it\n",
        ), args
    done = convbank_with_plugins(
        tmp_path / "home", "fetch", "casino", "--source", str(SHARED / "casino"), path=(PLUGINS, tmp_path)
    )
    assert done.returncode == 0, done.stderr
    assert "casino_train.json" in done.stdout


def _configs(*configs: object) -> dict[str, object]:
    return {"configs": configs}


_SPLITS = {"train": 3, "test": 2}
DECLARED = [
    ({"configs": None}, "its configs are a NoneType, not a tuple of ConfigSpec; fix them"),
    (
        {"configs": property(lambda self: ())},
        "its configs are a property, not a tuple of ConfigSpec; fix them",
    ),
    (_configs(), "it declares no config; declare at least one ConfigSpec"),
    (_configs("default"), "a config is a str, not a ConfigSpec: 'default'; fix it"),
    (
        _configs(
            ConfigSpec(name="a", description="x", splits=_SPLITS),
            ConfigSpec(name="a", description="y", splits=_SPLITS),
        ),
        "two configs are named 'a'; rename one",
    ),
    (
        _configs(ConfigSpec(name="a", description="x", splits=None)),  # type: ignore[arg-type]
        "config 'a': its splits None are not split names with their published counts; fix them",
    ),
    (
        _configs(ConfigSpec(name="a", description="x", splits={})),
        "config 'a': its splits {} are not split names with their published counts; fix them",
    ),
    (
        _configs(ConfigSpec(name="a", description=None, splits=_SPLITS)),  # type: ignore[arg-type]
        "config 'a': its description None is not text; fix it",
    ),
    (
        _configs(ConfigSpec(name="a", description="x", splits={"train": -3})),
        "config 'a': split 'train': its count -3 is not a whole number of conversations from 0, or None "
        "where none is published; fix it",
    ),
    (
        _configs(ConfigSpec(name="a", description="x", splits={"train": 2.5})),  # type: ignore[dict-item]
        "config 'a': split 'train': its count 2.5 is not a whole number of conversations from 0, or None "
        "where none is published; fix it",
    ),
    (
        _configs(ConfigSpec(name="a", description="x", splits=_SPLITS, union_of=("a",))),
        "config 'a': its part (union_of) 'a' is not another config of the dataset that is no union; fix it",
    ),
    (
        _configs(
            ConfigSpec(name="a", description="x", splits=_SPLITS),
            ConfigSpec(name="u", description="x", splits=_SPLITS, union_of=("a", "nope")),
        ),
        "config 'u': its part (union_of) 'nope' is not another config of the dataset that is no union; fix it",
    ),
    ({"title": None}, "its title None is not text; fix it"),
    ({"version": 3}, "its version 3 is not text; fix it"),
    ({"raw_type": None}, "its raw_type None is not a msgspec.Struct class; fix it"),
    ({"raw_type": dict}, "its raw_type <class 'dict'> is not a msgspec.Struct class; fix it"),
    (
        {"presentation_class": None},
        "its presentation_class None is not a convbank.datasets.Presentation class; fix it",
    ),
    (
        {"optional_files": ("nope.tsv",)},
        "its optional file 'nope.tsv' is not one of the source files it declares (files); fix it",
    ),
    (
        {"optional_files": "tsvdial_train.tsv"},
        "its optional_files are a str, not a tuple of file names; fix them",
    ),
    (
        {"presentation_class": type("Shown", (Presentation,), {"example_views": "turns"})},
        "its presentation Shown's example_views 'turns' is not a tuple, as Presentation's is; fix it",
    ),
    (
        {"presentation_class": type("Shown", (Presentation,), {"viewer_filters": ["intent"]})},
        "its presentation Shown's viewer_filters ['intent'] is not a Mapping, as Presentation's is; fix it",
    ),
]


@pytest.mark.parametrize(("attrs", "said"), DECLARED, ids=[s[:30] for _, s in DECLARED])
def test_configs_or_a_card_no_command_can_use_are_a_plugin_error(attrs: dict[str, object], said: str) -> None:
    plugin = type("Bad", (_tsvdial(),), {**attrs, "__module__": "badplugin"})
    with pytest.raises(PluginError) as caught:
        registry._dataset(plugin, "entry point bad = badplugin:Bad")
    assert str(caught.value) == WHERE + said


def _escaping(url: str) -> Any:
    """A plugin whose ``files_for`` gives a file it does not declare, named to land outside
    ``CONVBANK_HOME``."""
    escaping = SourceFile(name="../../../escaped.tsv", url=url, sha256=None)
    plugin = type(
        "Bad", (_tsvdial(),), {"files_for": lambda self, part: [escaping], "__module__": "badplugin"}
    )
    return plugin()


def test_a_file_files_for_gives_and_the_dataset_does_not_declare_is_never_fetched(tmp_path: Path) -> None:
    """A name made of ``..`` in ``files_for``, not in ``files``, was downloaded outside
    ``CONVBANK_HOME`` with its lock (before: ``fetch`` wrote ``../../../escaped.tsv`` beside the
    home, exit 0, 2 of 2 runs): the fetch is refused as the dataset's fault, nothing written."""
    body = (PLUGINS / "convbank_tsvdial" / "samples" / "tsvdial_train.tsv").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    home = tmp_path / "a" / "b" / "home"
    home.mkdir(parents=True)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        dataset = _escaping(f"http://127.0.0.1:{httpd.server_address[1]}/tsvdial_train.tsv")
        try:
            with pytest.raises(UndeclaredError) as caught:
                source_paths(dataset, None, Fetcher(root=home, offline=False, progress=False))
        finally:
            httpd.shutdown()
    assert str(caught.value) == (
        "files_for(default/train) gave the source file '../../../escaped.tsv', which tsvdial does not "
        "declare in its files"
    )
    assert sorted(p.name for p in tmp_path.rglob("*") if not p.is_dir()) == []


def test_a_file_not_declared_is_one_line_naming_the_plugin(tmp_path: Path) -> None:
    plugin(
        tmp_path,
        "undeclared",
        "[convbank.datasets]\nundeclared = undeclared:Undeclared\n",
        undeclared=(
            "from convbank.datasets import SourceFile\nfrom convbank_tsvdial import TsvDial\n\n"
            "class Undeclared(TsvDial):\n    name = 'undeclared'\n\n    def files_for(self, part):\n"
            "        return [SourceFile(name='../x.tsv', url='http://127.0.0.1:9/x.tsv', sha256=None)]\n"
        ),
    )
    done = convbank_with_plugins(tmp_path / "home", "fetch", "undeclared", path=(PLUGINS, tmp_path))
    assert (done.returncode, done.stderr) == (
        1,
        "error: the code of entry point undeclared = undeclared:Undeclared of group convbank.datasets "
        "(package undeclared 1.0) failed (UndeclaredError: files_for(default/train) gave the source file "
        "'../x.tsv', which undeclared does not declare in its files); report it to its authors (--debug "
        "shows the traceback)\n",
    )


def test_files_for_that_gives_no_list_is_one_line_naming_the_plugin(tmp_path: Path) -> None:
    """Before: ``files_for`` returning ``5`` made ``fetch`` a ``TypeError: 'int' object is not
    iterable`` traceback from convbank's code, exit 1, no plugin named (2 of 2 runs)."""
    plugin(
        tmp_path,
        "nolist",
        "[convbank.datasets]\nnolist = nolist:NoList\n",
        nolist=(
            "from convbank_tsvdial import TsvDial\n\nclass NoList(TsvDial):\n    name = 'nolist'\n\n"
            "    def files_for(self, part):\n        return 5\n"
        ),
    )
    done = convbank_with_plugins(tmp_path / "home", "fetch", "nolist", path=(PLUGINS, tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "error: the code of entry point nolist = nolist:NoList of group convbank.datasets (package nolist 1.0) "
        "failed (UndeclaredError: files_for(default/train) gave 5, not a list of source files); report it to "
        "its authors (--debug shows the traceback)\n",
    )
