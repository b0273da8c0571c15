"""Engines read and map a dataset's sources for a build; the build's driver writes what they
yield into the bank. :class:`Engine` is what an engine provides.

Engines are registered like datasets (:mod:`convbank.registry`, entry-point group
``convbank.engines``): ``local`` (:class:`convbank.engines.local.LocalEngine`, this process)
and ``spark`` (:class:`convbank.engines.spark.SparkEngine`, Apache Spark tasks, the ``spark``
extra). An engine that can also run SQL over the bank implements :class:`SqlEngine`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pyarrow as pa

    from convbank.datasets import Dataset
    from convbank.store import Bank, Staging
    from convbank.store.staging import Facts

__all__ = ["Batches", "Engine", "SqlEngine", "WrittenPiece", "id_hashes"]


@dataclass(frozen=True)
class WrittenPiece:
    """A piece of a split that an engine's worker wrote into the staging folder itself:
    rows written by (table, split, piece), and the conversation ids in order; or, from an
    engine whose driver must receive no table data (Spark), their :func:`id_hashes` instead
    of the ids and each file's :data:`~convbank.store.staging.Facts` (``facts``, trusted by
    the commit instead of reading the files again)::

        WrittenPiece({("turns", "train", 0): 120}, ["c1", "c2"])
        WrittenPiece(rows, [], facts=staging.describe(), hashes=id_hashes(ids))
    """

    rows: dict[tuple[str, str, int], int]
    ids: list[str]
    facts: dict[tuple[str, str, int], Facts] | None = None
    hashes: bytes | None = None

    @property
    def conversations(self) -> int:
        """How many conversations the piece holds."""
        return len(self.ids) if self.hashes is None else len(self.hashes) // 8


def id_hashes(ids: Iterable[str]) -> bytes:
    """Eight bytes a conversation id (BLAKE2b, the same in every process, unlike ``hash``),
    in order: what a remote task sends for the build's check of repeated ids::

        len(id_hashes(["a", "b"]))   # 16
    """
    from hashlib import blake2b

    return b"".join(blake2b(i.encode(), digest_size=8).digest() for i in ids)


Batches = Iterator[tuple[str, "dict[str, pa.Table] | WrittenPiece"]]
"""``(split, tables)`` per mapped batch: the unified tables and the raw table of a batch of
conversations, split after split, in source order; or ``(split, piece)`` for a piece an
engine wrote into the build's staging folder itself."""


@runtime_checkable
class Engine(Protocol):
    """Reads and maps the sources of one stored config."""

    name: ClassVar[str]
    """The engine's name (``convbank build --engine NAME``). An engine may also say which of
    the command line's options it uses, ``options = ("workers",)`` (local) or ``("master",
    "shards")`` (spark): ``build`` then warns that the others given are ignored."""

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Engine:
        """The engine for the command line's options (``master``, ``shards``: what it does not
        use it ignores)."""
        ...

    def config_batches(
        self,
        ds: Dataset,
        paths: Mapping[str, Path],
        config: str,
        batch_size: int,
        staging: Staging | None = None,
    ) -> Batches:
        """Every batch of every split of a stored config, at most ``batch_size`` conversations
        each, in source order (source positions, hence ids, as the local engine gives them).
        An engine may write pieces into ``staging`` itself and yield :class:`WrittenPiece`."""
        ...


@runtime_checkable
class SqlEngine(Engine, Protocol):
    """An engine that also runs read-only SQL over the bank's views
    (``convbank query --engine NAME``)."""

    def sql(self, query: str, *, bank: Bank) -> pa.Table:
        """Run one read-only query over the bank's views."""
        ...
