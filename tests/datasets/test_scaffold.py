"""``convbank new-dataset`` and the generic dataset test: a generated package passes its own
test as generated (built, validated, exported and viewed end to end by ``check_dataset``),
as a plugin project (its entry point declared in its pyproject.toml) and as a built-in
package of a convbank checkout (its line added to ``BUILTIN``, the one list of built-ins)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli import cli
from convbank.testing import check_dataset
from testsupport import FIXTURES, ROOT


def _python(*args: str, path: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path)), "CONVBANK_OFFLINE": "1"}
    env["CONVBANK_HOME"] = str(cwd / ".convbank-home")
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def _install(project: Path, site: Path) -> Path:
    """What ``pip install -e project`` leaves for importlib.metadata: a ``*.dist-info`` with the
    entry points the project's pyproject.toml declares (read from it, so a wrong one fails)."""
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n", encoding="utf-8"
    )
    lines = [
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
        for group, points in meta["entry-points"].items()
    ]
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    return site


def _lint(folder: Path) -> None:
    ruff = Path(sys.executable).with_name("ruff")
    config = str(ROOT / "pyproject.toml")
    for args in (
        ["check", "--config", config, str(folder)],
        ["format", "--check", "--config", config, str(folder)],
    ):
        done = subprocess.run([str(ruff), *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_a_plugin_project_passes_its_own_test(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["new-dataset", "shopchat", "--dir", str(tmp_path), "--title", "Shop chats"]
    )
    assert result.exit_code == 0, result.output
    project = tmp_path / "convbank-shopchat"
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == [
        "README.md",
        "pyproject.toml",
        "src/convbank_shopchat/__init__.py",
        "src/convbank_shopchat/dataset.py",
        "src/convbank_shopchat/present.py",
        "src/convbank_shopchat/records.py",
        "src/convbank_shopchat/samples/shopchat_test.jsonl",
        "src/convbank_shopchat/samples/shopchat_train.jsonl",
        "tests/test_shopchat.py",
    ]
    assert result.stdout.splitlines() == sorted(str(p) for p in project.rglob("*") if p.is_file())
    _lint(project)
    site = _install(project, tmp_path / "site")
    done = _python(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
        path=[ROOT / "src", project / "src", site], cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
    listed = _python(
        "-m", "convbank", "info", "shopchat", path=[ROOT / "src", project / "src", site], cwd=project
    )
    assert listed.returncode == 0 and "Shop chats" in listed.stdout
    assert "from: entry point shopchat = convbank_shopchat:Shopchat" in " ".join(listed.stdout.split())


@pytest.mark.slow
def test_mypy_strict_accepts_the_generated_package(tmp_path: Path) -> None:
    mypy = Path(sys.executable).with_name("mypy")
    if not mypy.exists():
        pytest.skip("mypy is not installed")
    assert CliRunner().invoke(cli, ["new-dataset", "typed_talk", "--dir", str(tmp_path)]).exit_code == 0
    package = tmp_path / "convbank-typed_talk" / "src" / "convbank_typed_talk"
    # the checkout's own settings (strict), and its cache where the checkout's mypy left one (CI
    # runs mypy first): convbank's modules are then read from the cache, not analysed again
    # (measured here: 5 s against 42 s); a changed module is analysed again, as mypy does
    cache = tmp_path / "mypy-cache"
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", cache)
    done = subprocess.run(
        [str(mypy), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(cache), str(package)],
        env={**os.environ, "MYPYPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout


def test_a_built_in_package_is_listed_in_builtin_and_found(tmp_path: Path) -> None:
    """In a convbank checkout (here: a copy of this one's sources), the package goes in
    src/convbank/datasets/NAME and its line at the end of BUILTIN; the catalog of that
    checkout then lists it last, and its test passes."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "tests").mkdir()
    listing = checkout / "src" / "convbank" / "datasets" / "__init__.py"
    before = listing.read_text(encoding="utf-8")
    result = CliRunner().invoke(cli, ["new-dataset", "helpdesk", "--dir", str(checkout), "--builtin"])
    assert result.exit_code == 0, result.output
    package = checkout / "src" / "convbank" / "datasets" / "helpdesk"
    assert sorted(p.name for p in package.iterdir()) == [
        "__init__.py", "dataset.py", "present.py", "records.py", "samples",
    ]  # fmt: skip
    assert (checkout / "tests" / "test_dataset_helpdesk.py").is_file()
    assert not (checkout / "pyproject.toml").exists()
    assert str(listing) in result.stdout.splitlines()
    added = '    "convbank.datasets.convai2:ConvAI2",\n    "convbank.datasets.helpdesk:Helpdesk",\n)'
    assert listing.read_text(encoding="utf-8") == before.replace(
        '    "convbank.datasets.convai2:ConvAI2",\n)', added
    )
    _lint(package)
    _lint(checkout / "tests")
    script = (
        "import sys, pytest\n"
        "from convbank import catalog\n"
        "assert catalog.names()[-1] == 'helpdesk' and catalog.catalog.origin('helpdesk') == 'convbank'\n"
        "assert type(catalog.get('helpdesk').presentation).__name__ == 'HelpdeskPresentation'\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {str(checkout / 'tests')!r}]))\n"
    )
    done = _python("-c", script, path=[checkout / "src"], cwd=checkout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout


def test_a_checkout_without_the_builtin_list_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "src" / "convbank" / "datasets").mkdir(parents=True)
    (checkout / "src" / "convbank" / "datasets" / "__init__.py").write_text(
        '"""Datasets."""\n', encoding="utf-8"
    )
    result = CliRunner().invoke(cli, ["new-dataset", "helpdesk", "--dir", str(checkout), "--builtin"])
    listing = checkout / "src" / "convbank" / "datasets" / "__init__.py"
    assert result.exit_code == 2
    assert result.output == (
        f'error: {listing}: no BUILTIN tuple of one "module:Class" line each; add '
        "'convbank.datasets.helpdesk:Helpdesk' to it by hand\n"
    )
    assert sorted(p.name for p in listing.parent.iterdir()) == ["__init__.py"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["new-dataset", "Bad-Name"],
            "error: 'Bad-Name' is not a dataset name: use 2 to 31 lowercase letters",
        ),
        (["new-dataset", "casino"], "error: a dataset named 'casino' is already registered (convbank)"),
        (["new-dataset", "x2", "--builtin"], "is not a convbank checkout (no src/convbank/datasets)"),
    ],
)
def test_new_dataset_refuses_clearly(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [*args, "--dir", str(tmp_path)])
    assert result.exit_code == 2 and message in result.output and result.output.count("\n") == 1


def test_nothing_is_overwritten(tmp_path: Path) -> None:
    (tmp_path / "convbank-again").mkdir()
    result = CliRunner().invoke(cli, ["new-dataset", "again", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "convbank-again exists already" in result.output
    assert list((tmp_path / "convbank-again").iterdir()) == []


def test_the_generic_test_reports_an_excerpt(tmp_path: Path) -> None:
    """check_dataset on a built-in dataset's fixture (3 of the 502 CCPE-M conversations)."""
    shutil.copytree(FIXTURES / "ccpe", tmp_path / "sources" / "ccpe")
    found = check_dataset("ccpe", tmp_path / "work", [tmp_path / "sources"])
    assert found.excerpt == ["default/train has 3 conversations; 502 published"]
    assert found.conversations == {("default", "train"): 3}
    assert set(found.exports) >= {"source", "chat", "parlai", "convokit", "jsonl", "parquet", "csv"}
    (task,) = found.tasks
    assert task == "ccpe-preference-spans"


def test_the_generic_test_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="nope is not in the catalog"):
        check_dataset("nope", tmp_path)
    with pytest.raises(AssertionError, match="none of the files of ccpe is in"):
        check_dataset("ccpe", tmp_path, [tmp_path])
