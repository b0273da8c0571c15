"""The bank: Parquet tables in generations under ``$CONVBANK_HOME/bank``, and DuckDB views."""

from convbank.store.bank import Bank, FileRef, Snapshot, Staging
from convbank.store.sql import connect, is_read_only

__all__ = ["Bank", "FileRef", "Snapshot", "Staging", "connect", "is_read_only"]
