"""The registry of datasets: names to dataset objects; duplicate names are rejected."""

from __future__ import annotations

from collections.abc import Iterator

from convbank.datasets import BUILTIN, Dataset
from convbank.errors import UnknownDatasetError

__all__ = ["Catalog", "catalog", "get", "names", "register"]


class Catalog:
    """An ordered registry of datasets by name."""

    def __init__(self) -> None:
        self._datasets: dict[str, Dataset] = {}

    def register(self, dataset: Dataset) -> Dataset:
        """Add a dataset; a name already registered is a ``ValueError``."""
        if dataset.name in self._datasets:
            raise ValueError(f"a dataset named {dataset.name!r} is already registered")
        self._datasets[dataset.name] = dataset
        return dataset

    def get(self, name: str) -> Dataset:
        """The dataset of that name, or :class:`UnknownDatasetError` listing the known ones."""
        try:
            return self._datasets[name]
        except KeyError:
            known = ", ".join(self._datasets)
            raise UnknownDatasetError(f"unknown dataset {name!r}; known datasets: {known}") from None

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._datasets)

    def __iter__(self) -> Iterator[Dataset]:
        return iter(self._datasets.values())

    def __len__(self) -> int:
        return len(self._datasets)

    def __contains__(self, name: object) -> bool:
        return name in self._datasets


catalog = Catalog()
for _cls in BUILTIN:
    catalog.register(_cls())

get = catalog.get
names = catalog.names
register = catalog.register
