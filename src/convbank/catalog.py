"""The catalog: every dataset by name, the built-in ones first, then those other packages add
through the entry-point group ``convbank.datasets`` (see :mod:`convbank.registry`, which
holds it beside the engines, checks and tasks). Duplicate names are rejected."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from convbank._archive import first_line
from convbank._wording import article
from convbank.datasets import Dataset
from convbank.datasets._imported import ImportedDataset
from convbank.errors import ConvbankError
from convbank.registry import Registry
from convbank.registry import datasets as catalog
from convbank.store._imported import imported_from

if TYPE_CHECKING:
    from convbank.fetch import Fetcher
    from convbank.store.manifest import Manifest

__all__ = [
    "Catalog",
    "built",
    "card",
    "catalog",
    "code_failed",
    "every",
    "get",
    "listing",
    "names",
    "register",
    "summary",
]


class Catalog(Registry[Dataset]):
    """An empty registry of datasets (the catalog itself is :data:`catalog`)."""

    def __init__(self) -> None:
        super().__init__("dataset")


get = catalog.get
names = catalog.names
register = catalog.register


def every(manifest: Manifest) -> list[Dataset]:
    """The catalogued datasets, then those imported into the bank ``manifest`` describes
    (``convbank import``), in the order they were first imported.

    >>> from pathlib import Path
    >>> _ = Path("chats.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\\n')
    >>> _ = convbank.import_conversations("chats.jsonl", name="my_chats")
    >>> [ds.name for ds in every(convbank.store.Bank().manifest())][-1]
    'my_chats'
    """
    found = [imported_from(n, e) for n, e in manifest.datasets.items() if e.imported is not None]
    return [*catalog, *(ds for ds in found if ds is not None and ds.name not in catalog)]


def built(manifest: Manifest) -> list[str]:
    """The names of the datasets ``manifest`` holds, catalogued then imported (:func:`every`):
    what ``validate``, ``stats`` and ``report`` run over when given no names."""
    return [ds.name for ds in every(manifest) if ds.name in manifest.datasets]


def _origin(ds: Dataset) -> str:
    return ds.origin if isinstance(ds, ImportedDataset) else catalog.origin(ds.name)


def summary(ds: Dataset, manifest: Manifest, fetcher: Fetcher | None = None) -> dict[str, Any]:
    """What ``convbank list --json`` says of a dataset and the viewer's index shows: its
    name, title and licence, its configs with their splits' published sizes, its source
    files present (with a ``fetcher``), the configs built in ``manifest`` and their
    conversations by ``config/split``, and where it comes from.

    >>> summary(get("casino"), convbank.store.Bank().manifest())["conversations"]
    {'default/test': 100, 'default/train': 900, 'default/valid': 30}
    """
    entry = manifest.datasets.get(ds.name)
    row: dict[str, Any] = {
        "name": ds.name,
        "title": ds.title,
        "license": ds.license,
        "configs": {c.name: dict(c.splits) for c in ds.configs},
    }
    if isinstance(ds, ImportedDataset):
        row["sources"] = {
            "present": sum(Path(f.path).is_file() for f in ds.entry.inputs),
            "files": len(ds.files),
        }
    elif fetcher is not None:
        row["sources"] = _sources(ds, fetcher)
    row["built"] = sorted(manifest.configs(ds.name))
    row["conversations"] = {
        f"{c}/{s}": info.conversations
        for c, cfg in (entry.configs.items() if entry else ())
        for s, info in cfg.splits.items()
    }
    row["origin"] = _origin(ds)
    row["imported"] = isinstance(ds, ImportedDataset)
    return row


def _sources(ds: Dataset, fetcher: Fetcher) -> dict[str, Any]:
    """How many of a dataset's required source files are present; for a plugin whose code
    fails to say which they are, none known and the ``error`` (one plugin never stops the
    listing of all)."""
    try:
        files = ds.required_files()
        return {"present": sum(fetcher.find(ds, f) is not None for f in files), "files": len(files)}
    except BaseException as exc:  # sys.exit(), GeneratorExit: a plugin's fault as any other
        origin = _origin(ds)
        if isinstance(exc, (ConvbankError, KeyboardInterrupt)) or not origin.startswith("entry point"):
            raise
        why = code_failed(origin, exc)
        return {"present": None, "files": None, "error": why}


def code_failed(origin: str, exc: BaseException, doing: str = "") -> str:
    """What a plugin's own fault says, wherever it shows (``build``, ``list``, any command):
    whose code failed, doing what, and its exception's first line. Example:
    ``code_failed("entry point x = x:X", KeyError("a"), "building x/default")`` is
    ``"the code of entry point x = x:X failed building x/default (KeyError: 'a')"``."""
    failed = f"failed {doing}" if doing else "failed"
    return f"the code of {origin} {failed} ({type(exc).__name__}: {first_line(exc)})"


def listing(manifest: Manifest, fetcher: Fetcher | None = None) -> list[dict[str, Any]]:
    """:func:`summary` of every dataset (:func:`every`), in catalog order, the imported ones
    last (``convbank list --json``).

    >>> [row["name"] for row in listing(convbank.store.Bank().manifest())][:2]
    ['casino', 'ccpe']
    """
    return [summary(ds, manifest, fetcher) for ds in every(manifest)]


def card(name: str, manifest: Manifest, fetcher: Fetcher) -> dict[str, Any]:
    """What ``convbank info NAME --json`` says of a dataset: its card
    (:meth:`Dataset.describe`), each source file's checksum status and where it was found
    (an archive's extracted folder said so), the configs built in ``manifest``, its origin.

    >>> card("casino", convbank.store.Bank().manifest(), convbank.Fetcher())["built"]
    ['default']
    """
    from convbank.fetch import checksum_status

    ds = get(name)
    data = _described(ds)
    for i, (f, entry) in enumerate(zip(ds.files, data["files"], strict=True)):
        if isinstance(ds, ImportedDataset):  # the files it was imported from, by their paths
            path = Path(ds.entry.inputs[i].path)
            entry.update(checksum="recorded", optional=False, folder=False)
            entry["present"] = str(path) if path.is_file() else None
            continue
        found = fetcher.find(ds, f)
        entry["checksum"] = checksum_status(f, fetcher.root)
        entry["optional"] = f.name in ds.optional_files
        entry["present"] = str(found) if found else None
        entry["folder"] = found is not None and found.is_dir()  # an archive's extracted folder
    data["built"] = sorted(manifest.configs(name))
    data["origin"] = _origin(ds)
    if isinstance(ds, ImportedDataset):
        data["imported"] = msgspec.to_builtins(ds.entry)
    return data


def _described(ds: Dataset) -> dict[str, Any]:
    """``ds.describe()``, checked to be a card: a dict with the base card's keys, each of its
    kind (a dict, a list, text), one entry a source file, and JSON throughout. A plugin's card
    that is not is a one-line :class:`ConvbankError` naming it, exit 1 (never a ``TypeError``
    traceback from ``info``); convbank's own is its fault, raised as it is."""
    data = ds.describe()
    try:
        _check_card(data, Dataset.describe(ds), len(ds.files))
    except (TypeError, ValueError) as exc:
        origin = _origin(ds)
        if not origin.startswith("entry point"):
            raise
        raise ConvbankError(f"{code_failed(origin, exc)}; report it to its authors") from exc
    return data


def _check_card(data: Any, base: dict[str, Any], files: int) -> None:
    """A ``TypeError`` saying how ``data`` is not a card like ``base`` with ``files`` files."""
    if not isinstance(data, dict):
        raise TypeError(f"describe() gave {article(type(data).__name__)}, not a card (a dict)")
    for key, value in base.items():
        kind = type(value) if isinstance(value, (dict, list)) else (str, type(None))
        if not isinstance(data.get(key), kind):
            raise TypeError(f"describe() gave {key!r} as {article(type(data.get(key)).__name__)}")
    if len(data["files"]) != files or not all(isinstance(f, dict) for f in data["files"]):
        shown = len(data["files"])
        raise TypeError(f"describe() gave 'files' of {shown}, not an entry for each of its {files}")
    msgspec.json.encode(data)  # a TypeError for what JSON cannot hold
