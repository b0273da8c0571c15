"""Check the development guide's walk-through (``docs/guide/development.md``): each of its three
changes, made in a copy of this checkout, touches exactly the files the guide lists, and works.

- **A turn field**: the guide's diffs applied; the plugin dataset ``tsvdial`` built from its
  samples; the field read back from ``load``, SQL, the ``jsonl``, ``csv`` and ``parquet``
  exports and the viewer's JSON.
- **A format**: the guide's diffs applied; the new format's own test run, and the format listed
  by ``convbank export --help``.
- **A dataset**: the guide's ``convbank new-dataset`` command run; the package's own test run.

For each, ``git status`` in the copy must list the guide's files and no other. Run it from
the checkout's root (``tests/project/test_walkthrough.py`` does, in CI)::

    python docs/scripts/walkthrough.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide" / "development.md"
_SECTION = re.compile(r"^### (.+?)\n(.*?)(?=^### |^## |\Z)", re.M | re.S)
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)
_LISTED = re.compile(r"^- `([^`]+)`", re.M)


class WalkthroughError(AssertionError):
    """A change of the walk-through that does not do what the guide says."""


def sections(text: str) -> dict[str, tuple[list[str], dict[str, list[str]]]]:
    """The walk-through's changes: title -> (files listed, fenced blocks by language)."""
    walk = text.split("## Walk-through", 1)[1].split("\n## ", 1)[0]
    found = {}
    for title, body in _SECTION.findall(walk):
        blocks: dict[str, list[str]] = {}
        for lang, code in _FENCE.findall(body):
            blocks.setdefault(lang, []).append(code)
        found[title.strip()] = (_LISTED.findall(body.split("```", 1)[0]), blocks)
    return found


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise WalkthroughError(
            f"{' '.join(args)} exited {done.returncode}:\n" + done.stdout[-3000:] + done.stderr[-3000:]
        )
    return done.stdout


def _copy(where: Path) -> Path:
    """This checkout's files (what git tracks or would track) in ``where``, committed there."""
    files = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT).split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=w", "-c", "user.email=w@x", "commit", "-qm", "base"],
    ):
        _run(["git", *args], where)
    return where


def _touched(copy: Path) -> list[str]:
    """The files ``git status`` lists in the copy: changed, added and new."""
    lines = _run(["git", "status", "--porcelain", "--untracked-files=all"], copy).splitlines()
    return sorted(line[3:] for line in lines)


def _env(copy: Path, *path: Path) -> dict[str, str]:
    env = {**os.environ, "CONVBANK_HOME": str(copy / ".home"), "CONVBANK_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (copy / "src", *path))
    return env


_FIELD_CHECK = """
import json, sys
from pathlib import Path
import convbank
from convbank.build import build
from convbank.catalog import catalog
from convbank.export import export
from convbank.fetch import Fetcher
from convbank.store import Bank
from convbank.web import create_app
from starlette.testclient import TestClient

samples = next(ds.samples for ds in catalog if ds.name == "tsvdial")
bank = Bank()
assert build(["tsvdial"], fetcher=Fetcher(sources=[samples], verify=False, progress=False), bank=bank).ok
conv = convbank.load("tsvdial", split="train")[0]
assert [t.reply_to for t in conv.turns][:3] == [None, 0, 1], conv.turns[:3]
rows = convbank.sql(
    "SELECT reply_to FROM turns WHERE dataset = 'tsvdial' ORDER BY conversation_id, turn_index")
assert rows.column("reply_to").to_pylist()[:2] == [None, 0]
out = Path(sys.argv[1])
for fmt in ("jsonl", "csv", "parquet"):
    written = export(convbank.load("tsvdial"), fmt, out / fmt)
    assert any("reply_to" in p.read_bytes().decode("utf-8", "replace") for p in written), fmt
page = TestClient(create_app(bank), base_url="http://127.0.0.1").get(
    f"/datasets/tsvdial/conversations/{conv.conversation_id}?format=json")
assert [t["reply_to"] for t in page.json()["turns"]][:2] == [None, 0], page.text[:300]
print("the field: built, loaded, queried, exported and served")
"""


def _field(copy: Path, blocks: dict[str, list[str]]) -> None:
    _apply(copy, blocks)
    _run(
        [sys.executable, "-c", _FIELD_CHECK, str(copy / ".out")], copy, _env(copy, copy / "tests" / "plugins")
    )


def _format(copy: Path, blocks: dict[str, list[str]]) -> None:
    _apply(copy, blocks)
    tests = [name for name in _touched(copy) if name.startswith("tests/")]
    _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], copy, _env(copy))
    helped = _run([sys.executable, "-m", "convbank", "export", "--help"], copy, _env(copy))
    added = re.search(r'name="(\w+)"', "".join(blocks["diff"]))
    if added is None or added.group(1) not in helped:
        raise WalkthroughError("the new format is not listed by convbank export --help")


def _dataset(copy: Path, blocks: dict[str, list[str]]) -> None:
    (command,) = blocks["bash"]
    args = command.split()
    if args[:2] != ["convbank", "new-dataset"]:
        raise WalkthroughError(f"the dataset's change is a convbank new-dataset command, not {command!r}")
    _run([sys.executable, "-m", "convbank", *args[1:]], copy, _env(copy))
    (project,) = {copy / name.split("/", 1)[0] for name in _touched(copy)}
    site = _dist_info(project, copy / ".site")
    _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        project,
        _env(copy, project / "src", site),
    )


def _dist_info(project: Path, site: Path) -> Path:
    """What ``pip install -e project`` leaves for importlib.metadata: its entry points."""
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    groups = meta["entry-points"].items()
    (info / "entry_points.txt").write_text(
        "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in p.items()) for g, p in groups)
    )
    return site


def _apply(copy: Path, blocks: dict[str, list[str]]) -> None:
    for number, diff in enumerate(blocks.get("diff", [])):
        patch = copy / f".walk-{number}.diff"
        patch.write_text(diff, encoding="utf-8")
        _run(["git", "apply", str(patch)], copy)
        patch.unlink()


def _covers(listed: list[str], touched: list[str]) -> bool:
    """Whether the files touched are the ones listed: each touched file listed (or inside a
    listed folder, ``name/``), and each listed path touched."""

    def inside(name: str, path: str) -> bool:
        return name == path or (path.endswith("/") and name.startswith(path))

    return all(any(inside(n, p) for p in listed) for n in touched) and all(
        any(inside(n, p) for n in touched) for p in listed
    )


CHANGES: dict[str, Callable[[Path, dict[str, list[str]]], None]] = {
    "A turn field": _field,
    "A format": _format,
    "A dataset": _dataset,
}
"""Each change of the walk-through, by its heading, and how it is checked."""


def check(only: str | None = None) -> dict[str, list[str]]:
    """Make each change in a fresh copy and check it; return the files each touched.

    Raises :class:`WalkthroughError` where a change fails or touches other files than listed.
    """
    found = sections(GUIDE.read_text(encoding="utf-8"))
    if set(found) != set(CHANGES):
        raise WalkthroughError(f"the walk-through's changes are {sorted(found)}, not {sorted(CHANGES)}")
    touched = {}
    for title, (listed, blocks) in found.items():
        if only is not None and title != only:
            continue
        with tempfile.TemporaryDirectory(prefix="convbank-walk-") as tmp:
            (Path(tmp) / "shared").symlink_to(ROOT.parent / "shared")  # the data beside, as here
            (copy := Path(tmp) / "checkout").mkdir()
            _copy(copy)
            (copy / ".git" / "info" / "exclude").write_text(".home/\n.out/\n.site/\n__pycache__/\n")
            CHANGES[title](copy, blocks)
            touched[title] = _touched(copy)
        if not _covers(listed, touched[title]):
            raise WalkthroughError(f"{title}: touched {touched[title]}, the guide lists {sorted(listed)}")
    return touched


if __name__ == "__main__":
    print(json.dumps(check(sys.argv[1] if len(sys.argv) > 1 else None), indent=2))
