"""The catalog pages, one per dataset of the registry (``gen_catalog.py`` writes them when
mkdocs builds the site; ``tests/docs/test_code_blocks.py`` runs the code blocks they hold).

Everything on a page comes from the dataset's class: its card (``describe()``), its files,
configs and splits, the raw table's Arrow schema (``raw_schema``) with the field docstrings
of its record types, its checks (``convbank.validate.checks_for``) and its benchmark tasks
(``Task.describe()``). The example conversation and the statistics and charts of
``convbank report`` come from a bank built, when the site is built, from the real files beside
the repository (:class:`Here`): the published files in ``../shared/data`` where they are
there, else the excerpts in ``../shared/samples`` or the samples the dataset's package ships,
labelled as excerpts. A plugin dataset, registered through the entry-point group
``convbank.datasets``, gets its page the same way. Hand-written notes on a built-in dataset's
mapping and the quirks of its files live in ``docs/datasets/notes/<name>.md`` and are added
where they exist.

An imported dataset (``convbank import``) gets its page from the same function: the site shows
the one the tutorial of ``docs/guide/your-conversations.md`` writes and imports (its own code
and command, :func:`imported`), with the files it was read from, what their format does not
carry, its example and statistics from the bank, and the checks of every imported corpus.
"""

from __future__ import annotations

import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imported_pages import import_it, imported, imported_files, tutorial_import
from page_parts import Found, cell, conversation_table, schema_rows

from convbank import registry
from convbank.catalog import catalog
from convbank.datasets import Dataset
from convbank.datasets._imported import ImportedDataset
from convbank.model import Part
from convbank.validate import checks_for

__all__ = ["Found", "Here", "catalog", "cell", "here", "imported", "page", "tutorial_import"]

NOTES = Path(__file__).resolve().parent.parent / "datasets" / "notes"
REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def _folders(name: str) -> list[tuple[Path, str, bool]]:
    d = catalog.get(name)
    folders = [(SHARED / "data", "../shared/data", True), (SHARED / "samples", "../shared/samples", False)]
    if d.samples is not None:
        folders.append((Path(d.samples), f"the samples of its package (`{d.samples.name}/`)", False))
    return [f for f in folders if f[0].is_dir()]


@dataclass
class Here:
    """A bank built from the real files beside the repository, one dataset at a time."""

    root: Path
    found: dict[str, Found] = field(default_factory=dict)

    def dataset(self, name: str) -> Found | None:
        """Build ``name`` from the first folder that holds any of its configs (``None``: none)."""
        if name in self.found:
            return self.found[name]
        from convbank.build import build
        from convbank.fetch import Fetcher
        from convbank.stats import stats
        from convbank.store import Bank

        result: Found | None = None
        bank = Bank(self.root / "bank")
        for folder, source, full in _folders(name):
            fetcher = Fetcher(sources=[folder], verify=False, offline=True, root=self.root, progress=False)
            try:
                report = build([name], fetcher=fetcher, bank=bank)
            except Exception as exc:  # an excerpt that cannot be built: the page says why
                result = result or Found(
                    folder, source, full, problem=cell(str(exc).replace(str(SHARED), "../shared"))
                )
                continue
            configs = list(dict.fromkeys(s.config for s in report.splits))
            if configs:
                result = Found(folder, source, full, configs, stats([name], bank=bank)[name])
                break
        self.found[name] = result  # type: ignore[assignment]
        return result


@contextmanager
def here() -> Iterator[Here]:
    """A :class:`Here` in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="convbank-docs-") as tmp:
        yield Here(Path(tmp))


def example(name: str) -> list[str]:
    """The first conversation of the default config's first split, read from the real files
    where they are beside the repository, as a table of its first turns; else a line saying so."""

    from convbank.fetch import Fetcher

    d = catalog.get(name)
    config = d.default_config
    split = next(iter(d.config(config).splits))
    for folder, what in (
        (SHARED / "data", "the published file"),
        (SHARED / "samples", "an excerpt of the published file"),
    ):
        if not folder.is_dir():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            fetcher = Fetcher(sources=[folder], verify=False, offline=True, root=Path(tmp), progress=False)
            files = d.required_files(config)
            if not files or any(fetcher._in_sources(d, f) is None for f in files):
                continue
            try:
                paths = fetcher.fetch(d, files)
                record = next(iter(d.read(paths, Part(config, split))))
            except Exception as exc:  # a file here that is not the dataset's: say so, do not fail
                return [f"No example: the files in `{folder.name}` could not be read ({cell(exc)})."]
            conv = d.to_conversation(record, Part(config, split), 0)
        return conversation_table(name, conv, f"{config}/{split}", f"{what} (`../shared/{folder.name}`)")
    return [
        "No example: none of its files was beside the repository when this site was built "
        "(`../shared/data`, `../shared/samples`)."
    ]


def fmt(value: float | None) -> str:
    return "not found" if value is None else f"{value:g}"


def _svg(chart: Any) -> str:
    """An inline SVG chart as one raw-HTML block (no blank line inside, so Markdown leaves it)."""
    return f'<figure class="convbank-chart">{chart}</figure>'


def statistics(name: str, found: Found | None) -> list[str]:
    """What ``convbank report NAME`` shows: sizes per split, label and metadata charts, words
    per message and the dataset's cross-tabs, from the bank :class:`Here` built; else a line
    saying why there are none."""
    from convbank.report import dataset_charts

    out = ["## Statistics and charts", ""]
    if found is None:
        return [
            *out,
            "No statistics: none of its files was beside the repository when this site was built "
            "(`../shared/data`, `../shared/samples`). `convbank report " + name + " -o report.html` draws "
            "them from your bank.",
        ]
    if found.stats is None:
        return [
            *out,
            f"No statistics: the files in {found.source} could not be built when this site was built: "
            f"{found.problem}",
        ]
    configs = ", ".join(f"`{c}`" for c in found.configs)
    if found.full:
        out += [
            f"What `convbank report {name}` shows, computed when this site was built from "
            f"{found.what or f'**the published files** in `{found.source}`'} (configs {configs}; every "
            "split of them summed in the charts)."
        ]
    else:
        out += [
            '!!! warning "Computed from excerpts"',
            "",
            f"    These figures come from **excerpts** of the published files ({found.source}, configs "
            f"{configs}): real records, but a handful of them. They show what `convbank report {name}` "
            "draws, not the dataset's distributions.",
        ]
    splits = found.stats["splits"]
    rows = (
        ("conversations", "conversations"),
        ("participants", "participants"),
        ("turns", "turns"),
        ("actions (turns that are not messages)", "actions"),
        ("words", "words"),
    )
    out += [
        "",
        "| | " + " | ".join(f"`{s['config']}/{s['split']}`" for s in splits) + " |",
        "|---|" + "---:|" * len(splits),
    ]
    out += [f"| {title} | " + " | ".join(f"{s[key]:,}" for s in splits) + " |" for title, key in rows]
    out += [
        "| turns per conversation: mean, max | "
        + " | ".join(
            f"{s['turns_per_conversation']['mean']:.1f}, {s['turns_per_conversation']['max']}" for s in splits
        )
        + " |"
    ]
    charts = dataset_charts(found.stats)
    for layer, chart in charts["labels"]:
        out += ["", f"### Labels of the `{layer}` layer", "", _svg(chart)]
    out += ["", "### Words per message", "", _svg(charts["turns"])]
    for meta, chart, summary in charts["meta"]:
        out += ["", f"### `{meta}`", "", *([summary.capitalize() + ".", ""] if summary else []), _svg(chart)]
    for t in found.stats["crosstabs"]:
        out += [
            "",
            f"### {cell(t['title'])}",
            "",
            cell(t["question"]),
            "",
            "| " + " | ".join(cell(c) for c in t["columns"]) + " |",
            "|" + "---|" * len(t["columns"]),
        ]
        out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in t["rows"]]
    return out


def load_it(name: str, found: Found | None) -> list[str]:
    """The "load it" snippets. Where the real files were found, they build from that folder
    (and ``tests/docs/test_code_blocks.py`` runs them); else they download."""
    d = catalog.get(name)
    if found is not None and found.full and found.configs:
        config, folder = found.configs[0], found.source
    else:
        config, folder = d.default_config, None
    if folder is not None:
        build = (
            f"convbank build {name} --config {config} --source {folder}   "
            "# once: read, map, store (the published files beside this repository; without --source, "
            "convbank downloads them)"
        )
        intro = (
            f"The blocks build from `{folder}` (the real files beside a convbank checkout: "
            "the test suite runs them); without `--source`, `convbank build` downloads the publisher's files."
        )
    else:
        build = f"convbank build {name} --config {config}   # once: fetch, read, map, store"
        intro = (
            "The publisher's files were not beside the repository when this site was built (at most "
            "excerpts of them), so these blocks download them, and the test suite, which has no internet, "
            "does not run them."
        )
    # the tests skip a block marked so in a comment before its fence (tests/docs/test_code_blocks.py)
    skip = [] if folder is not None else ["<!-- not run by the tests: it downloads the publisher's files -->"]
    return [
        "## Load it",
        "",
        intro,
        "",
        *skip,
        "```bash",
        build,
        f"convbank info {name}                      # card, citation, files and their checksum status",
        f"convbank raw {name} --config {config} -n 1   # a raw record, as published",
        'convbank query "SELECT config, split, count(*) FROM conversations '
        f"WHERE dataset = '{name}' GROUP BY ALL\"",
        f"convbank export {name} --config {config} --format parlai -o out/parlai/     # ParlAI text format",
        f"convbank export {name} --config {config} --format convokit -o out/convokit/   # a ConvoKit corpus",
        "```",
        "",
        *skip,
        "```python",
        "import convbank",
        "",
        f'corpus = convbank.load("{name}", "{config}")',
        "print(corpus[0].conversation_id)   # a Conversation",
        'turns = corpus.to_pandas("turns")  # pandas (extra pandas)',
        "hf = corpus.to_hf()                # a Hugging Face DatasetDict (extra hf)",
        "print(len(corpus), len(turns), hf)",
        "```",
        "",
        "ConvoKit (`pip install 'convbank[convokit]'`) and ParlAI read the exports above:",
        "",
        *skip,
        "```python",
        "import convokit",
        "",
        f'conversations = convokit.Corpus(filename="out/convokit/{name}_convokit")',
        'print(len(list(conversations.iter_conversations())), "conversations in ConvoKit")',
        "```",
        "",
        "ParlAI: the `parlai` export's text files are in ParlAI's dialog format, for `ParlAIDialogTeacher` "
        f"(`--task fromfile:parlaiformat --fromfile_datapath out/parlai/{name}_{config}_train.txt`). "
        "See [Exports](../guide/exports.md) for every format.",
        "",
    ]


def train_on_it(d: Dataset) -> list[str]:
    """The "train on it" section: the example views the dataset offers, its label layers'
    targets and its outcome targets."""
    targets = ", ".join(f"`{t}`" for t in d.presentation.target_names) or "none"
    return [
        "## Train on it",
        "",
        "Example views (`corpus.examples(view, ...)`, see [PyTorch and Hugging Face](../guide/training.md)): "
        + ", ".join(f"`{v}`" for v in d.presentation.example_views)
        + f". Outcome targets of the `conversations` view: {targets}.",
        "",
    ]


def page(name: str, found: Found | None, dataset: Dataset | None = None) -> str:
    """The Markdown of the dataset's catalog page (``found``: :meth:`Here.dataset`, or for an
    imported ``dataset``, :func:`imported`)."""
    d = dataset or catalog.get(name)
    mine = d if isinstance(d, ImportedDataset) else None
    card = d.describe()
    out: list[str] = [f"# {d.title} (`{name}`)", "", cell(d.description), ""]
    out += [
        "| | |",
        "|---|---|",
        f"| name | `{name}` |",
        f"| licence | {cell(d.license)} |",
        f"| version | {cell(d.version)} |",
        *([f"| homepage | <{d.homepage}> |"] if d.homepage else []),
        f"| default config | `{card['default_config']}` |",
        f"| where it came from | {cell(mine.origin)} |"
        if mine
        else f"| registered by | `{catalog.origin(name)}` |",
        "",
    ]
    out += import_it(mine, found) if mine and found else load_it(name, found)
    out += [
        "## Configs and splits",
        "",
        "Conversations stored by the import."
        if mine
        else "Published conversation counts (a blank count: the publisher gives none).",
        "",
        "| config | description | splits |",
        "|---|---|---|",
    ]
    for c in d.configs:
        counts = mine.stored.get(c.name, {}) if mine else c.splits
        splits = ", ".join(f"{s} {n:,}" if n is not None else s for s, n in counts.items())
        desc = cell(c.description) + (f" (the union of {', '.join(c.union_of)})" if c.union_of else "")
        out.append(f"| `{c.name}` | {desc} | {splits} |")
    if mine:
        out += ["", *imported_files(mine)]
    else:
        out += ["", "## The publisher's files", "", "| file | size | sha256 |", "|---|---|---|"]
        for f in d.files:
            size = f"{f.size:,} bytes" if f.size else ""
            sha = f"`{f.sha256}`" if f.sha256 else "none published: recorded on first use"
            out.append(f"| [{f.name}]({f.url}) | {size} | {sha} |")
    if d.optional_files:
        out += ["", "Optional: " + ", ".join(f"`{n}`" for n in d.optional_files) + "."]
    shown = (
        conversation_table(name, found.example, f"{found.example.config}/{found.example.split}", "the bank")
        if found is not None and found.example is not None
        else example(name)
    )
    out += ["", "## An example conversation", "", *shown]
    out += ["", *statistics(name, found)]
    out += [
        "",
        f"## Raw record schema (`{name}_raw`)",
        "",
        f"The table `{name}_raw` holds one row per source record, typed like the source "
        f"(`{d.raw_type.__name__}`); nested fields are shown as `field[].sub`.",
        "",
        "| field | type | nullable | what it is |",
        "|---|---|---|---|",
    ]
    for path, typ, nullable, meaning in schema_rows(d.raw_schema, d.raw_type):
        out.append(f"| `{path}` | `{cell(typ)}` | {'yes' if nullable else 'no'} | {cell(meaning)} |")
    notes = NOTES / f"{name}.md"
    if notes.exists():
        out += ["", "## Mapping notes and quirks", "", notes.read_text().strip()]
    out += [
        "",
        "## Validation checks",
        "",
        f"`convbank validate {name}` runs these (besides the bank-level checks: unique ids"
        + (", and no published counts to compare with)." if mine else " and published counts)."),
        "",
        "| check | scope | what it checks |",
        "|---|---|---|",
    ]
    generic = [c for c in registry.checks if c.dataset is None]
    for c in [*generic, *d.presentation.checks()] if mine else checks_for(name):
        out.append(
            f"| `{c.name}` | {'this dataset' if c.dataset else 'every dataset'} | {cell(c.description)} |"
        )
    tasks = list(d.presentation.tasks())
    runs = found is not None and found.full and bool(found.configs)
    bench_skip = (
        "" if runs else "<!-- not run by the tests: the publisher's files are not beside the repository -->\n"
    )
    out += ["", *train_on_it(d)]
    out += ["", "## Benchmark tasks", ""]
    if not tasks:
        out.append("None.")
    for t in tasks:
        info = t.describe()
        out += [
            f"### `{info['task']}`",
            "",
            cell(info["description"]),
            "",
            f"- protocol: {cell(info['protocol'])}",
            f"- metric: `{info['metric']}`",
            f"- prediction: {cell(info['prediction'])}",
            f"- models: {', '.join(f'`{m}`' for m in info['models'])} (default `{info['default_model']}`)",
            "",
            f"{bench_skip}```bash\nconvbank bench {info['task']} --model tfidf\n```",
            "",
        ]
        ref = info["reference"]
        for key, title in (("published", "The authors' figures"), ("measured_here", "Measured here")):
            figs = ref.get(key) or []
            if not figs:
                continue
            out += [f"{title}:", "", "| system | metric | split | value | source |", "|---|---|---|---|---|"]
            out += [
                f"| {cell(f['system'])} | `{f['metric']}` | {cell(f['split'] or '')} | {fmt(f['value'])} | "
                f"{cell(f['source'])} |"
                for f in figs
            ]
            out.append("")
    if d.citation:
        out += ["", "## Citation", "", "```bibtex", textwrap.dedent(d.citation).strip(), "```", ""]
    return "\n".join(line for line in out if line is not None) + "\n"
