"""The documentation site builds with warnings as errors, and the catalog has a generated page
for every dataset of the registry: the built-in ones and a plugin's (``tsvdial``, registered
through the entry point in ``tests/plugins``), with no hand-written page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convbank.catalog import catalog

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs_gen_files", reason="the docs extra (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests" / "plugins")]),
        "DISABLE_MKDOCS_2_WARNING": "true",
        "NO_MKDOCS_2_WARNING": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
def test_every_dataset_has_its_page(site: Path) -> None:
    pages = sorted(p.parent.name for p in (site / "datasets").glob("*/index.html"))
    assert set(catalog.names()) | {"tsvdial"} <= set(pages)
    plugin = (site / "datasets" / "tsvdial" / "index.html").read_text()
    assert "tsvdial_raw" in plugin and "Validation checks" in plugin


@pytest.mark.slow
def test_a_dataset_page_shows_what_the_registry_knows(site: Path) -> None:
    page = (site / "datasets" / "casino" / "index.html").read_text()
    casino = catalog.get("casino")
    for f in casino.files:
        assert f.sha256 is not None and f.sha256 in page
    assert "casino-strategy" in page and "casino.points" in page and "CC-BY-4.0" in page
    assert "chat_logs[].task_data" in page  # the raw schema, nested fields included
    assert "@inproceedings" in page  # the BibTeX


@pytest.mark.slow
def test_the_references_are_generated(site: Path) -> None:
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "train_test_split" in api and "ConvbankError" in api and ":class:" not in api
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "convbank bench" in cli and "--predictions" in cli and "Sentinel" not in cli


@pytest.mark.slow
def test_the_catalog_pages_carry_the_reports_statistics_and_charts(site: Path) -> None:
    """From the published files where ../shared/data has them (CaSiNo: 1,030 dialogues,
    its strategy labels and outcome charts, its cross-tab), labelled as excerpts where the
    bank had only those (CCPE-M, PEC; the plugin's own samples)."""
    casino = (site / "datasets" / "casino" / "index.html").read_text()
    assert 'id="statistics-and-charts"' in casino and "the published files" in casino
    assert casino.count('<figure class="convbank-chart"><svg') == 6  # strategy, words, 4 metadata
    assert "non-strategic" in casino and "points_scored" in casino and "Computed from excerpts" not in casino
    assert ">900</td>" in casino and ">1,030</td>" not in casino  # conversations of train and test
    for name in ("ccpe", "pec", "tsvdial"):
        page = (site / "datasets" / name / "index.html").read_text()
        assert "Computed from excerpts" in page and '<figure class="convbank-chart"><svg' in page
    curiosity = (site / "datasets" / "curiosity" / "index.html").read_text()
    assert "No statistics: the files in ../shared/samples could not be built" in curiosity


@pytest.mark.slow
def test_the_tutorials_are_in_the_nav(site: Path) -> None:
    home = (site / "index.html").read_text()
    for page in ("explore", "casino-strategies", "chat-finetuning", "convai2-ratings", "plugin"):
        assert f"tutorials/{page}/" in home
