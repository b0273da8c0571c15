"""The names of the datasets imported into the banks this process knows, said with the
catalog's own where a name is unknown (:class:`~convbank.registry.Registry`'s error)."""

from __future__ import annotations

from convbank.errors import ConvbankError
from convbank.store.bank import Bank

__all__ = ["imported_names"]


def imported_names() -> list[str]:
    """The names of the datasets imported into the default bank (``$CONVBANK_HOME``'s, where
    an import goes unless told), in the order its manifest lists them; none where it has no
    manifest or a damaged one (which says so when it is read). Another bank this process
    opened is searched by :func:`convbank.registry.imported`, but not listed: what an error
    says stays the same whatever else the process opened."""
    place = Bank()
    if not place.manifest_path.is_file():
        return []
    try:
        entries = place.manifest().datasets
    except ConvbankError:
        return []
    return [n for n, entry in entries.items() if entry.imported is not None]
