"""A plugin's dataset, config and split names are each one folder of the bank: one holding
``/``, a backslash, a control character (a newline, NUL), or that is ``.`` or ``..``, is a
:class:`~convbank.errors.PluginError` naming the plugin as it is loaded, one line and exit 5
from every command (before: a ``ValueError`` traceback from ``store.snapshot.partition`` in
``build``, and ``..`` built as a config that ``export --format hf`` then refused); so is
``import --config ..``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from convbank import registry
from convbank.cli.main import cli
from convbank.datasets import ConfigSpec
from convbank.errors import PluginError
from testsupport import PLUGINS, ROOT, convbank_with_plugins, plugin

BAD = ["a/b", "a\\b", "..", ".", "a\nb", "a\x00b", "tab\there", "", "x" * 201]


def _tsvdial() -> type:
    sys.path.insert(0, str(PLUGINS))
    try:
        from convbank_tsvdial import TsvDial
    finally:
        sys.path.remove(str(PLUGINS))
    return TsvDial


@pytest.mark.parametrize("where", ["name", "config", "split", "union_of"])
@pytest.mark.parametrize("bad", BAD, ids=[repr(b)[:12] for b in BAD])
def test_a_plugins_name_that_is_not_one_folder_is_a_plugin_error(where: str, bad: str) -> None:
    base = _tsvdial()
    config, splits, union = "default", {"train": 3, "test": 2}, ()
    if where == "config":
        config = bad
    elif where == "split":
        splits = {bad: 3}
    elif where == "union_of":
        union = (bad,)
    attrs = {"configs": (ConfigSpec(name=config, description="x", splits=splits, union_of=union),)}
    if where == "name":
        attrs["name"] = bad
    plugin = type("Bad", (base,), {**attrs, "__module__": "badplugin"})
    with pytest.raises(PluginError) as caught:
        registry._dataset(plugin, "entry point bad = badplugin:Bad")
    message = str(caught.value)
    assert message.startswith("entry point bad = badplugin:Bad: badplugin.Bad: "), message
    assert repr(bad) in message and "cannot name a folder of the bank" in message, message


@pytest.mark.parametrize("bad", [*BAD[:-1], "/tmp/escaped.tsv", "../../../escaped.tsv"])
@pytest.mark.parametrize("where", ["name", "extract_to"])
def test_a_source_file_name_that_is_not_one_file_is_a_plugin_error(where: str, bad: str) -> None:
    """A source file named ``../../../escaped.tsv`` or ``/tmp/escaped.tsv`` would be downloaded
    outside ``CONVBANK_HOME`` (before: ``fetch`` wrote it and its lock there, exit 0, 2 of 2
    names), and looked for outside the ``--source`` folders: it is refused as the plugin loads."""
    base = _tsvdial()
    train = base.files[0]
    named = msgspec.structs.replace(train, **{where: bad})
    plugin = type("Bad", (base,), {"files": (named, *base.files[1:]), "__module__": "badplugin"})
    with pytest.raises(PluginError) as caught:
        registry._dataset(plugin, "entry point bad = badplugin:Bad")
    what = "a source file" if where == "name" else "an archive's folder"
    assert str(caught.value).startswith(
        f"entry point bad = badplugin:Bad: badplugin.Bad: {what} {bad!r} cannot name one file of the "
        "download cache and of a source folder: "
    )
    assert str(caught.value).endswith("; rename it") and "\n" not in str(caught.value).replace(bad, "")


def test_every_command_says_it_in_one_line_exit_5(tmp_path: Path) -> None:
    plugin(
        tmp_path,
        "badcfg",
        "[convbank.datasets]\nbadcfg = badcfg:BadCfg\n",
        badcfg=(
            "from convbank.datasets import ConfigSpec\nfrom convbank_tsvdial import TsvDial\n\n"
            "class BadCfg(TsvDial):\n    name = 'badcfg'\n"
            "    configs = (ConfigSpec(name='a/b', description='x', splits={'train': 3, 'test': 2}),)\n"
        ),
    )
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    for args in (["build", "badcfg", "--source", str(samples)], ["list"], ["info", "badcfg"]):
        done = convbank_with_plugins(tmp_path / "home", *args, path=(PLUGINS, tmp_path))
        assert done.returncode == 5, (args, done.stderr)  # before: build exit 1, a ValueError traceback
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, (args, done.stderr)
        assert (
            "badcfg = badcfg:BadCfg" in done.stderr and "a config 'a/b' cannot name a folder" in done.stderr
        )


@pytest.mark.parametrize("bad", [".", ".."])
def test_an_import_config_or_split_of_dots_is_refused(bad: str, tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8")
    for option in ("--config", "--split"):
        result = CliRunner().invoke(cli, ["import", str(chats), "--name", "dots", option, bad])
        assert result.exit_code == 2, result.output  # before: imported; export --format hf then refused it
        assert f"{option} {bad!r} cannot name a part of the bank" in result.stderr, result.stderr


def test_a_plugin_named_as_an_imported_dataset_never_builds_over_it(tmp_path: Path) -> None:
    """Before: a plugin installed after ``convbank import ... --name mine`` whose dataset is
    named ``mine`` was built over the import, exit 0: the researcher's conversations were
    gone from the bank and its entry, still marked imported, held the plugin's. Now the
    build is one line naming the plugin and what to do, exit 5, the import as it was."""
    home = tmp_path / "home"
    chats = tmp_path / "chats.jsonl"
    chats.write_text('{"id": "c1", "messages": [{"role": "user", "content": "mine"}]}\n', encoding="utf-8")
    done = convbank_with_plugins(home, "import", str(chats), "--name", "mine")
    assert done.returncode == 0, done.stderr
    plugin(
        tmp_path,
        "mineplugin",
        "[convbank.datasets]\nmine = mineplugin:Mine\n",
        mineplugin=("from convbank_tsvdial import TsvDial\n\nclass Mine(TsvDial):\n    name = 'mine'\n"),
    )
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    manifest = (home / "bank" / "manifest.json").read_bytes()
    for args in (["build", "mine", "--source", str(samples)], ["build", "--source", str(samples)]):
        done = convbank_with_plugins(home, *args, path=(PLUGINS, tmp_path))
        assert done.returncode == 5, (args, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert "mine = mineplugin:Mine" in done.stderr and "convbank remove mine" in done.stderr, done.stderr
        assert (home / "bank" / "manifest.json").read_bytes() == manifest
    done = convbank_with_plugins(
        home, "query", "SELECT text FROM turns WHERE dataset = 'mine'", "--format", "csv"
    )
    assert done.stdout.splitlines() == ["text", "mine"], done.stderr


def test_a_plugins_meta_nested_deeper_than_the_bank_types_is_read_as_json_text(tmp_path: Path) -> None:
    """What the build accepts, every reader reads. Before: a plugin whose conversations'
    meta nested 100 deep was built, exit 0, then ``to_arrow`` and ``to_polars`` of it were
    pyarrow's ``ArrowInvalid: Recursion level in ArrowSchema struct exceeded`` (2 of 2
    runs). Now places deeper than 32 levels are typed as their JSON text."""
    plugin(
        tmp_path,
        "deepplugin",
        "[convbank.datasets]\ndeep = deepplugin:Deep\n",
        deepplugin=(
            "from convbank_tsvdial import TsvDial\n\nclass Deep(TsvDial):\n    name = 'deep'\n"
            "    def to_conversation(self, record, part, index):\n"
            "        c = super().to_conversation(record, part, index)\n"
            "        d = {'x': 1}\n        for _ in range(100):\n            d = {'k': d}\n"
            "        c.meta = d\n        return c\n"
        ),
    )
    home = tmp_path / "home"
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    done = convbank_with_plugins(home, "build", "deep", "--source", str(samples), path=(PLUGINS, tmp_path))
    assert done.returncode == 0, done.stderr
    code = (
        "import json, convbank\n"
        "c = convbank.load('deep')\n"
        "m = c.to_arrow().column('meta')[0].as_py()\n"
        "for _ in range(32):\n    m = m['k']\n"
        "assert isinstance(m, str), m\n"
        "d = json.loads(m)\nfor _ in range(68):\n    d = d['k']\n"
        "assert d == {'x': 1}, d\n"
        "print(c.to_polars().height)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(PLUGINS), str(tmp_path)])}
    env.update(CONVBANK_HOME=str(home), CONVBANK_OFFLINE="1")
    read = subprocess.run(
        [sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert read.returncode == 0 and read.stdout.strip() == "5", read.stderr[-2000:]
