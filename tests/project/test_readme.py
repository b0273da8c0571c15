"""The README's commands run as written, from a clean clone with ``../shared`` beside it.

The README starts with two commands, build the bank and run the tests, each one line of
bash; a tour follows (activation included), then Python. ``test_the_readme_runs_verbatim``
clones this repository into a temporary folder (the working tree's uncommitted changes laid
over the clone, so that what is tested is what is on disk), puts a ``shared`` link beside it
(the real ``../shared``), and runs each of those blocks, parsed out of README.md, with bash in
the clone: editing the README changes what runs.

One stand-in keeps it offline and within minutes: ``python3`` on the ``PATH`` is the running
interpreter's base, wrapped so that a virtual environment it creates also sees this
environment's installed packages (convbank's own excepted); pip then finds every requirement
installed and builds convbank from the clone (``PIP_NO_INDEX``, no build isolation), and the
test command's pytest runs this file only (``PYTEST_ADDOPTS``), where this test skips itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from testsupport import SHARED

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
INNER = "CONVBANK_README_RUN"
"""Set in the clone's test run, where the verbatim test does not run again."""


def fenced() -> list[tuple[str, str]]:
    """(language, code) of every fenced block of the README, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(README.read_text(encoding="utf-8"))]


def test_the_readme_starts_with_the_two_commands_that_ci_runs() -> None:
    """The first two blocks are the build and the test command, one line each, and
    ``.ci/run`` runs the test command as written; nothing but their introductions before."""
    text = README.read_text(encoding="utf-8")
    (lang1, build), (lang2, tests) = fenced()[:2]
    assert (lang1, lang2) == ("bash", "bash")
    assert build.count("\n") == 1 and tests.count("\n") == 1
    assert build.startswith("python3 -m venv .venv && ") and "convbank build --source ../shared/data" in build
    assert tests.startswith("python3 -m venv .venv && ") and "-m pytest" in tests
    assert text.index(tests) < text.index("## "), "the commands come before the first section"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests.strip() in ci, ".ci/run does not run the README's test command as written"


def clean_clone(where: Path) -> Path:
    """A clone of this repository with the working tree's changes (modified, new, deleted
    files that git does not ignore) laid over it, and ``shared`` beside it."""
    clone = where / "convbank"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)

    def listed(*args: str) -> list[str]:
        done = subprocess.run(
            ["git", "ls-files", "-z", *args], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return [name for name in done.stdout.split("\0") if name]

    deleted = set(listed("--deleted"))
    for name in listed("--modified", "--others", "--exclude-standard"):
        if name not in deleted:
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    for name in deleted:
        (clone / name).unlink(missing_ok=True)
    (where / "shared").symlink_to(SHARED.parent)
    return clone


def offline_python(where: Path) -> Path:
    """A folder holding ``python3``: the base interpreter, which after ``-m venv DIR`` lets the
    new environment see this one's packages (through a folder of links, convbank's own left
    out: the clone installs its own)."""
    deps = where / "deps"
    deps.mkdir()
    for site in dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]):
        for entry in Path(site).iterdir():
            skip = entry.name.startswith(("convbank", "__editable__")) or entry.suffix == ".pth"
            if not skip and entry.name != "__pycache__" and not (deps / entry.name).exists():
                (deps / entry.name).symlink_to(entry)
    line = (
        "import sys; sys.path.insert(min(i for i, p in enumerate(sys.path) "
        f'if p.endswith("site-packages")), "{deps}")'
    )
    bin_ = where / "bin"
    bin_.mkdir()
    base = getattr(sys, "_base_executable", sys.executable)
    (bin_ / "python3").write_text(
        "#!/bin/sh\n"
        f'"{base}" "$@" || exit $?\n'
        'if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then\n'
        '    for site in "$3"/lib/python*/site-packages; do\n'
        f"        echo '{line}' > \"$site/_readme_test_deps.pth\"\n"
        "    done\n"
        "fi\n"
    )
    (bin_ / "python3").chmod(0o755)
    return bin_


def run(script: str, clone: Path, env: dict[str, str]) -> str:
    """stdout and stderr of bash running ``script`` in the clone; it must exit 0."""
    done = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"exit {done.returncode}:\n{script}\n{out[-4000:]}"
    return out


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get(INNER)), reason="the clone's own run of the README's test command")
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_readme_runs_verbatim(tmp_path: Path) -> None:
    clone = clean_clone(tmp_path)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith(("PYTEST_", "CONVBANK_"))
    }
    env.update(
        PATH=f"{offline_python(tmp_path)}{os.pathsep}{env.get('PATH', '')}",
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",  # pip's spelling: no isolation
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        CONVBANK_HOME=str(tmp_path / "home"),
        CONVBANK_OFFLINE="1",
        PYTEST_ADDOPTS="tests/project/test_readme.py -p no:cacheprovider",
        **{INNER: "1"},
    )
    blocks = fenced()
    (_, build), (_, tests), *rest = blocks
    tour = [code for lang, code in rest if lang == "bash"]
    python = [code for lang, code in rest if lang == "python"]
    assert len(tour) == 1 and len(python) == 1 and tour[0].startswith(". .venv/bin/activate")

    out = run(build, clone, env)
    assert "5 splits built" in out and out.count("not built ") == 6, out[-3000:]
    assert (tmp_path / "home" / "bank").is_dir()
    assert (clone / ".venv" / "bin" / "convbank").is_file()

    out = run(tests, clone, env)
    others = sum(name.startswith("test_") for name in globals()) - 1
    assert re.search(rf"\b{others} passed, 1 skipped\b", out), out[-3000:]  # all but this one

    out = run(tour[0], clone, env)
    assert "CaSiNo: Campsite Negotiation Dialogues (casino, version 1.0.0)" in out  # info
    assert re.search(r"mean_f1\s*│\s*0\.5695 ", out), out[-3000:]  # bench: TF-IDF on the 5 folds
    assert sorted(p.name for p in (clone / "out").glob("*.jsonl")) == [
        f"casino_default_{split}.jsonl" for split in ("test", "train", "valid")
    ]
    assert (clone / "report.html").stat().st_size > 10_000

    script = f". .venv/bin/activate\npython - <<'PY'\n{python[0]}print('ran')\nPY\n"
    assert run(script, clone, env).strip().endswith("ran")
    assert "convbank" in run(". .venv/bin/activate\ncommand -v convbank", clone, env).strip()


def test_the_readme_links_resolve_in_the_repository() -> None:
    """Every relative link of the README names a file or folder of the checkout; the dataset
    pages, which exist only in the built site, are named as such, not linked."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) >= 15, local
    assert [link for link in local if not (ROOT / link.split("#", 1)[0]).exists()] == []
    assert not [link for link in local if link.startswith("site/")]
    assert "`site/datasets/index.html`" in text and "[`docs/datasets/notes/`](docs/datasets/notes/)" in text
