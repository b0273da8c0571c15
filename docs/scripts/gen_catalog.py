"""Write one catalog page per dataset of the registry (mkdocs-gen-files runs this at build).

Everything on a page comes from the dataset's class: its card (``describe()``), its files,
configs and splits, the raw table's Arrow schema (``raw_schema``) with the field docstrings
of its record types, its checks (``convbank.validate.checks_for``) and its benchmark tasks
(``Task.describe()``). A plugin dataset, registered through the entry-point group
``convbank.datasets``, gets its page the same way. Hand-written notes on a built-in dataset's
mapping and the quirks of its files live in ``docs/datasets/notes/<name>.md`` and are added
where they exist.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path
from typing import Any

import mkdocs_gen_files
import pyarrow as pa

from convbank.catalog import catalog
from convbank.validate import checks_for

NOTES = Path(__file__).resolve().parent.parent / "datasets" / "notes"
REPO = Path(__file__).resolve().parents[2]
# Where the real files are looked for: the full published files, then real excerpts of them
# (records the publishers wrote, cut by the Hugging Face loaders' authors), beside the repository.
SOURCES = ((REPO.parent / "shared" / "data", "the published file"),
           (REPO.parent / "shared" / "samples", "an excerpt of the published file"))
TURNS_SHOWN = 12


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
        for a, b in zip(body, body[1:], strict=False):
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
    import msgspec
    import typing

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
    keys = {"conversation_id": "convbank's id of the conversation (the key to the unified tables).",
            "source_index": "The record's position in its source file."}

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

    for field in schema:
        visit("", field, None if field.name in keys else record_type)
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
    import tempfile

    from convbank.fetch import Fetcher

    d = catalog.get(name)
    config = d.default_config
    split = next(iter(d.config(config).splits))
    for folder, what in SOURCES:
        if not folder.is_dir():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            fetcher = Fetcher(sources=[folder], verify=False, offline=True, root=Path(tmp), progress=False)
            files = d.required_files(config)
            if not files or any(fetcher._in_sources(d, f) is None for f in files):
                continue
            try:
                paths = fetcher.fetch(d, files)
                record = next(iter(d.read(paths, config, split)))
            except Exception as exc:  # a file here that is not the dataset's: say so, do not fail
                return [f"No example: the files in `{folder.name}` could not be read ({cell(exc)})."]
            conv = d.to_conversation(record, config, split, 0)
        labels: dict[int, list[str]] = {}
        for a in conv.annotations:
            labels.setdefault(a.turn_index, []).append(f"{a.layer}:{a.label}")
        out = [f"Conversation `{conv.conversation_id}` ({config}/{split}), read from {what} "
               f"(`../shared/{folder.name}`) when this site was built; its first {min(TURNS_SHOWN, conv.num_turns)} "
               f"of {conv.num_turns} turns. `convbank show {name} {conv.conversation_id}` shows it whole.", ""]
        people = [p for p in conv.participants if p.persona]
        for p in people[:2]:
            out.append(f"- `{p.participant_id}` ({p.role}): " + cell(" ".join(p.persona))[:400])
        out += ["", "| # | speaker | kind | text | labels |", "|---|---|---|---|---|"]
        for t in conv.turns[:TURNS_SHOWN]:
            text = cell(t.text)
            text = text if len(text) <= 300 else text[:300] + " …"
            out.append(f"| {t.turn_index} | `{t.participant_id}` | {t.kind} | {text} | "
                       f"{cell(', '.join(labels.get(t.turn_index, [])))} |")
        return out
    return ["No example: none of its files was beside the repository when this site was built "
            "(`../shared/data`, `../shared/samples`)."]


def fmt(value: float | None) -> str:
    return "not found" if value is None else f"{value:g}"


def page(name: str) -> str:
    d = catalog.get(name)
    card = d.describe()
    out: list[str] = [f"# {d.title} (`{name}`)", "", cell(d.description), ""]
    out += [
        "| | |", "|---|---|",
        f"| name | `{name}` |",
        f"| licence | {cell(d.license)} |",
        f"| version | {cell(d.version)} |",
        f"| homepage | <{d.homepage}> |",
        f"| default config | `{card['default_config']}` |",
        f"| registered by | `{catalog.origin(name)}` |" if hasattr(catalog, "origin") else "",
        "",
    ]
    out += ["## Load it", "", "```bash", f"convbank build {name} --source ../shared/data   # once: fetch, read, map, store",
            f"convbank info {name}                      # card, citation, files and their checksum status",
            f"convbank raw {name} -n 1                  # a raw record, as published",
            f"convbank query \"SELECT config, split, count(*) FROM conversations WHERE dataset = '{name}' GROUP BY ALL\"",
            f"convbank export {name} --format parlai -o out/     # ParlAI text format",
            f"convbank export {name} --format convokit -o out/   # a ConvoKit corpus",
            "```", "", "```python", "import convbank", "",
            f'corpus = convbank.load("{name}", "{card["default_config"]}")',
            "corpus[0]                          # a Conversation",
            'corpus.to_pandas("turns")          # pandas (extra pandas)',
            "corpus.to_hf()                     # a Hugging Face DatasetDict (extra hf)",
            "```", "",
            "ConvoKit: `convokit.Corpus(filename=\"out/" + name + "\")` after the `convokit` export; "
            "ParlAI: the `parlai` export's text files with `ParlAIDialogTeacher`. "
            "See [Exports](../guide/exports.md) for every format.", ""]
    out += ["## Configs and splits", "", "Published conversation counts (a blank count: the publisher gives none).", "",
            "| config | description | splits |", "|---|---|---|"]
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
    out += ["", f"## Raw record schema (`{name}_raw`)", "",
            f"The table `{name}_raw` holds one row per source record, typed like the source "
            f"(`{d.raw_type.__name__}`); nested fields are shown as `field[].sub`.", "",
            "| field | type | nullable | what it is |", "|---|---|---|---|"]
    for path, typ, nullable, meaning in schema_rows(d.raw_schema, d.raw_type):
        out.append(f"| `{path}` | `{cell(typ)}` | {'yes' if nullable else 'no'} | {cell(meaning)} |")
    notes = NOTES / f"{name}.md"
    if notes.exists():
        out += ["", "## Mapping notes and quirks", "", notes.read_text().strip()]
    out += ["", "## Validation checks", "", "`convbank validate " + name + "` runs these (besides the bank-level "
            "checks: unique ids and published counts).", "", "| check | scope | what it checks |", "|---|---|---|"]
    for c in checks_for(name):
        out.append(f"| `{c.name}` | {'this dataset' if c.dataset else 'every dataset'} | {cell(c.description)} |")
    tasks = list(d.tasks())
    out += ["", "## Benchmark tasks", ""]
    if not tasks:
        out.append("None.")
    for t in tasks:
        info = t.describe()
        out += [f"### `{info['task']}`", "", cell(info["description"]), "",
                f"- protocol: {cell(info['protocol'])}", f"- metric: `{info['metric']}`",
                f"- prediction: {cell(info['prediction'])}",
                f"- models: {', '.join(f'`{m}`' for m in info['models'])} (default `{info['default_model']}`)", "",
                f"```bash\nconvbank bench {info['task']} --model tfidf\n```", ""]
        ref = info["reference"]
        for key, title in (("published", "The authors' figures"), ("measured_here", "Measured here")):
            figs = ref.get(key) or []
            if not figs:
                continue
            out += [f"{title}:", "", "| system | metric | split | value | source |", "|---|---|---|---|---|"]
            out += [f"| {cell(f['system'])} | `{f['metric']}` | {cell(f['split'] or '')} | {fmt(f['value'])} | "
                    f"{cell(f['source'])} |" for f in figs]
            out.append("")
    out += ["", "## Citation", "", "```bibtex", textwrap.dedent(d.citation).strip(), "```", ""]
    return "\n".join(line for line in out if line is not None) + "\n"


names = catalog.names()
with mkdocs_gen_files.open("datasets/index.md", "w") as index:
    index.write("# Datasets\n\nOne page per dataset of the catalog, generated from the registry at build "
                "time: a dataset another package adds as a plugin gets its page too.\n\n"
                "| dataset | title | licence | configs |\n|---|---|---|---|\n")
    for name in names:
        d = catalog.get(name)
        index.write(f"| [`{name}`]({name}.md) | {cell(d.title)} | {cell(d.license)} | "
                    f"{', '.join(c.name for c in d.configs)} |\n")
for name in names:
    with mkdocs_gen_files.open(f"datasets/{name}.md", "w") as f:
        f.write(page(name))
    mkdocs_gen_files.set_edit_path(f"datasets/{name}.md", "scripts/gen_catalog.py")
