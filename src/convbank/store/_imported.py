"""The datasets imported into the banks this process knows (``convbank import``), as the
catalog finds them: :func:`imported` answers for a name the catalog does not list
(:class:`~convbank.registry.Registry`'s fallback), :func:`imported_names` says their names with
the catalog's own where a name is unknown, and :func:`imported_from` is the dataset a
manifest's entry stands for. They sit with the bank, below the registry that asks them."""

from __future__ import annotations

from convbank.datasets import Dataset
from convbank.datasets._imported import ImportedDataset
from convbank.errors import ConvbankError
from convbank.store.bank import Bank, banks
from convbank.store.manifest import DatasetEntry

__all__ = ["imported", "imported_from", "imported_names"]

_IMPORTED: dict[tuple[str, str], tuple[tuple[int, ...], Dataset | None]] = {}
"""Imported datasets read from a bank's manifest, by (bank, name), with the signature of
the manifest they were read from (a new generation is a new file: read again)."""


def imported(name: str, bank: Bank | None = None) -> Dataset | None:
    """The dataset imported under ``name`` (``convbank import``) into ``bank``, else into
    the default bank or one this process opened (:func:`convbank.store.bank.banks`); None
    where none holds it. What the catalog answers for a name it does not list:

    >>> from pathlib import Path
    >>> _ = Path("chats.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\\n')
    >>> _ = convbank.import_conversations("chats.jsonl", name="my_study")
    >>> convbank.catalog.get("my_study")
    <ImportedDataset 'my_study' from chat: 1 file>
    """
    for place in [bank] if bank is not None else banks():
        try:
            st = place.manifest_path.stat()
        except OSError:
            continue
        key, signature = (str(place.root), name), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        known = _IMPORTED.get(key)
        if known is None or known[0] != signature:
            try:
                entry = place.manifest().datasets.get(name)
            except ConvbankError:  # a damaged bank says so when it is read, not here
                continue
            found = imported_from(name, entry) if entry is not None else None
            known = _IMPORTED[key] = (signature, found)
        if known[1] is not None:
            return known[1]
    return None


def imported_from(name: str, entry: DatasetEntry) -> Dataset | None:
    """The dataset a manifest's entry stands for, if it was imported (None if it was built)."""
    if entry.imported is None:
        return None
    parts = {c: {s: info.conversations for s, info in cfg.splits.items()} for c, cfg in entry.configs.items()}
    return ImportedDataset(name, entry.imported, parts)


def imported_names() -> list[str]:
    """The names of the datasets imported into the default bank (``$CONVBANK_HOME``'s, where
    an import goes unless told), in the order its manifest lists them; none where it has no
    manifest or a damaged one (which says so when it is read). Another bank this process
    opened is searched by :func:`imported`, but not listed: what an error says stays the same
    whatever else the process opened."""
    place = Bank()
    if not place.manifest_path.is_file():
        return []
    try:
        entries = place.manifest().datasets
    except ConvbankError:
        return []
    return [n for n, entry in entries.items() if entry.imported is not None]
