"""The catalog: every dataset by name, the built-in ones first, then those other packages add
through the entry-point group ``convbank.datasets`` (see :mod:`convbank.registry`, which
holds it beside the engines, checks and tasks). Duplicate names are rejected."""

from __future__ import annotations

from convbank.datasets import Dataset
from convbank.registry import Registry
from convbank.registry import datasets as catalog

__all__ = ["Catalog", "catalog", "get", "names", "register"]


class Catalog(Registry[Dataset]):
    """An empty registry of datasets (the catalog itself is :data:`catalog`)."""

    def __init__(self) -> None:
        super().__init__("dataset")


get = catalog.get
names = catalog.names
register = catalog.register
