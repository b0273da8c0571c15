"""The bank: Hive-partitioned Parquet tables under ``$CONVBANK_HOME/bank`` and DuckDB views."""

from convbank.store.bank import Bank, Staging
from convbank.store.sql import connect, is_read_only

__all__ = ["Bank", "Staging", "connect", "is_read_only"]
