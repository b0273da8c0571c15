"""The names of the datasets imported into the banks this process knows, said with the
catalog's own where a name is unknown (:class:`~convbank.registry.Registry`'s error)."""

from __future__ import annotations

from convbank.errors import ConvbankError
from convbank.store.bank import banks

__all__ = ["imported_names"]


def imported_names() -> list[str]:
    """The names of the datasets imported into the default bank or one this process opened
    (what :func:`convbank.registry.imported` finds), in the order their manifests list them."""
    names: dict[str, None] = {}
    for place in banks():
        if not place.manifest_path.is_file():
            continue
        try:
            entries = place.manifest().datasets
        except ConvbankError:  # a damaged bank says so when it is read, not here
            continue
        names.update((n, None) for n, entry in entries.items() if entry.imported is not None)
    return list(names)
