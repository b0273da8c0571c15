"""One generic test for any dataset, built-in or plugin (TensorFlow Datasets' test class, as a
function): :func:`check_dataset` runs a dataset through every layer from its sample files and
fails at the first thing that does not work. A dataset package's own test is then::

    from convbank.testing import check_dataset

    def test_mydataset(tmp_path):
        check_dataset("mydataset", tmp_path)

(``convbank new-dataset`` writes it). The dataset must be in the catalog: a plugin is once its
package is installed (its entry point registers it).
"""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from convbank import catalog, registry
from convbank.build import build
from convbank.datasets import Dataset
from convbank.errors import UnknownDatasetError
from convbank.fetch import Fetcher
from convbank.model import Conversation, Part
from convbank.query import Corpus
from convbank.store import Bank

__all__ = ["DatasetCheck", "check_dataset"]


@dataclass
class DatasetCheck:
    """What :func:`check_dataset` found: conversations per part, the files of every export
    format, the published-count differences of excerpts, and each task's result or the one
    line saying why it could not run on the samples."""

    dataset: str
    conversations: dict[Part, int] = field(default_factory=dict)
    exports: dict[str, list[Path]] = field(default_factory=dict)
    excerpt: list[str] = field(default_factory=list)
    tasks: dict[str, Any] = field(default_factory=dict)


def _fail(message: str) -> AssertionError:
    return AssertionError(message)


def check_dataset(name: str, work: Path, sources: Sequence[Path] | None = None) -> DatasetCheck:
    """Build dataset ``name`` from ``sources`` (default: its :attr:`~Dataset.samples`) into a
    bank under ``work`` (a fresh, empty folder) and check, for every stored config whose
    files are there: each record maps onto the unified model and back to itself, before and
    after the bank; the build, ``validate`` (no error but published counts of an excerpt),
    ``stats`` and the HTML report; every export format, the ``source`` export byte for byte;
    ``show`` and the chat record of every conversation; the viewer's pages (with the ``web``
    extra); each benchmark task's fastest model (a task may say the samples are too small)."""
    try:
        ds = catalog.get(name)
    except UnknownDatasetError as exc:
        raise _fail(
            f"{name} is not in the catalog ({exc}); install its package (pip install -e .) so that "
            "its convbank.datasets entry point registers it"
        ) from None
    folders = list(sources) if sources is not None else ([ds.samples] if ds.samples else [])
    if not folders:
        raise _fail(f"{name} has no samples (Dataset.samples) and no sources were given")
    fetcher = Fetcher(sources=folders, verify=False, offline=True, root=work / "home", progress=False)
    bank = Bank(work / "bank")
    found = DatasetCheck(name)
    configs = [
        c.name
        for c in ds.stored_configs()
        if all(fetcher.find_local(ds, f) is not None for f in ds.required_files(c.name))
    ]
    if not configs:
        raise _fail(f"none of the files of {name} is in {', '.join(map(str, folders))}")
    for config in configs:
        paths = fetcher.fetch(ds, ds.required_files(config))
        records = {s: list(ds.read(paths, Part(config, s))) for s in ds.config(config).splits}
        _check_mapping(ds, config, records)
        report = build([name], config=config, fetcher=fetcher, bank=bank)
        if not report.ok:
            raise _fail(f"{name}/{config} did not build: {report.failures}")
        with Corpus(name, config, bank=bank) as corpus:
            for part in corpus.parts():
                back = [ds.from_conversation(c) for c in corpus.iter_part(*part)]
                if back != records[part.split]:
                    raise _fail(
                        f"{name}/{part.config}/{part.split}: the records read back from the bank differ"
                    )
                found.conversations[part] = len(back)
            _check_exports(ds, corpus, fetcher, work / "exports" / config, found)
            _check_views(ds, corpus, bank)
            _check_tasks(ds, corpus, found)
    _check_analysis(ds, bank, found)
    return found


def _check_mapping(ds: Dataset, config: str, records: dict[str, list[Any]]) -> None:
    """Every record maps onto the unified model and back to itself; ids are unique."""
    seen: set[str] = set()
    for split, items in records.items():
        if not items:
            raise _fail(f"{ds.name}/{config}/{split} has no records")
        for i, record in enumerate(items):
            conv = ds.to_conversation(record, Part(config, split), i)
            if conv.conversation_id in seen:
                raise _fail(f"{ds.name}: conversation id {conv.conversation_id!r} repeats")
            seen.add(conv.conversation_id)
            copy = msgspec.convert(msgspec.to_builtins(conv), type(conv))
            if ds.from_conversation(copy) != record:
                raise _fail(f"{ds.name}/{config}/{split}: record {i} does not map back to itself")
        check_map_batch(ds, items, Part(config, split), start=7)


def check_map_batch(ds: Dataset, records: list[Any], part: Part, *, start: int = 0) -> None:
    """A dataset's own :meth:`~convbank.datasets.Dataset.map_batch` (if it has one) gives
    the very tables of the generic mapping through conversation objects."""
    if type(ds).map_batch is Dataset.map_batch:
        return
    fast = ds.map_batch(records, part, start)
    generic = Dataset.map_batch(ds, records, part, start)
    if sorted(fast) != sorted(generic):
        raise _fail(f"{ds.name}: map_batch gives the tables {sorted(fast)}, not {sorted(generic)}")
    for name, table in generic.items():
        if not fast[name].equals(table, check_metadata=True):
            raise _fail(
                f"{ds.name}/{part.config}/{part.split}: map_batch's {name} differs from the generic mapping"
            )


def _inputs(ds: Dataset, config: str, fetcher: Fetcher) -> dict[str, Path]:
    """The source files of a config, by the path the source export gives them."""
    found: dict[str, Path] = {}
    for f in ds.required_files(config):
        path = fetcher.find_local(ds, f)
        if path is None:
            continue
        if path.is_file():
            found[f.name] = path
        else:  # an archive's extracted folder: the config's own subfolder
            found.update(
                {
                    f"{f.extract_to}/{p.relative_to(path)}": p
                    for p in (path / config).rglob("*")
                    if p.is_file()
                }
            )
    return found


def _check_exports(ds: Dataset, corpus: Corpus, fetcher: Fetcher, out: Path, found: DatasetCheck) -> None:
    from convbank.export import export, formats

    # a format convbank only reads, or whose extra is not installed, is skipped
    for fmt in [f.name for f in formats if f.writer is not None and f.available()]:
        written = export(corpus, fmt, out / fmt)
        if not written or not all(p.exists() for p in written):
            raise _fail(f"{ds.name}: the {fmt} export wrote nothing")
        found.exports[fmt] = written
    config = corpus.parts()[0].config
    for relative, original in _inputs(ds, config, fetcher).items():
        copy = out / "source" / relative
        if not copy.is_file() or copy.read_bytes() != original.read_bytes():
            raise _fail(f"{ds.name}: the source export of {relative} is not the file it was built from")


def _check_views(ds: Dataset, corpus: Corpus, bank: Bank) -> None:
    from rich.console import Console

    from convbank.cli._render import render_conversation
    from convbank.export import chat_record

    first: dict[str, Conversation] = {}
    for conv in corpus:
        context = corpus.context(conv)
        chat_record(conv, None, context)
        first.setdefault(conv.split, conv)
    for conv in first.values():
        screen = io.StringIO()
        render_conversation(Console(file=screen, width=120), conv, corpus.context(conv))
        if conv.conversation_id not in screen.getvalue():
            raise _fail(f"{ds.name}: show does not print conversation {conv.conversation_id}")
    if importlib.util.find_spec("starlette") is None or importlib.util.find_spec("httpx") is None:
        return
    from starlette.testclient import TestClient

    from convbank.web import create_app

    client = TestClient(create_app(bank), base_url="http://127.0.0.1")
    for path in ("/", f"/datasets/{ds.name}"):
        if client.get(path).status_code != 200:
            raise _fail(f"{ds.name}: the viewer's {path} does not answer")
    for conv in first.values():
        page = client.get(f"/datasets/{ds.name}/conversations/{conv.conversation_id}")
        if page.status_code != 200 or conv.participants[0].participant_id not in page.text:
            raise _fail(f"{ds.name}: the viewer's page of conversation {conv.conversation_id} fails")


def _check_tasks(ds: Dataset, corpus: Corpus, found: DatasetCheck) -> None:
    if not ds.presentation.tasks():
        return
    from convbank.bench import BenchError, run

    for task in ds.presentation.tasks():
        try:
            result = run(
                task.name, model=task.models[0], config=corpus.parts()[0].config, load=lambda n, c: corpus
            )
        except BenchError as exc:  # the samples are too small for the protocol: said in one line
            if "\n" in str(exc):
                raise _fail(f"{task.name}: a benchmark error of more than one line") from exc
            found.tasks[task.name] = str(exc)
        else:
            found.tasks[task.name] = result


def _check_analysis(ds: Dataset, bank: Bank, found: DatasetCheck) -> None:
    from convbank.report import render_report
    from convbank.stats import stats
    from convbank.validate import validate

    report = validate([ds.name], bank=bank)
    errors = [f for f in report.findings if f.severity == "error"]
    found.excerpt = [f.message for f in errors if f.check == "published_counts"]
    others = [f"{f.check} {f.conversation_id}: {f.message}" for f in errors if f.check != "published_counts"]
    if others:
        raise _fail(f"{ds.name} fails validation: {others[:3]}")
    names = {c.name for c in report.checks}
    if not {c.name for c in registry.checks if c.dataset in (None, ds.name)} <= names:
        raise _fail(f"{ds.name}: validate skipped some of its checks")
    numbers = stats([ds.name], bank=bank)[ds.name]
    if sum(s["conversations"] for s in numbers["splits"]) != sum(found.conversations.values()):
        raise _fail(f"{ds.name}: stats count other conversations than the bank holds")
    html = render_report([ds.name], bank=bank, validate=False)
    if ds.title not in html:
        raise _fail(f"{ds.name}: the report does not show the dataset")
