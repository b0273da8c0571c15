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
"""

from __future__ import annotations

import ast
import inspect
import itertools
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from convbank.catalog import catalog
from convbank.model import Part
from convbank.validate import checks_for

NOTES = Path(__file__).resolve().parent.parent / "datasets" / "notes"
REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
TURNS_SHOWN = 12


@dataclass
class Found:
    """Where a dataset's real records were found when the site was built, and what of it
    could be built from them."""

    folder: Path
    source: str  # how the page names the folder: ../shared/data, ../shared/samples, the package's samples
    full: bool  # the published files (True), or excerpts of them
    configs: list[str] = field(default_factory=list)
    stats: dict[str, Any] | None = None
    problem: str = ""  # why nothing could be built from the folder


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


def cell(text: Any) -> str:
    """Text fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|") if text is not None else ""


def field_docs(record_type: type) -> dict[str, str]:
    """``{Class.field: docstring}`` and ``{Class: docstring}`` for the record type's module."""
    docs: dict[str, str] = {}
    try:
        tree = ast.parse(inspect.getsource(inspect.getmodule(record_type)))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return docs
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        if (doc := ast.get_docstring(node)) is not None:
            docs[node.name] = doc
        body = node.body
        for a, b in itertools.pairwise(body):
            if (
                isinstance(a, ast.AnnAssign)
                and isinstance(a.target, ast.Name)
                and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant)
                and isinstance(b.value.value, str)
            ):
                docs[f"{node.name}.{a.target.id}"] = inspect.cleandoc(b.value.value)
    return docs


def struct_fields(t: type) -> dict[str, type]:
    """The fields of a msgspec struct type, with the struct type of each where it has one."""
    import typing

    import msgspec

    out: dict[str, type] = {}
    hints = typing.get_type_hints(t) if isinstance(t, type) and issubclass(t, msgspec.Struct) else {}
    for name, hint in hints.items():
        found = [a for a in _flatten(hint) if isinstance(a, type) and issubclass(a, msgspec.Struct)]
        if found:
            out[name] = found[0]
    return out


def _flatten(hint: Any) -> list[Any]:
    import typing

    args = typing.get_args(hint)
    return [hint] if not args else [x for a in args for x in _flatten(a)]


def schema_rows(schema: pa.Schema, record_type: type) -> list[tuple[str, str, bool, str]]:
    """(field path, Arrow type, nullable, meaning) for every field, nested ones as ``a[].b``."""
    docs = field_docs(record_type)
    rows: list[tuple[str, str, bool, str]] = []
    keys = {
        "conversation_id": "convbank's id of the conversation (the key to the unified tables).",
        "source_index": "The record's position in its source file.",
    }

    def visit(prefix: str, field: pa.Field, owner: type | None) -> None:
        t = field.type
        path = f"{prefix}{field.name}"
        meaning = keys.get(path, "")
        sub = struct_fields(owner).get(field.name) if owner is not None else None
        if owner is not None and not meaning:
            meaning = docs.get(f"{owner.__name__}.{field.name}", "")
            if not meaning and sub is not None:
                meaning = docs.get(sub.__name__, "")
        short = str(t) if not (pa.types.is_struct(t) or pa.types.is_list(t)) else _short(t)
        rows.append((path, short, field.nullable, meaning))
        inner = t
        suffix = ""
        while pa.types.is_list(inner) or pa.types.is_large_list(inner):
            inner = inner.value_type
            suffix += "[]"
        if pa.types.is_struct(inner) and path.count(".") < 3:
            for i in range(inner.num_fields):
                visit(f"{path}{suffix}.", inner.field(i), sub)

    for column in schema:
        visit("", column, None if column.name in keys else record_type)
    return rows


def _short(t: pa.DataType) -> str:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{_short(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_map(t):
        return f"map<{t.key_type}, {_short(t.item_type)}>"
    return str(t)


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
        labels: dict[int, list[str]] = {}
        for a in conv.annotations:
            labels.setdefault(a.turn_index, []).append(f"{a.layer}:{a.label}")
        out = [
            f"Conversation `{conv.conversation_id}` ({config}/{split}), read from {what} "
            f"(`../shared/{folder.name}`) when this site was built; its first "
            f"{min(TURNS_SHOWN, conv.num_turns)} of {conv.num_turns} turns. "
            f"`convbank show {name} {conv.conversation_id}` shows it whole.",
            "",
        ]
        people = [p for p in conv.participants if p.persona]
        for p in people[:2]:
            out.append(f"- `{p.participant_id}` ({p.role}): " + cell(" ".join(p.persona))[:400])
        out += ["", "| # | speaker | kind | text | labels |", "|---|---|---|---|---|"]
        for t in conv.turns[:TURNS_SHOWN]:
            text = cell(t.text)
            text = text if len(text) <= 300 else text[:300] + " …"
            out.append(
                f"| {t.turn_index} | `{t.participant_id}` | {t.kind} | {text} | "
                f"{cell(', '.join(labels.get(t.turn_index, [])))} |"
            )
        return out
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
            f"What `convbank report {name}` shows, computed when this site was built from **the published "
            f"files** in `{found.source}` (configs {configs}; every split of them summed in the charts)."
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


def train_on_it(name: str) -> list[str]:
    """The "train on it" section: the example views the dataset offers, its label layers'
    targets and its outcome targets."""
    d = catalog.get(name)
    targets = ", ".join(f"`{t}`" for t in d.presentation.target_names) or "none"
    return [
        "## Train on it",
        "",
        "Example views (`corpus.examples(view, ...)`, see [PyTorch and Hugging Face](../guide/training.md)): "
        + ", ".join(f"`{v}`" for v in d.presentation.example_views)
        + f". Outcome targets of the `conversations` view: {targets}.",
        "",
    ]


def page(name: str, found: Found | None) -> str:
    """The Markdown of the dataset's catalog page (``found``: :meth:`Here.dataset`)."""
    d = catalog.get(name)
    card = d.describe()
    out: list[str] = [f"# {d.title} (`{name}`)", "", cell(d.description), ""]
    out += [
        "| | |",
        "|---|---|",
        f"| name | `{name}` |",
        f"| licence | {cell(d.license)} |",
        f"| version | {cell(d.version)} |",
        f"| homepage | <{d.homepage}> |",
        f"| default config | `{card['default_config']}` |",
        f"| registered by | `{catalog.origin(name)}` |" if hasattr(catalog, "origin") else "",
        "",
    ]
    out += load_it(name, found)
    out += [
        "## Configs and splits",
        "",
        "Published conversation counts (a blank count: the publisher gives none).",
        "",
        "| config | description | splits |",
        "|---|---|---|",
    ]
    for c in d.configs:
        splits = ", ".join(f"{s} {n:,}" if n is not None else s for s, n in c.splits.items())
        desc = cell(c.description) + (f" (the union of {', '.join(c.union_of)})" if c.union_of else "")
        out.append(f"| `{c.name}` | {desc} | {splits} |")
    out += ["", "## The publisher's files", "", "| file | size | sha256 |", "|---|---|---|"]
    for f in d.files:
        size = f"{f.size:,} bytes" if f.size else ""
        sha = f"`{f.sha256}`" if f.sha256 else "none published: recorded on first use"
        out.append(f"| [{f.name}]({f.url}) | {size} | {sha} |")
    if d.optional_files:
        out += ["", "Optional: " + ", ".join(f"`{n}`" for n in d.optional_files) + "."]
    out += ["", "## An example conversation", "", *example(name)]
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
        "`convbank validate " + name + "` runs these (besides the bank-level "
        "checks: unique ids and published counts).",
        "",
        "| check | scope | what it checks |",
        "|---|---|---|",
    ]
    for c in checks_for(name):
        out.append(
            f"| `{c.name}` | {'this dataset' if c.dataset else 'every dataset'} | {cell(c.description)} |"
        )
    tasks = list(d.presentation.tasks())
    runs = found is not None and found.full and bool(found.configs)
    bench_skip = (
        "" if runs else "<!-- not run by the tests: the publisher's files are not beside the repository -->\n"
    )
    out += ["", *train_on_it(name)]
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
    out += ["", "## Citation", "", "```bibtex", textwrap.dedent(d.citation).strip(), "```", ""]
    return "\n".join(line for line in out if line is not None) + "\n"
