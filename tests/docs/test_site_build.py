"""The documentation site builds with warnings as errors, and the catalog has a generated page
for every dataset of the registry: the built-in ones and a plugin's (``tsvdial``, registered
through the entry point in ``tests/plugins``), with no hand-written page."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin

import pytest

from convbank.catalog import catalog

ROOT = Path(__file__).resolve().parents[2]
SITE_URL = "http://127.0.0.1:8000/convbank/"
"""Where the ``site`` fixture's site is served (``CONVBANK_SITE_URL``, which mkdocs.yml's
``site_url`` reads): below a path, as a project's pages on GitHub are, the case where pages
that link root-absolute (404.html, served at any depth) need ``site_url`` to be right."""
HOST = SITE_URL[: SITE_URL.index("/", len("http://"))]

pytest.importorskip("mkdocs_gen_files", reason="the docs extra (pip install -e '.[docs]')")
pytestmark = pytest.mark.xdist_group("site")  # one worker builds the site for all (--dist loadgroup)


@pytest.fixture(scope="session")  # built once, on the worker that runs this group
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests" / "plugins")]),
        "DISABLE_MKDOCS_2_WARNING": "true",
        "NO_MKDOCS_2_WARNING": "1",
        "CONVBANK_SITE_URL": SITE_URL,
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
def test_the_exports_table_has_a_row_per_registered_format(site: Path) -> None:
    """``gen_formats.py`` writes the table from each written format's declaration when the site
    builds (a format convbank only reads, ``table``, is not an export)."""
    from convbank.export._registry import written

    page = (site / "guide" / "exports" / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr>\s*<td><code>([\w-]+)</code></td>", page)
    assert rows == written() and "table" not in rows


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
def test_an_imported_dataset_has_its_page_as_the_others(site: Path) -> None:
    """The tutorial's corpus, written and imported as the guide does it, gets a page from the
    same generator: its card, the file it was read from with its size and sha256 (those of
    the tutorial's bytes), what chat does not carry, an example and statistics from the bank,
    its raw schema and the checks of every imported corpus; the index links it."""
    import hashlib
    import re as regex

    from convbank.export import formats

    page = (site / "datasets" / "travel" / "index.html").read_text(encoding="utf-8")
    text = html.unescape(regex.sub(r"<[^>]+>", "", page))
    guide = (ROOT / "docs" / "guide" / "your-conversations.md").read_text(encoding="utf-8")
    first = regex.search(r"^```python\n(.*?)^```", guide, regex.S | regex.M)
    assert first is not None
    work = site.parent / "travel-bytes"
    work.mkdir(exist_ok=True)
    cwd = Path.cwd()
    try:
        os.chdir(work)
        exec(first.group(1), {"__name__": "__docs__"})  # the tutorial's block: it writes travel.jsonl
    finally:
        os.chdir(cwd)
    data = (work / "travel.jsonl").read_bytes()
    assert hashlib.sha256(data).hexdigest() in text and f"{len(data):,} bytes" in text
    assert "Travel chats" in text and "CC-BY-4.0" in text and "imported from chat: travel.jsonl" in text
    assert " ".join(formats.get("chat").loses.split("`")[0].split()) in " ".join(text.split())
    assert "A quiet beach in May?" in text and "Casa Azul has sea views." in text  # the example
    assert ">9</td>" in page and ">2</td>" in page  # turns and conversations of default/train
    assert "imported.alternation" in text and "turn_indices" in text and "travel_raw" in text
    assert "no published counts to compare with" in text and "Benchmark tasks" in text
    index = (site / "datasets" / "index.html").read_text(encoding="utf-8")
    assert '<a href="travel/"><code>travel</code></a>' in index


@pytest.mark.slow
def test_the_tutorials_are_in_the_nav(site: Path) -> None:
    home = (site / "index.html").read_text()
    for page in ("explore", "casino-strategies", "chat-finetuning", "convai2-ratings", "plugin"):
        assert f"tutorials/{page}/" in home


# ---------------------------------------------------------------------- links of the built site


class _Page(HTMLParser):
    """The ids a page defines and the links (``href``, ``src``) it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and tag != "meta":
                self.ids.add(value)
            elif name == "href" or (name == "src" and tag in ("img", "script", "iframe", "source")):
                self.links.append(value)


def parsed_site(site: Path) -> dict[str, _Page]:
    """Every built page by its path under the site (``guide/bank/index.html``)."""
    out = {}
    for p in sorted(site.rglob("*.html")):
        parser = _Page()
        parser.feed(p.read_text(encoding="utf-8"))
        out[p.relative_to(site).as_posix()] = parser
    return out


def broken_links(site: Path, pages: dict[str, _Page], page: str) -> tuple[int, list[str]]:
    """(local links checked, those that do not resolve) of one page: a link resolves when the
    file it names exists under the site (a folder: its ``index.html``) and its ``#anchor``, if
    any, is an id of that page. A link is local when it is relative, root-absolute or to the
    host of ``SITE_URL``, where the site is served; one of them outside ``SITE_URL``'s path
    is broken. Other schemes and hosts are not fetched."""
    checked, broken = 0, []
    base = urljoin(SITE_URL, page)
    for link in pages[page].links:
        url = urljoin(base, link)
        if not url.startswith(HOST + "/"):
            continue  # another host, mailto:, data:, javascript:
        checked += 1
        if not url.startswith(SITE_URL):
            broken.append(f"{link} (outside the site, {SITE_URL})")
            continue
        path, _, anchor = url[len(SITE_URL) :].partition("#")
        path = unquote(path.split("?", 1)[0])
        target = site / path
        if path == "" or path.endswith("/") or target.is_dir():
            target = target / "index.html"
        rel = target.relative_to(site).as_posix() if target.is_relative_to(site) else None
        if rel is None or not target.is_file():
            broken.append(f"{link} (no {rel or path})")
        elif anchor and rel in pages and unquote(anchor) not in pages[rel].ids:
            broken.append(f"{link} (no id {anchor!r} in {rel})")
    return checked, broken


def test_the_link_checker_finds_a_broken_link_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">x</h2>')
    (tmp_path / "index.html").write_text(
        '<a href="a/">ok</a><a href="a/#here">ok</a><a href="/convbank/a/index.html">ok</a>'
        f'<a href="{SITE_URL}a/">ok</a><a href="https://example.org/x">external</a>'
        '<a href="b/">broken</a><a href="a/#there">no anchor</a><img src="/convbank/x.png">'
        '<link href="/assets/x.css">'
    )
    pages = parsed_site(tmp_path)
    checked, broken = broken_links(tmp_path, pages, "index.html")
    assert checked == 8
    assert broken == [
        "b/ (no b/index.html)",
        "a/#there (no id 'there' in a/index.html)",
        "/convbank/x.png (no x.png)",
        "/assets/x.css (outside the site, http://127.0.0.1:8000/convbank/)",
    ]


@pytest.mark.slow
def test_every_local_link_of_the_site_resolves(site: Path) -> None:
    """Every page's links to pages, assets and anchors of the site resolve, the 404 page's
    (36 root-absolute assets and pages, which without ``site_url`` point above the site)
    included; the sitemap lists every page under ``site_url``."""
    pages = parsed_site(site)
    total, broken = 0, {}
    for page in pages:
        checked, bad = broken_links(site, pages, page)
        total += checked
        if bad:
            broken[page] = bad[:5]
    assert not broken, broken
    assert total > 2000, total
    checked, _ = broken_links(site, pages, "404.html")
    assert checked >= 36 and all(
        link.startswith("/convbank/") for link in pages["404.html"].links if not link.startswith("https://")
    )
    sitemap = (site / "sitemap.xml").read_text()
    assert (
        f"<loc>{SITE_URL}guide/bank/</loc>" in sitemap and f"<loc>{SITE_URL}datasets/casino/</loc>" in sitemap
    )


@pytest.mark.slow
def test_no_page_shows_the_tests_markers(site: Path) -> None:
    """The tests' ``not run`` markers are HTML comments: in the page's source, not on screen."""
    shown = []
    for p in sorted(site.rglob("*.html")):
        text = re.sub(r"<!--.*?-->", "", p.read_text(encoding="utf-8"), flags=re.S)
        if "not run by the tests" in text:
            shown.append(p.relative_to(site).as_posix())
    assert not shown
    assert "<!-- not run by the tests: they install" in (site / "index.html").read_text()


# ---------------------------------------------------------------------- widths, in a real browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTHS = (1280, 1920)
MEASURE = r"""
const SELECTOR = '.md-content pre > code, .md-content .md-typeset__scrollwrap, .md-content table, .md-content';
function measure(doc, page, width) {
  const clipped = [];
  for (const el of doc.querySelectorAll(SELECTOR)) {
    if (el.scrollWidth > el.clientWidth + 1) {
      clipped.push([el.tagName.toLowerCase() + '.' + el.className, el.scrollWidth, el.clientWidth,
                    el.textContent.trim().slice(0, 60)]);
    }
  }
  const html = doc.documentElement, column = doc.querySelector('.md-content__inner');
  if (html.scrollWidth > html.clientWidth) clipped.push(['html', html.scrollWidth, html.clientWidth, '']);
  return {page, width, column: column ? column.clientWidth : null, blocks: doc.querySelectorAll('pre > code').length, clipped};
}
function load(page, width) {
  return new Promise(resolve => {
    const frame = document.createElement('iframe');
    frame.style.width = width + 'px';
    frame.style.height = '900px';
    frame.onload = () => setTimeout(() => { const r = measure(frame.contentDocument, page, width); frame.remove(); resolve(r); }, 200);
    frame.src = BASE + page;
    document.body.appendChild(frame);
  });
}
(async () => {
  const results = [];
  for (const page of PAGES) for (const width of WIDTHS) results.push(await load(page, width));
  document.body.setAttribute('data-results', JSON.stringify(results));
})();
"""


def measured_widths(site: Path, where: Path) -> list[dict[str, Any]]:
    """Each page of the site laid out by headless Chromium in a frame of each width of
    ``WIDTHS``, one browser for all: the content column's width, the number of code blocks,
    and every code block, table or content element whose content is wider than its box
    (``scrollWidth > clientWidth``: cut off behind a scroll bar)."""
    assert CHROMIUM
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    harness = where / "measure.html"
    harness.write_text(
        "<!doctype html><html><body><script>"
        f"const BASE = {json.dumps(site.as_uri() + '/')}, PAGES = {json.dumps(pages)}, WIDTHS = {json.dumps(WIDTHS)};"
        f"{MEASURE}</script></body></html>"
    )
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={where / 'profile'}",
            "--allow-file-access-from-files",  # the harness reads its frames' layout
            "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: the web fonts fall back at once
            "--virtual-time-budget=300000",
            "--dump-dom",
            harness.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found = re.search(r'data-results="([^"]*)"', done.stdout)
    assert found, done.stderr[-2000:]
    results: list[dict[str, Any]] = json.loads(html.unescape(found.group(1)))
    (where / "widths.json").write_text(json.dumps(results, indent=1))
    return results


@pytest.mark.slow
def test_every_page_fits_its_column_at_1280_and_1920_pixels(site: Path, tmp_path: Path) -> None:
    """At 1,280 and 1,920 px no code block, table or page of the site is wider than the box it
    is shown in: long code lines wrap, wide tables shrink their cells, and the column is 748 px
    and 1,175 px wide (Material's default: 688 and 757 px, with 4 to 8 blocks cut off per
    page)."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    results = measured_widths(site, tmp_path)
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert {(r["page"], r["width"]) for r in results} == {(p, w) for p in pages for w in WIDTHS}
    clipped = {f"{r['page']} at {r['width']} px": r["clipped"] for r in results if r["clipped"]}
    assert not clipped, clipped
    columns = {r["width"]: r["column"] for r in results if r["page"] == "guide/bank/index.html"}
    assert columns[1280] >= 740 and columns[1920] >= 1100, columns
    assert sum(r["blocks"] for r in results) > 400  # the code blocks were there to measure
