"""``convbank list``'s text pre-check of installed packages' entry points
(``registry._others_declared``) against :mod:`importlib.metadata`'s own reading of the same
files: the pre-check may say yes too often, never no where a plugin is declared."""

from __future__ import annotations

import importlib
import sys
from importlib import metadata
from pathlib import Path

import pytest

from convbank import registry
from convbank.datasets import BUILTIN

GROUP = "convbank.datasets"
MINE = "mine = mine:Mine\n"
CASINO = "casino = convbank.datasets.casino:Casino\n"

CASES = {  # case: (metadata folder, entry_points.txt, whether importlib.metadata finds a plugin)
    "a built-in only": ("pkg-1.0.dist-info", f"[{GROUP}]\n{CASINO}", False),
    "a plugin": ("pkg-1.0.dist-info", f"[{GROUP}]\n{MINE}", True),
    "spaces inside the brackets": ("pkg-1.0.dist-info", f"[ {GROUP} ]\n{MINE}", False),
    "double brackets": ("pkg-1.0.dist-info", f"[[{GROUP}]]\n{MINE}", True),
    "stray brackets": ("pkg-1.0.dist-info", f"[]{GROUP}[]\n{MINE}", True),
    "a trailing bracket": ("pkg-1.0.dist-info", f"[{GROUP}]]\n{MINE}", True),
    "CRLF": ("pkg-1.0.dist-info", f"[{GROUP}]\r\n{MINE}".replace("\n", "\r\n"), True),
    "CR": ("pkg-1.0.dist-info", f"[{GROUP}]\r{MINE}", True),
    "a line separator": ("pkg-1.0.dist-info", f"[{GROUP}]\u2028{MINE}", True),
    "a BOM on the header": ("pkg-1.0.dist-info", f"\ufeff[{GROUP}]\n{MINE}", False),
    "a BOM on a comment": ("pkg-1.0.dist-info", f"\ufeff# x\n[{GROUP}]\n{MINE}", True),
    "tabs and no-break spaces": ("pkg-1.0.dist-info", f"\t[{GROUP}]\u00a0\n\tmine\t=\u00a0mine:Mine\n", True),
    "a name starting with ;": ("pkg-1.0.dist-info", f"[{GROUP}]\n; mine = mine:Mine\n", True),
    "a name in brackets": ("pkg-1.0.dist-info", f"[{GROUP}]\n[mine] = mine:Mine\n", True),
    "a name opening a bracket": ("pkg-1.0.dist-info", f"[{GROUP}]\n[mine = mine:Mine\n", True),
    "a built-in with extras": ("pkg-1.0.dist-info", f"[{GROUP}]\n{CASINO[:-1]} [x]\n", True),
    "an empty value": ("pkg-1.0.dist-info", f"[{GROUP}]\nmine =\n", True),
    "another letter case": ("pkg-1.0.dist-info", f"[Convbank.Datasets]\n{MINE}", False),
    "the section twice": ("pkg-1.0.dist-info", f"[{GROUP}]\n{CASINO}[x]\ny = z\n[{GROUP}]\n{MINE}", True),
    "an egg-info folder": ("pkg-1.0-py3.11.egg-info", f"[{GROUP}]\n{MINE}", True),
    "an upper-case DIST-INFO": ("PKG-1.0.DIST-INFO", f"[{GROUP}]\n{MINE}", True),
    "a mixed-case Egg-Info": ("Pkg-1.0.Egg-Info", f"[{GROUP}]\n{MINE}", True),
    "an unzipped egg's EGG-INFO": ("pkg-1.0-py3.11.egg/EGG-INFO", f"[{GROUP}]\n{MINE}", True),
    "EGG-INFO outside an egg": ("pkg-1.0/EGG-INFO", f"[{GROUP}]\n{MINE}", False),
}


def _plugin_found() -> bool:
    importlib.invalidate_caches()
    return any(ep.value not in BUILTIN for ep in metadata.entry_points(group=GROUP))


@pytest.mark.parametrize("case", list(CASES))
def test_the_pre_check_never_misses_a_plugin_importlib_metadata_finds(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, text, found = CASES[case]
    info = tmp_path / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(text, encoding="utf-8", newline="")
    entry = tmp_path / folder.split("/")[0] if "/" in folder else tmp_path
    monkeypatch.setattr(sys, "path", [str(entry)])
    assert _plugin_found() is found
    assert registry._others_declared(GROUP, set(BUILTIN)) is found


@pytest.mark.parametrize("entry", ["", ".", "site", str(Path("site") / ".." / "site")])
def test_relative_and_repeated_path_entries_are_read_from_the_working_directory(
    entry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site" if entry not in ("", ".") else tmp_path
    info = site / "pkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{MINE}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry, entry])
    assert _plugin_found() is True
    assert registry._others_declared(GROUP, set(BUILTIN)) is True


def test_a_zip_on_the_path_is_left_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "eggs.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: the metadata would be inside
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert registry._others_declared(GROUP, set(BUILTIN)) is True
    monkeypatch.setattr(sys, "path", [str(tmp_path / "gone")])  # a missing entry holds nothing
    assert registry._others_declared(GROUP, set(BUILTIN)) is False
