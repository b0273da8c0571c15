"""The bank: Parquet tables in generations under ``$CONVBANK_HOME/bank``, and DuckDB views."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convbank.store.bank import Bank, FileRef, Snapshot, Staging

if TYPE_CHECKING:
    from convbank.store.sql import connect, is_read_only

__all__ = ["Bank", "FileRef", "Snapshot", "Staging", "connect", "is_read_only"]


def __getattr__(name: str) -> Any:
    """``connect`` and ``is_read_only`` import DuckDB on first use, not with the bank."""
    if name in ("connect", "is_read_only"):
        from convbank.store import sql

        return getattr(sql, name)
    raise AttributeError(f"module 'convbank.store' has no attribute {name!r}")
