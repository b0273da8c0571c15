"""The Arrow type of a raw record type: the ``<dataset>_raw`` table is typed like the source
(derived as the unified tables are: see :mod:`convbank.model._arrow`)."""

from convbank.model._arrow import arrow_type

__all__ = ["arrow_type"]
