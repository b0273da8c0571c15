"""The :class:`Corpus`, a value over the conversations of one dataset in the bank: indexed,
sliced, filtered, shuffled, pickled, and seen as Arrow, pandas and polars tables or streamed
as record batches."""

from convbank.corpus._corpus import Corpus
from convbank.corpus._source import DEFAULT_CACHE_BYTES

__all__ = ["DEFAULT_CACHE_BYTES", "Corpus"]
